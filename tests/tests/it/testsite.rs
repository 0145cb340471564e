//! Tests of the test server itself: if its routes or its request log were wrong, every end-to-end
//! politeness assertion built on them would be meaningless.

use std::io::Read as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use reqwest::header::{CONTENT_ENCODING, CONTENT_LENGTH, LOCATION, RETRY_AFTER, SET_COOKIE};
use shoal_tests::testsite::{Route, Site, TestServer, http_date_in};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A client that sends the given host names to the test server, never via a proxy.
fn client_for(server: &TestServer, hosts: &[&str]) -> reqwest::ClientBuilder {
    shoal_worker::tls::install_crypto_provider();
    hosts.iter().fold(
        reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none()),
        |builder, host| builder.resolve(host, server.addr()),
    )
}

fn client(server: &TestServer, hosts: &[&str]) -> reqwest::Client {
    client_for(server, hosts).build().expect("reqwest client builds")
}

async fn get(client: &reqwest::Client, url: &str) -> reqwest::Response {
    client.get(url).send().await.unwrap_or_else(|e| panic!("GET {url} failed: {e}"))
}

async fn text(response: reqwest::Response) -> String {
    response.text().await.expect("body reads completely")
}

/// One raw HTTP/1.1 request with a hand-written Host header; returns the whole response.
async fn raw_request(addr: SocketAddr, head: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect to test server");
    stream.write_all(head.as_bytes()).await.expect("send request");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.expect("read response");
    String::from_utf8_lossy(&response).into_owned()
}

#[tokio::test]
async fn serves_sites_by_host_name_and_robots_defaults_to_404() {
    let server = TestServer::start(vec![
        Site::new("a.test").page("/", "<title>A</title>").robots_txt("User-agent: *\nDisallow: /private"),
        Site::new("B.Test").page("/", "<title>B</title>"),
    ])
    .await
    .expect("server starts");
    let http = client(&server, &["a.test", "b.test"]);

    assert_eq!(text(get(&http, &server.url("a.test", "/")).await).await, "<title>A</title>");
    assert_eq!(text(get(&http, &server.url("b.test", "")).await).await, "<title>B</title>");

    let robots = get(&http, &server.url("a.test", "/robots.txt")).await;
    assert_eq!(robots.status(), 200);
    assert_eq!(robots.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(text(robots).await, "User-agent: *\nDisallow: /private");
    assert_eq!(get(&http, &server.url("b.test", "/robots.txt")).await.status(), 404);
    assert_eq!(get(&http, &server.url("b.test", "/nope?x=1")).await.status(), 404);

    // Host matching ignores case and port, as a site owner's virtual hosts do.
    let raw = raw_request(server.addr(), "GET / HTTP/1.1\r\nHost: A.TEST:1\r\nConnection: close\r\n\r\n").await;
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");

    let log = server.shutdown().await;
    assert_eq!(log.paths("a.test"), vec!["/", "/robots.txt", "/"], "{}", log.dump());
    assert_eq!(log.paths("b.test"), vec!["/", "/robots.txt", "/nope?x=1"], "{}", log.dump());
    assert_eq!(log.first_path("a.test").as_deref(), Some("/"));
    assert_eq!(log.count("b.test", "/nope?x=1"), 1);
    assert_eq!(log.hosts(), vec!["a.test", "b.test"]);
    let statuses: Vec<Option<u16>> = log.for_host("b.test").iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![Some(200), Some(404), Some(404)]);
    assert!(log.all().iter().all(|r| r.end.is_some_and(|end| end >= r.start)), "{}", log.dump());
}

#[tokio::test]
async fn unknown_host_gets_421_and_is_logged() {
    let server = TestServer::start(vec![Site::new("a.test")]).await.expect("server starts");
    let http = client(&server, &["other.test"]);
    let response = get(&http, &server.url("other.test", "/x")).await;
    assert_eq!(response.status(), 421);
    let raw = raw_request(server.addr(), "GET /y HTTP/1.1\r\nConnection: close\r\n\r\n").await;
    assert!(raw.starts_with("HTTP/1.1 421"), "{raw}");

    let log = server.log();
    assert_eq!(log.paths("other.test"), vec!["/x"], "{}", log.dump());
    assert_eq!(log.paths(""), vec!["/y"], "a request without Host is logged under an empty host\n{}", log.dump());
    assert_eq!(log.for_host("other.test")[0].status, Some(421));
}

#[test]
fn binding_anything_but_loopback_is_refused() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let result = rt.block_on(TestServer::start_on("0.0.0.0:0".parse().expect("address"), vec![]));
    let error = result.expect_err("0.0.0.0 must be refused");
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
}

#[tokio::test]
async fn too_many_answers_429_with_retry_after_as_given_then_the_page() {
    let date = http_date_in(Duration::from_secs(30));
    let server = TestServer::start(vec![
        Site::new("a.test")
            .route("/secs", Route::too_many(Some("2"), 2, Route::html("ok")))
            .route("/date", Route::too_many(Some(&date), 1, Route::html("ok")))
            .route("/bare", Route::too_many(None, 1, Route::html("ok"))),
    ])
    .await
    .expect("server starts");
    let http = client(&server, &["a.test"]);
    let url = server.url("a.test", "/secs");

    let mut seen = Vec::new();
    for _ in 0..4 {
        let response = get(&http, &url).await;
        let retry_after = response.headers().get(RETRY_AFTER).map(|v| v.to_str().expect("ascii").to_owned());
        seen.push((response.status().as_u16(), retry_after));
    }
    let two = Some("2".to_owned());
    assert_eq!(seen, vec![(429, two.clone()), (429, two), (200, None), (200, None)]);

    let dated = get(&http, &server.url("a.test", "/date")).await;
    assert_eq!(dated.status(), 429);
    assert_eq!(dated.headers()[RETRY_AFTER], date.as_str());
    assert_eq!(get(&http, &server.url("a.test", "/date")).await.status(), 200);

    let bare = get(&http, &server.url("a.test", "/bare")).await;
    assert_eq!(bare.status(), 429);
    assert!(bare.headers().get(RETRY_AFTER).is_none());

    let log = server.shutdown().await;
    assert_eq!(log.count("a.test", "/secs"), 4);
    let statuses: Vec<Option<u16>> = log.for_host("a.test").iter().take(4).map(|r| r.status).collect();
    assert_eq!(statuses, vec![Some(429), Some(429), Some(200), Some(200)], "{}", log.dump());
}

#[tokio::test]
async fn failures_and_sequences_count_per_path_and_per_server() {
    let site = || {
        Site::new("a.test").route("/flaky", Route::fail(503, 1, Route::html("up"))).route(
            "/seq",
            Route::sequence(vec![Route::status(500), Route::redirect(302, "/there"), Route::html("here")]),
        )
    };
    let first = TestServer::start(vec![site()]).await.expect("server starts");
    let second = TestServer::start(vec![site()]).await.expect("server starts");
    let http1 = client(&first, &["a.test"]);
    let http2 = client(&second, &["a.test"]);

    let mut statuses = Vec::new();
    for path in ["/flaky", "/flaky", "/seq", "/seq", "/seq", "/seq", "/flaky?q=1"] {
        statuses.push(get(&http1, &first.url("a.test", path)).await.status().as_u16());
    }
    assert_eq!(statuses, vec![503, 200, 500, 302, 200, 200, 503], "a query string is another path to count");
    // A second server, in the same process, starts counting from zero.
    assert_eq!(get(&http2, &second.url("a.test", "/flaky")).await.status(), 503);
    assert_eq!(get(&http2, &second.url("a.test", "/seq")).await.status(), 500);
}

#[tokio::test]
async fn log_sees_two_concurrent_slow_requests_in_flight_and_sequential_ones_not() {
    let server = TestServer::start(vec![
        Site::new("a.test").route("/slow", Route::slow(ms(400), Route::html("late"))),
        Site::new("b.test").route("/slow", Route::html("late").delayed(ms(100))),
    ])
    .await
    .expect("server starts");
    let http = client(&server, &["a.test", "b.test"]);
    let a = server.url("a.test", "/slow");
    let (one, two) = tokio::join!(get(&http, &a), get(&http, &a));
    assert_eq!((one.status().as_u16(), two.status().as_u16()), (200, 200));
    assert_eq!(text(one).await, "late");
    drop(two);

    let b = server.url("b.test", "/slow");
    for _ in 0..2 {
        text(get(&http, &b).await).await;
    }

    let log = server.shutdown().await;
    assert_eq!(log.max_in_flight("a.test"), 2, "{}", log.dump());
    assert_eq!(log.max_in_flight("b.test"), 1, "{}", log.dump());
    assert_eq!(log.max_in_flight_where(|r| r.path == "/slow"), 2);
    assert!(log.min_gap("a.test").expect("two requests") < ms(400), "{}", log.dump());
    assert!(log.min_gap("b.test").expect("two requests") >= ms(100), "{}", log.dump());
    assert_eq!(log.gaps("b.test").len(), 1);
    for r in log.for_host("a.test") {
        assert!(r.duration().expect("finished") >= ms(400), "{}", log.dump());
    }
}

#[tokio::test]
async fn gzip_bomb_is_small_on_the_wire_and_inflates_to_its_size() {
    const SIZE: u64 = 32 * 1024 * 1024;
    let server = TestServer::start(vec![Site::new("a.test").route("/bomb", Route::gzip_bomb(SIZE))])
        .await
        .expect("server starts");
    let raw = client_for(&server, &["a.test"]).no_gzip().build().expect("client builds");
    let response = get(&raw, &server.url("a.test", "/bomb")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()[CONTENT_ENCODING], "gzip");
    let declared: usize = response.headers()[CONTENT_LENGTH].to_str().expect("ascii").parse().expect("number");
    let wire = response.bytes().await.expect("body");
    assert_eq!(wire.len(), declared);
    assert!(wire.len() < 100 * 1024, "bomb is {} bytes on the wire", wire.len());

    let mut inflated = 0u64;
    let mut decoder = flate2::read::GzDecoder::new(&wire[..]);
    let mut buf = vec![0u8; 1024 * 1024];
    loop {
        let n = decoder.read(&mut buf).expect("valid gzip");
        if n == 0 {
            break;
        }
        inflated += n as u64;
    }
    assert_eq!(inflated, SIZE);
}

#[tokio::test]
async fn huge_page_streams_exactly_its_size_and_gzip_compresses_it_on_the_fly() {
    const SIZE: u64 = 16 * 1024 * 1024 + 3;
    let server = TestServer::start(vec![
        Site::new("a.test")
            .route("/huge", Route::huge(SIZE))
            .route("/huge.gz", Route::gzip(Route::huge(SIZE)))
            .route("/chunked", Route::no_content_length(Route::huge(1000))),
    ])
    .await
    .expect("server starts");
    let http = client(&server, &["a.test"]);

    let response = get(&http, &server.url("a.test", "/huge")).await;
    assert_eq!(response.headers()[CONTENT_LENGTH], SIZE.to_string().as_str());
    let mut body = response.bytes_stream();
    let (mut total, mut first) = (0u64, None);
    while let Some(chunk) = body.next().await {
        let chunk = chunk.expect("chunk");
        first.get_or_insert_with(|| chunk.slice(..15));
        total += chunk.len() as u64;
    }
    assert_eq!(total, SIZE);
    assert_eq!(first.as_deref(), Some(&b"<!doctype html>"[..]));

    let raw = client_for(&server, &["a.test"]).no_gzip().build().expect("client builds");
    let gz = get(&raw, &server.url("a.test", "/huge.gz")).await;
    assert_eq!(gz.headers()[CONTENT_ENCODING], "gzip");
    assert!(gz.headers().get(CONTENT_LENGTH).is_none(), "a streamed gzip body has no length up front");
    let wire = gz.bytes().await.expect("body");
    assert!((wire.len() as u64) < SIZE / 20, "{} bytes on the wire", wire.len());
    let mut inflated = Vec::new();
    flate2::read::GzDecoder::new(&wire[..]).read_to_end(&mut inflated).expect("valid gzip");
    assert_eq!(inflated.len() as u64, SIZE);

    let chunked = get(&http, &server.url("a.test", "/chunked")).await;
    assert!(chunked.headers().get(CONTENT_LENGTH).is_none());
    assert_eq!(chunked.bytes().await.expect("body").len(), 1000);
}

#[tokio::test]
async fn hang_holds_the_request_until_the_client_gives_up_and_does_not_block_shutdown() {
    let server =
        TestServer::start(vec![Site::new("a.test").route("/hang", Route::hang()).route("/stall", Route::hang_body())])
            .await
            .expect("server starts");
    let impatient = client_for(&server, &["a.test"]).timeout(ms(200)).build().expect("client builds");

    let error = impatient.get(server.url("a.test", "/hang")).send().await.expect_err("must time out");
    assert!(error.is_timeout(), "{error}");
    let stalled = impatient.get(server.url("a.test", "/stall")).send().await.expect("headers arrive");
    assert_eq!(stalled.status(), 200);
    assert!(stalled.bytes().await.is_err(), "body must stall past the timeout");

    // The server notices the client leaving and closes the log entry (no status: nothing was sent).
    let deadline = Instant::now() + Duration::from_secs(1);
    while server.log().for_host("a.test").iter().any(|r| r.end.is_none()) && Instant::now() < deadline {
        tokio::time::sleep(ms(10)).await;
    }
    let log = server.log();
    let hang = log.for_host("a.test")[0];
    assert_eq!((hang.path.as_str(), hang.status), ("/hang", None), "{}", log.dump());
    assert!(hang.end.is_some(), "{}", log.dump());
    assert_eq!(log.for_host("a.test")[1].status, Some(200));

    // A request still hanging at shutdown gets a 503 at once.
    let patient = client(&server, &["a.test"]);
    let url = server.url("a.test", "/hang");
    let waiting = tokio::spawn(async move { patient.get(url).send().await.map(|r| r.status().as_u16()) });
    while server.log().len() < 3 {
        tokio::time::sleep(ms(5)).await;
    }
    let started = Instant::now();
    let log = server.shutdown().await;
    assert!(started.elapsed() < ms(900), "shutdown took {:?}", started.elapsed());
    assert_eq!(waiting.await.expect("task").expect("answered"), 503);
    assert_eq!(log.len(), 3, "{}", log.dump());
}

#[tokio::test]
async fn headers_statuses_redirects_and_broken_bodies() {
    let server = TestServer::start(vec![
        Site::new("a.test")
            .route(
                "/cookies",
                Route::html("<title>c</title>")
                    .header("Set-Cookie", "a=1")
                    .header("Set-Cookie", "b=2")
                    .header("X-Robots-Tag", "noindex, nofollow")
                    .header("content-type", "text/html; charset=iso-8859-1"),
            )
            .route("/gone", Route::with_status(410, Route::html("<h1>gone</h1>")))
            .route("/moved", Route::redirect(301, "/new"))
            .route("/broken", Route::malformed())
            .route("/cut", Route::cut_off(1000))
            .route("/img.png", Route::bytes("image/png", vec![0x89, b'P', b'N', b'G']))
            .route("/gz", Route::gzip(Route::html("<p>compressed</p>")))
            .fallback(Route::html("soft 404")),
    ])
    .await
    .expect("server starts");
    let http = client(&server, &["a.test"]);
    let url = |path| server.url("a.test", path);

    let cookies = get(&http, &url("/cookies")).await;
    let set: Vec<_> = cookies.headers().get_all(SET_COOKIE).iter().map(|v| v.to_str().expect("ascii")).collect();
    assert_eq!(set, vec!["a=1", "b=2"]);
    assert_eq!(cookies.headers()["x-robots-tag"], "noindex, nofollow");
    let content_types: Vec<_> = cookies.headers().get_all("content-type").iter().collect();
    assert_eq!(content_types, vec!["text/html; charset=iso-8859-1"], "with_header replaces the route's own header");

    let gone = get(&http, &url("/gone")).await;
    assert_eq!(gone.status(), 410);
    assert_eq!(text(gone).await, "<h1>gone</h1>");

    let moved = get(&http, &url("/moved")).await;
    assert_eq!(moved.status(), 301);
    assert_eq!(moved.headers()[LOCATION], "/new");

    let broken = get(&http, &url("/broken")).await.bytes().await.expect("body");
    assert!(std::str::from_utf8(&broken).is_err(), "malformed page must not be valid UTF-8");

    assert!(get(&http, &url("/cut")).await.bytes().await.is_err(), "cut-off body must fail");
    assert_eq!(get(&http, &url("/img.png")).await.headers()["content-type"], "image/png");

    let gz = get(&http, &url("/gz")).await;
    assert_eq!(gz.headers().get(CONTENT_ENCODING), None, "reqwest decoded it");
    assert_eq!(text(gz).await, "<p>compressed</p>");

    let soft = get(&http, &url("/does-not-exist")).await;
    assert_eq!((soft.status().as_u16(), text(soft).await.as_str()), (200, "soft 404"));
}

#[tokio::test]
async fn log_records_methods_and_lowercased_request_headers() {
    let server =
        TestServer::start(vec![Site::new("a.test").page("/", "<title>x</title>")]).await.expect("server starts");
    let http = client(&server, &["a.test"]);
    let url = server.url("a.test", "/");
    let head = http.head(&url).header("X-Test", "Yes").send().await.expect("HEAD");
    assert_eq!(head.status(), 200);
    text(get(&http, &url).await).await;

    let log = server.shutdown().await;
    assert_eq!(log.methods().into_iter().collect::<Vec<_>>(), vec!["GET", "HEAD"]);
    assert!(log.any_header("x-test") && log.any_header("X-TEST"));
    assert!(!log.any_header("cookie"));
    let first = log.for_host("a.test")[0];
    assert!(first.headers.contains(&("x-test".to_owned(), "Yes".to_owned())), "{:?}", first.headers);
    assert_eq!(
        first.header("host"),
        Some(format!("a.test:{}", url.split(':').nth(2).and_then(|p| p.split('/').next()).expect("port")).as_str())
    );
    assert!(log.dump().contains("HEAD a.test /"), "{}", log.dump());
}

#[tokio::test]
async fn generated_site_is_a_shallow_tree_with_unique_titles() {
    const PAGES: usize = 40;
    const LINKS: usize = 3;
    let server = TestServer::start(vec![Site::generated("g.test", PAGES, LINKS)]).await.expect("server starts");
    let http = client(&server, &["g.test"]);

    // Breadth-first crawl following every href, as the crawler would.
    let mut depth_of = std::collections::BTreeMap::from([("/".to_owned(), 0usize)]);
    let mut queue = std::collections::VecDeque::from(["/".to_owned()]);
    let mut titles = std::collections::BTreeSet::new();
    while let Some(path) = queue.pop_front() {
        let response = get(&http, &server.url("g.test", &path)).await;
        assert_eq!(response.status(), 200, "{path}");
        let html = text(response).await;
        assert_eq!(html.matches("<h1>").count(), 1, "{path}");
        assert_eq!(html.matches("<meta name=\"description\"").count(), 1, "{path}");
        let title = html.split("<title>").nth(1).and_then(|t| t.split("</title>").next()).expect("title");
        assert!(titles.insert(title.to_owned()), "duplicate title {title}");
        for link in html.split("href=\"").skip(1).filter_map(|s| s.split('"').next()) {
            if !depth_of.contains_key(link) {
                depth_of.insert(link.to_owned(), depth_of[&path] + 1);
                queue.push_back(link.to_owned());
            }
        }
    }
    let found: Vec<String> = depth_of.keys().cloned().collect();
    let mut expected = Site::generated_paths(PAGES);
    expected.sort();
    assert_eq!(found, expected);
    let deepest = depth_of.values().copied().max().expect("pages");
    assert_eq!(deepest, Site::generated_max_depth(PAGES, LINKS));
    assert!(deepest <= 4);
    assert_eq!(get(&http, &server.url("g.test", &format!("/p/{PAGES}"))).await.status(), 404);
    assert_eq!(get(&http, &server.url("g.test", "/robots.txt")).await.status(), 404);
}

/// A running `shoal-testsite` binary and its stdout after the `listening` line.
struct Binary {
    child: tokio::process::Child,
    addr: SocketAddr,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
}

/// Starts the binary with `args` (plus a 20 s safety bound) and reads its address.
async fn spawn_binary(args: &[&str], log_path: &std::path::Path) -> Binary {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_shoal-testsite"))
        .args(args)
        .args(["--max-seconds", "20", "--log-json"])
        .arg(log_path)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn shoal-testsite");
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut first = String::new();
    tokio::io::AsyncBufReadExt::read_line(&mut stdout, &mut first).await.expect("first line");
    let addr: SocketAddr = first.trim().strip_prefix("listening ").expect("listening line").parse().expect("address");
    assert!(addr.ip().is_loopback());
    shoal_worker::tls::install_crypto_provider();
    Binary { child, addr, stdout }
}

/// SIGTERM, a clean exit, and the summary it printed.
async fn stop_binary(mut binary: Binary) -> String {
    let pid = binary.child.id().expect("running").to_string();
    let killed = tokio::process::Command::new("kill").args(["-TERM", &pid]).status().await.expect("run kill");
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(5), binary.child.wait())
        .await
        .expect("exits after SIGTERM")
        .expect("wait");
    assert!(status.success(), "{status}");
    let mut summary = String::new();
    binary.stdout.read_to_string(&mut summary).await.expect("summary");
    summary
}

#[tokio::test]
async fn binary_serves_generated_hosts_and_writes_its_log_on_sigterm() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log_path = dir.path().join("log.jsonl");
    let binary = spawn_binary(&["--hosts", "2", "--pages", "3", "--links", "2"], &log_path).await;
    let addr = binary.addr;

    let http = reqwest::Client::builder().no_proxy().resolve("site1.test", addr).build().expect("client builds");
    let page = get(&http, &format!("http://site1.test:{}/p/2", addr.port())).await;
    assert_eq!(page.status(), 200);
    assert!(text(page).await.contains("<title>site1.test page 2</title>"));

    let summary = stop_binary(binary).await;
    assert!(summary.contains("requests 1\n"), "{summary}");

    let json = std::fs::read_to_string(&log_path).expect("log written");
    let entry: serde_json::Value = serde_json::from_str(json.trim()).expect("one JSON line");
    assert_eq!(entry["host"], "site1.test");
    assert_eq!(entry["path"], "/p/2");
    assert_eq!(entry["status"], 200);
    assert!(entry["start_ms"].as_f64().expect("start") <= entry["end_ms"].as_f64().expect("end"));
}

#[tokio::test]
async fn too_many_first_throttles_the_whole_host_but_not_robots_txt_then_serves_every_path() {
    let server = TestServer::start(vec![
        Site::new("a.test")
            .page("/", "home")
            .route("/flaky", Route::fail(503, 1, Route::html("up")))
            .too_many_first(Some("1"), 3),
        Site::new("b.test").page("/", "b"),
    ])
    .await
    .expect("server starts");
    let http = client(&server, &["a.test", "b.test"]);

    let mut seen = Vec::new();
    for (host, path) in [
        ("a.test", "/robots.txt"),
        ("a.test", "/"),
        ("b.test", "/"),
        ("a.test", "/flaky"),
        ("a.test", "/robots.txt?x"),
        ("a.test", "/nope?q=1"),
        ("a.test", "/"),
        ("a.test", "/flaky"),
        ("a.test", "/flaky"),
    ] {
        let response = get(&http, &server.url(host, path)).await;
        let retry_after = response.headers().get(RETRY_AFTER).map(|v| v.to_str().expect("ascii").to_owned());
        seen.push((response.status().as_u16(), retry_after));
    }
    let one = || Some("1".to_owned());
    assert_eq!(
        seen,
        vec![
            (404, None),
            (429, one()),
            (200, None),
            (429, one()),
            (404, None),
            (429, one()),
            (200, None),
            (503, None),
            (200, None)
        ],
        "robots.txt is never throttled; the 4th other request on is served, and /flaky first counts the request after the throttle"
    );

    let log = server.shutdown().await;
    let statuses: Vec<(String, Option<u16>)> =
        log.for_host("a.test").iter().map(|r| (r.path.clone(), r.status)).collect();
    let want: Vec<(String, Option<u16>)> = [
        ("/robots.txt", 404),
        ("/", 429),
        ("/flaky", 429),
        ("/robots.txt?x", 404),
        ("/nope?q=1", 429),
        ("/", 200),
        ("/flaky", 503),
        ("/flaky", 200),
    ]
    .into_iter()
    .map(|(p, s)| (p.to_owned(), Some(s)))
    .collect();
    assert_eq!(statuses, want, "{}", log.dump());
    assert_eq!(log.for_host("b.test").iter().map(|r| r.status).collect::<Vec<_>>(), vec![Some(200)]);
}

#[tokio::test]
async fn binary_throttles_one_host_for_its_first_requests_and_logs_user_agents() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log_path = dir.path().join("log.jsonl");
    let args = ["--hosts", "2", "--pages", "3", "--throttle-host", "Site0.test", "--throttle-first", "2"];
    let before = std::time::SystemTime::now();
    let binary = spawn_binary(&args, &log_path).await;
    let port = binary.addr.port();
    let http = reqwest::Client::builder()
        .no_proxy()
        .user_agent("SoakBot/w1")
        .resolve("site0.test", binary.addr)
        .resolve("site1.test", binary.addr)
        .build()
        .expect("client builds");
    let mut statuses = Vec::new();
    for (host, path) in [("site0", "/robots.txt"), ("site0", "/"), ("site1", "/"), ("site0", "/p/1"), ("site0", "/p/1")]
    {
        let response = get(&http, &format!("http://{host}.test:{port}{path}")).await;
        if response.status() == 429 {
            assert_eq!(response.headers()[RETRY_AFTER], "1");
        }
        statuses.push(response.status().as_u16());
    }
    assert_eq!(statuses, vec![404, 429, 200, 429, 200]);
    let summary = stop_binary(binary).await;
    let after = std::time::SystemTime::now();
    assert!(summary.contains("statuses 200=2 404=1 429=2\n"), "{summary}");
    let origin = summary
        .lines()
        .find_map(|l| l.strip_prefix("origin_unix_ms "))
        .and_then(|v| v.parse::<u64>().ok())
        .expect("origin_unix_ms line");
    let unix_ms = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).expect("after 1970")
    };
    assert!((unix_ms(before)..=unix_ms(after)).contains(&origin), "{summary}");

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log_path)
        .expect("log written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let logged: Vec<(String, String, u64)> = lines
        .iter()
        .map(|e| {
            assert_eq!(e["user_agent"], "SoakBot/w1", "{e}");
            let host = e["host"].as_str().expect("host").to_owned();
            (host, e["path"].as_str().expect("path").to_owned(), e["status"].as_u64().expect("status"))
        })
        .collect();
    let want: Vec<(String, String, u64)> = [
        ("site0.test", "/robots.txt", 404),
        ("site0.test", "/", 429),
        ("site1.test", "/", 200),
        ("site0.test", "/p/1", 429),
        ("site0.test", "/p/1", 200),
    ]
    .into_iter()
    .map(|(h, p, s)| (h.to_owned(), p.to_owned(), s))
    .collect();
    assert_eq!(logged, want);
}

#[tokio::test]
async fn binary_refuses_to_throttle_a_host_it_does_not_serve() {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_shoal-testsite"))
        .args(["--hosts", "2", "--throttle-host", "site2.test", "--throttle-first", "1", "--max-seconds", "5"])
        .output()
        .await
        .expect("run shoal-testsite");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("site2.test is not one of the 2 hosts"), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing listened");
}
