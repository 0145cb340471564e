//! A shared fleet and the address guard: every worker judges every address it would connect to
//! with its own guard, including the server IP the frontier pinned for a host, which another worker
//! chose (issue 9: a worker without `--allow-private` fetched URLs from a loopback address after a
//! worker with `--allow-private` pinned it).
//!
//! Real processes: a private `redis-server`, a `shoal coordinator`, one worker started with
//! `--allow-private` and one without, sharing the frontier. Asserted from the test server's
//! request log (which worker sent what, by user agent) and from the audit database.

use crate::db::{self, findings};
use crate::distributed::SERIAL;
use crate::procs::{Coordinator, agent_of, ensure_built, guarded_worker, tails, worker};
use serde_json::json;
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::{Site, TestServer};
use std::time::{Duration, Instant};

/// How long the worker with `--allow-private` may take to resolve, pin and start the crawl.
const PIN_DEADLINE: Duration = Duration::from_secs(30);
/// How long the audit may take once the guarded worker is alone (leases of the killed worker come
/// back after the 5 s lease time).
const FINISH_DEADLINE: Duration = Duration::from_secs(60);

#[expect(clippy::print_stderr, reason = "timings of the run, shown with --nocapture")]
fn note(msg: &str) {
    eprintln!("[fleet_guard] {msg}");
}

/// Page rows recorded with this error.
fn pages_with_error(db: &std::path::Path, error: &str) -> Vec<String> {
    db::query(db, "SELECT url FROM pages WHERE error = ?1 ORDER BY url", [error], |r| r.get(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_without_allow_private_refuses_an_address_pinned_by_another_worker() {
    let _serial = SERIAL.lock().await;
    ensure_built().await;
    let host = "pinned.test";
    let server = TestServer::start(vec![Site::generated(host, 12, 3)]).await.expect("server starts");
    let redis = RedisServer::start().expect("redis-server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    let ns = "pinned";
    let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), ns, &db, &[]).await;
    // The open worker resolves the host to 127.0.0.1 (allowed for it), so the frontier pins that.
    let mut open = worker(dir.path(), "open", &redis.url(), ns, &[host.to_owned()], 1);
    let root = server.url(host, "/");
    let audit = coord.submit(std::slice::from_ref(&root), json!({"gap_ms": 500, "in_flight": 1})).await;

    // Once the open worker has fetched robots.txt and started on the pages, the address is pinned.
    let until = Instant::now() + PIN_DEADLINE;
    while !server.log().all().iter().any(|r| r.host == host && r.path == "/") {
        assert!(Instant::now() < until, "the open worker never started the crawl\n{}", tails([&open, &coord.proc]));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The guarded worker joins the fleet, and the open one leaves: what is left of the crawl
    // (including the leases the open worker held, once they expire) is the guarded worker's.
    let guarded = guarded_worker(dir.path(), "guarded", &redis.url(), ns, 2);
    open.kill();
    let alone = Instant::now();
    note(&format!("the open worker pinned the host and was killed after {:?}", PIN_DEADLINE - (until - alone)));

    let finished = coord.wait_finished(audit, FINISH_DEADLINE).await;
    let log = server.shutdown().await;
    let logs = tails([&open, &guarded, &coord.proc]);
    let (view, _) = finished.unwrap_or_else(|e| panic!("{e}\n{logs}"));
    note(&format!("the guarded worker finished the audit {:?} later", alone.elapsed()));
    assert_eq!(view["status"], "done", "{view}\n{logs}");

    let guarded_agent = agent_of("guarded");
    let by_guarded: Vec<String> = log
        .all()
        .iter()
        .filter(|r| r.header("user-agent") == Some(guarded_agent.as_str()))
        .map(|r| format!("{} {}{}", r.method, r.host, r.path))
        .collect();
    assert!(by_guarded.is_empty(), "the worker without --allow-private connected to 127.0.0.1: {by_guarded:?}\n{logs}");
    let open_agent = agent_of("open");
    assert!(
        log.all().iter().all(|r| r.header("user-agent") == Some(open_agent.as_str())),
        "every request came from the open worker\n{}",
        log.dump()
    );

    // The refusal is a finding for the host, from the guarded worker (the open one allows private
    // addresses, so it cannot have raised it), and the URLs it refused are recorded, not lost.
    let found = findings(&db);
    let refusal = found.iter().find(|(code, url, detail)| {
        code == "private_address" && *url == root && detail.contains("pinned by the frontier to 127.0.0.1")
    });
    assert!(refusal.is_some(), "no private_address finding for the pinned host: {found:#?}\n{logs}");
    let refused = pages_with_error(&db, "private_address");
    assert!(!refused.is_empty(), "the refused URLs are recorded with their error\n{logs}");
    assert!(guarded.stderr().contains("refused an address pinned by the frontier"), "{logs}");
}
