//! A start URL that redirects (apex to www, http to https, `/` to `/home/`): the start-page checks
//! run on the page the chain ends at (issue 12).

use crate::common;

use shoal::Exit;
use shoal_tests::testsite::{Route, Site, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_page_checks_run_at_the_end_of_the_start_urls_redirect_chain() {
    let home = r#"<html lang="en"><head><title>Home</title><meta name="description" content="Home">
        <link rel="stylesheet" href="/wp-content/themes/x/style.css"></head><body><h1>Home</h1></body></html>"#;
    let site = Site::new("moved.test")
        .route("/", Route::redirect(301, "/start/"))
        .route("/start/", Route::redirect(302, "/home/"))
        .page("/home/", home)
        .route("/wp-content/themes/x/style.css", Route::bytes("text/css", "body{}"));
    let server = TestServer::start(vec![site]).await.expect("server starts");
    let (run, log) = common::audit_host(server, "moved.test", &[]).await;
    assert_eq!(run.exit, Exit::Ok);

    let findings = crate::db::findings(&run.db);
    let at_home = |code: &str| findings.iter().any(|f| f.0 == code && f.1.ends_with("/home/"));
    for code in ["no_https", "csp_missing", "content_type_options_missing", "frame_protection_missing"] {
        assert!(at_home(code), "{code} on the final start page: {findings:#?}");
    }
    // WordPress was recognised on the final page, so its probes were made (after robots.txt).
    for probe in ["/wp-json/", "/xmlrpc.php"] {
        assert_eq!(log.count("moved.test", probe), 1, "{probe}\n{}", log.dump());
    }
    // Checked once: not also on the URLs that only redirected.
    assert!(!findings.iter().any(|f| f.0 == "no_https" && !f.1.ends_with("/home/")), "{findings:#?}");
}

/// The soft-404 probe follows its own redirects (issue 12, item 3): a path that cannot exist and
/// ends in 404 or 410 after redirects is fine; one that ends on a page answering 200 (the home
/// page, as many sites do) is a soft 404, and the home page's own record is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_soft_404_probe_is_judged_where_its_redirects_end() {
    let home = r#"<html lang="en"><head><title>Home</title><meta name="description" content="Home"></head>
        <body><h1>Home</h1></body></html>"#;
    let sites = vec![
        Site::new("tohome.test").page("/", home).fallback(Route::redirect(302, "/")),
        Site::new("to404.test")
            .page("/", home)
            .route("/gone", Route::status(404))
            .fallback(Route::redirect(301, "/gone")),
        Site::new("to410.test")
            .page("/", home)
            .route("/r2", Route::redirect(302, "/gone"))
            .route("/gone", Route::status(410))
            .fallback(Route::redirect(301, "/r2")),
    ];
    let server = TestServer::start(sites).await.expect("server starts");
    let hosts = ["tohome.test", "to404.test", "to410.test"];
    let starts: Vec<String> = hosts.iter().map(|h| server.url(h, "/")).collect();
    let run = common::audit(&server, &hosts, &starts, &["--gap-ms", "0"]).await;
    let log = server.shutdown().await;
    assert_eq!(run.exit, Exit::Ok);
    let soft: Vec<(String, String)> =
        crate::db::findings(&run.db).into_iter().filter(|f| f.0 == "soft_404").map(|f| (f.1, f.2)).collect();
    assert_eq!(soft.len(), 1, "only the site whose unknown paths end on a page: {soft:#?}");
    assert!(soft[0].0.contains("tohome.test") && soft[0].0.contains("/shoal-soft-404-check-"), "{soft:#?}");
    assert!(soft[0].1.contains("which answered 200"), "{soft:#?}");
    // The hops were requested (each probe follows its own), the home page's record is the page's.
    assert!(log.count("to410.test", "/gone") >= 1, "{}", log.dump());
    let pages = crate::db::pages(&run.db);
    let home_url = format!("{}/", starts[0].trim_end_matches('/'));
    let home_row = pages.iter().find(|p| p.0 == home_url).unwrap_or_else(|| panic!("{home_url}: {pages:#?}"));
    assert_eq!(home_row.1, "page", "{home_row:?}");
}
