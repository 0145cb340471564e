//! Leases that heartbeat and URLs that cannot poison an audit (issue 11 items 2 and 3), end to end:
//! a fetch slower than its lease keeps it and is made once; a URL whose processing kills its
//! worker process is given up after three expired leases and the audit ends; a task that never
//! ends is dropped, its lease left to expire, and given up the same way.

use crate::db;
use crate::distributed::SERIAL;
use crate::procs::{self, Coordinator, Proc};
use serde_json::json;
use shoal_coordinator::{AuditSettings, Coordinator as Engine, EngineConfig};
use shoal_shared::frontier::FrontierSettings;
use shoal_shared::frontier::embedded::EmbeddedFrontier;
use shoal_shared::ids::WorkerId;
use shoal_shared::task::SiteLimits;
use shoal_shared::url::NormalizedUrl;
use shoal_store::AuditDb;
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::{Route, Site, TestServer};
use shoal_worker::crawl::{CrawlSettings, Crawler};
use shoal_worker::fetch::{FetchSettings, Fetcher};
use shoal_worker::run::{WorkerSettings, run};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const PAGE: &str = "<!doctype html><html lang=\"en\"><head><title>Page</title></head><body><h1>P</h1></body></html>";

fn home(links: &[&str]) -> String {
    let a: String = links.iter().map(|l| format!("<a href=\"{l}\">{l}</a> ")).collect();
    format!("<!doctype html><html lang=\"en\"><head><title>Home</title></head><body><h1>Home</h1>{a}</body></html>")
}

/// The findings of `code` in the database, as (url, detail).
fn findings_of(db: &std::path::Path, code: &str) -> Vec<(String, String)> {
    db::findings(db).into_iter().filter(|(c, _, _)| c == code).map(|(_, u, d)| (u, d)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_slower_than_its_lease_keeps_it_and_is_made_once() {
    let _serial = SERIAL.lock().await;
    let host = "slowlease.test";
    // 12 s: more than two lease times (5 s) of the test coordinator.
    let server = TestServer::start(vec![
        Site::new(host)
            .page("/", &home(&["/slow", "/quick"]))
            .route("/slow", Route::html(PAGE).delayed(Duration::from_secs(12)))
            .page("/quick", PAGE),
    ])
    .await
    .expect("test server starts");
    let redis = RedisServer::start().expect("redis-server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("audit.db");
    let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), "slowlease", &db_path, &[]).await;
    let hosts = vec![host.to_owned()];
    let workers: Vec<Proc> = (0..2)
        .map(|i| procs::worker_with_timeout(dir.path(), &format!("w{i}"), &redis.url(), "slowlease", &hosts, 2, 20))
        .collect();
    let audit = coord.submit(&[server.url(host, "/")], json!({"gap_ms": 0})).await;
    let done = coord.wait_finished(audit, Duration::from_secs(60)).await;
    let log = server.shutdown().await;
    let (view, _) = done.unwrap_or_else(|e| panic!("{e}\n{}", procs::tails(workers.iter().chain([&coord.proc]))));
    assert_eq!(view["status"], "done", "{view}");
    assert_eq!(
        log.count(host, "/slow"),
        1,
        "the slow page was fetched once, not again by a second worker\n{}",
        log.dump()
    );
    let pages = db::pages(&db_path);
    let slow = pages.iter().find(|p| p.0.ends_with("/slow")).unwrap_or_else(|| panic!("no /slow row: {pages:?}"));
    assert_eq!(slow.2, Some(200), "stored with its answer: {slow:?}");
    assert!(findings_of(&db_path, "fetch_abandoned").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_that_kills_its_worker_is_given_up_after_three_expired_leases() {
    let _serial = SERIAL.lock().await;
    let host = "poison.test";
    let poison = format!("{}/x", shoal_worker::fault::ABORT);
    let server = TestServer::start(vec![
        Site::new(host).page("/", &home(&[&poison, "/fine"])).page("/fine", PAGE).page(&poison, PAGE),
    ])
    .await
    .expect("test server starts");
    let redis = RedisServer::start().expect("redis-server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("audit.db");
    let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), "poison", &db_path, &[]).await;
    let hosts = vec![host.to_owned()];
    // One fetch at a time, so that only the poisoned URL is in flight when the worker dies.
    // A worker that obeys the fault paths (no `shoal` binary does: see tests/tests/it/faults.rs).
    let start_worker = || procs::fault_worker(dir.path(), "w", &redis.url(), "poison", &hosts, 1);
    let mut w = start_worker();
    let audit = coord.submit(&[server.url(host, "/")], json!({"gap_ms": 0})).await;
    let (mut deaths, until) = (0, Instant::now() + Duration::from_secs(90));
    let view = loop {
        assert!(Instant::now() < until, "audit not done in 90 s after {deaths} deaths\n{}", w.tail(40));
        if w.exited().is_some() {
            deaths += 1;
            assert!(deaths <= 4, "the worker keeps dying on the same URL\n{}", w.tail(40));
            w = start_worker();
        }
        let v = coord.status(audit).await.expect("status");
        if v["status"] != "running" {
            break v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let log = server.shutdown().await;
    assert_eq!(view["status"], "done", "{view}");
    assert_eq!(deaths, 3, "three leases expired with the worker, the fourth gave the URL up");
    assert_eq!(log.count(host, &poison), 0, "the poisoned URL never reached the server");
    assert_eq!(log.count(host, "/fine"), 1, "the rest of the site was audited");
    let abandoned = findings_of(&db_path, "fetch_abandoned");
    assert_eq!(abandoned.len(), 1, "{abandoned:?}");
    assert!(abandoned[0].0.ends_with(&poison) && abandoned[0].1.starts_with("3 leases"), "{abandoned:?}");
    let rows = db::pages(&db_path);
    let row = rows.iter().find(|p| p.0.ends_with(&poison)).unwrap_or_else(|| panic!("no row: {rows:?}"));
    assert_eq!(row.3.as_deref(), Some("abandoned"), "{row:?}");
}

/// In one process, on the embedded frontier, with a processing limit of 1 s and 1 s leases, so
/// that three expiries take seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_never_ends_is_dropped_and_given_up() {
    let host = "hang.test";
    let hang = format!("{}/forever", shoal_worker::fault::HANG);
    let server = TestServer::start(vec![
        Site::new(host).page("/", &home(&[&hang, "/fine"])).page("/fine", PAGE).page(&hang, PAGE),
    ])
    .await
    .expect("test server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("audit.db");
    let lease_ttl = Duration::from_secs(1);
    let frontier_settings = FrontierSettings { lease_ttl_ms: 1_000, ..FrontierSettings::default() };
    let fetch = FetchSettings {
        allow_private: true,
        no_dns: true,
        resolve: [(host.to_owned(), std::net::IpAddr::from([127, 0, 0, 1]))].into(),
        ..FetchSettings::default()
    };
    let pace = shoal_shared::pace::PaceLimits::new(4, Duration::ZERO).expect("valid pace");
    let limits = SiteLimits { pace, ..SiteLimits::default() };
    let config = EngineConfig {
        defaults: AuditSettings { limits: limits.clone(), ..AuditSettings::default() },
        frontier: frontier_settings,
        max_active_sites: shoal_coordinator::admission::DEFAULT_MAX_ACTIVE_SITES,
        ..EngineConfig::default()
    };
    let frontier = Arc::new(EmbeddedFrontier::new(frontier_settings));
    let engine = Arc::new(
        Engine::new(AuditDb::open(&db_path).expect("db"), Arc::clone(&frontier), config, "embedded").expect("engine"),
    );
    // The fault paths are obeyed only when the crawler's settings say so (no flag can).
    let crawl = CrawlSettings { inject_faults: true, ..CrawlSettings::default() };
    let crawler = Arc::new(Crawler::new(Arc::clone(&frontier), Fetcher::new(fetch).expect("fetcher"), crawl));
    let stop = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(Arc::clone(&engine).run(stop.clone()));
    let mut settings = WorkerSettings::new(WorkerId("w".into()), 4, lease_ttl);
    settings.max_processing = Duration::from_secs(1);
    let worker_stop = stop.clone();
    tasks.spawn(async move {
        let _ = run(crawler, settings, worker_stop).await;
    });
    let start = NormalizedUrl::parse(&server.url(host, "/")).expect("url");
    let (audit, _) = engine.start(vec![start], limits).await.expect("audit starts");
    let finished = tokio::time::timeout(Duration::from_secs(60), engine.finished(audit)).await;
    stop.cancel();
    while tasks.join_next().await.is_some() {}
    let log = server.shutdown().await;
    assert!(finished.is_ok(), "the audit did not end within 60 s");
    let abandoned = findings_of(&db_path, "fetch_abandoned");
    assert_eq!(abandoned.len(), 1, "{abandoned:?}");
    assert!(abandoned[0].0.ends_with(&hang) && abandoned[0].1.starts_with("3 leases"), "{abandoned:?}");
    assert_eq!(log.count(host, &hang), 0);
    assert_eq!(log.count(host, "/fine"), 1);
}
