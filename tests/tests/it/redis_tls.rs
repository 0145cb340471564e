//! Issue 40: Redis over TLS with a password. A coordinator and a worker run an audit through a
//! redis-server that takes TCP connections only over TLS and commands only after `AUTH`
//! (`rediss://:PASSWORD@HOST:PORT/0`, the server's certificate from a private CA given with
//! `--redis-ca`); a wrong password and a certificate the worker does not trust are refused at
//! start, with a message that says so.

use crate::procs::{Coordinator, Proc, TAIL_LINES, ensure_built, tails, worker_args};
use serde_json::json;
use shoal_test_support::redis::RedisServer;
use shoal_test_support::testsite::{Site, TestCa, TestServer};
use std::path::Path;
use std::time::Duration;

const PASSWORD: &str = "redis-test-password-0123";

/// `shoal worker` for `host` on the Redis at `url`, with `extra` flags.
fn worker(dir: &Path, id: &str, url: &str, host: &str, extra: &[&str]) -> Proc {
    let mut args = worker_args(id, url, "tls", 4, 2);
    args.extend(["--allow-private".into(), "--resolve".into(), format!("{host}=127.0.0.1")]);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    Proc::spawn(dir, id, &args)
}

/// Waits for a worker that must not start, and returns what it said.
async fn refused(mut w: Proc) -> String {
    let status = w.wait_exit(Duration::from_secs(30)).await;
    let said = w.tail(TAIL_LINES);
    assert!(status.is_some_and(|s| !s.success()), "{} was not refused: {status:?}\n{said}", w.name());
    said
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_runs_through_a_tls_redis_with_a_password() {
    ensure_built().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = TestCa::new("Shoal Redis Test CA");
    let leaf = ca.leaf(&["127.0.0.1"]).build();
    let cert = dir.path().join("redis.pem");
    let key = dir.path().join("redis.key");
    std::fs::write(&cert, leaf.pem()).expect("write the certificate");
    std::fs::write(&key, leaf.key_pem().expect("a key made here")).expect("write the key");
    let ca_file = ca.write_pem(dir.path(), "ca.pem").expect("write the CA");
    let ca_arg = ca_file.display().to_string();
    let redis = RedisServer::start_tls(&cert, &key, PASSWORD).expect("redis-server with TLS (Debian's has it)");
    let url = redis.tls_url().expect("a TLS server");

    let host = "tls-redis.test";
    let server = TestServer::start(vec![Site::generated(host, 12, 3)]).await.expect("server starts");
    let db = dir.path().join("audit.db");
    let coord = Coordinator::start(dir.path(), "coordinator", &url, "tls", &db, &["--redis-ca", &ca_arg]).await;
    let w = worker(dir.path(), "w1", &url, host, &["--redis-ca", &ca_arg]);
    let audit = coord.submit(&[server.url(host, "/")], json!({"gap_ms": 0})).await;
    let finished = coord.wait_finished(audit, Duration::from_secs(60)).await;
    let logs = tails([&w, &coord.proc]);
    let (view, _) = finished.unwrap_or_else(|e| panic!("{e}\n{logs}"));
    assert_eq!(view["status"], "done", "{view}\n{logs}");
    assert!(view["pages"].as_u64().is_some_and(|p| p >= 12), "every page crawled through TLS Redis: {view}\n{logs}");
    let log = server.shutdown().await;
    assert!(log.for_host(host).len() >= 12, "{}", log.dump());

    // The same worker with a wrong password, and without the CA (the system's authorities do
    // not know the test CA): each stops at start and says why.
    let wrong = url.replace(PASSWORD, "not-the-password-0123");
    let said = refused(worker(dir.path(), "w-wrong-password", &wrong, host, &["--redis-ca", &ca_arg])).await;
    assert!(said.contains("WRONGPASS") || said.contains("password"), "{said}");
    assert!(!said.contains("not-the-password-0123"), "the password is redacted from messages: {said}");
    let said = refused(worker(dir.path(), "w-no-ca", &url, host, &[])).await;
    assert!(said.to_lowercase().contains("certificate"), "{said}");
    // A CA for a URL without TLS is a mistake, not something to ignore.
    let plain = url.replace("rediss://", "redis://");
    let said = refused(worker(dir.path(), "w-plain", &plain, host, &["--redis-ca", &ca_arg])).await;
    assert!(said.contains("does not use TLS"), "{said}");
    drop(w);
    drop(coord);
}

/// A Sentinel URL that cannot be read, or whose Sentinels do not answer, stops a worker at start
/// with the reason, its passwords redacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_url_that_cannot_be_used_is_refused_at_start() {
    ensure_built().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let bad = "redis+sentinel://:s3cret-pw@127.0.0.1:notaport/shoal?sentinel_password=other-pw";
    let said = refused(worker(dir.path(), "w-bad-url", bad, "a.test", &[])).await;
    assert!(said.contains("bad port"), "{said}");
    assert!(!said.contains("s3cret-pw") && !said.contains("other-pw"), "the passwords are redacted: {said}");
    // Nothing listens there: no Sentinel names a master.
    let port = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("port").local_addr().expect("addr").port();
    let silent = format!("redis+sentinel://:s3cret-pw@127.0.0.1:{port}/shoal");
    let said = refused(worker(dir.path(), "w-no-sentinel", &silent, "a.test", &[])).await;
    assert!(said.to_lowercase().contains("connect"), "{said}");
    assert!(!said.contains("s3cret-pw"), "the password is redacted: {said}");
}
