//! An audit that needs a browser (`browser_pages` over 0) is refused at submit while no worker
//! started with `--browser` is live (`Coordinator::check_browser`, asking the frontier's registry
//! of browser workers in Redis): over the API with 409 and a message that says what to do, through
//! `shoal submit` with that message and exit status 3, and nothing is recorded or requested from
//! the site. Once a `--browser` worker runs (its heartbeat announces it), the same submit is
//! accepted and the audit ends with its pages opened.
//!
//! Needs Debian's Chromium and fails without it (`shoal_tests::chromium::chromium`), as the other
//! browser tests.

use crate::db;
use crate::distributed::SERIAL;
use crate::procs::{self, Coordinator, Proc, browser_worker, ensure_built, tails, worker};
use reqwest::Method;
use serde_json::{Value, json};
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::{Site, TestServer};
use std::time::{Duration, Instant};

/// What the refusal says, in the API's answer and in `shoal submit`'s output.
const REFUSAL: &str = "no worker started with --browser is live";

fn small_site(host: &str) -> Site {
    let page = |title: &str, link: &str| {
        format!(
            r#"<!doctype html><html lang="en"><head><title>{title}</title><meta name="description" content="{title}"></head>
            <body><h1>{title}</h1><p><a href="{link}">{link}</a></p></body></html>"#
        )
    };
    Site::new(host).page("/", &page("Home", "/a")).page("/a", &page("A", "/"))
}

/// `POST /v1/audits` until it is accepted: a `--browser` worker just started is counted once its
/// first heartbeat announced it, moments after it connects. Refusals (409) are asked again for at
/// most `deadline`; any other answer fails the test.
pub(crate) async fn submit_once_a_browser_worker_is_live(
    coord: &Coordinator,
    urls: &[String],
    options: Value,
    deadline: Duration,
    procs: &[&Proc],
) -> u64 {
    let body = json!({ "urls": urls, "options": options });
    let until = Instant::now() + deadline;
    loop {
        match coord.api(Method::POST, "/v1/audits", Some(&body)).await {
            Ok((201, v)) => return v["id"].as_u64().unwrap_or_else(|| panic!("no audit id in {v}")),
            Ok((409, _)) if Instant::now() < until => tokio::time::sleep(Duration::from_millis(100)).await,
            other => panic!("submit answered {other:?} (a browser worker runs)\n{}", tails(procs.iter().copied())),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_needing_a_browser_is_refused_until_a_browser_worker_is_live() {
    let _serial = SERIAL.lock().await;
    let _ = shoal_tests::chromium::chromium();
    ensure_built().await;
    let redis = RedisServer::start().expect("redis-server starts");
    let server = TestServer::start(vec![small_site("p.test"), small_site("d.test")]).await.expect("server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("coordinator.db");
    let (ns, names) = ("bworkers", vec!["p.test".to_owned(), "d.test".to_owned()]);
    let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), ns, &db_path, &[]).await;
    let plain = worker(dir.path(), "plain", &redis.url(), ns, &names, 4);

    // The fleet runs: an audit without browser pages ends with the plain worker alone.
    let first = coord.submit(&[server.url("p.test", "/")], json!({"gap_ms": 0})).await;
    let done = coord.wait_finished(first, Duration::from_secs(30)).await;
    let (view, _) = done.unwrap_or_else(|e| panic!("{e}\n{}", tails([&plain, &coord.proc])));
    assert_eq!(view["status"], "done", "{view}");

    // With browser pages and no --browser worker: refused over the API, saying what to do...
    let start = server.url("d.test", "/");
    let body = json!({"urls": [start], "options": {"gap_ms": 0, "browser_pages": 2}});
    let (status, answer) = coord.api(Method::POST, "/v1/audits", Some(&body)).await.expect("the API answers");
    assert_eq!(status, 409, "{answer}\n{}", tails([&plain, &coord.proc]));
    let message = answer["error"].as_str().unwrap_or_default();
    for part in ["browser_pages 2", REFUSAL, "shoal worker --browser", "or submit without browser pages"] {
        assert!(message.contains(part), "{part:?} not in {answer}");
    }
    // ...and through `shoal submit`, which prints the coordinator's message and exits 3 (input).
    let args: Vec<String> =
        ["submit", "--coordinator", &coord.base, "--token", procs::TOKEN, "--gap-ms", "0", "--browser-pages", "2"]
            .map(str::to_owned)
            .into_iter()
            .chain([start.clone()])
            .collect();
    let mut submit = Proc::spawn(dir.path(), "submit", &args);
    let exit = submit.wait_exit(Duration::from_secs(30)).await.expect("shoal submit returns");
    assert_eq!(exit.code(), Some(3), "{}", tails([&submit]));
    assert!(submit.stderr().contains(REFUSAL) || submit.stdout().contains(REFUSAL), "{}", tails([&submit]));
    // Nothing of the refused audits exists: no audit recorded, no request to their site.
    let (_, list) = coord.api(Method::GET, "/v1/audits", None).await.expect("the API answers");
    assert_eq!(list.as_array().map(Vec::len), Some(1), "only the first audit: {list}");
    let log = server.log();
    assert!(log.for_host("d.test").is_empty(), "a refused audit reached its site\n{}", log.dump());

    // A --browser worker: the same submit is accepted, and the audit ends with its pages opened.
    let seeing = browser_worker(dir.path(), "seeing", &redis.url(), ns, "d.test");
    let procs = [&plain, &seeing, &coord.proc];
    let options = json!({"gap_ms": 0, "browser_pages": 2});
    let audit = submit_once_a_browser_worker_is_live(&coord, &[start], options, Duration::from_secs(30), &procs).await;
    let finished = coord.wait_finished(audit, Duration::from_secs(90)).await;
    let (view, _) = finished.unwrap_or_else(|e| panic!("{e}\n{}", tails(procs)));
    assert_eq!(view["status"], "done", "{view}\n{}", tails(procs));
    let opened = db::strings(&db_path, "SELECT url FROM browser_pages ORDER BY url");
    assert_eq!(opened, [server.url("d.test", "/"), server.url("d.test", "/a")], "{}", tails(procs));
}
