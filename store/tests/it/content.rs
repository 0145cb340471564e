//! The content analysis (issue 37) on a real SQLite file: exact and near-duplicate clusters from
//! the pages' fingerprints, the audit's near-duplicate threshold read from its options, and
//! pagination targets that do not answer 200.

use shoal_shared::content::fingerprint;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, PageRecord, UrlKind};
use shoal_shared::time::UnixMs;
use shoal_store::AuditDb;

fn u(path: &str) -> String {
    format!("https://shop.test{path}")
}

/// `n` words of their own for `seed`.
fn text(seed: u64, n: usize) -> Vec<String> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("w{}", x % 3_000)
        })
        .collect()
}

fn page(ids: (AuditId, SiteId), path: &str, words: &[String], status: u16) -> PageRecord {
    let f = fingerprint(&words.join(" "));
    PageRecord {
        audit: ids.0,
        site: ids.1,
        url: u(path),
        kind: UrlKind::Page,
        status: Some(status),
        found_via: Discovery::Link,
        content_type: Some("text/html".to_owned()),
        fetched_at: UnixMs(1),
        word_count: Some(f.words),
        text_hash: (status == 200).then_some(f.hash),
        text_simhash: (status == 200).then_some(f.simhash),
        ..PageRecord::default()
    }
}

/// The site's pages, then `SiteDone`: a, b (same text as a), c and d (a with two words changed),
/// e (a text of its own), a short page with a's first words, and /list whose rel=next is a 404.
fn audit_of(db: &mut AuditDb, options: &str) -> Vec<(String, String, String)> {
    let audit = db.create_audit(options, UnixMs(1)).expect("an audit");
    let site = db.add_site(audit, &u("/")).expect("a site");
    let ids = (audit, site);
    let a = text(1, 300);
    let mut c = a.clone();
    c[10] = "changed".into();
    let mut d = a.clone();
    d[200] = "altered".into();
    let mut list = page(ids, "/list", &text(3, 300), 200);
    list.rel_next = Some(u("/list?page=2"));
    list.rel_prev = Some(u("/a"));
    let events = vec![
        Event::Page(Box::new(page(ids, "/a", &a, 200))),
        Event::Page(Box::new(page(ids, "/b", &a, 200))),
        Event::Page(Box::new(page(ids, "/c", &c, 200))),
        Event::Page(Box::new(page(ids, "/d", &d, 200))),
        Event::Page(Box::new(page(ids, "/e", &text(2, 300), 200))),
        Event::Page(Box::new(page(ids, "/short", &a[..10], 200))),
        Event::Page(Box::new(list)),
        Event::Page(Box::new(page(ids, "/list?page=2", &[], 404))),
        Event::SiteDone { audit, site },
    ];
    db.apply(&events).expect("applies");
    let conn = rusqlite::Connection::open(db.path()).expect("opens");
    let mut stmt =
        conn.prepare("SELECT code, url, detail FROM findings WHERE site_id = ?1 ORDER BY code, url").expect("prepares");
    stmt.query_map([i64::try_from(site.0).expect("small")], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("queries")
        .collect::<Result<_, _>>()
        .expect("reads")
}

#[test]
fn duplicates_near_duplicates_and_pagination() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut db = AuditDb::open(&dir.path().join("a.db")).expect("opens");
    let found = audit_of(&mut db, "{}");
    let urls = |code: &str| found.iter().filter(|f| f.0 == code).map(|f| f.1.clone()).collect::<Vec<_>>();
    assert_eq!(urls("content_duplicate"), [u("/a"), u("/b")], "{found:#?}");
    let exact: Vec<&str> = found.iter().filter(|f| f.0 == "content_duplicate").map(|f| f.2.as_str()).collect();
    let head = format!("2 pages with the same main text; cluster {}", u("/a"));
    assert_eq!(exact, [head.as_str(), head.as_str()]);
    assert_eq!(urls("content_near_duplicate"), [u("/a"), u("/b"), u("/c"), u("/d")], "{found:#?}");
    let near = found.iter().find(|f| f.0 == "content_near_duplicate").expect("near");
    assert_eq!(near.2, format!("4 pages at least 90 % alike; cluster {}", u("/a")));
    assert_eq!(urls("pagination_broken"), [u("/list")]);
    assert!(found.iter().any(|f| f.2 == format!("next: {} answers 404", u("/list?page=2"))));

    // The report reads the clusters back whole.
    let summary = db.content_summary(SiteId(1)).expect("reads");
    let clusters: Vec<(&str, usize)> = summary.clusters.iter().map(|c| (c.code.as_str(), c.urls.len())).collect();
    assert_eq!(clusters, [("content_duplicate", 2), ("content_near_duplicate", 4)]);

    // Applied again (a replayed SiteDone): the same findings, not twice.
    let before = found.len();
    db.apply(&[Event::SiteDone { audit: AuditId(1), site: SiteId(1) }]).expect("applies again");
    let conn = rusqlite::Connection::open(db.path()).expect("opens");
    let after: i64 = conn.query_row("SELECT COUNT(*) FROM findings", [], |r| r.get(0)).expect("counts");
    assert_eq!(usize::try_from(after).expect("small"), before);
}

#[test]
fn the_audits_own_threshold_is_used() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut db = AuditDb::open(&dir.path().join("a.db")).expect("opens");
    // At 100 % only identical fingerprints are near-duplicates: a, b are exact (not near: one
    // text), c and d differ from a.
    let strict = audit_of(&mut db, r#"{"limits":{"content":{"near_duplicate_percent":100}}}"#);
    assert!(strict.iter().all(|f| f.0 != "content_near_duplicate"), "{strict:#?}");
    assert_eq!(strict.iter().filter(|f| f.0 == "content_duplicate").count(), 2);
    // A second audit in the same database with the default.
    let default = audit_of(&mut db, "{}");
    assert_eq!(default.iter().filter(|f| f.0 == "content_near_duplicate").count(), 4, "{default:#?}");
}
