//! The engine reading back what it stored: an audit resumes with the options it was started with,
//! or ends `failed` when they cannot be read.

use super::*;
use shoal_shared::frontier::embedded::EmbeddedFrontier;

/// A database holding one running audit of one site whose options are `options_json`.
fn database(options_json: &str) -> (tempfile::TempDir, AuditDb, AuditId, SiteId) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut db = AuditDb::open(&dir.path().join("audit.db")).expect("db");
    let audit = db.create_audit(options_json, UnixMs(1)).expect("audit");
    let site = db.add_site(audit, "http://a.test/").expect("site");
    (dir, db, audit, site)
}

#[tokio::test]
async fn an_audit_whose_options_cannot_be_read_fails_on_resume_instead_of_using_the_defaults() {
    // Valid JSON, but not options: before, this resumed with the default limits.
    let (_dir, db, audit, site) = database(r#"{"limits":{"max_pages":"many"}}"#);
    let frontier = Arc::new(EmbeddedFrontier::new(Default::default()));
    let engine = Coordinator::new(db, Arc::clone(&frontier), EngineConfig::default(), "embedded").expect("engine");
    engine.recover().await.expect("recovery goes on with the other audits");
    let a = engine.read(move |db| db.audit(audit)).await.expect("read").expect("the audit");
    assert_eq!(a.status, AuditStatus::Failed);
    let reason = a.reason.unwrap_or_default();
    assert!(reason.contains("stored options could not be read"), "{reason}");
    assert!(engine.is_finished(audit));
    assert_eq!(frontier.progress_many(&[site]).await.expect("progress"), vec![None], "nothing was seeded");
}

#[tokio::test]
async fn options_stored_before_the_version_field_still_resume() {
    // What `start_run` wrote before options had a version (keys sorted by serde_json's `json!`).
    let limits = serde_json::to_string(&SiteLimits::default()).expect("json");
    let old = format!(
        r#"{{"custom":{{"extract":[],"search":[]}},"limits":{limits},"mode":"embedded","robots_token":"ShoalBot","starts":["http://a.test/"],"user_agent":"ShoalBot/1"}}"#
    );
    let (_dir, db, audit, site) = database(&old);
    let frontier = Arc::new(EmbeddedFrontier::new(Default::default()));
    let engine = Coordinator::new(db, Arc::clone(&frontier), EngineConfig::default(), "embedded").expect("engine");
    engine.recover().await.expect("recovers");
    let a = engine.read(move |db| db.audit(audit)).await.expect("read").expect("the audit");
    assert_eq!((a.status, a.reason), (AuditStatus::Running, None));
    assert!(frontier.progress_many(&[site]).await.expect("progress")[0].is_some(), "the site was seeded again");
}

#[tokio::test]
async fn an_audit_stores_versioned_options_it_can_read_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = AuditDb::open(&dir.path().join("audit.db")).expect("db");
    let frontier = Arc::new(EmbeddedFrontier::new(Default::default()));
    let engine = Coordinator::new(db, frontier, EngineConfig::default(), "embedded").expect("engine");
    let limits = SiteLimits { max_pages: 7, ..SiteLimits::default() };
    let start = NormalizedUrl::parse("http://a.test/").expect("url");
    let (audit, _) = engine.start(vec![start], limits.clone()).await.expect("start");
    let options = engine.read(move |db| db.audit_options(audit)).await.expect("the options read back");
    assert_eq!(
        (options.version, &options.limits, options.mode.as_deref()),
        (OPTIONS_VERSION, &limits, Some("embedded"))
    );
    assert_eq!(options.starts, ["http://a.test/"]);
}

/// Issue 40: with `--retain-audits 1` the end of an audit removes the older audits of its start
/// URLs, never a running one, and the file gives the space back once no audit runs.
#[tokio::test]
async fn an_audit_that_ends_removes_the_older_audits_the_retention_rule_lets_go() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("audit.db");
    let mut db = AuditDb::open(&path).expect("db");
    let mut old = Vec::new();
    for day in 1..=3 {
        let a = db.create_audit("{}", UnixMs(day)).expect("audit");
        let sites = db.add_sites(a, &["http://a.test/", "http://b.test/"]).expect("sites");
        let events: Vec<Event> = sites
            .iter()
            .flat_map(|s| (0..50).map(move |i| (*s, i)))
            .map(|(site, i)| {
                Event::Page(Box::new(shoal_shared::record::PageRecord {
                    audit: a,
                    site,
                    url: format!("http://a.test/{site}/{i}"),
                    title: Some("x".repeat(2000)),
                    ..Default::default()
                }))
            })
            .collect();
        db.apply(&events).expect("pages");
        db.finish_audit(a, AuditStatus::Done, UnixMs(day + 1)).expect("end");
        old.push(a);
    }
    // Another start URL's audit, still running: untouched whatever the rule.
    let running = db.create_audit("{}", UnixMs(4)).expect("audit");
    db.add_sites(running, &["http://c.test/"]).expect("site");
    let frontier = Arc::new(EmbeddedFrontier::new(Default::default()));
    let config = EngineConfig {
        retention: shoal_store::Retention { keep_last: std::num::NonZeroU32::new(1), max_age: None },
        ..EngineConfig::default()
    };
    let engine = Coordinator::new(db, frontier, config, "embedded").expect("engine");
    let start = NormalizedUrl::parse("http://a.test/").expect("url");
    let (latest, _) = engine.start(vec![start], SiteLimits::default()).await.expect("start");
    // The file and its write-ahead log together: what the disk holds.
    let len = |p: std::path::PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let size = |p: &std::path::Path| len(p.to_owned()) + len(p.with_extension("db-wal"));
    engine.end(latest, AuditStatus::Done).await.expect("end");
    let ids = |v: Vec<AuditSummary>| v.into_iter().map(|a| a.id).collect::<Vec<_>>();
    let left = ids(engine.read(|db| db.audits()).await.expect("list"));
    // a.test's latest is `latest`; b.test's latest is old[2], which stays for it.
    assert_eq!(left, vec![old[2], running, latest]);
    // While an audit runs, the free pages stay for it to fill.
    let space = engine.read(|db| db.space()).await.expect("space");
    assert!(space.free_pages > 50, "{space:?}");
    // The last running audit ends: nothing more to remove, and the space goes back.
    let before = size(&path);
    engine.end(running, AuditStatus::Cancelled).await.expect("end");
    assert_eq!(ids(engine.read(|db| db.audits()).await.expect("list")), vec![old[2], running, latest]);
    assert_eq!(engine.read(|db| db.space()).await.expect("space").free_pages, 0);
    assert!(size(&path) < before, "the file shrank: {} -> {}", before, size(&path));
    let pass = engine.prune_now(UnixMs::from(std::time::SystemTime::now())).await.expect("pass");
    assert_eq!(pass, RetentionPass::default(), "nothing left to do");
}
