//! The read side keeps the write side's types (issue 39, part 3): statuses, URL and link kinds,
//! fetch failures, discoveries and severities come back as the enums they were written from; a
//! stored spelling this build does not know is an error naming the row and the value, never a
//! silent default; an audit's options read back typed, old records included.

use shoal_shared::finding::{Code, Finding, Severity};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, FetchFailure, LinkKind, LinkRecord, PageRecord, UrlKind};
use shoal_shared::task::ProbeKind;
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, AuditStatus, DbError, OptionsError, SiteStatus};
use std::path::Path;

const URL: &str = "https://a.test/x";

fn database(dir: &Path, options: &str) -> (AuditDb, AuditId, SiteId) {
    let mut db = AuditDb::open(&dir.join("audit.db")).expect("database opens");
    let audit = db.create_audit(options, UnixMs(1)).expect("audit");
    let site = db.add_site(audit, "https://a.test/").expect("site");
    (db, audit, site)
}

fn record(audit: AuditId, site: SiteId) -> PageRecord {
    PageRecord {
        audit,
        site,
        url: URL.to_owned(),
        kind: UrlKind::Probe(ProbeKind::SecurityTxt),
        status: Some(200),
        error: Some(FetchFailure::BodyTooLarge),
        found_via: Discovery::Sitemap,
        found_from: Some("https://a.test/sitemap.xml".to_owned()),
        links: vec![LinkRecord {
            url: "https://a.test/y".to_owned(),
            kind: LinkKind::CssImage,
            nofollow: false,
            internal: true,
            text: None,
        }],
        ..PageRecord::default()
    }
}

/// `sql` run on the file by another connection, with CHECK constraints off (as a hand edit, or a
/// newer Shoal's schema, could leave it).
fn edit(dir: &Path, sql: &str) {
    let conn = rusqlite::Connection::open(dir.join("audit.db")).expect("open");
    conn.execute_batch(&format!("PRAGMA ignore_check_constraints = ON; {sql}")).expect("edit");
}

fn corrupt_detail(e: DbError) -> (&'static str, String) {
    match e {
        DbError::Corrupt { what, detail, .. } => (what, detail),
        other => panic!("expected a corrupt value, got {other:?}"),
    }
}

#[test]
fn rows_read_back_as_the_types_they_were_written_from() {
    let dir = tempfile::tempdir().expect("tmp");
    let (mut db, audit, site) = database(dir.path(), "{}");
    let finding = Finding::new(audit, site, Code::TitleMissing, URL, "");
    db.apply_at(&[Event::Page(Box::new(record(audit, site))), Event::Finding(finding)], UnixMs(2)).expect("apply");
    let p = db.page(site, URL).expect("read").expect("the page");
    assert_eq!(
        (p.kind, p.error, p.found_via),
        (UrlKind::Probe(ProbeKind::SecurityTxt), Some(FetchFailure::BodyTooLarge), Discovery::Sitemap)
    );
    let links = db.links_from(site, URL).expect("links");
    assert_eq!(links.iter().map(|l| l.kind).collect::<Vec<_>>(), [LinkKind::CssImage]);
    let mut severities = Vec::new();
    db.for_each_finding(site, |f| -> Result<(), DbError> {
        severities.push(f.severity);
        Ok(())
    })
    .expect("findings");
    assert_eq!(severities, [Severity::Error]);
    assert_eq!(db.audit(audit).expect("read").expect("audit").status, AuditStatus::Running);
    assert_eq!(db.site(site).expect("read").expect("site").status, SiteStatus::Running);
}

#[test]
fn an_unknown_stored_spelling_is_an_error_naming_the_row_and_the_value() {
    let dir = tempfile::tempdir().expect("tmp");
    let (mut db, audit, site) = database(dir.path(), "{}");
    db.apply_at(&[Event::Page(Box::new(record(audit, site)))], UnixMs(2)).expect("apply");
    let page_edits = [
        ("UPDATE pages SET kind = 'gopher'", "pages.kind", "gopher"),
        ("UPDATE pages SET error = 'eaten_by_grue'", "pages.error", "eaten_by_grue"),
        ("UPDATE pages SET found_via = 'rumour'", "pages.found_via", "rumour"),
    ];
    for (sql, what, value) in page_edits {
        let dir = tempfile::tempdir().expect("tmp");
        let (mut db, audit, site) = database(dir.path(), "{}");
        db.apply_at(&[Event::Page(Box::new(record(audit, site)))], UnixMs(2)).expect("apply");
        edit(dir.path(), sql);
        let (w, detail) = corrupt_detail(db.page(site, URL).expect_err(sql));
        assert_eq!(w, what);
        assert!(detail.contains(URL) && detail.contains(value), "{detail}");
        let e = db.for_each_page(site, |_| -> Result<(), DbError> { Ok(()) }).expect_err("the walk stops");
        assert_eq!(corrupt_detail(e).0, what);
    }

    edit(dir.path(), "UPDATE links SET kind = 'telepathy'");
    let (what, detail) = corrupt_detail(db.links_from(site, URL).expect_err("link kind"));
    assert_eq!(what, "links.kind");
    assert!(detail.contains(URL) && detail.contains("telepathy"), "{detail}");

    edit(dir.path(), "UPDATE sites SET status = 'paused'");
    let (what, detail) = corrupt_detail(db.site(site).expect_err("site status"));
    assert_eq!(what, "sites.status");
    assert!(detail.contains(&format!("site {site}")) && detail.contains("paused"), "{detail}");

    edit(dir.path(), "UPDATE audits SET status = 'paused'");
    let (what, detail) = corrupt_detail(db.audits().expect_err("audit status"));
    assert_eq!(what, "audits.status");
    assert!(detail.contains(&format!("audit {audit}")) && detail.contains("paused"), "{detail}");
}

#[test]
fn an_unknown_severity_is_an_error_not_a_notice() {
    let dir = tempfile::tempdir().expect("tmp");
    let (mut db, audit, site) = database(dir.path(), "{}");
    let finding = Finding::new(audit, site, Code::TitleMissing, URL, "");
    db.apply_at(&[Event::Finding(finding)], UnixMs(2)).expect("apply");
    edit(dir.path(), "UPDATE findings SET severity = 'catastrophe'");
    let e = db.for_each_finding(site, |_| -> Result<(), DbError> { Ok(()) }).expect_err("finding severity");
    let (what, detail) = corrupt_detail(e);
    assert_eq!(what, "findings.severity");
    assert!(detail.contains("title_missing") && detail.contains("catastrophe"), "{detail}");
    let (what, _) = corrupt_detail(db.site_stats(site).expect_err("counted by severity"));
    assert_eq!(what, "findings.severity");
}

#[test]
fn audit_options_read_back_typed_old_records_included() {
    let limits = serde_json::to_string(&shoal_shared::task::SiteLimits::default()).expect("json");
    // As `Coordinator::start_run` wrote them before the version field (keys sorted by `json!`).
    let old = format!(
        r#"{{"custom":{{"extract":[],"search":[]}},"limits":{limits},"mode":"distributed","robots_token":"ShoalBot","starts":["https://a.test/"],"user_agent":"ShoalBot/1"}}"#
    );
    let dir = tempfile::tempdir().expect("tmp");
    let (db, audit, _) = database(dir.path(), &old);
    let o = db.audit_options(audit).expect("an old record reads");
    assert_eq!((o.version, o.mode.as_deref(), o.starts.len()), (0, Some("distributed"), 1));

    let dir = tempfile::tempdir().expect("tmp");
    let (db, audit, _) = database(dir.path(), r#"{"max_pages":500}"#);
    match db.audit_options(audit) {
        Err(DbError::UnreadableOptions { audit: a, source: OptionsError::Parse(_), .. }) => assert_eq!(a, audit),
        other => panic!("expected unreadable options, got {other:?}"),
    }
    assert!(matches!(db.audit_options(AuditId(99)), Err(DbError::UnknownAudit { .. })));
}
