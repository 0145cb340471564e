//! Links to other sites: checked once per batch (one HEAD, one GET only after a failed HEAD),
//! after that host's robots.txt, and reported on every site that links to a broken one.

use crate::common;

use shoal::Exit;
use shoal_tests::testsite::{ReservedPort, Route, Site, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_popular_external_host_is_asked_once_and_broken_links_are_reported_per_site() {
    // The pages need the server's port in their absolute links, so bind first, then describe.
    let reserved = ReservedPort::new().expect("a free port");
    let port = reserved.port();
    let page = |name: &str| {
        format!(
            r#"<html lang="en"><head><title>{name}</title><meta name="description" content="d"></head><body><h1>{name}</h1>
            <a href="http://ext.test:{port}/dead">dead</a> <a href="http://ext.test:{port}/ok">ok</a>
            <a href="http://ext.test:{port}/private">blocked</a> <a href="http://gone.test:{port}/">gone</a></body></html>"#
        )
    };
    let sites = vec![
        Site::new("a.test").page("/", &page("A")),
        Site::new("b.test").page("/", &page("B")),
        Site::new("ext.test")
            .robots_txt("User-agent: *\nDisallow: /private\n")
            .route("/ok", Route::html("<title>ok</title>"))
            .route("/dead", Route::status(404))
            .route("/private", Route::html("never")),
    ];
    let server = TestServer::start_reserved(reserved, sites).await.expect("server starts on the port");
    let starts = vec![server.url("a.test", "/"), server.url("b.test", "/")];
    let run = common::audit(&server, &["a.test", "b.test", "ext.test"], &starts, &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;

    let ext = log.for_host("ext.test");
    assert_eq!(log.first_path("ext.test").as_deref(), Some("/robots.txt"), "{}", log.dump());
    assert_eq!(log.count("ext.test", "/robots.txt"), 1, "robots.txt of the external host read once\n{}", log.dump());
    assert_eq!(log.count("ext.test", "/private"), 0, "robots.txt of the external host obeyed\n{}", log.dump());
    let ok: Vec<_> = ext.iter().filter(|r| r.path == "/ok").collect();
    assert_eq!(ok.len(), 1, "one HEAD for two linking sites\n{}", log.dump());
    assert_eq!(ok[0].method, "HEAD");
    let dead: Vec<&str> = ext.iter().filter(|r| r.path == "/dead").map(|r| r.method.as_str()).collect();
    assert_eq!(dead, vec!["HEAD", "GET"], "HEAD failed, so one GET, once for both sites\n{}", log.dump());

    let findings = crate::db::findings(&run.db);
    let broken: Vec<&(String, String, String)> = findings.iter().filter(|f| f.0 == "broken_external_link").collect();
    let dead_url = format!("http://ext.test:{port}/dead");
    assert_eq!(broken.iter().filter(|f| f.1 == dead_url).count(), 2, "reported for each linking site: {findings:#?}");
    let gone_url = format!("http://gone.test:{port}/");
    assert!(broken.iter().any(|f| f.1 == gone_url && f.2 == "dns"), "a host that does not resolve: {findings:#?}");
    assert!(!broken.iter().any(|f| f.1.ends_with("/ok")), "{findings:#?}");
}

/// One robots.txt fetch per host per audit, whoever needs it (issue 12, item 4): a site of the
/// audit that another site of the same audit links to has its robots.txt read once, for its own
/// lane and the link check alike; a later audit reads it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_linked_from_another_site_of_the_audit_gets_one_robots_txt_fetch() {
    let reserved = ReservedPort::new().expect("a free port");
    let port = reserved.port();
    let page = |name: &str, body: &str| {
        format!(
            r#"<html lang="en"><head><title>{name}</title><meta name="description" content="d"></head><body><h1>{name}</h1>{body}</body></html>"#
        )
    };
    let sites = || {
        vec![
            Site::new("linker.test")
                .page("/", &page("Linker", &format!(r#"<a href="http://target.test:{port}/page">target</a>"#))),
            Site::new("target.test")
                .robots_txt("User-agent: *\nDisallow: /private\n")
                .page("/", &page("Target", r#"<a href="/page">page</a>"#))
                .page("/page", &page("Page", "")),
        ]
    };
    let server = TestServer::start_reserved(reserved, sites()).await.expect("server starts");
    let starts = vec![server.url("linker.test", "/"), server.url("target.test", "/")];
    let run = common::audit(&server, &["linker.test", "target.test"], &starts, &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    assert_eq!(log.count("target.test", "/robots.txt"), 1, "one robots.txt fetch in the audit\n{}", log.dump());
    assert_eq!(log.first_path("target.test").as_deref(), Some("/robots.txt"), "{}", log.dump());
    // The link check is a HEAD of its own; the site's own crawl GETs the page.
    let page: Vec<&str> =
        log.for_host("target.test").iter().filter(|r| r.path == "/page").map(|r| r.method.as_str()).collect();
    assert!(page.contains(&"GET") && page.len() <= 2, "{}", log.dump());
}

/// A link check that is redirected checks where it leads, hop by hop under each host's robots.txt
/// (issue 12, item 8): a link whose redirect ends in a 404 on another host is a broken link,
/// reported on the URL the site links to; one that ends in a 200 is not; a hop robots.txt
/// disallows is never requested.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirected_link_check_follows_the_redirect_under_each_hosts_robots_txt() {
    let reserved = ReservedPort::new().expect("a free port");
    let port = reserved.port();
    let at = |host: &str, path: &str| format!("http://{host}:{port}{path}");
    let links = format!(
        r#"<a href="{}">old</a> <a href="{}">moved</a> <a href="{}">blocked</a>"#,
        at("ext.test", "/old"),
        at("ext.test", "/moved"),
        at("ext.test", "/to-blocked")
    );
    let sites = vec![
        Site::new("linker.test").page(
            "/",
            &format!(r#"<html lang="en"><head><title>L</title><meta name="description" content="d"></head><body><h1>L</h1>{links}</body></html>"#),
        ),
        Site::new("ext.test")
            .route("/old", Route::redirect(301, &at("other.test", "/new")))
            .route("/moved", Route::redirect(302, "/here"))
            .route("/here", Route::html("<title>here</title>"))
            .route("/to-blocked", Route::redirect(301, &at("blocked.test", "/private/x"))),
        Site::new("other.test").route("/new", Route::status(404)),
        Site::new("blocked.test").robots_txt("User-agent: *\nDisallow: /private\n").route("/private/x", Route::status(404)),
    ];
    let server = TestServer::start_reserved(reserved, sites).await.expect("server starts");
    let hosts = ["linker.test", "ext.test", "other.test", "blocked.test"];
    let run = common::audit(&server, &hosts, &[server.url("linker.test", "/")], &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    assert_eq!(log.first_path("other.test").as_deref(), Some("/robots.txt"), "{}", log.dump());
    assert!(log.count("other.test", "/new") >= 1, "the redirect target was checked\n{}", log.dump());
    assert!(log.count("ext.test", "/here") >= 1, "{}", log.dump());
    assert_eq!(log.count("blocked.test", "/private/x"), 0, "robots.txt of the hop's host obeyed\n{}", log.dump());
    let broken: Vec<(String, String)> = crate::db::findings(&run.db)
        .into_iter()
        .filter(|f| f.0 == "broken_external_link")
        .map(|f| (f.1, f.2))
        .collect();
    let want = (at("ext.test", "/old"), format!("404 after redirects to {}", at("other.test", "/new")));
    assert_eq!(broken, vec![want], "reported once, on the URL linked to");
}
