//! The browser check's plumbing end to end (`--browser-pages`, SPEC §10): after a site's crawl its
//! start page and most linked pages are opened in real headless Chromium, as frontier tasks, one at
//! a time per host and at least 3 s apart (asserted from the test server's own log: Chromium sends
//! its own user agent, so its requests are told from the crawler's), stored in the audit database
//! with their screenshots and shown in the report; never when robots.txt keeps us from the start
//! page; and on a fleet only a worker started with `--browser` opens pages (an audit that needs
//! one is refused while none is live: `browser_workers.rs`).
//!
//! These tests need Debian's Chromium and fail without it (`shoal_tests::chromium::chromium`).

use crate::browser_workers::submit_once_a_browser_worker_is_live;
use crate::common::audit;
use crate::db;
use crate::distributed::SERIAL;
use crate::procs::{Coordinator, browser_worker, ensure_built, tails, worker};
use clap::Parser;
use serde_json::json;
use shoal::Exit;
use shoal::cli::Cli;
use shoal_tests::log::{LoggedRequest, RequestLog};
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::{Site, TestServer};
use std::path::Path;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Scheduling slack between the frontier starting a page load (at claim time) and the server
/// seeing its document request.
const JITTER: Duration = Duration::from_millis(15);
/// The least time between two page loads to one host (`shoal_shared::frontier::BROWSER_MIN_GAP`).
const MIN_GAP: Duration = Duration::from_secs(3);

/// A small site whose link structure makes `/b` the most linked page after the start page (linked
/// from `/`, `/a` and `/c`), then `/a` and `/c` (from `/` only, and `/a` sorts first).
fn linked_site(host: &str) -> Site {
    let page = |title: &str, links: &[&str]| {
        let a: String = links.iter().map(|l| format!(r#"<a href="{l}">{l}</a> "#)).collect();
        format!(
            r#"<!doctype html><html lang="en"><head><title>{title}</title><meta name="description" content="{title}"></head>
            <body><h1>{title}</h1><p>{a}</p></body></html>"#
        )
    };
    Site::new(host)
        .page("/", &page("Home", &["/a", "/b", "/c"]))
        .page("/a", &page("A", &["/b"]))
        .page("/b", &page("B", &["/"]))
        .page("/c", &page("C", &["/b"]))
}

/// A request the crawler did not send (it sends ShoalBot's user agent): Chromium's.
fn from_browser(r: &LoggedRequest) -> bool {
    !r.header("user-agent").is_some_and(|ua| ua.contains("ShoalBot"))
}

/// Chromium's document requests to `host` (its page loads), in arrival order: a navigation asks
/// for `text/html` first (Sec-Fetch-Dest is only sent to secure origins, and the tests' are http).
fn page_loads<'a>(log: &'a RequestLog, host: &str) -> Vec<&'a LoggedRequest> {
    log.for_host(host)
        .into_iter()
        .filter(|r| from_browser(r) && r.header("accept").is_some_and(|a| a.starts_with("text/html")))
        .collect()
}

/// Page loads to `host` are serialised and at least 3 s apart (max(gap, 3 s); the tests' gap is
/// smaller), as a site owner would see it: before each page load of a new page, every earlier
/// request Chromium made to the host (the previous page, its resources, a reload) had ended at
/// least 3 s before.
fn assert_paced(log: &RequestLog, host: &str) {
    let loads = page_loads(log, host);
    let browser: Vec<&LoggedRequest> = log.for_host(host).into_iter().filter(|r| from_browser(r)).collect();
    for pair in loads.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a.path == b.path {
            continue; // the same page opened again within its check (after Reject)
        }
        for r in browser.iter().filter(|r| r.start < b.start) {
            let end =
                r.end.unwrap_or_else(|| panic!("{host}: {} still open when {} loaded\n{}", r.path, b.path, log.dump()));
            let quiet = b.start.saturating_duration_since(end);
            assert!(
                quiet + JITTER >= MIN_GAP,
                "{host}: {} loaded {quiet:?} after {} ended\n{}",
                b.path,
                r.path,
                log.dump()
            );
        }
    }
}

/// (url, desktop bytes, phone bytes, both start as JPEG) per stored browser page, by URL.
fn browser_rows(db_path: &Path) -> Vec<(String, i64, i64, bool)> {
    db::query(
        db_path,
        "SELECT url, length(desktop_jpeg), length(phone_jpeg),
                hex(substr(desktop_jpeg, 1, 2)) = 'FFD8' AND hex(substr(phone_jpeg, 1, 2)) = 'FFD8'
         FROM browser_pages ORDER BY url",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )
}

fn path_of(url: &str) -> String {
    url.split_once("://").and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_owned())).unwrap_or_default()
}

pub(crate) fn report(db_path: &Path, format: &str, out: &Path) -> String {
    let args = [
        "shoal",
        "report",
        "--db",
        &db_path.display().to_string(),
        "--format",
        format,
        "--out",
        &out.display().to_string(),
    ]
    .map(str::to_owned);
    let cli = Cli::try_parse_from(args).expect("report arguments parse");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime for the report");
    let exit = rt
        .block_on(shoal::run(cli, CancellationToken::new()))
        .unwrap_or_else(|f| panic!("report failed: {:#}", f.error));
    assert_eq!(exit, Exit::Ok);
    std::fs::read_to_string(out).expect("the report was written")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_opens_the_start_page_and_the_most_linked_one_paced_and_stores_them() {
    let _ = shoal_tests::chromium::chromium();
    let server = TestServer::start(vec![linked_site("a.test")]).await.expect("server starts");
    let starts = [server.url("a.test", "/")];
    let run = audit(&server, &["a.test"], &starts, &["--browser-pages", "2", "--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;

    let loads: Vec<String> = page_loads(&log, "a.test").iter().map(|r| r.path.clone()).collect();
    assert_eq!(loads, ["/", "/b"], "the start page, then the most linked page\n{}", log.dump());
    assert_paced(&log, "a.test");
    let ua = page_loads(&log, "a.test")[0].header("user-agent").unwrap_or_default().to_owned();
    assert!(ua.contains("Chrome"), "Chromium's own user agent: {ua}");

    let rows = browser_rows(&run.db);
    let paths: Vec<String> = rows.iter().map(|r| path_of(&r.0)).collect();
    assert_eq!(paths, ["/", "/b"], "{rows:?}");
    for (url, desktop, phone, jpeg) in &rows {
        assert!(
            *desktop > 1000 && *phone > 1000 && *jpeg,
            "{url}: screenshots {desktop} and {phone} bytes, JPEG {jpeg}"
        );
    }
    let done: Vec<String> = db::strings(&run.db, "SELECT status FROM sites");
    assert_eq!(done, ["done"]);

    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = run.db.clone();
    let out = dir.path().to_owned();
    let (html, json) = tokio::task::spawn_blocking(move || {
        (report(&db_path, "html", &out.join("report.html")), report(&db_path, "json", &out.join("report.json")))
    })
    .await
    .expect("report task");
    assert!(html.contains("<h3>Browser</h3>"), "the site's Browser section");
    assert_eq!(html.matches("data:image/jpeg;base64,/9j/").count(), 4, "two thumbnails per page");
    assert!(
        html.contains("Largest Contentful Paint (LCP)") && html.contains("\u{2264} 2500 ms"),
        "vitals with thresholds"
    );
    assert!(html.contains("img-src data:"), "the report's policy lets its own data: images show");
    let doc: serde_json::Value = serde_json::from_str(&json).expect("JSON report");
    let browser = doc["sites"][0]["browser"].as_array().expect("a browser array");
    assert_eq!(browser.len(), 2);
    assert!(browser[0]["screenshots"]["desktop_jpeg_base64"].as_str().is_some_and(|s| s.starts_with("/9j/")));
    assert!(browser[0]["vitals"].get("lcp_ms").is_some() && browser[0]["consent"].get("banner_found").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_txt_disallowing_the_start_page_means_no_browser_task() {
    let _ = shoal_tests::chromium::chromium();
    let server = TestServer::start(vec![linked_site("n.test").robots_txt("User-agent: *\nDisallow: /\n")])
        .await
        .expect("server starts");
    let starts = [server.url("n.test", "/")];
    let run = audit(&server, &["n.test"], &starts, &["--browser-pages", "3", "--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    assert!(!log.all().iter().any(from_browser), "Chromium requested something\n{}", log.dump());
    assert!(browser_rows(&run.db).is_empty());
    assert_eq!(db::strings(&run.db, "SELECT status FROM sites"), ["done"], "the site still ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_fleet_only_a_worker_started_with_browser_opens_pages() {
    let _serial = SERIAL.lock().await;
    let _ = shoal_tests::chromium::chromium();
    ensure_built().await;
    let redis = RedisServer::start().expect("redis-server starts");
    let server = TestServer::start(vec![linked_site("d.test")]).await.expect("server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("coordinator.db");
    let (ns, names) = ("browser", vec!["d.test".to_owned()]);
    let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), ns, &db_path, &[]).await;
    let plain = worker(dir.path(), "plain", &redis.url(), ns, &names, 4);
    // An audit with browser pages is accepted only once a --browser worker is live
    // (`browser_workers.rs`); beside it the plain worker crawls, and never opens a page.
    let seeing = browser_worker(dir.path(), "seeing", &redis.url(), ns, "d.test");
    let options = json!({"gap_ms": 0, "browser_pages": 2});
    let starts = [server.url("d.test", "/")];
    let procs = [&plain, &seeing, &coord.proc];
    let audit = submit_once_a_browser_worker_is_live(&coord, &starts, options, Duration::from_secs(30), &procs).await;
    let finished = coord.wait_finished(audit, Duration::from_secs(90)).await;
    let logs = tails([&plain, &seeing, &coord.proc]);
    let (view, _) = finished.unwrap_or_else(|e| panic!("{e}\n{logs}"));
    assert_eq!(view["status"], "done", "{view}\n{logs}");
    let log = server.shutdown().await;
    let loads: Vec<String> = page_loads(&log, "d.test").iter().map(|r| r.path.clone()).collect();
    assert_eq!(loads, ["/", "/b"], "{}", log.dump());
    assert_paced(&log, "d.test");
    assert!(seeing.stderr().contains("browser started") || seeing.stdout().contains("browser started"), "{logs}");
    assert!(!plain.stderr().contains("browser started") && !plain.stdout().contains("browser started"), "{logs}");
    let rows = browser_rows(&db_path);
    assert_eq!(rows.iter().map(|r| path_of(&r.0)).collect::<Vec<_>>(), ["/", "/b"], "{rows:?}");
}
