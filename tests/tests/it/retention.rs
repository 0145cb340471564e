//! Retention end to end (issue 40): a real `shoal coordinator` with `--retain-audits 1`, a private
//! `redis-server` and a real worker audit one test site twice; when the second audit ends the
//! coordinator removes the first by itself. `shoal prune`, another process, then runs against the
//! database the coordinator holds open: it works beside it, removes nothing the rule keeps, and the
//! coordinator goes on writing a third audit to the same file afterwards.

use crate::common::two_page_site as site;
use crate::distributed::SERIAL;
use crate::procs::{Coordinator, shoal_command, tails, worker};
use reqwest::Method;
use serde_json::json;
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::TestServer;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);

/// `shoal prune ARGS` as its own process: exit code, stdout, stderr.
fn prune(args: &[&str]) -> (Option<i32>, String, String) {
    let out = shoal_command().arg("prune").args(args).output().expect("shoal runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn exists(coord: &Coordinator, audit: u64) -> bool {
    let (status, v) = coord.api(Method::GET, &format!("/v1/audits/{audit}"), None).await.expect("an answer");
    assert!(status == 200 || status == 404, "{status}: {v}");
    status == 200
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_keeping_one_audit_removes_the_older_one_and_shoal_prune_works_beside_it() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let redis = RedisServer::start().expect("redis-server");
    let server = TestServer::start(vec![site("keep.test")]).await.expect("test site");
    let db = dir.path().join("shoal.db");
    let coord =
        Coordinator::start(dir.path(), "coordinator", &redis.url(), "retain", &db, &["--retain-audits", "1"]).await;
    let w = worker(dir.path(), "w1", &redis.url(), "retain", &["keep.test".to_owned()], 4);
    let start = server.url("keep.test", "/");
    let logs = || tails([&coord.proc, &w]);

    let first = coord.submit(std::slice::from_ref(&start), json!({"gap_ms": 0})).await;
    coord.wait_finished(first, DEADLINE).await.unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    assert!(exists(&coord, first).await, "the only audit of its start URL stays");
    let second = coord.submit(std::slice::from_ref(&start), json!({"gap_ms": 0})).await;
    coord.wait_finished(second, DEADLINE).await.unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    let until = Instant::now() + Duration::from_secs(30);
    while exists(&coord, first).await {
        assert!(Instant::now() < until, "the first audit was not removed\n{}", logs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(exists(&coord, second).await);
    assert!(
        coord.proc.stderr().contains("audit removed (retention)")
            || coord.proc.stdout().contains("audit removed (retention)"),
        "{}",
        logs()
    );

    // `shoal prune` beside the running coordinator, on the file it holds open.
    let db_arg = db.to_str().expect("utf-8");
    let (code, out, err) = prune(&["--db", db_arg, "--keep-last", "1", "--dry-run"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("0 audit(s) would be removed"), "{out}");
    let (code, out, err) = prune(&["--db", db_arg, "--keep-last", "1", "--older-than", "30"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("0 audit(s) removed"), "{out}");
    assert!(exists(&coord, second).await, "the rule keeps the latest audit");

    // The coordinator goes on writing to the same file; the second audit's report still reads.
    let third = coord.submit(std::slice::from_ref(&start), json!({"gap_ms": 0})).await;
    coord.wait_finished(third, DEADLINE).await.unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    let until = Instant::now() + Duration::from_secs(30);
    while exists(&coord, second).await {
        assert!(Instant::now() < until, "the second audit was not removed\n{}", logs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, report) =
        coord.api(Method::GET, &format!("/v1/audits/{third}/report?format=json"), None).await.expect("report");
    assert_eq!(status, 200, "{report}");
    assert!(report.to_string().contains("keep.test"), "{report}");
}
