//! No `shoal` binary lets a website kill a worker (issue 36): the fault-injection paths
//! (`/__shoal_fault/abort`, `panic`, `hang`) are ordinary pages to the real program, although the
//! program these tests run is built with the `fault-injection` feature unified in (this test crate
//! turns it on, so `cargo test` and `cargo build --workspace` compile the hooks into `shoal`). The
//! hooks obey only `CrawlSettings::inject_faults`, which no flag, config key or environment
//! variable sets; the tests of faults turn it on in their own code (`procs::fault_worker`,
//! `common::audit_with_faults`, the embedded crawler of `leases.rs`).

use crate::db;
use crate::distributed::SERIAL;
use crate::procs::{self, Coordinator, Proc};
use serde_json::json;
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::{Site, TestServer};
use shoal_worker::fault::{ABORT, HANG, PANIC};
use std::path::Path;
use std::time::Duration;

const PAGE: &str = "<!doctype html><html lang=\"en\"><head><title>Page</title></head><body><h1>P</h1></body></html>";

/// The fault paths of a site: one URL under each.
fn fault_paths() -> [String; 3] {
    [format!("{ABORT}/x"), format!("{PANIC}/x"), format!("{HANG}/x")]
}

/// A site whose start page links to every fault path, each an ordinary page.
fn fault_site(host: &str) -> Site {
    let paths = fault_paths();
    let links: String = paths.iter().map(|p| format!("<a href=\"{p}\">{p}</a> ")).collect();
    let home = format!(
        "<!doctype html><html lang=\"en\"><head><title>Home</title></head><body><h1>Home</h1>{links}</body></html>"
    );
    paths.iter().fold(Site::new(host).page("/", &home), |site, p| site.page(p, PAGE))
}

/// Whether the program at `path` contains the fault hooks' code: its path constant is compiled in
/// only with the `fault-injection` feature. Checked so that these tests cannot pass merely because
/// the feature was left out of the build.
fn has_fault_hooks(path: &Path) -> bool {
    let binary = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let needle = ABORT.as_bytes();
    binary.windows(needle.len()).any(|w| w == needle)
}

/// Asserts that each fault path was fetched once, as a page, and that nothing was given up.
fn assert_fetched_as_pages(log: &shoal_tests::log::RequestLog, host: &str, db_path: &Path) {
    for p in fault_paths() {
        assert_eq!(log.count(host, &p), 1, "{p} fetched once, as any page\n{}", log.dump());
    }
    let pages = db::pages(db_path);
    for p in fault_paths() {
        let row = pages.iter().find(|r| r.0.ends_with(&p)).unwrap_or_else(|| panic!("no row for {p}: {pages:?}"));
        assert_eq!((row.2, row.3.as_deref()), (Some(200), None), "{row:?}");
    }
    let abandoned: Vec<_> = db::findings(db_path).into_iter().filter(|(c, _, _)| c == "fetch_abandoned").collect();
    assert!(abandoned.is_empty(), "{abandoned:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_website_cannot_kill_a_shoal_worker_through_the_fault_paths() {
    let _serial = SERIAL.lock().await;
    assert!(has_fault_hooks(&procs::shoal_bin()), "the binary under test should have the hooks compiled in");
    let host = "faultpaths.test";
    let server = TestServer::start(vec![fault_site(host)]).await.expect("test server starts");
    let redis = RedisServer::start().expect("redis-server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("audit.db");
    let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), "faultpaths", &db_path, &[]).await;
    // The real `shoal worker`, one fetch at a time: were the hooks live, the abort would kill it.
    let mut worker: Proc = procs::worker(dir.path(), "w", &redis.url(), "faultpaths", &[host.to_owned()], 1);
    let audit = coord.submit(&[server.url(host, "/")], json!({"gap_ms": 0})).await;
    let done = coord.wait_finished(audit, Duration::from_secs(60)).await;
    let exited = worker.exited();
    let logs = procs::tails([&coord.proc, &worker]);
    let log = server.shutdown().await;
    let (view, _) = done.unwrap_or_else(|e| panic!("{e}\n{logs}"));
    assert_eq!(exited, None, "the worker died\n{logs}");
    assert_eq!(view["status"], "done", "{view}");
    assert_fetched_as_pages(&log, host, &db_path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_website_cannot_kill_shoal_audit_through_the_fault_paths() {
    assert!(has_fault_hooks(&procs::shoal_bin()), "the binary under test should have the hooks compiled in");
    let host = "faultaudit.test";
    let server = TestServer::start(vec![fault_site(host)]).await.expect("test server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("audit.db");
    let args: Vec<String> = [
        "audit",
        &server.url(host, "/"),
        "--db",
        &db_path.display().to_string(),
        "--allow-private",
        "--no-dns",
        "--no-progress",
        "--gap-ms",
        "0",
        "--resolve",
        &server.resolve_arg(host),
    ]
    .map(str::to_owned)
    .to_vec();
    let mut audit = Proc::spawn(dir.path(), "audit", &args);
    let status = audit.wait_exit(Duration::from_secs(60)).await;
    let log = server.shutdown().await;
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{status:?}\n{}", audit.tail(40));
    assert_fetched_as_pages(&log, host, &db_path);
}
