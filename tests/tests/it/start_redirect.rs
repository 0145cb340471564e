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
