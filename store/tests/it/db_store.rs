//! The audit database against real SQLite files: site-level analysis, idempotent batches, errors.

use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, FetchFailure, LinkKind, LinkRecord, PageRecord, UrlKind};
use shoal_shared::task::ProbeKind;
use shoal_shared::time::UnixMs;
use shoal_store::analysis::RELATED_CAP;
use shoal_store::{AuditDb, AuditStatus, DbError, SiteStatus, schema};
use std::path::Path;

const BASE: &str = "https://example.test";

fn u(path: &str) -> String {
    format!("{BASE}{path}")
}

fn link(path: &str, kind: LinkKind) -> LinkRecord {
    LinkRecord { url: u(path), kind, nofollow: false, internal: true, text: Some(format!("to {path}")) }
}

/// A fetched URL of the test site.
fn page(ids: (AuditId, SiteId), path: &str, kind: UrlKind, status: Option<u16>) -> PageRecord {
    PageRecord {
        audit: ids.0,
        site: ids.1,
        url: u(path),
        kind,
        status,
        depth: 1,
        found_via: Discovery::Link,
        found_from: Some(u("/")),
        content_type: Some("text/html; charset=utf-8".to_owned()),
        bytes: 1234,
        response_ms: 42,
        fetched_at: UnixMs(1_700_000_000_000),
        ..PageRecord::default()
    }
}

fn html(ids: (AuditId, SiteId), path: &str, title: &str, description: &str, links: Vec<LinkRecord>) -> Event {
    let mut p = page(ids, path, UrlKind::Page, Some(200));
    p.title = Some(title.to_owned());
    p.meta_description = Some(description.to_owned());
    p.h1 = vec![format!("{title} heading")];
    p.links = links;
    Event::Page(Box::new(p))
}

fn redirect(ids: (AuditId, SiteId), from: &str, to: &str, status: u16) -> Event {
    let mut p = page(ids, from, UrlKind::Page, Some(status));
    p.redirect_to = Some(u(to));
    p.content_type = None;
    Event::Page(Box::new(p))
}

fn failed(
    ids: (AuditId, SiteId),
    path: &str,
    kind: UrlKind,
    status: Option<u16>,
    error: Option<FetchFailure>,
) -> Event {
    let mut p = page(ids, path, kind, status);
    p.error = error;
    Event::Page(Box::new(p))
}

/// The realistic crawl of SPEC-like situations the analysis must recognise.
fn crawl(ids: (AuditId, SiteId)) -> Vec<Event> {
    let mut start = page(ids, "/", UrlKind::Page, Some(200));
    start.found_via = Discovery::Start;
    start.found_from = None;
    start.depth = 0;
    start.title = Some("Home".to_owned());
    start.meta_description = Some("Welcome".to_owned());
    start.links = vec![
        link("/missing", LinkKind::Anchor),
        link("/a", LinkKind::Anchor),
        link("/x", LinkKind::Anchor),
        link("/about", LinkKind::Anchor),
        link("/contact", LinkKind::Anchor),
        link("/about", LinkKind::Anchor),
        link("/img/broken.png", LinkKind::Image),
        LinkRecord {
            url: "https://other.test/".to_owned(),
            kind: LinkKind::Anchor,
            nofollow: true,
            internal: false,
            text: None,
        },
    ];
    let mut missing = page(ids, "/missing", UrlKind::Page, Some(404));
    // A custom 404 page with a title shared with real pages: not a duplicate (not a 200).
    missing.title = Some("Same title".to_owned());
    vec![
        Event::Page(Box::new(start)),
        Event::Page(Box::new(missing)),
        redirect(ids, "/a", "/b", 301),
        redirect(ids, "/b", "/c", 302),
        html(ids, "/c", "C", "The end of the chain", vec![]),
        redirect(ids, "/x", "/y", 301),
        redirect(ids, "/y", "/x", 301),
        html(
            ids,
            "/about",
            "Same title",
            "Same description",
            vec![
                link("/img/broken.png", LinkKind::Image),
                link("/script.js", LinkKind::Script),
                // b is linked too, but it is inside a's chain: one report, from a.
                link("/b", LinkKind::Anchor),
            ],
        ),
        html(
            ids,
            "/contact",
            "Same title",
            "Same description",
            vec![link("/robots.txt", LinkKind::Anchor), link("/probe-x1", LinkKind::Anchor)],
        ),
        failed(ids, "/img/broken.png", UrlKind::Resource, Some(404), None),
        failed(ids, "/script.js", UrlKind::Resource, None, Some(FetchFailure::Timeout)),
        failed(ids, "/robots.txt", UrlKind::Robots, Some(404), None),
        failed(ids, "/probe-x1", UrlKind::Probe(ProbeKind::Soft404), Some(404), None),
        Event::Finding(Finding::new(ids.0, ids.1, Code::H1Missing, u("/c"), "")),
        Event::SiteDone { audit: ids.0, site: ids.1 },
    ]
}

/// (code, url, detail, related) with the site prefix removed, in report order.
fn findings(db: &AuditDb, site: SiteId) -> Vec<(String, String, String, Vec<String>)> {
    let strip = |s: &str| s.strip_prefix(BASE).unwrap_or(s).to_owned();
    let mut out = Vec::new();
    db.for_each_finding(site, |f| -> Result<(), DbError> {
        out.push((f.code, strip(&f.url), f.detail, f.related.iter().map(|r| strip(r)).collect()));
        Ok(())
    })
    .expect("findings read");
    out
}

fn expected() -> Vec<(String, String, String, Vec<String>)> {
    let row = |code: &str, url: &str, detail: &str, related: &[&str]| {
        (
            code.to_owned(),
            url.to_owned(),
            detail.to_owned(),
            related.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
        )
    };
    vec![
        row("broken_internal_link", "/missing", "404", &["/"]),
        row("broken_resource", "/img/broken.png", "404", &["/", "/about"]),
        row("broken_resource", "/script.js", "timeout", &["/about"]),
        row("redirect_loop", "/x", "2 hops", &["/x", "/y", "/x"]),
        row("description_duplicate", "/about", "Same description", &["/contact"]),
        row("description_duplicate", "/contact", "Same description", &["/about"]),
        row("h1_missing", "/c", "", &[]),
        row("redirect_chain", "/a", "2 hops", &["/a", "/b", "/c"]),
        row("title_duplicate", "/about", "Same title", &["/contact"]),
        row("title_duplicate", "/contact", "Same title", &["/about"]),
    ]
}

fn fresh(dir: &Path) -> (AuditDb, (AuditId, SiteId)) {
    let mut db = AuditDb::open(&dir.join("audit.db")).expect("database opens");
    let audit = db.create_audit(r#"{"max_pages":500}"#, UnixMs(1_700_000_000_000)).expect("audit");
    let site = db.add_site(audit, &u("/")).expect("site");
    (db, (audit, site))
}

fn link_count(db: &AuditDb, site: SiteId) -> usize {
    let mut n = 0;
    db.for_each_link(site, |_| -> Result<(), DbError> {
        n += 1;
        Ok(())
    })
    .expect("links read");
    n
}

#[test]
fn site_done_reports_broken_links_redirects_and_duplicates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, ids) = fresh(dir.path());
    db.apply_at(&crawl(ids), UnixMs(1_700_000_100_000)).expect("batch applies");

    assert_eq!(findings(&db, ids.1), expected());
    let sites = db.site_counts(ids.0).expect("site counts");
    assert_eq!(sites.len(), 1);
    let s = &sites[0];
    assert_eq!(s.status, SiteStatus::Done);
    assert_eq!(s.done_at, Some(UnixMs(1_700_000_100_000)));
    assert_eq!((s.pages, s.urls, s.findings), (9, 13, 10));
    assert_eq!(link_count(&db, ids.1), 8 + 3 + 2);
}

#[test]
fn applying_the_same_batch_twice_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, ids) = fresh(dir.path());
    let batch = crawl(ids);
    db.apply_at(&batch, UnixMs(1)).expect("first");
    let counts = db.site_counts(ids.0).expect("counts");
    let first = findings(&db, ids.1);
    let links = link_count(&db, ids.1);

    db.apply_at(&batch, UnixMs(2)).expect("second");
    assert_eq!(db.site_counts(ids.0).expect("counts"), counts, "done_at keeps the first time");
    assert_eq!(findings(&db, ids.1), first);
    assert_eq!(link_count(&db, ids.1), links);

    // The same events split over several batches, replayed, land the same way too.
    let (left, right) = batch.split_at(5);
    db.apply_at(right, UnixMs(3)).expect("tail again");
    db.apply_at(left, UnixMs(3)).expect("head again");
    assert_eq!(findings(&db, ids.1), first);
    let audits = db.audits().expect("audits");
    assert_eq!((audits[0].pages, audits[0].urls, audits[0].findings), (9, 13, 10));
}

#[test]
fn a_rerun_of_the_analysis_drops_findings_that_no_longer_hold() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, ids) = fresh(dir.path());
    db.apply(&crawl(ids)).expect("crawl");
    // /missing was re-fetched late and now answers; the site is declared done again.
    let mut fixed = page(ids, "/missing", UrlKind::Page, Some(200));
    fixed.title = Some("Found again".to_owned());
    db.apply(&[Event::Page(Box::new(fixed)), Event::SiteDone { audit: ids.0, site: ids.1 }]).expect("late batch");
    let now = findings(&db, ids.1);
    assert!(!now.iter().any(|f| f.0 == "broken_internal_link"), "{now:?}");
    assert_eq!(now.len(), expected().len() - 1);
    assert_eq!(db.site_counts(ids.0).expect("counts")[0].findings, 9);
}

#[test]
fn an_event_for_an_unknown_site_rolls_the_whole_batch_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, ids) = fresh(dir.path());
    let good = html(ids, "/", "Home", "Welcome", vec![]);
    let stray = html((ids.0, SiteId(999)), "/", "Home", "Welcome", vec![]);
    let err = db.apply(&[good, stray]).expect_err("unknown site");
    assert!(matches!(err, DbError::UnknownSite { site: SiteId(999), .. }), "{err}");
    assert_eq!(db.site_counts(ids.0).expect("counts")[0].urls, 0, "nothing of the batch stored");

    let wrong_audit = html((AuditId(ids.0.0 + 7), ids.1), "/", "Home", "Welcome", vec![]);
    let err = db.apply(&[wrong_audit]).expect_err("audit mismatch");
    assert!(matches!(err, DbError::SiteAuditMismatch { .. }), "{err}");
}

#[test]
fn audits_sites_and_reopening() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("audit.db");
    let (first, second, site_b) = {
        let mut db = AuditDb::open(&path).expect("open");
        assert_eq!(db.latest_audit().expect("latest"), None);
        let a = db.create_audit("{}", UnixMs(10)).expect("audit a");
        let site_a = db.add_site(a, "https://a.test/").expect("site a");
        db.finish_audit(a, AuditStatus::Done, UnixMs(20)).expect("finish");
        let b = db.create_audit("{}", UnixMs(30)).expect("audit b");
        let site_b = db.add_site(b, "https://a.test/").expect("site b");
        assert_ne!(site_a, site_b, "site ids are unique across audits");
        assert!(db.create_audit("not json", UnixMs(40)).is_err());
        let err = db.add_site(AuditId(77), "https://x.test/").expect_err("no audit 77");
        assert!(err.to_string().contains("77"), "{err}");
        let err = db.finish_audit(AuditId(77), AuditStatus::Done, UnixMs(1)).expect_err("no audit 77");
        assert!(matches!(err, DbError::UnknownAudit { .. }));
        (a, b, site_b)
    };
    let db = AuditDb::open(&path).expect("reopen");
    assert_eq!(db.latest_audit().expect("latest"), Some(second));
    let audits = db.audits().expect("audits");
    assert_eq!(audits.iter().map(|a| a.id).collect::<Vec<_>>(), vec![first, second]);
    assert_eq!(audits[0].status, AuditStatus::Done);
    assert_eq!(audits[0].finished_at, Some(UnixMs(20)));
    assert_eq!(audits[1].status, AuditStatus::Running);
    assert_eq!(audits[1].sites, 1);
    let site = db.site(site_b).expect("site").expect("exists");
    assert_eq!((site.audit, site.status), (second, SiteStatus::Running));
}

#[test]
fn an_unusable_path_gives_an_error_naming_it() {
    let err = AuditDb::open(Path::new("/proc/nonexistent/x.db")).expect_err("cannot create there");
    assert!(err.to_string().contains("/proc/nonexistent/x.db"), "{err}");

    let dir = tempfile::tempdir().expect("tempdir");
    let err = AuditDb::open(dir.path()).expect_err("a directory");
    assert!(matches!(err, DbError::IsDirectory { .. }), "{err}");
    assert!(err.to_string().contains(&dir.path().display().to_string()), "{err}");

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "this is not a database, just some text that is long enough ".repeat(20)).expect("write");
    let err = AuditDb::open(&text).expect_err("not a database");
    assert!(err.to_string().contains("notes.txt"), "{err}");

    let other = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&other).expect("other db");
        conn.execute_batch("CREATE TABLE t (x INTEGER);").expect("table");
    }
    let err = AuditDb::open(&other).expect_err("someone else's database");
    assert!(matches!(err, DbError::NotAnAuditDb { .. }), "{err}");
    assert!(err.to_string().contains("other.db"), "{err}");
}

#[test]
fn a_database_from_a_newer_shoal_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("audit.db");
    drop(AuditDb::open(&path).expect("create"));
    {
        let conn = rusqlite::Connection::open(&path).expect("raw open");
        conn.execute_batch("PRAGMA user_version = 99;").expect("bump");
    }
    let err = AuditDb::open(&path).expect_err("too new");
    assert!(matches!(err, DbError::TooNew { found: 99, .. }), "{err}");
}

/// An audit's totals (kept in its row by triggers) are the sums of its sites' rows after every
/// kind of write: sites added, pages and findings applied (twice: idempotent), a site done with
/// its exact recount; another audit's totals are untouched.
#[test]
fn audit_totals_are_the_sums_of_its_sites() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, ids) = fresh(dir.path());
    let audit = ids.0;
    let more = db.add_sites(audit, &["https://b.test/", "https://c.test/"]).expect("add sites");
    let other = db.create_audit("{}", UnixMs(5)).expect("other audit");
    db.add_site(other, "https://d.test/").expect("site of another audit");
    let check = |db: &AuditDb, when: &str| {
        let a = db.audit(audit).expect("read").expect("exists");
        let sites = db.site_counts(audit).expect("sites");
        let sum = |f: fn(&shoal_store::SiteSummary) -> u64| sites.iter().map(f).sum::<u64>();
        assert_eq!(
            (a.sites, a.sites_done, a.pages, a.urls, a.findings),
            (
                sites.len() as u64,
                sites.iter().filter(|s| s.status == SiteStatus::Done).count() as u64,
                sum(|s| s.pages),
                sum(|s| s.urls),
                sum(|s| s.findings)
            ),
            "{when}"
        );
        a
    };
    assert_eq!(check(&db, "after adding sites").sites, 3);
    let events = crawl(ids);
    db.apply(&events[..events.len() - 1]).expect("pages and findings");
    check(&db, "after pages and findings");
    db.apply(&events[..events.len() - 1]).expect("the same again");
    let before_done = check(&db, "after applying twice");
    db.apply(&events).expect("with the site done");
    let done = check(&db, "after the site is done");
    assert_eq!(done.sites_done, 1);
    assert!(done.pages > 0 && done.findings >= before_done.findings, "{done:?}");
    let b = (audit, more[0]);
    db.apply(&[html(b, "/", "B", "b", vec![]), Event::SiteDone { audit, site: more[0] }]).expect("site b");
    assert_eq!(check(&db, "after site b").sites_done, 2);
    let other_totals = db.audit(other).expect("read").expect("exists");
    assert_eq!((other_totals.sites, other_totals.pages), (1, 0), "the other audit is untouched");
}

/// A title shared by more pages than a finding lists: every page gets its finding, each naming
/// `RELATED_CAP` others and never itself (the analysis streams such groups instead of holding them).
#[test]
fn a_title_shared_by_many_pages_gives_each_its_finding_with_a_capped_list() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, ids) = fresh(dir.path());
    let n = RELATED_CAP + 5;
    let mut events: Vec<Event> =
        (0..n).map(|i| html(ids, &format!("/p{i:03}"), "One title", &format!("Description {i}"), vec![])).collect();
    events.push(Event::SiteDone { audit: ids.0, site: ids.1 });
    db.apply_at(&events, UnixMs(1_700_000_100_000)).expect("batch applies");
    let dups: Vec<_> = findings(&db, ids.1).into_iter().filter(|f| f.0 == "title_duplicate").collect();
    assert_eq!(dups.len(), n, "one finding per page sharing the title");
    for (i, (_, url, detail, related)) in dups.iter().enumerate() {
        assert_eq!(url, &format!("/p{i:03}"));
        assert_eq!(detail, "One title");
        assert_eq!(related.len(), RELATED_CAP, "{url}");
        assert!(!related.contains(url), "{url} lists itself");
    }
}

/// A version-4 file with pages and links (links then had a rowid and three indexes): after the
/// upgrade its links read back in document order and the site analysis finds what they show.
#[test]
fn a_version_4_database_keeps_its_links_through_the_upgrade() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v4.db");
    {
        let conn = rusqlite::Connection::open(&path).expect("sqlite");
        for m in &schema::MIGRATIONS[..4] {
            conn.execute_batch(m).expect("old migration");
        }
        conn.execute_batch(&format!(
            "PRAGMA user_version = 4; PRAGMA application_id = {};
             INSERT INTO audits (created_at_ms, status, options_json) VALUES (100, 'running', '{{}}');
             INSERT INTO sites (audit_id, start_url) VALUES (1, '{home}');
             INSERT INTO pages (site_id, url, kind, status, depth, found_via, bytes, response_ms, fetched_at_ms,
                                h1_json, meta_robots_json, x_robots_tag_json, hreflang_json, headers_json)
             VALUES (1, '{home}', 'page', 200, 0, 'start', 10, 1, 100, '[]', '[]', '[]', '[]', '{{}}'),
                    (1, '{missing}', 'page', 404, 1, 'link', 10, 1, 100, '[]', '[]', '[]', '[]', '{{}}');
             INSERT INTO links (site_id, from_url, position, to_url, kind, nofollow, internal, text)
             VALUES (1, '{home}', 1, '{missing}', 'anchor', 0, 1, 'second'),
                    (1, '{home}', 0, '{about}', 'anchor', 0, 1, 'first');",
            schema::APPLICATION_ID,
            home = u("/"),
            missing = u("/missing"),
            about = u("/about"),
        ))
        .expect("a version-4 audit");
    }
    let mut db = AuditDb::open(&path).expect("upgrade");
    let links = db.links_from(SiteId(1), &u("/")).expect("links read");
    let order: Vec<(&str, Option<&str>)> = links.iter().map(|l| (l.to_url.as_str(), l.text.as_deref())).collect();
    assert_eq!(order, [(u("/about").as_str(), Some("first")), (u("/missing").as_str(), Some("second"))]);
    db.apply_at(&[Event::SiteDone { audit: AuditId(1), site: SiteId(1) }], UnixMs(200)).expect("analysis");
    let broken: Vec<_> = findings(&db, SiteId(1)).into_iter().filter(|f| f.0 == "broken_internal_link").collect();
    assert_eq!(
        broken,
        [("broken_internal_link".to_owned(), "/missing".to_owned(), "404".to_owned(), vec!["/".to_owned()])]
    );
}

/// A version-6 file (before an audit could fail): its audits, their totals and schedule links
/// survive the rebuild of `audits`, ids keep counting from where they were (the AUTOINCREMENT
/// high-water mark, past a row that is gone), new audits get their totals row, and a running
/// audit can end `failed` with its reason while an ended one cannot.
#[test]
fn a_version_6_database_upgrades_to_audits_that_can_fail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v6.db");
    {
        let conn = rusqlite::Connection::open(&path).expect("sqlite");
        conn.execute_batch("PRAGMA foreign_keys = OFF;").expect("as AuditDb runs");
        for m in &schema::MIGRATIONS[..6] {
            conn.execute_batch(m).expect("old migration");
        }
        conn.execute_batch(&format!(
            "PRAGMA user_version = 6; PRAGMA application_id = {};
             INSERT INTO audits (created_at_ms, finished_at_ms, status, options_json) VALUES (100, 200, 'done', '{{}}');
             INSERT INTO audits (created_at_ms, status, options_json, schedule_id) VALUES (300, 'running', '{{}}', 7);
             INSERT INTO audits (created_at_ms, status, options_json) VALUES (400, 'running', '{{}}');
             DELETE FROM audits WHERE id = 3;
             INSERT INTO sites (audit_id, start_url, status, pages) VALUES (2, '{}', 'running', 4);",
            schema::APPLICATION_ID,
            u("/"),
        ))
        .expect("a version-6 database");
    }
    let mut db = AuditDb::open(&path).expect("upgrade");
    let audits = db.audits().expect("read");
    let rows: Vec<_> = audits.iter().map(|a| (a.id, a.status, a.sites, a.pages, a.reason.clone())).collect();
    assert_eq!(rows, [(AuditId(1), AuditStatus::Done, 0, 0, None), (AuditId(2), AuditStatus::Running, 1, 4, None)]);
    assert_eq!(db.scheduled_run(AuditId(2)).expect("read").map(|r| r.schedule), Some(shoal_shared::ids::ScheduleId(7)));
    let next = db.create_audit("{}", UnixMs(500)).expect("a new audit");
    assert_eq!(next, AuditId(4), "no id is given out twice");
    assert_eq!(db.audit(next).expect("read").expect("exists").sites, 0, "its totals row exists");

    db.fail_audit(AuditId(2), "site 1: host a.test: inf = \"x\"", UnixMs(600)).expect("fails");
    db.fail_audit(AuditId(1), "too late", UnixMs(600)).expect("an ended audit is left as it is");
    let failed = db.audit(AuditId(2)).expect("read").expect("exists");
    assert_eq!(
        (failed.status, failed.finished_at, failed.reason.as_deref()),
        (AuditStatus::Failed, Some(UnixMs(600)), Some("site 1: host a.test: inf = \"x\""))
    );
    assert_eq!(db.audit(AuditId(1)).expect("read").expect("exists").status, AuditStatus::Done);
    assert!(matches!(db.fail_audit(AuditId(99), "x", UnixMs(1)), Err(DbError::UnknownAudit { .. })));
}

/// A resource check of a URL that was also crawled as a page can complete after the page's own
/// fetch: the page's row (kind, title, links) stays, in either order.
#[test]
fn a_page_row_is_never_replaced_by_a_later_resource_check_of_its_url() {
    for page_first in [true, false] {
        let dir = tempfile::tempdir().expect("tmp");
        let (mut db, ids) = fresh(dir.path());
        let page_event = html(ids, "/later.html", "Later", "d", vec![link("/deeper.html", LinkKind::Anchor)]);
        let resource = Event::Page(Box::new(page(ids, "/later.html", UrlKind::Resource, Some(200))));
        let (first, second) = if page_first { (page_event, resource) } else { (resource, page_event) };
        db.apply_at(&[first], UnixMs(1)).expect("first completion");
        db.apply_at(&[second], UnixMs(2)).expect("second completion");
        let conn = rusqlite::Connection::open(dir.path().join("audit.db")).expect("open");
        let (kind, title): (String, Option<String>) = conn
            .query_row("SELECT kind, title FROM pages WHERE url = ?1", [u("/later.html")], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("row");
        assert_eq!((kind.as_str(), title.as_deref()), ("page", Some("Later")), "page first: {page_first}");
        assert_eq!(link_count(&db, ids.1), 1, "the page's links stay (page first: {page_first})");
        let pages: i64 = conn
            .query_row("SELECT pages FROM sites WHERE id = ?1", [i64::try_from(ids.1.0).expect("small")], |r| r.get(0))
            .expect("count");
        assert_eq!(pages, 1, "page first: {page_first}");
    }
}
