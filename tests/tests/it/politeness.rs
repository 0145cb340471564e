//! End-to-end politeness: `shoal audit` against the test server, asserted from the server's own
//! request log, the way a site owner would check it.

use crate::common;
use crate::db::{self, codes, pages};

use common::{audit, audit_host};
use shoal::Exit;
use shoal_tests::log::LoggedRequest;
use shoal_tests::testsite::{ReservedPort, Route, Site, TestServer};
use std::time::Duration;

/// Scheduling slack between the crawler deciding a start and the server seeing it: the crawler's
/// clock starts the gap at claim time, the server logs arrival, and loopback connection setup
/// differs per request by a few milliseconds. A real violation (two requests inside one gap) shows
/// up as a gap near zero, far below this.
const JITTER: Duration = Duration::from_millis(15);
/// How long after a 429 was answered requests already on their way may still arrive.
const REACTION: Duration = Duration::from_millis(100);

fn assert_pace(log: &shoal_tests::log::RequestLog, host: &str, in_flight: usize, gap: Duration) {
    let max = log.max_in_flight(host);
    assert!(max <= in_flight, "{host}: {max} in flight, limit {in_flight}\n{}", log.dump());
    if let Some(min) = log.min_gap(host) {
        assert!(min + JITTER >= gap, "{host}: gap {min:?} below {gap:?}\n{}", log.dump());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_first_and_disallowed_urls_never_requested_not_even_by_redirect() {
    let server = TestServer::start(vec![
        Site::new("a.test")
            .robots_txt("User-agent: *\nDisallow: /private\n\nUser-agent: ShoalBot/2.1\nDisallow: /secret\nAllow: /\n")
            .page(
                "/",
                r#"<html><head><title>Home</title><meta name="description" content="home"></head><body><h1>Home</h1>
                <a href="/secret/a">secret</a> <a href="/private/x">private (allowed: our group wins)</a>
                <a href="/hop">hop</a> <a href="/public">public</a></body></html>"#,
            )
            .route("/hop", Route::redirect(301, "/secret/b"))
            .page("/public", "<title>Public</title><h1>p</h1>")
            .page("/private/x", "<title>Private</title><h1>x</h1>"),
    ])
    .await
    .expect("server starts");
    let (run, log) = audit_host(server, "a.test", &[]).await;
    assert_eq!(run.exit, Exit::Ok);
    assert_eq!(log.first_path("a.test").as_deref(), Some("/robots.txt"), "{}", log.dump());
    let paths = log.paths("a.test");
    assert!(!paths.iter().any(|p| p.starts_with("/secret")), "disallowed URL requested:\n{}", log.dump());
    assert!(paths.contains(&"/private/x".to_owned()), "our own group (ShoalBot/2.1) applies, not *");
    assert!(paths.contains(&"/hop".to_owned()));
    let found = codes(&run.db);
    assert!(found.contains(&"redirect_to_disallowed".to_owned()), "{found:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_and_gap_hold_per_host() {
    let server = TestServer::start(vec![
        Site::generated("a.test", 30, 5).latency(Duration::from_millis(60)),
        Site::generated("b.test", 30, 5).latency(Duration::from_millis(60)),
    ])
    .await
    .expect("server starts");
    let starts = vec![server.url("a.test", "/"), server.url("b.test", "/")];
    let run = audit(&server, &["a.test", "b.test"], &starts, &["--in-flight", "2", "--gap-ms", "100"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    for host in ["a.test", "b.test"] {
        assert_eq!(common::page_paths(&log, host).len(), 30, "30 pages\n{}", log.dump());
        assert_pace(&log, host, 2, Duration::from_millis(100));
    }
    let recorded = pages(&run.db).into_iter().filter(|p| p.1 == "page").count();
    assert_eq!(recorded, 60);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_hosts_on_one_ip_share_the_ip_cap() {
    let hosts: Vec<String> = (0..6).map(|i| format!("h{i}.test")).collect();
    let sites = hosts.iter().map(|h| Site::generated(h, 12, 3).latency(Duration::from_millis(80))).collect();
    let server = TestServer::start(sites).await.expect("server starts");
    let starts: Vec<String> = hosts.iter().map(|h| server.url(h, "/")).collect();
    let host_refs: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let run = audit(&server, &host_refs, &starts, &["--gap-ms", "0", "--ip-in-flight", "5"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    let all = log.max_in_flight_where(|_: &LoggedRequest| true);
    assert!(all <= 5, "{all} in flight to one IP, cap 5\n{}", log.dump());
    assert!(all >= 2, "the cap should not serialise everything: {all}");
    for h in &host_refs {
        assert!(log.max_in_flight(h) <= 4);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_429_nothing_before_retry_after_then_one_in_flight_and_three_seconds() {
    slow_mode_after(429, Route::too_many(Some("2"), 1, Route::html("<title>busy ok</title><h1>x</h1>"))).await;
}

/// Issue 17: a 503 that says when to come back slows the host exactly as a 429 does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_503_with_retry_after_nothing_before_it_then_one_in_flight_and_three_seconds() {
    let unavailable = Route::with_header("retry-after", "2", Route::status(503));
    slow_mode_after(503, Route::first(1, unavailable, Route::html("<title>busy ok</title><h1>x</h1>"))).await;
}

/// Audits a host whose `/busy` answers `status` once (with Retry-After: 2) and asserts from the
/// server's log: the URL is not asked again before Retry-After, and everything sent once the
/// answer could be read keeps slow mode (one in flight, 3 s apart), reported as `rate_limited`.
async fn slow_mode_after(status: u16, busy: Route) {
    let server = TestServer::start(vec![
        Site::new("a.test")
            .page("/", r#"<title>t</title><h1>h</h1><a href="/busy">b</a><a href="/a">a</a><a href="/b">b</a>"#)
            .route("/busy", busy)
            .page("/a", "<title>a</title><h1>a</h1>")
            .page("/b", "<title>b</title><h1>b</h1>"),
    ])
    .await
    .expect("server starts");
    let (run, log) = audit_host(server, "a.test", &[]).await;
    assert_eq!(run.exit, Exit::Ok);
    let reqs = log.for_host("a.test");
    let first_429 = reqs.iter().position(|r| r.status == Some(status)).expect("the slowing answer was served");
    let t429 = reqs[first_429].start;
    let busy_again = reqs.iter().skip(first_429 + 1).find(|r| r.path == "/busy").expect("the 429 URL was retried");
    assert!(
        busy_again.start.duration_since(t429) >= Duration::from_secs(2) - JITTER,
        "retried before Retry-After\n{}",
        log.dump()
    );
    // Requests claimed together with /busy may reach the site while the 429 is on its way back
    // (seen: /a and /b 0.2 ms after it); the crawler cannot call those back. Everything sent once
    // it has had time to read the 429 must keep slow mode.
    let answered = reqs[first_429].end.unwrap_or(t429);
    let after: Vec<&LoggedRequest> =
        reqs.iter().skip(first_429 + 1).copied().filter(|r| r.start > answered + REACTION).collect();
    for pair in after.windows(2) {
        let gap = pair[1].start.duration_since(pair[0].start);
        assert!(gap + JITTER >= Duration::from_secs(3), "slow mode gap {gap:?}\n{}", log.dump());
    }
    assert!(shoal_tests::log::max_in_flight_of(after.iter().copied()) <= 1);
    assert!(codes(&run.db).contains(&"rate_limited".to_owned()));
    assert_eq!(log.count("a.test", "/busy"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_retried_twice_then_reported() {
    let server = TestServer::start(vec![
        Site::new("a.test")
            .page("/", r#"<title>t</title><h1>h</h1><a href="/down">down</a>"#)
            .route("/down", Route::fail(503, 100, Route::html("never"))),
    ])
    .await
    .expect("server starts");
    let (run, log) = audit_host(server, "a.test", &[]).await;
    assert_eq!(run.exit, Exit::Ok);
    assert_eq!(log.count("a.test", "/down"), 3, "one try and two retries\n{}", log.dump());
    let found = codes(&run.db);
    assert!(found.contains(&"server_error".to_owned()), "{found:?}");
    assert!(found.contains(&"broken_internal_link".to_owned()), "{found:?}");
    assert!(!found.contains(&"rate_limited".to_owned()), "a 503 without Retry-After is no slow-down: {found:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_server_error_means_nothing_else_is_requested() {
    let server = TestServer::start(vec![
        Site::new("a.test").robots(Route::fail(500, 100, Route::text(""))).page("/", "<title>never</title>"),
    ])
    .await
    .expect("server starts");
    let start = server.url("a.test", "/");
    let run = audit(&server, &["a.test"], &[start], &[]).await;
    let log = server.shutdown().await;
    assert_eq!(run.exit, Exit::Ok);
    let paths = log.paths("a.test");
    assert!(paths.iter().all(|p| p == "/robots.txt"), "{}", log.dump());
    assert_eq!(paths.len(), 3, "robots.txt tried and retried twice");
    assert!(codes(&run.db).contains(&"robots_unreachable".to_owned()));
}

/// SPEC §3: if robots.txt disallows the start page, nothing else is requested from that host: no
/// start page, no probes (security.txt, llms.txt, the soft-404 check, the http:// form), no
/// sitemaps it names (issue 12, item 8).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_disallowing_the_start_page_means_nothing_else_is_requested() {
    let reserved = ReservedPort::new().expect("a free port");
    let port = reserved.port();
    let robots =
        format!("User-agent: *\nDisallow: /\nAllow: /sitemap.xml\n\nSitemap: http://closed.test:{port}/sitemap.xml\n");
    let site = Site::new("closed.test")
        .robots_txt(&robots)
        .page("/", "<title>never</title>")
        .route("/sitemap.xml", Route::bytes("application/xml", "<urlset></urlset>"));
    let server = TestServer::start_reserved(reserved, vec![site]).await.expect("server starts");
    let start = server.url("closed.test", "/");
    let run = audit(&server, &["closed.test"], &[start], &["--gap-ms", "0"]).await;
    let log = server.shutdown().await;
    assert_eq!(run.exit, Exit::Ok);
    assert_eq!(log.paths("closed.test"), vec!["/robots.txt".to_owned()], "{}", log.dump());
    let found = db::findings(&run.db);
    assert!(found.iter().any(|f| f.0 == "start_disallowed" && f.2 == "blocked by rule /"), "{found:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_get_and_head_no_cookies_no_referer_and_our_user_agent() {
    let server = TestServer::start(vec![
        Site::new("a.test")
            .page("/", r#"<title>t</title><h1>h</h1><a href="/b">b</a><img src="/img.png" alt="x">"#)
            .route(
                "/b",
                Route::with_header(
                    "set-cookie",
                    "session=abc; Path=/",
                    Route::html("<title>b</title><h1>b</h1><a href=\"/\">home</a>"),
                ),
            )
            .route("/img.png", Route::with_header("set-cookie", "img=1", Route::status(405))),
    ])
    .await
    .expect("server starts");
    let start = server.url("a.test", "/");
    let run = audit(
        &server,
        &["a.test"],
        &[start],
        &["--gap-ms", "0", "--user-agent", "ShoalBot/9 (+https://shoal.invalid/bot)"],
    )
    .await;
    let log = server.shutdown().await;
    assert_eq!(run.exit, Exit::Ok);
    let methods = log.methods();
    assert!(methods.iter().all(|m| m == "GET" || m == "HEAD"), "{methods:?}");
    assert!(methods.contains("HEAD"), "resources are checked with HEAD first");
    assert!(!log.any_header("cookie"), "a Cookie header was sent\n{}", log.dump());
    assert!(!log.any_header("referer"));
    assert!(
        log.all().iter().all(|r| r.header("user-agent") == Some("ShoalBot/9 (+https://shoal.invalid/bot)")),
        "{}",
        log.dump()
    );
    assert_eq!(log.count("a.test", "/img.png"), 2, "HEAD answered 405, so one GET");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_and_depth_limits_are_respected() {
    let server = TestServer::start(vec![Site::generated("a.test", 50, 2), Site::generated("b.test", 50, 1)])
        .await
        .expect("server starts");
    let run =
        audit(&server, &["a.test", "b.test"], &[server.url("a.test", "/")], &["--gap-ms", "0", "--max-pages", "7"])
            .await;
    let deep = audit(&server, &["b.test"], &[server.url("b.test", "/")], &["--gap-ms", "0", "--max-depth", "3"]).await;
    let log = server.shutdown().await;
    let a_pages = common::page_paths(&log, "a.test").len();
    assert_eq!(a_pages, 7, "{}", log.dump());
    assert!(codes(&run.db).contains(&"page_limit_reached".to_owned()));
    // b.test is a chain: / -> /p/1 -> /p/2 -> ...; depth 3 means 4 pages.
    let b_pages = common::page_paths(&log, "b.test").len();
    assert_eq!(b_pages, 4, "{}", log.dump());
    assert!(codes(&deep.db).contains(&"depth_limit_reached".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_is_refused_without_allow_private() {
    let server = TestServer::start(vec![Site::generated("a.test", 3, 2)]).await.expect("server starts");
    let start = server.url("a.test", "/");
    let literal = format!("http://127.0.0.1:{}/", server.port());
    let run = audit(&server, &["a.test"], &[start, literal], &["--deny-private"]).await;
    let log = server.shutdown().await;
    assert_eq!(run.exit, Exit::Ok, "refusing is a finding, not a failure of Shoal");
    assert!(log.is_empty(), "a private address was contacted:\n{}", log.dump());
    let found = codes(&run.db);
    assert_eq!(found.iter().filter(|c| *c == "private_address").count(), 2, "{found:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_malformed_and_hanging_responses_become_findings() {
    let server = TestServer::start(vec![
        Site::new("a.test")
            .page(
                "/",
                r#"<title>t</title><h1>h</h1><a href="/huge">h</a><a href="/bomb">b</a><a href="/bad">m</a><a href="/hang">x</a>"#,
            )
            .route("/huge", Route::huge(20 * 1024 * 1024))
            .route("/bomb", Route::gzip_bomb(200 * 1024 * 1024))
            .route("/bad", Route::malformed())
            .route("/hang", Route::hang()),
    ])
    .await
    .expect("server starts");
    let start = server.url("a.test", "/");
    let run =
        audit(&server, &["a.test"], &[start], &["--gap-ms", "0", "--timeout-s", "1", "--max-body-bytes", "1048576"])
            .await;
    let log = server.shutdown().await;
    assert_eq!(run.exit, Exit::Ok);
    let found = db::findings(&run.db);
    let too_large: Vec<_> = found.iter().filter(|f| f.0 == "body_too_large").map(|f| f.1.clone()).collect();
    assert!(too_large.iter().any(|u| u.ends_with("/huge")), "{found:?}");
    assert!(too_large.iter().any(|u| u.ends_with("/bomb")), "{found:?}");
    assert!(found.iter().any(|f| f.0 == "fetch_failed" && f.1.ends_with("/hang")), "{found:?}");
    assert_eq!(log.count("a.test", "/hang"), 3, "timeouts are retried twice");
    assert!(pages(&run.db).iter().any(|p| p.0.ends_with("/bad") && p.2 == Some(200)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_delay_raises_the_gap() {
    let server = TestServer::start(vec![
        Site::generated("a.test", 4, 3).robots_txt("User-agent: *\nCrawl-delay: 1\n"),
        Site::generated("b.test", 2, 1).robots_txt("User-agent: shoalbot\nCrawl-delay: 61\n"),
    ])
    .await
    .expect("server starts");
    let run = audit(
        &server,
        &["a.test", "b.test"],
        &[server.url("a.test", "/"), server.url("b.test", "/")],
        &["--gap-ms", "0"],
    )
    .await;
    let log = server.shutdown().await;
    assert_eq!(common::page_paths(&log, "a.test").len(), 4);
    assert_pace(&log, "a.test", 4, Duration::from_secs(1));
    assert_eq!(log.paths("b.test"), vec!["/robots.txt".to_owned()], "Crawl-delay over 60 s: off limits");
    assert!(codes(&run.db).contains(&"crawl_delay_too_high".to_owned()));
}

/// Issue 43, the tail: a lease under which nothing reaches the host (robots.txt copied from
/// another lane, a link check answered from the cache, a check another lane is asking) used to
/// take a Crawl-delay slot all the same, so a host that other sites link to waited a second for
/// each of their lanes and the audit ended long after its requests said it had to (18 s for 9
/// requests at `Crawl-delay: 1`). `a.test` and `r.test` both ask for 1 s; four sites link to two
/// of `a.test`'s pages; `r.test` has 4 pages more than `a.test`, which gets 2 link checks more:
/// with every slot of `a.test` used by a request, its last request comes before `r.test`'s
/// (about 2 s before; when the lanes' slots were lost, about 7 s after).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_that_send_nothing_take_no_crawl_delay_slot() {
    let reserved = ReservedPort::new().expect("a free port");
    let port = reserved.port();
    let linker = |name: &str| {
        format!(
            r#"<html lang="en"><head><title>{name}</title></head><body><h1>{name}</h1>
            <a href="http://a.test:{port}/p/1">1</a> <a href="http://a.test:{port}/p/2">2</a></body></html>"#
        )
    };
    let delay = "User-agent: *\nCrawl-delay: 1\n";
    let linkers = ["b.test", "c.test", "d.test", "e.test"];
    let mut sites =
        vec![Site::generated("a.test", 3, 2).robots_txt(delay), Site::generated("r.test", 7, 2).robots_txt(delay)];
    sites.extend(linkers.iter().map(|h| Site::new(h).page("/", &linker(h))));
    let server = TestServer::start_reserved(reserved, sites).await.expect("server starts on the port");
    let hosts = ["a.test", "r.test", "b.test", "c.test", "d.test", "e.test"];
    let starts: Vec<String> = hosts.iter().map(|h| server.url(h, "/")).collect();
    let run = audit(&server, &hosts, &starts, &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    assert_eq!(log.for_host("a.test").iter().filter(|r| r.method == "HEAD").count(), 2, "{}", log.dump());
    assert_eq!(log.for_host("a.test").len() + 2, log.for_host("r.test").len(), "{}", log.dump());
    let last = |h: &str| log.for_host(h).iter().map(|r| r.start).max().expect("requests");
    assert!(last("a.test") < last("r.test"), "a.test waited for slots it did not use\n{}", log.dump());
}
