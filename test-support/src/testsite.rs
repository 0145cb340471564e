//! A programmable many-host test web server for end-to-end crawler tests.
//!
//! One [`TestServer`] listens on a loopback port and serves any number of [`Site`]s, chosen by the
//! request's `Host` header (lowercase, port removed). The crawler is pointed at it with
//! `--resolve a.test=127.0.0.1`, so it sends `Host: a.test:PORT` exactly as it would to a real site.
//! Every request is logged ([`RequestLog`]), and politeness is asserted from that log, the way a
//! site owner would check it.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use shoal_test_support::testsite::{Route, Site, TestServer};
//! let server = TestServer::start(vec![
//!     Site::new("a.test")
//!         .robots_txt("User-agent: *\nDisallow: /private")
//!         .page("/", "<a href=\"/busy\">busy</a>")
//!         .route("/busy", Route::too_many(Some("1"), 1, Route::html("<title>ok</title>"))),
//!     Site::generated("b.test", 50, 4),
//! ])
//! .await?;
//! let start_url = server.url("a.test", "/");
//! // ... run the crawler against start_url with --resolve a.test=127.0.0.1 ...
//! let log = server.shutdown().await;
//! assert!(log.max_in_flight("a.test") <= 4, "{}", log.dump());
//! # Ok(()) }
//! ```
//!
//! Only loopback addresses can be bound. Each server has its own request counters and log, so tests
//! running in parallel in one process do not see each other.

mod bomb;
pub mod browser;
mod generated;
mod gzip;
mod load;
mod route;
pub mod shop;
pub mod shop_extract;
pub mod shop_links;
mod tls;

use std::borrow::Cow;
use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::header::HOST;
use axum::http::uri::Authority;
use axum::response::Response;
use hyper::body::{Frame, SizeHint};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::debug;

pub use self::route::Route;
pub use self::tls::{LeafSpec, PlainHttp, TestCa, TlsCert, TlsConfig};
use crate::log::{Completion, Recorder};
pub use crate::log::{LoggedRequest, RequestLog};
use generated::{Generated, page_path};

/// How long [`TestServer::shutdown`] lets open connections finish before cutting them.
const DRAIN_DEADLINE: Duration = Duration::from_secs(1);

/// An HTTP date `after` from now, for `Retry-After` in its date form. HTTP dates have one-second
/// resolution, so the effective wait is between `after - 1 s` and `after`.
pub fn http_date_in(after: Duration) -> String {
    httpdate::fmt_http_date(SystemTime::now() + after)
}

/// One website of the test server: a host name and what each path answers.
///
/// Lookup order for a request: a route registered for the exact path and query, then for the path
/// without its query, then a generated page (see [`Site::generated`]), then the fallback (404).
/// `/robots.txt` answers 404 unless set with [`Site::robots_txt`] or [`Site::robots`]. A site
/// throttled with [`Site::too_many_first`] answers 429 before any lookup while its count lasts.
#[derive(Clone, Debug)]
pub struct Site {
    host: String,
    routes: HashMap<String, Route>,
    fallback: Route,
    generated: Option<Generated>,
    latency: Duration,
    throttle: Option<Throttle>,
    load: Option<load::Load>,
}

/// Host-wide rate limiting: the first `times` requests other than robots.txt get `answer`.
#[derive(Clone, Debug)]
struct Throttle {
    times: u32,
    answer: Route,
}

impl Site {
    /// An empty site: every path, robots.txt included, answers 404.
    pub fn new(host: &str) -> Site {
        let mut routes = HashMap::new();
        routes.insert("/robots.txt".to_owned(), Route::status(404));
        Site {
            host: host.to_ascii_lowercase(),
            routes,
            fallback: Route::status(404),
            generated: None,
            latency: Duration::ZERO,
            throttle: None,
            load: None,
        }
    }

    /// A deterministic site of exactly `pages` HTML pages (`/`, `/p/1` … `/p/{pages-1}`), linked
    /// as a tree in which page `i` links to pages `i*links_per_page+1 ..= i*links_per_page+links_per_page`,
    /// back to its parent and to `/`. Every page is reachable from `/` within
    /// [`Site::generated_max_depth`] links and has a unique title, meta description and one `<h1>`.
    /// Pages are rendered per request, so thousands of large sites cost no memory. robots.txt is
    /// 404 (allow all) unless set. A `links_per_page` of 0 counts as 1 (a chain).
    ///
    /// It is a *clean* site: pages carry `lang`, the usual security headers, and the site has a
    /// valid `/.well-known/security.txt`, so an audit of it over http finds only `no_https` (and
    /// `deep_page` for pages 4 or more links deep).
    pub fn generated(host: &str, pages: usize, links_per_page: usize) -> Site {
        let host = host.to_ascii_lowercase();
        let security_txt = format!("Contact: mailto:security@{host}\nExpires: 2099-01-01T00:00:00Z\n");
        let mut site = Site::new(&host).route("/.well-known/security.txt", Route::text(security_txt));
        site.generated = Some(Generated::new(pages, links_per_page));
        site
    }

    /// The paths of a generated site with `pages` pages, in page order; for asserting what a crawl found.
    pub fn generated_paths(pages: usize) -> Vec<String> {
        (0..pages).map(page_path).collect()
    }

    /// The link depth of the deepest page of a generated site (0 for a one-page site).
    pub fn generated_max_depth(pages: usize, links_per_page: usize) -> usize {
        Generated::new(pages, links_per_page).depth(pages.saturating_sub(1))
    }

    /// The site's host name (lowercase).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Serves `body` as `/robots.txt` (200, `text/plain`).
    #[must_use]
    pub fn robots_txt(self, body: &str) -> Site {
        self.robots(Route::text(body))
    }

    /// Serves any route as `/robots.txt`: a 503, a redirect, a 429, a hang...
    #[must_use]
    pub fn robots(self, route: Route) -> Site {
        self.route("/robots.txt", route)
    }

    /// Serves an HTML page (200) at `path`.
    #[must_use]
    pub fn page(self, path: &str, html: &str) -> Site {
        self.route(path, Route::html(html))
    }

    /// Serves `route` at `path` (a path, optionally with `?query`; matched exactly).
    ///
    /// # Panics
    /// If `path` does not start with `/`: it would never match a request.
    #[must_use]
    pub fn route(mut self, path: &str, route: Route) -> Site {
        assert!(path.starts_with('/'), "route path {path:?} must start with '/'");
        self.routes.insert(path.to_owned(), route);
        self
    }

    /// What unknown paths answer instead of the default 404 page (e.g. 200 for a soft-404 site).
    #[must_use]
    pub fn fallback(mut self, route: Route) -> Site {
        self.fallback = route;
        self
    }

    /// Delays every response of this site by `latency`, on top of any [`Route::slow`].
    #[must_use]
    pub fn latency(mut self, latency: Duration) -> Site {
        self.latency = latency;
        self
    }

    /// `429 Too Many Requests` for the first `times` requests to this host other than
    /// `/robots.txt`, whatever their path; after that every path answers what it would have. A
    /// site that rate-limits a crawler's first visit only, e.g. audit 1 of a series. `retry_after`
    /// is sent as `Retry-After` as in [`Route::too_many`]. The host's requests are counted per
    /// server; the throttled ones do not reach their path, so its counting routes do not count them.
    ///
    /// # Panics
    /// If `retry_after` is not a valid header value.
    #[must_use]
    pub fn too_many_first(mut self, retry_after: Option<&str>, times: u32) -> Site {
        self.throttle = Some(Throttle { times, answer: Route::rate_limited(retry_after) });
        self
    }

    fn lookup(&self, path_and_query: &str) -> Cow<'_, Route> {
        if let Some(route) = self.routes.get(path_and_query) {
            return Cow::Borrowed(route);
        }
        let path = path_and_query.split_once('?').map_or(path_and_query, |(path, _)| path);
        if let Some(route) = self.routes.get(path) {
            return Cow::Borrowed(route);
        }
        if let Some(generated) = &self.generated
            && let Some(i) = generated.page_of(path)
        {
            return Cow::Owned(
                Route::html(generated.render(&self.host, i))
                    .gzipped()
                    .header("content-security-policy", "default-src 'self'; frame-ancestors 'none'")
                    .header("x-content-type-options", "nosniff")
                    .header("referrer-policy", "no-referrer"),
            );
        }
        Cow::Borrowed(&self.fallback)
    }
}

/// State shared by all connections of one server.
#[derive(Debug)]
struct Shared {
    sites: HashMap<String, Site>,
    /// Requests seen so far per (host, path and query): what the counting routes look at.
    counters: Mutex<HashMap<(String, String), u32>>,
    /// Requests other than robots.txt seen so far per throttled host ([`Site::too_many_first`]).
    throttled: Mutex<HashMap<String, u32>>,
    log: Arc<Recorder>,
    cancel: CancellationToken,
}

impl Shared {
    /// The 0-based number of this request among those to the same host and path.
    fn next_count(&self, host: &str, path: &str) -> u32 {
        let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        let count = counters.entry((host.to_owned(), path.to_owned())).or_insert(0);
        let n = *count;
        *count = count.saturating_add(1);
        n
    }

    /// Whether this request to `site` is one its throttle answers (and counts it if so).
    fn throttles<'s>(&self, site: &'s Site, path: &str) -> Option<&'s Route> {
        let throttle = site.throttle.as_ref()?;
        if path.split_once('?').map_or(path, |(path, _)| path) == "/robots.txt" {
            return None;
        }
        let mut counts = self.throttled.lock().unwrap_or_else(PoisonError::into_inner);
        let count = counts.entry(site.host.clone()).or_insert(0);
        let n = *count;
        *count = count.saturating_add(1);
        (n < throttle.times).then_some(&throttle.answer)
    }
}

/// A running test server. Dropping it stops it in the background; [`TestServer::shutdown`] stops it
/// and waits, returning the final log.
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    /// `"https"` for a server started with [`TestServer::start_tls`], else `"http"`.
    scheme: &'static str,
    started_at: Instant,
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Starts serving `sites` on `127.0.0.1` with a free port.
    ///
    /// # Errors
    /// If binding fails, or two sites share a host name.
    pub async fn start(sites: Vec<Site>) -> io::Result<TestServer> {
        TestServer::start_on(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), sites).await
    }

    /// Starts serving `sites` on a given loopback address (port 0 picks a free port).
    ///
    /// # Errors
    /// If `addr` is not a loopback address (the test server must never be reachable from outside),
    /// if binding fails, or if two sites share a host name.
    pub async fn start_on(addr: SocketAddr, sites: Vec<Site>) -> io::Result<TestServer> {
        TestServer::start_with(addr, sites, None).await
    }

    /// Starts serving `sites` over HTTPS on `127.0.0.1` with a free port (see [`TlsConfig`]);
    /// [`TestServer::url`] then gives `https://` URLs.
    ///
    /// # Errors
    /// As [`TestServer::start`], or if a certificate's key cannot be loaded.
    pub async fn start_tls(sites: Vec<Site>, tls: TlsConfig) -> io::Result<TestServer> {
        TestServer::start_tls_on(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), sites, tls).await
    }

    /// [`TestServer::start_tls`] on a given loopback address (port 0 picks a free port).
    ///
    /// # Errors
    /// As [`TestServer::start_on`], or if a certificate's key cannot be loaded.
    pub async fn start_tls_on(addr: SocketAddr, sites: Vec<Site>, tls: TlsConfig) -> io::Result<TestServer> {
        TestServer::start_with(addr, sites, Some(Arc::new(tls.into_tls()?))).await
    }

    async fn start_with(addr: SocketAddr, sites: Vec<Site>, tls: Option<Arc<tls::Tls>>) -> io::Result<TestServer> {
        if !addr.ip().is_loopback() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("test server must bind loopback, not {addr}"),
            ));
        }
        TestServer::serve_on(TcpListener::bind(addr).await?, sites, tls)
    }

    /// Starts serving `sites` on a port reserved before they were made (their pages name it):
    /// the port stays bound from [`ReservedPort::new`] on, so no other test can take it between
    /// the choice and the start, as a port found free and released could be.
    ///
    /// # Errors
    /// If the listener cannot be handed to the runtime, or if two sites share a host name.
    pub async fn start_reserved(port: ReservedPort, sites: Vec<Site>) -> io::Result<TestServer> {
        port.0.set_nonblocking(true)?;
        TestServer::serve_on(TcpListener::from_std(port.0)?, sites, None)
    }

    fn serve_on(listener: TcpListener, sites: Vec<Site>, tls: Option<Arc<tls::Tls>>) -> io::Result<TestServer> {
        let mut by_host = HashMap::new();
        for site in sites {
            let host = site.host.clone();
            if by_host.insert(host.clone(), site).is_some() {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("site {host} given twice")));
            }
        }
        let addr = listener.local_addr()?;
        let cancel = CancellationToken::new();
        let shared = Arc::new(Shared {
            sites: by_host,
            counters: Mutex::new(HashMap::new()),
            throttled: Mutex::new(HashMap::new()),
            log: Arc::new(Recorder::default()),
            cancel: cancel.clone(),
        });
        let router = Router::new().fallback(handle).with_state(Arc::clone(&shared));
        let scheme = if tls.is_some() { "https" } else { "http" };
        #[allow(clippy::disallowed_methods, reason = "owned: the handle is kept in TestServer and awaited on stop")]
        let task = tokio::spawn(serve(listener, router, cancel, tls));
        Ok(TestServer { addr, scheme, started_at: Instant::now(), shared, task: Some(task) })
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The address the server listens on (always loopback).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// When the server started listening; the origin of [`RequestLog::to_json_lines`] times.
    pub fn started_at(&self) -> Instant {
        self.started_at
    }

    /// `http://{host}:{port}{path}` (`https://` for a TLS server); a missing leading `/` on `path`
    /// is added.
    pub fn url(&self, host: &str, path: &str) -> String {
        let slash = if path.starts_with('/') { "" } else { "/" };
        format!("{}://{host}:{}{slash}{path}", self.scheme, self.port())
    }

    /// The `--resolve` argument that sends `host` to this server: `host=127.0.0.1`.
    pub fn resolve_arg(&self, host: &str) -> String {
        format!("{host}={}", self.addr.ip())
    }

    /// A snapshot of the request log so far.
    pub fn log(&self) -> RequestLog {
        self.shared.log.snapshot()
    }

    /// Stops accepting connections, lets open ones finish for up to a second (waiting routes answer
    /// 503, streaming bodies are cut), then returns the final log.
    pub async fn shutdown(mut self) -> RequestLog {
        self.shared.cancel.cancel();
        if let Some(task) = self.task.take()
            && let Err(e) = task.await
        {
            debug!(error = %e, "test server task ended abnormally");
        }
        self.shared.log.snapshot()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        // Without shutdown(), the server task still stops promptly on its own.
        self.shared.cancel.cancel();
    }
}

/// Accept loop: every connection is a task in one JoinSet, so shutdown can drain and then cut them.
async fn serve(listener: TcpListener, router: Router, cancel: CancellationToken, tls: Option<Arc<tls::Tls>>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = cancel.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => match &tls {
                    None => {
                        connections.spawn(serve_connection(stream, router.clone(), cancel.clone()));
                    }
                    Some(tls) => {
                        connections.spawn(tls::serve_connection(Arc::clone(tls), stream, router.clone(), cancel.clone()));
                    }
                },
                Err(e) => {
                    // Typically out of file descriptors; back off instead of spinning.
                    debug!(error = %e, "test server accept failed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
        }
    }
    drop(listener);
    let drained =
        tokio::time::timeout(DRAIN_DEADLINE, async { while connections.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        debug!(open = connections.len(), "test server cutting connections after drain deadline");
        connections.shutdown().await;
    }
}

async fn serve_connection(stream: TcpStream, router: Router, cancel: CancellationToken) {
    // Small responses must not wait for Nagle: timings in the log should be the server's own.
    if let Err(e) = stream.set_nodelay(true) {
        debug!(error = %e, "set_nodelay failed");
    }
    let service = TowerToHyperService::new(router);
    let mut connection =
        pin!(hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service));
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = cancel.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = result {
        debug!(error = %e, "test server connection ended with an error");
    }
}

/// The one handler: log the request, find the site and route, answer.
async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let start = Instant::now();
    let host = request_host(&request);
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    let completion = shared.log.begin(start, &host, request.method().as_str(), &path, request.headers());
    let response = match shared.sites.get(&host) {
        Some(site) => match shared.throttles(site, &path) {
            Some(answer) => answer.respond(0, site.latency, &shared.cancel).await,
            None => {
                let n = shared.next_count(&host, &path);
                match &site.load {
                    Some(load) => load.serve(&site.lookup(&path), n, site.latency, &shared.cancel).await,
                    None => site.lookup(&path).respond(n, site.latency, &shared.cancel).await,
                }
            }
        },
        None => misdirected(&host),
    };
    completion.set_status(response.status().as_u16());
    response.map(|body| Body::new(LoggedBody { inner: body, completion: Some(completion) }))
}

/// 421 for a host this server does not serve: a crawler that sends it got its resolution wrong.
fn misdirected(host: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><title>421 Misdirected Request</title></head>\
         <body><h1>No site named {:?} here</h1></body></html>\n",
        host.replace(['<', '>', '&'], "")
    );
    Route::with_status(421, Route::html(body)).respond_ready(0)
}

/// Host from the `Host` header, or from the request target if absent; lowercase, port removed.
fn request_host(request: &Request) -> String {
    let raw = request
        .headers()
        .get(HOST)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned()))
        .unwrap_or_default();
    let host = raw.parse::<Authority>().map_or_else(|_| raw.clone(), |a| a.host().to_owned());
    host.to_ascii_lowercase()
}

/// A response body that completes its log entry when the last frame has been taken, the body
/// failed, or the connection dropped it (client gone, HEAD request, shutdown).
struct LoggedBody {
    inner: Body,
    completion: Option<Completion>,
}

impl HttpBody for LoggedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let polled = std::pin::Pin::new(&mut this.inner).poll_frame(cx);
        let finished = match &polled {
            Poll::Ready(None | Some(Err(_))) => true,
            Poll::Ready(Some(Ok(_))) => this.inner.is_end_stream(),
            Poll::Pending => false,
        };
        if finished {
            // Dropping the completion records the end time.
            this.completion = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A free loopback port, held bound until [`TestServer::start_reserved`] serves on it: for sites
/// whose content names absolute URLs of the server itself (links to another host of the server,
/// sitemaps in robots.txt), which must know the port before the server starts.
#[derive(Debug)]
pub struct ReservedPort(std::net::TcpListener);

impl ReservedPort {
    /// Binds a free port on 127.0.0.1.
    ///
    /// # Errors
    /// If no port can be bound.
    pub fn new() -> io::Result<ReservedPort> {
        std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map(ReservedPort)
    }

    /// The port held.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.0.local_addr().map(|a| a.port()).unwrap_or_default()
    }
}
