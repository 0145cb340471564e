//! The rendered crawl (issue 38, `--render never|auto|always`), end to end in Debian's Chromium: an
//! app-shell shop whose links exist only after its script runs is crawled as a browser sees it
//! (every page found, rendered once, the rendered-only links in the link graph), politely (from
//! the test server's log: robots.txt first, page loads in the browser never closer than the
//! browser's least gap, the shop's bundle fetched once by the browser for the whole site);
//! `never` finds the one page the HTML shows; `auto` renders a site further only when its start
//! page's scripts add links or content, and records why; a page that never finishes loading is
//! given up at the time limit.
//!
//! On a fleet the rounds run through the Redis frontier and only a `--browser` worker renders.
//!
//! These tests need Debian's Chromium and fail without it (`shoal_tests::chromium::chromium`).

use crate::browser::report;
use crate::browser_workers::submit_once_a_browser_worker_is_live;
use crate::common::audit;
use crate::db;
use crate::distributed::SERIAL;
use crate::procs::{Coordinator, browser_worker, ensure_built, tails, worker};
use serde_json::json;
use shoal::Exit;
use shoal_shared::frontier::RENDER_MIN_GAP;
use shoal_tests::log::LoggedRequest;
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::{Route, Site, TestServer};
use std::time::Duration;

/// The shop's one bundle: the navigation of every page, written after the HTML arrived. The home
/// page links four products; product 1 links its details page; every page links home.
const APP_JS: &str = r#"
const root = document.getElementById('root');
const path = location.pathname;
let links = '<a href="/">Home</a>';
if (path === '/') {
  for (let i = 1; i <= 4; i++) links += ' <a href="/p/' + i + '">Product ' + i + '</a>';
} else if (path === '/p/1') {
  links += ' <a href="/p/1/more">More about product 1</a>';
}
document.title = 'Shop ' + path;
root.innerHTML = '<h1>Shop</h1><nav>' + links + '</nav><main><p>' +
  'Handmade goods from our workshop, shipped the same day. '.repeat(15) + '</p></main>';
if (path === '/p/3') throw new Error('reviews widget failed');
"#;

/// Every page of the shop is the same shell; only the bundle writes what a visitor sees.
const SHELL: &str = r#"<!doctype html><html lang="en"><head><title>Loading</title>
    <script src="/app.js" defer></script></head><body><div id="root">Loading</div></body></html>"#;

const SHOP_PAGES: [&str; 6] = ["/", "/p/1", "/p/2", "/p/3", "/p/4", "/p/1/more"];

fn shop(host: &str) -> Site {
    let mut site = Site::new(host)
        .route("/app.js", Route::bytes("text/javascript", APP_JS).header("cache-control", "public, max-age=3600"));
    for p in SHOP_PAGES {
        site = site.page(p, SHELL);
    }
    site
}

/// A site whose script changes nothing a crawler reads.
fn plain(host: &str) -> Site {
    let words = "Plain words that the server sends with the page itself. ".repeat(20);
    let html = format!(
        r#"<!doctype html><html lang="en"><head><title>Plain</title><script>window.seen = 1;</script></head>
        <body><h1>Plain</h1><main><p>{words}</p><a href="/next">Next</a></main></body></html>"#
    );
    Site::new(host).page("/", &html).page("/next", "<!doctype html><html lang=\"en\"><title>Next</title></html>")
}

/// A site whose start page waits forever for a script.
fn hanging(host: &str) -> Site {
    let html = r#"<!doctype html><html lang="en"><head><title>Wait</title><script src="/slow.js"></script></head>
        <body><h1>Wait</h1></body></html>"#;
    Site::new(host).page("/", html).route("/slow.js", Route::hang())
}

/// Requests Chromium made (its user agent names it; the crawl's is Shoal's own).
fn by_browser(r: &LoggedRequest) -> bool {
    r.header("user-agent").is_some_and(|ua| ua.contains("Chrome"))
}

fn decision(db_path: &std::path::Path, start: &str) -> serde_json::Value {
    let text = db::strings(db_path, &format!("SELECT render_json FROM sites WHERE start_url = '{start}'"));
    serde_json::from_str(text.first().unwrap_or_else(|| panic!("a render decision for {start}"))).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_shell_shop_is_crawled_as_a_browser_sees_it_and_politely() {
    let _ = shoal_tests::chromium::chromium();
    let server = TestServer::start(vec![shop("shop.test")]).await.expect("server starts");
    let start = server.url("shop.test", "/");
    let run =
        audit(&server, &["shop.test"], std::slice::from_ref(&start), &["--render", "always", "--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let want: Vec<String> = {
        let mut v: Vec<String> = SHOP_PAGES.iter().map(|p| server.url("shop.test", p)).collect();
        v.sort();
        v
    };
    let products: Vec<String> = (1..=4).map(|i| server.url("shop.test", &format!("/p/{i}"))).collect();
    let log = server.shutdown().await;
    let crawled = db::strings(&run.db, "SELECT url FROM pages WHERE kind = 'page' AND status = 200 ORDER BY url");
    assert_eq!(crawled, want, "every page the scripts link to was crawled\n{}", log.dump());
    let rendered = db::strings(
        &run.db,
        "SELECT url FROM rendered_pages WHERE queued = 0 AND error IS NULL AND rendered_json IS NOT NULL ORDER BY url",
    );
    assert_eq!(rendered, want, "each page rendered once");
    assert_eq!(decision(&run.db, &start)["decision"], "always");
    let rendered_links = db::strings(
        &run.db,
        &format!("SELECT to_url FROM links WHERE rendered = 1 AND from_url = '{start}' ORDER BY to_url"),
    );
    assert_eq!(rendered_links, products, "the links only the rendered page has are in the link graph");
    let titles = db::strings(
        &run.db,
        &format!("SELECT detail FROM findings WHERE code = 'rendered_title_changed' AND url = '{start}'"),
    );
    assert_eq!(titles, [r#"HTML: "Loading" · rendered: "Shop /""#], "both versions compared");
    let errors = db::strings(&run.db, "SELECT url || ' ' || detail FROM findings WHERE code = 'browser_script_errors'");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("/p/3 1 error while the page loaded") && errors[0].contains("reviews widget failed"),
        "{errors:?}"
    );
    let (db_path, out) = (run.db.clone(), run._dir.path().to_owned());
    let (html, json) = tokio::task::spawn_blocking(move || {
        (report(&db_path, "html", &out.join("report.html")), report(&db_path, "json", &out.join("report.json")))
    })
    .await
    .expect("reports");
    let json: serde_json::Value = serde_json::from_str(&json).expect("JSON report");
    let site_render = &json["sites"][0]["render"];
    assert_eq!(site_render["decision"]["decision"], "always", "{site_render}");
    assert_eq!(site_render["pages_rendered"], 6, "{site_render}");
    // 4 products from the home page, the details from product 1, and every other page's link home.
    assert_eq!(site_render["rendered_links"].as_u64(), Some(10), "{site_render}");
    assert!(site_render["render_ms"].as_u64().is_some_and(|ms| ms > 0), "{site_render}");
    let browser_requests = log.for_host("shop.test").iter().filter(|r| by_browser(r)).count();
    assert_eq!(
        site_render["requests"].as_u64(),
        Some(browser_requests as u64),
        "the requests counted are the server's, cache hits left out: {site_render}"
    );
    assert!(html.contains("Rendered crawl") && html.contains("Every page rendered"), "the HTML report shows it");

    // From the server's side.
    let requests = log.for_host("shop.test");
    assert_eq!(requests.first().map(|r| r.path.as_str()), Some("/robots.txt"), "robots.txt first\n{}", log.dump());
    let bundle = requests.iter().filter(|r| by_browser(r) && r.path == "/app.js").count();
    assert_eq!(bundle, 1, "the bundle is fetched once for the site, then from Chromium's cache\n{}", log.dump());
    let loads: Vec<&&LoggedRequest> =
        requests.iter().filter(|r| by_browser(r) && SHOP_PAGES.contains(&r.path.as_str())).collect();
    assert_eq!(loads.len(), SHOP_PAGES.len(), "one page load per page\n{}", log.dump());
    for pair in loads.windows(2) {
        let gap = pair[1].start.duration_since(pair[0].start);
        assert!(gap >= RENDER_MIN_GAP, "page loads {gap:?} apart: {} then {}", pair[0].path, pair[1].path);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_reads_only_the_html() {
    let server = TestServer::start(vec![shop("shop.test")]).await.expect("server starts");
    let start = server.url("shop.test", "/");
    let run = audit(&server, &["shop.test"], std::slice::from_ref(&start), &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    let crawled = db::strings(&run.db, "SELECT url FROM pages WHERE kind = 'page' AND status = 200");
    assert_eq!(crawled, [start], "the HTML links nowhere");
    assert_eq!(db::strings(&run.db, "SELECT url FROM rendered_pages"), Vec::<String>::new());
    assert_eq!(db::strings(&run.db, "SELECT COALESCE(render_json, 'none') FROM sites"), ["none"]);
    assert!(!log.all().iter().any(by_browser), "no browser started\n{}", log.dump());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_renders_a_site_further_only_when_its_scripts_add_links_or_content() {
    let _ = shoal_tests::chromium::chromium();
    let server = TestServer::start(vec![shop("shop.test"), plain("plain.test"), hanging("wait.test")])
        .await
        .expect("server starts");
    let (shop_start, plain_start, wait_start) =
        (server.url("shop.test", "/"), server.url("plain.test", "/"), server.url("wait.test", "/"));
    let run = audit(
        &server,
        &["shop.test", "plain.test", "wait.test"],
        &[shop_start.clone(), plain_start.clone(), wait_start.clone()],
        &["--render", "auto", "--gap-ms", "0", "--browser-timeout-s", "5"],
    )
    .await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;

    let shop = decision(&run.db, &shop_start);
    assert_eq!(shop["decision"], "rendered", "{shop}");
    assert!(shop["reason"].as_str().is_some_and(|r| r.contains("4 more after rendering")), "{shop}");
    let shop_rendered = db::strings(
        &run.db,
        "SELECT r.url FROM rendered_pages r JOIN sites s ON s.id = r.site_id
         WHERE s.start_url LIKE 'http://shop.test%' AND r.error IS NULL ORDER BY r.url",
    );
    assert_eq!(shop_rendered.len(), SHOP_PAGES.len(), "the whole shop rendered: {shop_rendered:?}\n{}", log.dump());

    let plain = decision(&run.db, &plain_start);
    assert_eq!(plain["decision"], "raw", "{plain}");
    let plain_rendered = db::strings(
        &run.db,
        "SELECT r.url FROM rendered_pages r JOIN sites s ON s.id = r.site_id WHERE s.start_url LIKE 'http://plain.test%'",
    );
    assert_eq!(plain_rendered, std::slice::from_ref(&plain_start), "only its start page was rendered");
    assert!(!log.for_host("plain.test").iter().any(|r| by_browser(r) && r.path == "/next"), "/next not rendered");

    let wait = decision(&run.db, &wait_start);
    assert_eq!(wait["decision"], "not_rendered", "{wait}");
    assert!(
        wait["reason"].as_str().is_some_and(|r| r.contains("was not rendered within 5 s")),
        "the render is given up at its time limit: {wait}"
    );
}

/// On a fleet (Redis, a coordinator, a plain worker and one started with `--browser`), the
/// rendered crawl runs its rounds through the Redis frontier: every page of the shop is found and
/// rendered once, by the browser worker only, the bundle fetched once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_renders_in_rounds_through_redis() {
    let _serial = SERIAL.lock().await;
    let _ = shoal_tests::chromium::chromium();
    ensure_built().await;
    let redis = RedisServer::start().expect("redis-server starts");
    let server = TestServer::start(vec![shop("shop.test")]).await.expect("server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("coordinator.db");
    let (ns, names) = ("render", vec!["shop.test".to_owned()]);
    let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), ns, &db_path, &[]).await;
    let plain = worker(dir.path(), "plain", &redis.url(), ns, &names, 4);
    let seeing = browser_worker(dir.path(), "seeing", &redis.url(), ns, "shop.test");
    let options = json!({"gap_ms": 0, "render": "always"});
    let starts = [server.url("shop.test", "/")];
    let procs = [&plain, &seeing, &coord.proc];
    let audit = submit_once_a_browser_worker_is_live(&coord, &starts, options, Duration::from_secs(30), &procs).await;
    let finished = coord.wait_finished(audit, Duration::from_secs(90)).await;
    let logs = tails([&plain, &seeing, &coord.proc]);
    let (view, _) = finished.unwrap_or_else(|e| panic!("{e}\n{logs}"));
    assert_eq!(view["status"], "done", "{view}\n{logs}");
    let log = server.shutdown().await;
    let rendered =
        db::strings(&db_path, "SELECT url FROM rendered_pages WHERE queued = 0 AND error IS NULL ORDER BY url");
    assert_eq!(rendered.len(), SHOP_PAGES.len(), "{rendered:?}\n{logs}\n{}", log.dump());
    let crawled = db::strings(&db_path, "SELECT url FROM pages WHERE kind = 'page' AND status = 200");
    assert_eq!(crawled.len(), SHOP_PAGES.len(), "{crawled:?}");
    let requests = log.for_host("shop.test");
    assert_eq!(requests.iter().filter(|r| by_browser(r) && r.path == "/app.js").count(), 1, "{}", log.dump());
    assert!(seeing.stderr().contains("browser started") || seeing.stdout().contains("browser started"), "{logs}");
    assert!(!plain.stderr().contains("browser started") && !plain.stdout().contains("browser started"), "{logs}");
}
