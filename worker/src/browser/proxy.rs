//! Chromium's only way to the network: forward HTTP proxies on loopback, owned by the worker.
//!
//! Why a proxy, and not only the page's request interception: interception (`intercept.rs`) sees
//! the requests of the checked tab, but not those of a tab the page opens, a speculation-rules
//! prefetch or prerender, a worker, WebRTC's TURN over TCP, or anything else Chromium's network
//! service does on its own; and Chromium resolved names itself, so a name could answer the guard
//! one address and Chromium another (DNS rebinding), and `--dns-server` / `--no-dns` did not
//! apply to it. Each checked page's browser context is created with its own proxy pointing at a
//! [`Gate::Guarded`] proxy, nothing bypassed (`<-loopback>` removes Chromium's implicit loopback
//! bypass); Chromium itself is started with `--proxy-server` pointing at a [`Gate::Closed`] one,
//! which refuses everything Chromium sends on its own behalf, and with its own resolver mapped to
//! nothing (`mod.rs`, `launch_args`). So every connection any tab, frame, worker or service of a
//! checked page makes arrives at the guarded proxy with a host *name*. Each one is resolved by the worker's own
//! resolver ([`Fetcher::resolve`]: `--resolve`, `--dns-server`, `--no-dns`, the address the crawl
//! pinned for the host), checked by the worker's address guard, and connected to exactly the
//! address that passed. Plain `http://` requests are forwarded one by one (each to the host it
//! names, however Chromium reuses its connection to the proxy); `https://` and WebSockets arrive
//! as `CONNECT host:port` and are tunnelled to the checked address.
//!
//! The proxy listens on 127.0.0.1 only and grants nothing the worker's guard would refuse.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::debug;

use crate::fetch::Fetcher;

/// Connections from Chromium served at once; more wait in the listen backlog.
const MAX_CONNECTIONS: usize = 256;
/// Time for Chromium to send a request's head on a connection to the proxy.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// Time to resolve a name (the resolver's own limit is 2 x 5 s).
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(12);
/// Time to open the connection to the checked address.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for a forwarded request's response head.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest a tunnel or a forwarded exchange stays open: a page is checked in at most
/// 110 s, and its context is closed after it, which closes its connections; this is the
/// backstop for one that is not.
const MAX_EXCHANGE: Duration = Duration::from_secs(300);
/// Refused targets remembered until the page's check collects them.
const MAX_REFUSED: usize = 50;
/// How long [`Proxy::shutdown`] waits for open exchanges to end after cancelling them.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// Which addresses a proxy lets the browser reach.
#[derive(Debug, Clone)]
pub(crate) enum Gate {
    /// The checked pages' traffic: the worker's resolver and guard ([`Fetcher::resolve`]), plus
    /// (tests only) addresses refused although the guard would allow them, so a test on loopback,
    /// which runs with `--allow-private`, can watch a refused connection not happen.
    Guarded { fetcher: Fetcher, refuse: Arc<[IpAddr]> },
    /// Chromium's own traffic, outside any checked page (component and extension updates, its
    /// clock, account and search services: it sends them even with every switch against them):
    /// nothing goes out. An audit visits the audited sites, and no one else.
    Closed,
}

impl Gate {
    pub(crate) fn guarded(fetcher: Fetcher, refuse: Vec<IpAddr>) -> Gate {
        Gate::Guarded { fetcher, refuse: refuse.into() }
    }

    /// The one address a connection to `host:port` may use; `Err` says why none. `host` is a
    /// name or an IP literal (IPv6 in brackets), as in a URL. The reason is a string because it is
    /// all a refusal is: recorded as the page's refused target and shown in its finding, never
    /// matched on.
    pub(crate) async fn admit(&self, host: &str, port: u16) -> Result<SocketAddr, String> {
        let Gate::Guarded { fetcher, refuse } = self else {
            return Err("Chromium's own connections (outside the checked page) are not made".to_owned());
        };
        let url = url::Url::parse(&format!("http://{host}/")).map_err(|e| format!("{host}: not a host name ({e})"))?;
        let ip = match tokio::time::timeout(RESOLVE_TIMEOUT, fetcher.resolve(&url)).await {
            Ok(Ok(ip)) => ip,
            Ok(Err(e)) => return Err(format!("{host}: {e}")),
            Err(_) => return Err(format!("{host} did not resolve within {} s", RESOLVE_TIMEOUT.as_secs())),
        };
        if refuse.contains(&ip) {
            return Err(format!("{host}: {ip} is refused by this worker's address policy"));
        }
        Ok(SocketAddr::new(ip, port))
    }
}

/// What the proxy refused since the last [`Proxy::take_refused`], for the page's record.
#[derive(Debug, Default)]
struct Refused {
    targets: Vec<String>,
}

type Body = BoxBody<Bytes, hyper::Error>;

struct Ctx {
    gate: Gate,
    refused: Mutex<Refused>,
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl Ctx {
    fn refuse(&self, target: String, why: &str) -> Response<Body> {
        debug!(target = %target, why, "browser connection refused");
        let mut r = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        if r.targets.len() < MAX_REFUSED && !r.targets.contains(&target) {
            r.targets.push(target);
        }
        text(StatusCode::FORBIDDEN, "refused by the audit's address guard")
    }

    /// Runs `exchange` as a task of the proxy: ended by shutdown or after [`MAX_EXCHANGE`].
    fn spawn(&self, exchange: impl std::future::Future<Output = ()> + Send + 'static) {
        let stop = self.stop.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                _ = tokio::time::timeout(MAX_EXCHANGE, exchange) => {}
                () = stop.cancelled() => {}
            }
        });
    }
}

/// The running proxy: its address and the tasks serving it.
pub(crate) struct Proxy {
    addr: SocketAddr,
    ctx: Arc<Ctx>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl Proxy {
    /// Listens on a free port of 127.0.0.1 and serves until [`Proxy::shutdown`].
    pub(crate) async fn start(gate: Gate) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let ctx = Arc::new(Ctx {
            gate,
            refused: Mutex::new(Refused::default()),
            stop: CancellationToken::new(),
            tasks: TaskTracker::new(),
        });
        let accepting = Arc::clone(&ctx);
        ctx.tasks.spawn(accept(listener, accepting));
        Ok(Proxy { addr, ctx })
    }

    /// Where Chromium sends everything.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The targets refused since the last call (at most [`MAX_REFUSED`]).
    pub(crate) fn take_refused(&self) -> Vec<String> {
        std::mem::take(&mut self.ctx.refused.lock().unwrap_or_else(PoisonError::into_inner).targets)
    }

    /// Stops accepting, ends every open exchange and waits (bounded) for their tasks.
    pub(crate) async fn shutdown(&self) {
        self.ctx.stop.cancel();
        self.ctx.tasks.close();
        if tokio::time::timeout(SHUTDOWN_WAIT, self.ctx.tasks.wait()).await.is_err() {
            debug!("browser proxy tasks did not end within 5 s");
        }
    }
}

async fn accept(listener: TcpListener, ctx: Arc<Ctx>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&slots).acquire_owned() => match p { Ok(p) => p, Err(_) => return },
            () = ctx.stop.cancelled() => return,
        };
        let stream = tokio::select! {
            s = listener.accept() => match s {
                Ok((s, _)) => s,
                Err(e) => {
                    debug!(error = %e, "browser proxy accept");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = ctx.stop.cancelled() => return,
        };
        let conn_ctx = Arc::clone(&ctx);
        ctx.spawn(async move {
            let _permit = permit;
            serve(stream, conn_ctx).await;
        });
    }
}

async fn serve(stream: TcpStream, ctx: Arc<Ctx>) {
    let svc_ctx = Arc::clone(&ctx);
    let svc = hyper::service::service_fn(move |req| {
        let ctx = Arc::clone(&svc_ctx);
        async move { Ok::<_, Infallible>(handle(req, &ctx).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .serve_connection(TokioIo::new(stream), svc)
        .with_upgrades();
    if let Err(e) = conn.await {
        debug!(error = %e, "browser proxy connection");
    }
}

async fn handle(req: Request<Incoming>, ctx: &Arc<Ctx>) -> Response<Body> {
    if req.method() == Method::CONNECT { tunnel(req, ctx).await } else { forward(req, ctx).await }
}

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())).map_err(|never| match never {}).boxed());
    *r.status_mut() = status;
    r
}

/// The host and port a request names (`CONNECT host:port`, or an absolute `http://` URI).
fn target(uri: &Uri, default_port: u16) -> Option<(String, u16)> {
    let auth = uri.authority()?;
    Some((auth.host().to_owned(), auth.port_u16().unwrap_or(default_port)))
}

/// `CONNECT host:port`: https and WebSockets. The tunnel carries Chromium's own TLS, so
/// certificates are checked by Chromium as without a proxy.
async fn tunnel(req: Request<Incoming>, ctx: &Arc<Ctx>) -> Response<Body> {
    let Some((host, port)) = target(req.uri(), 443) else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port");
    };
    let shown = format!("CONNECT {host}:{port}");
    let addr = match ctx.gate.admit(&host, port).await {
        Ok(a) => a,
        Err(why) => return ctx.refuse(shown, &why),
    };
    let mut upstream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            debug!(target = %shown, error = %e, "browser tunnel: connect failed");
            return text(StatusCode::BAD_GATEWAY, "could not connect");
        }
        Err(_) => return text(StatusCode::GATEWAY_TIMEOUT, "connect timed out"),
    };
    ctx.spawn(async move {
        match hyper::upgrade::on(req).await {
            Ok(upgraded) => {
                let mut client = TokioIo::new(upgraded);
                if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut upstream).await {
                    debug!(error = %e, "browser tunnel ended");
                }
            }
            Err(e) => debug!(error = %e, "browser tunnel: no upgrade"),
        }
    });
    Response::new(http_body_util::Empty::new().map_err(|never| match never {}).boxed())
}

/// Headers that belong to one hop (RFC 9110 §7.6.1), plus the proxy's own.
fn strip_hop_headers(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        header::PROXY_AUTHORIZATION,
        header::PROXY_AUTHENTICATE,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ] {
        headers.remove(name);
    }
    headers.remove("proxy-connection");
    headers.remove("keep-alive");
}

/// A plain `http://` request in absolute form: sent on a connection of its own to the checked
/// address of the host it names, in origin form, and its answer streamed back.
async fn forward(req: Request<Incoming>, ctx: &Arc<Ctx>) -> Response<Body> {
    if req.uri().scheme_str() != Some("http") {
        return text(StatusCode::BAD_REQUEST, "only absolute http:// requests and CONNECT");
    }
    let Some((host, port)) = target(req.uri(), 80) else {
        return text(StatusCode::BAD_REQUEST, "no host");
    };
    let shown = req.uri().to_string();
    let addr = match ctx.gate.admit(&host, port).await {
        Ok(a) => a,
        Err(why) => return ctx.refuse(shown, &why),
    };
    let stream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(_)) => return text(StatusCode::BAD_GATEWAY, "could not connect"),
        Err(_) => return text(StatusCode::GATEWAY_TIMEOUT, "connect timed out"),
    };
    let (mut sender, conn) = match hyper::client::conn::http1::handshake::<_, Incoming>(TokioIo::new(stream)).await {
        Ok(pair) => pair,
        Err(e) => {
            debug!(target = %shown, error = %e, "browser proxy: handshake");
            return text(StatusCode::BAD_GATEWAY, "could not talk to the server");
        }
    };
    ctx.spawn(async move {
        if let Err(e) = conn.await {
            debug!(error = %e, "browser proxy upstream connection");
        }
    });
    let (mut parts, body) = req.into_parts();
    let origin_form = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
    parts.uri = match origin_form.parse() {
        Ok(u) => u,
        Err(_) => return text(StatusCode::BAD_REQUEST, "bad path"),
    };
    strip_hop_headers(&mut parts.headers);
    if !parts.headers.contains_key(header::HOST)
        && let Ok(v) = header::HeaderValue::from_str(&if port == 80 { host.clone() } else { format!("{host}:{port}") })
    {
        parts.headers.insert(header::HOST, v);
    }
    match tokio::time::timeout(RESPONSE_TIMEOUT, sender.send_request(Request::from_parts(parts, body))).await {
        Ok(Ok(resp)) => {
            let (mut parts, body) = resp.into_parts();
            strip_hop_headers(&mut parts.headers);
            Response::from_parts(parts, body.boxed())
        }
        Ok(Err(e)) => {
            debug!(target = %shown, error = %e, "browser proxy: no answer");
            text(StatusCode::BAD_GATEWAY, "the server did not answer")
        }
        Err(_) => text(StatusCode::GATEWAY_TIMEOUT, "the server did not answer in time"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_come_from_the_authority_with_the_scheme_port() {
        let u: Uri = "http://a.test/x?y".parse().expect("uri");
        assert_eq!(target(&u, 80), Some(("a.test".to_owned(), 80)));
        let u: Uri = "a.test:8443".parse().expect("authority");
        assert_eq!(target(&u, 443), Some(("a.test".to_owned(), 8443)));
        let u: Uri = "http://[::1]:81/".parse().expect("uri");
        assert_eq!(target(&u, 80), Some(("[::1]".to_owned(), 81)));
        let u: Uri = "/relative".parse().expect("path");
        assert_eq!(target(&u, 80), None);
    }

    #[test]
    fn hop_headers_and_the_ones_connection_names_are_dropped() {
        let mut h = HeaderMap::new();
        h.insert(header::CONNECTION, "keep-alive, x-secret".parse().expect("value"));
        h.insert("x-secret", "1".parse().expect("value"));
        h.insert("proxy-connection", "keep-alive".parse().expect("value"));
        h.insert(header::PROXY_AUTHORIZATION, "Basic x".parse().expect("value"));
        h.insert(header::HOST, "a.test".parse().expect("value"));
        h.insert(header::ACCEPT, "*/*".parse().expect("value"));
        strip_hop_headers(&mut h);
        let mut left: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
        left.sort_unstable();
        assert_eq!(left, ["accept", "host"]);
    }

    /// A one-shot HTTP server on `ip` that answers every request with its name and the path.
    async fn origin(ip: IpAddr, name: &'static str, tasks: &mut tokio::task::JoinSet<()>) -> SocketAddr {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind((ip, 0)).await.expect("origin");
        let addr = listener.local_addr().expect("addr");
        tasks.spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = vec![0u8; 4096];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
                let body = format!("{name} {path}");
                let answer = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}", body.len());
                let _ = s.write_all(answer.as_bytes()).await;
            }
        });
        addr
    }

    fn gate(refuse: Vec<IpAddr>) -> Gate {
        let settings = crate::fetch::FetchSettings {
            allow_private: true,
            no_dns: true,
            resolve: [
                ("a.test".to_owned(), IpAddr::V4(Ipv4Addr::LOCALHOST)),
                ("b.test".to_owned(), "127.0.0.3".parse().expect("ip")),
            ]
            .into_iter()
            .collect(),
            ..crate::fetch::FetchSettings::default()
        };
        Gate::guarded(Fetcher::new(settings).expect("fetcher"), refuse)
    }

    async fn exchange(stream: &mut TcpStream, request: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("answer in time")
            .expect("read");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[tokio::test]
    async fn each_request_on_one_connection_goes_to_the_host_it_names_and_refusals_are_recorded() {
        let mut origins = tokio::task::JoinSet::new();
        let a = origin(IpAddr::V4(Ipv4Addr::LOCALHOST), "A", &mut origins).await;
        let b = origin("127.0.0.3".parse().expect("ip"), "B", &mut origins).await;
        let proxy = Proxy::start(gate(vec!["127.0.0.3".parse().expect("ip")])).await.expect("proxy");
        let mut c = TcpStream::connect(proxy.addr()).await.expect("to the proxy");
        let first = exchange(
            &mut c,
            &format!(
                "GET http://a.test:{}/one HTTP/1.1\r\nHost: a.test:{}\r\nProxy-Connection: keep-alive\r\n\r\n",
                a.port(),
                a.port()
            ),
        )
        .await;
        assert!(first.starts_with("HTTP/1.1 200") && first.ends_with("A /one"), "{first}");
        // The same connection to the proxy, another host: refused (127.0.0.3 is on the refuse
        // list), never sent to a.test's server.
        let second = exchange(
            &mut c,
            &format!("GET http://b.test:{}/two HTTP/1.1\r\nHost: b.test:{}\r\n\r\n", b.port(), b.port()),
        )
        .await;
        assert!(second.starts_with("HTTP/1.1 403"), "{second}");
        let tunnel =
            exchange(&mut c, &format!("CONNECT b.test:{} HTTP/1.1\r\nHost: b.test:{}\r\n\r\n", b.port(), b.port()))
                .await;
        assert!(tunnel.starts_with("HTTP/1.1 403"), "{tunnel}");
        assert_eq!(
            proxy.take_refused(),
            [format!("http://b.test:{}/two", b.port()), format!("CONNECT b.test:{}", b.port())]
        );
        assert!(proxy.take_refused().is_empty(), "taken");
        proxy.shutdown().await;
    }

    #[tokio::test]
    async fn a_tunnel_carries_bytes_to_the_checked_address_and_the_closed_gate_lets_nothing_through() {
        let mut origins = tokio::task::JoinSet::new();
        let a = origin(IpAddr::V4(Ipv4Addr::LOCALHOST), "A", &mut origins).await;
        let proxy = Proxy::start(gate(Vec::new())).await.expect("proxy");
        let mut c = TcpStream::connect(proxy.addr()).await.expect("to the proxy");
        let ok =
            exchange(&mut c, &format!("CONNECT a.test:{} HTTP/1.1\r\nHost: a.test:{}\r\n\r\n", a.port(), a.port()))
                .await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        let through = exchange(&mut c, "GET /inside HTTP/1.1\r\nHost: a.test\r\n\r\n").await;
        assert!(through.ends_with("A /inside"), "{through}");
        proxy.shutdown().await;

        let closed = Proxy::start(Gate::Closed).await.expect("proxy");
        let mut c = TcpStream::connect(closed.addr()).await.expect("to the proxy");
        let no = exchange(&mut c, &format!("CONNECT a.test:{} HTTP/1.1\r\nHost: a.test\r\n\r\n", a.port())).await;
        assert!(no.starts_with("HTTP/1.1 403"), "{no}");
        closed.shutdown().await;
    }
}
