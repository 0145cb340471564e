//! The hreflang rows and their site-level rules (issue 37) against a real SQLite file: a page's
//! set from `<link>`s, the Link header and a sitemap taken together; the alternates' answers and
//! return links.

use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, LinkKind, LinkRecord, PageRecord, SitemapAlternates, UrlKind};
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, DbError};

const BASE: &str = "https://shop.test";

fn u(path: &str) -> String {
    format!("{BASE}{path}")
}

fn alts(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(l, p)| ((*l).to_owned(), u(p))).collect()
}

fn page(ids: (AuditId, SiteId), path: &str, status: u16) -> PageRecord {
    PageRecord {
        audit: ids.0,
        site: ids.1,
        url: u(path),
        kind: UrlKind::Page,
        status: Some(status),
        found_via: Discovery::Link,
        content_type: Some("text/html".to_owned()),
        fetched_at: UnixMs(1_700_000_000_000),
        ..PageRecord::default()
    }
}

fn ev(p: PageRecord) -> Event {
    Event::Page(Box::new(p))
}

/// (code, page path, detail without the site, related paths), hreflang codes only.
fn hreflang_findings(db: &AuditDb, site: SiteId) -> Vec<(String, String, String, Vec<String>)> {
    let strip = |s: &str| s.replace(BASE, "");
    let mut out = Vec::new();
    db.for_each_finding(site, |f| -> Result<(), DbError> {
        if f.code.starts_with("hreflang_") {
            out.push((f.code, strip(&f.url), strip(&f.detail), f.related.iter().map(|r| strip(r)).collect()));
        }
        Ok(())
    })
    .expect("findings read");
    out.sort();
    out
}

fn row(code: &str, page: &str, detail: &str, related: &[&str]) -> (String, String, String, Vec<String>) {
    (code.to_owned(), page.to_owned(), detail.to_owned(), related.iter().map(|s| (*s).to_owned()).collect())
}

#[test]
fn sets_answers_and_return_links_are_judged_across_sources() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = AuditDb::open(&dir.path().join("audit.db")).expect("opens");
    let audit = db.create_audit("{}", UnixMs(1)).expect("audit");
    let ids = (audit, db.add_site(audit, &u("/")).expect("site"));

    let mut en = page(ids, "/en/", 200);
    en.hreflang = alts(&[
        ("en", "/en/"),
        ("de", "/de/"),
        ("fr", "/fr/"),
        ("es", "/es/"),
        ("it", "/it/"),
        ("pt", "/pt/"),
        ("nl", "/nl/"),
        ("x-default", "/en/"),
    ]);
    let mut de = page(ids, "/de/", 200);
    de.hreflang = alts(&[("de", "/de/"), ("en", "/en/")]);
    de.hreflang_header = alts(&[("x-default", "/en/")]);
    let mut es = page(ids, "/es/", 301);
    es.redirect_to = Some(u("/es-es/"));
    let mut it = page(ids, "/it/", 200);
    it.meta_robots = vec!["noindex".to_owned()];
    let mut pt = page(ids, "/pt/", 200);
    pt.canonical = Some(u("/pt-pt/"));
    pt.links =
        vec![LinkRecord { url: u("/pt-pt/"), kind: LinkKind::Canonical, nofollow: false, internal: true, text: None }];
    let mut sitemap = page(ids, "/sitemap.xml", 200);
    sitemap.kind = UrlKind::Sitemap;
    sitemap.sitemap_hreflang = vec![SitemapAlternates {
        page: u("/sm/"),
        alternates: alts(&[("en-UK", "/sm/"), ("de", "/a/"), ("DE", "/b/")]),
    }];
    let events = vec![
        ev(en),
        ev(de),
        ev(page(ids, "/fr/", 404)),
        ev(es),
        ev(it),
        ev(pt),
        ev(page(ids, "/nl/", 200)),
        ev(sitemap),
        Event::SiteDone { audit: ids.0, site: ids.1 },
    ];
    db.apply(&events).expect("applies");
    let want = vec![
        row("hreflang_conflict", "/sm/", "de", &["/a/", "/b/"]),
        row("hreflang_invalid_code", "/sm/", "en-UK: UK is not an ISO 3166-1 region code (use GB)", &[]),
        row("hreflang_return_missing", "/en/", "/nl/ (nl) does not name this page among its alternates", &["/nl/"]),
        row("hreflang_self_missing", "/sm/", "", &[]),
        row("hreflang_target_canonicalised", "/en/", "/pt/ (pt) declares /pt-pt/ as its canonical", &["/pt/"]),
        row("hreflang_target_error", "/en/", "/fr/ (fr) answers 404", &["/fr/"]),
        row("hreflang_target_noindex", "/en/", "/it/ (it) is noindex", &["/it/"]),
        row("hreflang_target_redirect", "/en/", "/es/ (es) redirects to /es-es/", &["/es/"]),
        row("hreflang_x_default_missing", "/sm/", "", &[]),
    ];
    assert_eq!(hreflang_findings(&db, ids.1), want);

    // The same batch again changes nothing; /en/ delivered again with a smaller set replaces its
    // rows, and the analysis run again drops what no longer holds.
    db.apply(&events).expect("applies again");
    assert_eq!(hreflang_findings(&db, ids.1), want);
    let mut en = page(ids, "/en/", 200);
    en.hreflang = alts(&[("en", "/en/"), ("de", "/de/"), ("x-default", "/en/")]);
    db.apply(&[ev(en), Event::SiteDone { audit: ids.0, site: ids.1 }]).expect("late batch");
    let now = hreflang_findings(&db, ids.1);
    assert!(now.iter().all(|f| f.1 == "/sm/"), "{now:#?}");
}

#[test]
fn a_site_without_hreflang_pays_one_lookup() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = AuditDb::open(&dir.path().join("audit.db")).expect("opens");
    let audit = db.create_audit("{}", UnixMs(1)).expect("audit");
    let ids = (audit, db.add_site(audit, &u("/")).expect("site"));
    db.apply(&[ev(page(ids, "/", 200)), Event::SiteDone { audit: ids.0, site: ids.1 }]).expect("applies");
    assert!(hreflang_findings(&db, ids.1).is_empty());
}
