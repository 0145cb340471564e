//! Findings read as issues (`store/src/issues.rs`) from a real database: groups per site and code,
//! one group's URLs page by page, answered pages, the previous audit of each start URL, and the
//! facts the batch overview groups sites by.

use shoal_shared::finding::{Code, Finding, Severity};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, PageRecord, UrlKind};
use shoal_shared::task::ProbeKind;
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, IssueCount};

fn page(ids: (AuditId, SiteId), url: &str, kind: UrlKind, status: Option<u16>) -> Event {
    Event::Page(Box::new(PageRecord {
        audit: ids.0,
        site: ids.1,
        url: url.to_owned(),
        kind,
        status,
        found_via: Discovery::Link,
        fetched_at: UnixMs(1_700_000_000_000),
        ..PageRecord::default()
    }))
}

fn finding(ids: (AuditId, SiteId), code: Code, url: &str, detail: &str) -> Event {
    Event::Finding(Finding::new(ids.0, ids.1, code, url, detail))
}

fn db() -> (tempfile::TempDir, AuditDb) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = AuditDb::open(&dir.path().join("a.db")).expect("open");
    (dir, db)
}

#[test]
fn findings_group_by_code_with_distinct_urls_and_page_in_url_order() {
    let (_dir, mut db) = db();
    let audit = db.create_audit("{}", UnixMs(1)).expect("audit");
    let a = db.add_site(audit, "https://a.test/").expect("site");
    let b = db.add_site(audit, "https://b.test/").expect("site");
    let mut events = vec![page((audit, a), "https://a.test/", UrlKind::Page, Some(200))];
    // Two invalid links on one URL: two findings, one URL.
    events.push(finding((audit, a), Code::InvalidLink, "https://a.test/", "http://[x"));
    events.push(finding((audit, a), Code::InvalidLink, "https://a.test/", "http://[y"));
    for i in (0..25).rev() {
        events.push(finding((audit, a), Code::TitleMissing, &format!("https://a.test/p{i:02}"), ""));
    }
    events.push(finding((audit, b), Code::HstsMissing, "https://b.test/", ""));
    db.apply(&events).expect("apply");

    let all = db.issue_counts(audit).expect("counts");
    let want = vec![
        IssueCount { site: a, code: "invalid_link".into(), severity: Severity::Notice, urls: 1, findings: 2 },
        IssueCount { site: a, code: "title_missing".into(), severity: Severity::Error, urls: 25, findings: 25 },
        IssueCount { site: b, code: "hsts_missing".into(), severity: Severity::Warning, urls: 1, findings: 1 },
    ];
    assert_eq!(all, want);
    assert_eq!(db.site_issue_counts(b).expect("one site"), want[2..].to_vec());

    let mut urls = Vec::new();
    db.for_each_issue_finding(a, "title_missing", 10, 10, |f| -> Result<(), shoal_store::DbError> {
        urls.push(f.url);
        Ok(())
    })
    .expect("page 2");
    let expect: Vec<String> = (10..20).map(|i| format!("https://a.test/p{i:02}")).collect();
    assert_eq!(urls, expect, "the second page of ten, in URL order");

    assert_eq!(db.site_answered_pages(a).expect("answered"), 1);
    assert_eq!(db.site_answered_pages(b).expect("answered"), 0);
    let answered = db.answered_pages(audit).expect("answered");
    assert_eq!((answered.get(&a), answered.get(&b)), (Some(&1), None));
}

#[test]
fn every_site_is_paired_with_the_latest_earlier_audit_of_its_start_url() {
    let (_dir, mut db) = db();
    let first = db.create_audit("{}", UnixMs(1)).expect("audit");
    let f_a = db.add_site(first, "https://a.test/").expect("site");
    let f_b = db.add_site(first, "https://b.test/").expect("site");
    let second = db.create_audit("{}", UnixMs(2)).expect("audit");
    let s_a1 = db.add_site(second, "https://a.test/").expect("site");
    let s_a2 = db.add_site(second, "https://a.test/").expect("site");
    let unrelated = db.create_audit("{}", UnixMs(3)).expect("audit");
    db.add_site(unrelated, "https://c.test/").expect("site");
    let third = db.create_audit("{}", UnixMs(4)).expect("audit");
    let t_a1 = db.add_site(third, "https://a.test/").expect("site");
    let t_a2 = db.add_site(third, "https://a.test/").expect("site");
    let t_a3 = db.add_site(third, "https://a.test/").expect("site");
    let t_b = db.add_site(third, "https://b.test/").expect("site");
    let t_new = db.add_site(third, "https://new.test/").expect("site");

    let prev = db.previous_sites(third).expect("pairs");
    let pair = |s: SiteId| prev.get(&s).map(|p| (p.audit, p.site));
    assert_eq!(pair(t_a1), Some((second, s_a1)), "first with first in the latest audit that has a.test");
    assert_eq!(pair(t_a2), Some((second, s_a2)));
    assert_eq!(pair(t_a3), None, "the latest audit with a.test has two of them, not three");
    assert_eq!(pair(t_b), Some((first, f_b)), "b.test skips the audits without it");
    assert_eq!(pair(t_new), None);
    let prev = db.previous_sites(second).expect("pairs");
    assert_eq!(prev.get(&s_a1).map(|p| p.site), Some(f_a));
    assert_eq!(prev.get(&s_a2).map(|p| p.site), None);
    for (site, p) in &prev {
        let one = db.site(*site).expect("site").expect("exists");
        let reader_pick = shoal_store::cursor::Reader::open(&db)
            .expect("reader")
            .previous_site(second, &one.start_url, 0)
            .expect("previous");
        assert_eq!(reader_pick.map(|r| r.site), Some(p.site), "the same rule as Reader::previous_site");
    }
}

#[test]
fn overview_facts_server_wordpress_and_shared_urls() {
    let (_dir, mut db) = db();
    let audit = db.create_audit("{}", UnixMs(1)).expect("audit");
    let a = db.add_site(audit, "https://a.test/").expect("site");
    let b = db.add_site(audit, "https://b.test/").expect("site");
    let c = db.add_site(audit, "https://c.test/").expect("site");
    let mut start_a = PageRecord {
        audit,
        site: a,
        url: "https://a.test/".into(),
        kind: UrlKind::Page,
        status: Some(200),
        found_via: Discovery::Start,
        ..PageRecord::default()
    };
    start_a.headers = vec![("content-type".into(), "text/html".into()), ("server".into(), " Apache/2.4.29 ".into())];
    let mut start_b = start_a.clone();
    start_b.site = b;
    start_b.url = "https://b.test/".into();
    start_b.headers = vec![("server".into(), "".into())];
    let cdn = "https://cdn.test/lib.js";
    let events = vec![
        Event::Page(Box::new(start_a)),
        Event::Page(Box::new(start_b)),
        page((audit, b), "https://b.test/wp-json/", UrlKind::Probe(ProbeKind::WpJson), Some(200)),
        page((audit, c), "https://c.test/llms.txt", UrlKind::Probe(ProbeKind::LlmsTxt), Some(200)),
        finding((audit, a), Code::BrokenExternalLink, cdn, "404"),
        finding((audit, c), Code::BrokenExternalLink, cdn, "404"),
        finding((audit, c), Code::BrokenExternalLink, "https://gone.test/", "dns"),
    ];
    db.apply(&events).expect("apply");

    assert_eq!(db.start_servers(audit).expect("servers"), vec![(a, "Apache/2.4.29".to_owned())]);
    assert_eq!(db.wordpress_sites(audit).expect("wordpress"), vec![b]);
    let urls = db.code_urls(audit, "broken_external_link").expect("urls");
    assert_eq!(urls, vec![(a, cdn.to_owned()), (c, cdn.to_owned()), (c, "https://gone.test/".to_owned())]);
}
