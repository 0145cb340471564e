//! Raw against rendered (issue 38, part 2), end to end in Debian's Chromium: the browser check
//! (`--browser-pages`) reads each page it opens as its scripts left it, and the site analysis
//! compares that with what the crawl read from the HTML. An app-shell shop whose script writes the
//! title, the heading, the main text and the links, adds `noindex`, moves the canonical and then
//! throws raises each `rendered_*` finding with both versions in its detail; a plain page whose
//! script changes nothing raises none of them.
//!
//! These tests need Debian's Chromium and fail without it (`shoal_tests::chromium::chromium`).

use crate::common::audit;
use crate::db;
use shoal::Exit;
use shoal_tests::testsite::{Route, Site, TestServer};
use std::collections::BTreeMap;

/// The shop's one script: everything a visitor sees, written after the HTML arrived.
const APP_JS: &str = r#"
document.title = 'Bakery shop';
const root = document.getElementById('root');
root.innerHTML = '<h1>Our bakery</h1><main><p>' + 'Fresh bread baked every morning in our own ovens. '.repeat(20) +
  '</p><a href="/products/1">Bread</a> <a href="/products/2">Rolls</a></main>';
const robots = document.createElement('meta');
robots.name = 'robots';
robots.content = 'noindex';
document.head.appendChild(robots);
document.querySelector('link[rel=canonical]').setAttribute('href', '/shop');
throw new Error('checkout widget failed to start');
"#;

fn app_shell(host: &str) -> Site {
    let shell = r#"<!doctype html><html lang="en"><head><title>Loading</title>
        <meta name="description" content="The bakery's shop">
        <link rel="canonical" href="/"><script src="/app.js" defer></script></head>
        <body><div id="root">Loading</div><a href="/about">About</a></body></html>"#;
    let page = |title: &str| {
        format!(
            r#"<!doctype html><html lang="en"><head><title>{title}</title></head><body><h1>{title}</h1></body></html>"#
        )
    };
    Site::new(host)
        .page("/", shell)
        .route("/app.js", Route::bytes("text/javascript", APP_JS))
        .page("/about", &page("About"))
        .page("/products/1", &page("Bread"))
        .page("/products/2", &page("Rolls"))
}

/// A page whose script reads the page and changes nothing a crawler reads.
fn plain(host: &str) -> Site {
    let words = "Plain words that the server sends with the page itself. ".repeat(20);
    let html = format!(
        r#"<!doctype html><html lang="en"><head><title>Plain</title><meta name="description" content="Plain page">
        <link rel="canonical" href="/"><script>window.seen = document.title.length;</script></head>
        <body><h1>Plain</h1><main><p>{words}</p><a href="/next">Next</a></main></body></html>"#
    );
    Site::new(host).page("/", &html).page("/next", "<!doctype html><html lang=\"en\"><title>Next</title></html>")
}

/// (code → (detail, related JSON)) of the findings of `url` whose code starts with one of the
/// browser check's raw-against-rendered prefixes (and its script errors).
fn rendered_findings(db_path: &std::path::Path, url: &str) -> BTreeMap<String, (String, String)> {
    db::query(
        db_path,
        "SELECT code, detail, related_json FROM findings
         WHERE url = ?1 AND (code GLOB 'rendered_*' OR code = 'browser_script_errors')",
        [url],
        |r| Ok((r.get::<_, String>(0)?, (r.get::<_, String>(1)?, r.get::<_, String>(2)?))),
    )
    .into_iter()
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_scripts_change_on_a_page_is_found_with_both_versions() {
    let _ = shoal_tests::chromium::chromium();
    let server = TestServer::start(vec![app_shell("app.test"), plain("plain.test")]).await.expect("server starts");
    let (app, plain) = (server.url("app.test", "/"), server.url("plain.test", "/"));
    let products = [server.url("app.test", "/products/1"), server.url("app.test", "/products/2")];
    let run = audit(
        &server,
        &["app.test", "plain.test"],
        &[app.clone(), plain.clone()],
        &["--browser-pages", "1", "--gap-ms", "0"],
    )
    .await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    let stored: Vec<String> =
        db::strings(&run.db, "SELECT url FROM browser_pages WHERE rendered_json IS NOT NULL ORDER BY url");
    assert_eq!(stored, [app.clone(), plain.clone()], "both start pages opened and read\n{}", log.dump());

    let found = rendered_findings(&run.db, &app);
    let detail = |code: &str| found.get(code).map(|(d, _)| d.as_str()).unwrap_or_else(|| panic!("{code}: {found:#?}"));
    assert_eq!(detail("rendered_title_changed"), r#"HTML: "Loading" · rendered: "Bakery shop""#);
    assert_eq!(detail("rendered_h1_changed"), r#"HTML: (none) · rendered: "Our bakery""#);
    assert_eq!(detail("rendered_noindex_mismatch"), "noindex only after JavaScript runs, not in the HTML");
    let canonical = detail("rendered_canonical_mismatch");
    assert!(canonical.starts_with(&format!(r#"HTML: "{app}""#)) && canonical.ends_with(r#"/shop""#), "{canonical}");
    assert!(detail("rendered_only_content").contains(" words of main text in the HTML, "), "{found:#?}");
    assert_eq!(detail("rendered_only_links"), "2 links to pages only after JavaScript runs");
    let related = &found["rendered_only_links"].1;
    let want = serde_json::json!(products);
    assert_eq!(serde_json::from_str::<serde_json::Value>(related).expect("JSON"), want, "not /about: the HTML has it");
    assert!(detail("browser_script_errors").contains("checkout widget failed to start"), "{found:#?}");
    assert!(!found.contains_key("rendered_description_changed"), "the script left the description alone");

    assert_eq!(rendered_findings(&run.db, &plain), BTreeMap::new(), "a page its script does not change");
}

/// A page that loads a script, an image and an API call from a path its site's robots.txt
/// disallows, and one script from an allowed path.
fn with_private_resources(host: &str) -> Site {
    let html = r#"<!doctype html><html lang="en"><head><title>Shop</title>
        <script src="/private/track.js"></script><script src="/app.js" defer></script></head>
        <body><h1>Shop</h1><img src="/private/pixel.png" alt="x"></body></html>"#;
    Site::new(host)
        .robots_txt("User-agent: *\nDisallow: /private/\n")
        .page("/", html)
        .route("/app.js", Route::bytes("text/javascript", "fetch('/private/api').catch(() => {});"))
        .route("/private/track.js", Route::bytes("text/javascript", "window.tracked = 1;"))
        .route("/private/pixel.png", Route::bytes("image/png", b"x".to_vec()))
        .route("/private/api", Route::bytes("application/json", "{}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_robots_txt_disallows_never_leave_the_browser_and_are_reported() {
    let _ = shoal_tests::chromium::chromium();
    let server = TestServer::start(vec![with_private_resources("priv.test")]).await.expect("server starts");
    let start = server.url("priv.test", "/");
    let run =
        audit(&server, &["priv.test"], std::slice::from_ref(&start), &["--browser-pages", "1", "--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    let paths: Vec<String> = log.for_host("priv.test").iter().map(|r| r.path.clone()).collect();
    assert!(paths.iter().any(|p| p == "/app.js"), "the allowed script was loaded: {paths:?}");
    assert!(!paths.iter().any(|p| p.starts_with("/private/")), "nothing under /private/ was requested: {paths:?}");

    let (detail, related): (String, String) = db::query(
        &run.db,
        "SELECT detail, related_json FROM findings WHERE code = 'browser_robots_blocked' AND url = ?1",
        [start.as_str()],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .pop()
    .unwrap_or_else(|| panic!("browser_robots_blocked on {start}\n{}", log.dump()));
    assert!(detail.starts_with("3 requests held back, first: "), "{detail}");
    let related: Vec<String> = serde_json::from_str(&related).expect("JSON");
    for path in ["/private/track.js", "/private/pixel.png", "/private/api"] {
        assert!(related.iter().any(|r| r.contains(&format!("{path} ("))), "{path} in {related:?}");
    }
}
