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

/// Polls `f` until it holds, for at most 10 s.
async fn eventually(what: &str, mut f: impl AsyncFnMut() -> bool) {
    for _ in 0..500 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what} did not happen within 10 s");
}

/// Issue 40: with `--retain-audits 1` the engine's loops remove, at start and whenever an audit
/// ends, the older audits of its start URLs, never a running one; the file gives the space back
/// once no audit runs.
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
    let engine = Arc::new(Coordinator::new(db, frontier, config, "embedded").expect("engine"));
    let starts = ["http://a.test/", "http://b.test/"].map(|u| NormalizedUrl::parse(u).expect("url"));
    let (latest, _) = engine.start(starts.to_vec(), SiteLimits::default()).await.expect("start");
    let stop = CancellationToken::new();
    let mut loops = JoinSet::new();
    loops.spawn(Arc::clone(&engine).run(stop.clone()));
    let audits =
        async || engine.read(|db| db.audits()).await.expect("list").into_iter().map(|a| a.id).collect::<Vec<_>>();
    // At start: old[2] is the latest ended audit of both start URLs; the one running is not counted.
    eventually("the pass at start", async || audits().await == vec![old[2], running, latest]).await;
    // While audits run, the free pages stay for them to fill.
    let space = engine.read(|db| db.space()).await.expect("space");
    assert!(space.free_pages > 50, "{space:?}");
    engine.end(latest, AuditStatus::Done).await.expect("end");
    eventually("the pass after the end", async || audits().await == vec![running, latest]).await;
    // The last running audit ends: nothing more to remove, and the space goes back.
    let len = |p: std::path::PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let size = |p: &std::path::Path| len(p.to_owned()) + len(p.with_extension("db-wal"));
    let before = size(&path);
    engine.end(running, AuditStatus::Cancelled).await.expect("end");
    eventually("the space given back", async || engine.read(|db| db.space()).await.expect("space").free_pages == 0)
        .await;
    assert_eq!(audits().await, vec![running, latest]);
    eventually("the file shrinking", async || size(&path) < before).await;
    let pass = engine.prune_now(UnixMs::from(std::time::SystemTime::now()), &stop).await.expect("pass");
    assert_eq!(pass, RetentionPass::default(), "nothing left to do");
    stop.cancel();
    while loops.join_next().await.is_some() {}
}
