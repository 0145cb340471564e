//! Recurring audits end to end: a real `shoal coordinator` with a private `redis-server` and a real
//! worker, a schedule `every 2s` over a test site that changes between runs, a webhook receiver on
//! loopback; then `shoal schedule add|list|remove` against the same coordinator.
//!
//! Checked: two runs happen one after the other (never two at once), the second run's JSON report
//! has `changes` with exactly the finding that was fixed and the one that is new, the webhook gets
//! one POST per run with a valid HMAC-SHA256 signature and the same counts, and bad input is a 400
//! (API) or exit 3 (CLI), a schedule more often than the coordinator's minimum interval (lowered to
//! 2 s in its config file) included. Every wait is bounded.

use crate::distributed::SERIAL;
use crate::procs::{self, Coordinator, Proc, shoal_command, tails, worker};
use axum::body::Bytes;
use axum::http::HeaderMap;
use reqwest::Method;
use serde_json::{Value, json};
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::{Route, Site, TestServer};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

const SECRET: &str = "webhook-secret-0123456789";
/// How long the two runs may take in all.
const RUNS_DEADLINE: Duration = Duration::from_secs(90);

/// A page with a title (or none), no description, one h1: only the title differs between versions.
fn page(title: Option<&str>) -> String {
    let head = title.map(|t| format!("<title>{t}</title>")).unwrap_or_default();
    format!(
        r#"<!doctype html><html lang="en"><head>{head}</head><body><h1>Page</h1><a href="/">home</a></body></html>"#
    )
}

/// `/a` has no title on the first fetch and one afterwards (fixed); `/b` the other way round (new).
fn changing_site(host: &str) -> Site {
    Site::new(host)
        .page("/", r#"<html lang="en"><head><title>Home</title></head><body><h1>Home</h1><a href="/a">a</a> <a href="/b">b</a></body></html>"#)
        .route("/a", Route::first(1, Route::html(page(None)), Route::html(page(Some("Page A")))))
        .route("/b", Route::first(1, Route::html(page(Some("Page B"))), Route::html(page(None))))
}

/// What the webhook receiver got: headers and raw body of each POST.
type Received = Arc<Mutex<Vec<(HeaderMap, Bytes)>>>;

/// An axum server on 127.0.0.1 that records every POST to `/hook` and answers 204.
async fn receiver(tasks: &mut JoinSet<()>, stop: CancellationToken) -> (String, Received) {
    let got: Received = Arc::default();
    let keep = Arc::clone(&got);
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let keep = Arc::clone(&keep);
            async move {
                keep.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((headers, body));
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    tasks.spawn(async move {
        let _ = axum::serve(listener, app).with_graceful_shutdown(async move { stop.cancelled().await }).await;
    });
    (url, got)
}

fn received(got: &Received) -> Vec<(HeaderMap, Bytes)> {
    got.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
}

/// Verifies a delivery the way docs/notify.md tells receivers to, with ring's HMAC.
fn signature_ok(headers: &HeaderMap, body: &[u8]) -> bool {
    let Some(sig) = headers.get("x-shoal-signature").and_then(|v| v.to_str().ok()) else { return false };
    let Some(hex) = sig.strip_prefix("sha256=") else { return false };
    let Some(tag) = (0..hex.len())
        .step_by(2)
        .map(|i| hex.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect::<Option<Vec<u8>>>()
    else {
        return false;
    };
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, SECRET.as_bytes());
    ring::hmac::verify(&key, body, &tag).is_ok()
}

async fn schedule(coord: &Coordinator, id: u64) -> Value {
    match coord.api(Method::GET, &format!("/v1/schedules/{id}"), None).await {
        Ok((200, v)) => v,
        other => panic!("GET /v1/schedules/{id}: {other:?}"),
    }
}

/// `shoal schedule ARGS... --coordinator BASE` with the token in SHOAL_TOKEN: exit code and stdout.
fn cli(base: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let out = shoal_command()
        .arg("schedule")
        .args(args)
        .args(["--coordinator", base])
        .env("SHOAL_TOKEN", procs::TOKEN)
        .output()
        .expect("shoal runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_runs_twice_reports_its_changes_and_signs_its_webhook() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let redis = RedisServer::start().expect("redis-server");
    let server = TestServer::start(vec![changing_site("sched.test")]).await.expect("test site");
    let mut tasks = JoinSet::new();
    let stop = CancellationToken::new();
    let (hook, got) = receiver(&mut tasks, stop.clone()).await;
    let db = dir.path().join("shoal.db");
    // The operator lowers the minimum interval (1 hour by default) in the coordinator's config
    // file, so that two runs fit in a test.
    let config = dir.path().join("shoal.toml");
    std::fs::write(&config, "[coordinator]\nschedule_min_interval = \"2s\"\n").expect("config file");
    let config = config.display().to_string();
    let coord = Coordinator::start(
        dir.path(),
        "coordinator",
        &redis.url(),
        "sched",
        &db,
        &["--notify-url", &hook, "--notify-secret", SECRET, "--config", &config],
    )
    .await;
    let w = worker(dir.path(), "w1", &redis.url(), "sched", &["sched.test".to_owned()], 4);
    let logs = |c: &Coordinator, w: &Proc| tails([&c.proc, w]);

    // Bad input is a 400 that says why.
    let start = server.url("sched.test", "/");
    for (when, tz, want) in [
        ("every 0d", "UTC", "more than zero"),
        ("0 6 * * MON", "Mars/Base", "unknown time zone"),
        ("61 * * * *", "UTC", "cron"),
        // More often than the coordinator's minimum: refused, whoever asks.
        ("every 1s", "UTC", "minimum interval is 2s"),
    ] {
        let body = json!({"name": "bad", "urls": [start], "when": when, "time_zone": tz});
        let (status, v) = coord.api(Method::POST, "/v1/schedules", Some(&body)).await.expect("an answer");
        assert_eq!(status, 400, "{when} {tz}: {v}");
        assert!(v["error"].as_str().unwrap_or_default().contains(want), "{when} {tz}: {v}");
    }
    // A rule that cannot run is refused by name (issue 37).
    for (options, want) in [
        (json!({"extract": ["h1=css:h1[[["]}), "rule `h1=css:h1[[[`: not a valid CSS selector"),
        (json!({"search": ["x=regex:(open"]}), "rule `x=regex:(open`: not a valid regular expression"),
        (json!({"extract": ["h1=xpath://h1"]}), "xpath: is not supported"),
    ] {
        let body = json!({"name": "bad", "urls": [start], "options": options, "when": "every 2s"});
        let (status, v) = coord.api(Method::POST, "/v1/schedules", Some(&body)).await.expect("an answer");
        assert_eq!(status, 400, "{options}: {v}");
        assert!(v["error"].as_str().unwrap_or_default().contains(want), "{options}: {v}");
    }

    // Every run reads the h1 of each page (an extraction rule riding with the audit to the worker).
    let options = json!({"gap_ms": 0, "extract": ["h1=css:h1"]});
    let body = json!({"name": "every two seconds", "urls": [start], "options": options, "when": "every 2s"});
    let (status, added) = coord.api(Method::POST, "/v1/schedules", Some(&body)).await.expect("an answer");
    assert_eq!(status, 201, "{added}\n{}", logs(&coord, &w));
    let id = added["id"].as_u64().expect("an id");

    // Two runs, one after the other: never two at once.
    let began = Instant::now();
    let mut runs: Vec<u64> = Vec::new();
    while runs.len() < 2 {
        assert!(began.elapsed() < RUNS_DEADLINE, "no two runs in {RUNS_DEADLINE:?}: {runs:?}\n{}", logs(&coord, &w));
        let (_, audits) = coord.api(Method::GET, "/v1/audits", None).await.expect("audits");
        let running = audits.as_array().expect("a list").iter().filter(|a| a["status"] == "running").count();
        assert!(running <= 1, "two runs at once: {audits}");
        if let Some(last) = schedule(&coord, id).await["last_audit"].as_u64()
            && !runs.contains(&last)
        {
            runs.push(last);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (first, second) = (runs[0], runs[1]);
    assert!(second > first);
    coord.wait_finished(second, RUNS_DEADLINE).await.expect("the second run ends");
    // Its end is notified; then the schedule goes, so that later runs do not matter here.
    let until = Instant::now() + Duration::from_secs(30);
    let posted = |audit: u64| {
        received(&got).iter().any(|(_, b)| serde_json::from_slice::<Value>(b).is_ok_and(|v| v["audit"] == audit))
    };
    while !posted(second) && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, v) = coord.api(Method::DELETE, &format!("/v1/schedules/{id}"), None).await.expect("removed");
    assert_eq!((status, v), (200, json!({"removed": id})));

    // The second run's report opens with what changed: /a fixed, /b new, the rest still open.
    let (status, report) =
        coord.api(Method::GET, &format!("/v1/audits/{second}/report?format=json"), None).await.expect("report");
    assert_eq!(status, 200, "{report}");
    let changes = &report["changes"];
    assert_eq!(changes["schedule"]["id"], id, "{changes}");
    assert_eq!(changes["previous_audit"]["id"], first, "{changes}");
    assert_eq!(
        (changes["summary"]["new"].as_u64(), changes["summary"]["fixed"].as_u64()),
        (Some(1), Some(1)),
        "{changes}"
    );
    let site = &changes["sites"][0];
    assert_eq!(
        (site["new"][0]["code"].as_str(), site["fixed"][0]["code"].as_str()),
        (Some("title_missing"), Some("title_missing"))
    );
    assert!(site["new"][0]["url"].as_str().unwrap_or_default().ends_with("/b"), "{site}");
    assert!(site["fixed"][0]["url"].as_str().unwrap_or_default().ends_with("/a"), "{site}");
    // ... and, URL by URL, the pages whose title changed (issue 37).
    let changed: Vec<(String, Value)> = site["urls"]["changed"]
        .as_array()
        .unwrap_or_else(|| panic!("urls in {site}"))
        .iter()
        .map(|c| {
            (
                c["url"].as_str().unwrap_or_default().rsplit('/').next().unwrap_or_default().to_owned(),
                c["changes"].clone(),
            )
        })
        .collect();
    let title = |old: Value, new: Value| json!([{"fact": "title", "old": old, "new": new}]);
    assert_eq!(
        changed,
        [("a".to_owned(), title(Value::Null, "Page A".into())), ("b".to_owned(), title("Page B".into(), Value::Null))],
        "{site}"
    );
    assert_eq!(site["urls"]["summary"], json!({"added": 0, "removed": 0, "changed": 2}), "{site}");
    let pages = report["sites"][0]["pages"].as_array().expect("pages");
    let a = pages.iter().find(|p| p["url"].as_str().is_some_and(|u| u.ends_with("/a"))).expect("page /a");
    assert_eq!(a["extracted"], json!({"h1": "Page"}), "the rule reached the worker: {a}");
    let (_, first_report) =
        coord.api(Method::GET, &format!("/v1/audits/{first}/report?format=json"), None).await.expect("report");
    assert_eq!(first_report["changes"]["previous_audit"], Value::Null, "{}", first_report["changes"]);

    // One signed POST per run, the second with the same counts as the report.
    let posts = received(&got);
    assert!(posts.len() >= 2, "{} webhook POSTs\n{}", posts.len(), logs(&coord, &w));
    let bodies: Vec<Value> = posts
        .iter()
        .map(|(h, b)| {
            assert!(signature_ok(h, b), "bad signature on {}", String::from_utf8_lossy(b));
            assert_eq!(h.get("x-shoal-event").and_then(|v| v.to_str().ok()), Some("run.finished"));
            serde_json::from_slice(b).expect("a JSON body")
        })
        .collect();
    let of = |audit: u64| {
        bodies.iter().find(|b| b["audit"] == audit).unwrap_or_else(|| panic!("no POST for {audit}: {bodies:?}"))
    };
    assert_eq!(of(first)["changes"]["previous_audit"], Value::Null);
    let b = of(second);
    assert_eq!((b["schedule"]["id"].as_u64(), b["status"].as_str()), (Some(id), Some("done")), "{b}");
    assert_eq!((b["changes"]["new"].as_u64(), b["changes"]["fixed"].as_u64()), (Some(1), Some(1)), "{b}");
    assert_eq!(
        (
            b["changes"]["urls_added"].as_u64(),
            b["changes"]["urls_removed"].as_u64(),
            b["changes"]["urls_changed"].as_u64()
        ),
        (Some(0), Some(0), Some(2)),
        "{b}"
    );
    assert_eq!(b["changes"]["previous_audit"], first);
    assert_eq!(b["report"], format!("/v1/audits/{second}/report?format=json"));
    assert!(b["pages"].as_u64() >= Some(3) && b["by_severity"]["error"].as_u64().is_some(), "{b}");
    let stderr = coord.proc.stderr();
    assert!(stderr.contains("scheduled run ended") && stderr.contains("webhook delivered"), "{}", logs(&coord, &w));

    // The CLI against the same coordinator.
    let base = coord.base.clone();
    let (code, out, err) =
        cli(&base, &["add", "--name", "weekly", "--cron", "0 6 * * MON", "--time-zone", "Europe/Berlin", &start]);
    assert_eq!(code, Some(0), "{out}{err}");
    let weekly: u64 = out.trim().parse().unwrap_or_else(|_| panic!("an id, not {out:?}"));
    let (code, out, err) = cli(&base, &["list"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("weekly") && out.contains("0 6 * * MON") && out.contains("Europe/Berlin"), "{out}");
    assert!(!out.contains("every two seconds"), "the removed schedule is gone: {out}");
    let (code, out, _) = cli(&base, &["list", "--json"]);
    assert_eq!(code, Some(0));
    let listed: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(listed[0]["id"], weekly);
    assert!(listed[0]["next_run_ms"].as_u64().is_some() && listed[0]["last_audit"].is_null(), "{listed}");
    for bad in [
        vec!["add", "--name", "x", "--cron", "61 6 * * *", start.as_str()],
        vec!["add", "--name", "x", "--every", "0d", start.as_str()],
        vec!["add", "--name", "x", "--every", "1s", start.as_str()],
        vec!["add", "--name", "x", "--cron", "0 6 * * *", "--time-zone", "Nowhere/Land", start.as_str()],
        vec!["add", "--name", "x", "--every", "1d", "not a url"],
        vec!["remove", "999"],
    ] {
        let (code, out, err) = cli(&base, &bad);
        assert_eq!(code, Some(3), "{bad:?}: {out}{err}");
        assert!(err.contains("error"), "{bad:?}: {err}");
        if bad.contains(&"1s") {
            assert!(err.contains("minimum interval is 2s"), "the coordinator's reason is shown: {err}");
        }
    }
    let (code, out, err) = cli(&base, &["remove", &weekly.to_string()]);
    assert_eq!(code, Some(0), "{out}{err}");
    let (_, all) = coord.api(Method::GET, "/v1/schedules", None).await.expect("list");
    assert_eq!(all, json!([]));

    // The dashboard lists schedules (empty now) behind the token.
    let page = reqwest::Client::builder().no_proxy().build().expect("client");
    let html = page
        .get(format!("{base}/ui/schedules"))
        .bearer_auth(procs::TOKEN)
        .send()
        .await
        .expect("dashboard")
        .text()
        .await
        .expect("page");
    assert!(html.contains("No schedules yet"), "{html}");

    stop.cancel();
    while tasks.join_next().await.is_some() {}
    drop(w);
    drop(coord);
    server.shutdown().await;
}
