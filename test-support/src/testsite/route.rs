//! What one path of a test site answers: plain pages, errors, redirects, and the misbehaviour a
//! polite crawler must survive (rate limiting, slowness, stalls, huge or hostile bodies).
//!
//! A [`Route`] is a small tree. Counting combinators ([`Route::too_many`], [`Route::fail`],
//! [`Route::sequence`]) look at how many requests this server has already seen for the path, so a
//! test can script "429 twice, then 200" without any shared state between tests.

use std::io;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use futures_util::stream::{self, BoxStream, StreamExt};
use tokio_util::sync::CancellationToken;

use super::bomb::GzipBomb;
use super::gzip;

const HTML: &str = "text/html; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

/// How long [`Route::cut_off`] waits after sending its bytes before dropping the connection.
const CUT_PAUSE: Duration = Duration::from_millis(50);

/// Chunk size for generated streaming bodies.
const CHUNK: usize = 64 * 1024;

/// A scripted response for one path. Cheap to clone; build with the constructors below and combine
/// freely, e.g. `Route::gzip(Route::slow(ms(200), Route::html("<p>hi</p>")))`.
///
/// The counting combinators number requests per server, per host and per exact path with query as
/// requested (`/a` and `/a?x=1` are counted apart), starting from 0 when the server starts.
#[derive(Clone, Debug)]
pub struct Route {
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Fixed { status: StatusCode, headers: Vec<(HeaderName, HeaderValue)>, body: Bytes },
    Huge { bytes: u64 },
    Bomb(Arc<GzipBomb>),
    Hang,
    HangBody,
    CutOff { bytes: usize },
    Slow(Duration, Box<Route>),
    Header(HeaderName, HeaderValue, Box<Route>),
    Status(StatusCode, Box<Route>),
    Gzip(Box<Route>),
    NoContentLength(Box<Route>),
    Times { times: u32, first: Box<Route>, then: Box<Route> },
    Sequence(Vec<Route>),
}

fn status_code(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or_else(|_| panic!("{code} is not a valid HTTP status code"))
}

fn header_name(name: &str) -> HeaderName {
    HeaderName::try_from(name).unwrap_or_else(|_| panic!("{name:?} is not a valid header name"))
}

fn header_value(value: &[u8]) -> HeaderValue {
    // from_bytes accepts obs-text (bytes >= 0x80), so tests can send raw UTF-8 in Location etc.
    HeaderValue::from_bytes(value)
        .unwrap_or_else(|_| panic!("{:?} is not a valid header value", String::from_utf8_lossy(value)))
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

impl Route {
    fn new(kind: Kind) -> Route {
        Route { kind }
    }

    fn fixed(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Route {
        Route::new(Kind::Fixed {
            status,
            headers: vec![(CONTENT_TYPE, header_value(content_type.as_bytes()))],
            body: body.into(),
        })
    }

    /// 200 with an HTML body (`text/html; charset=utf-8`).
    pub fn html(body: impl Into<String>) -> Route {
        Route::fixed(StatusCode::OK, HTML, body.into())
    }

    /// 200 with a plain-text body (`text/plain; charset=utf-8`), e.g. robots.txt or llms.txt.
    pub fn text(body: impl Into<String>) -> Route {
        Route::fixed(StatusCode::OK, TEXT, body.into())
    }

    /// 200 with any content type and raw bytes, e.g. images, PDFs, or text in another charset.
    ///
    /// # Panics
    /// If `content_type` is not a valid header value.
    pub fn bytes(content_type: &str, body: impl Into<Vec<u8>>) -> Route {
        Route::fixed(StatusCode::OK, content_type, body.into())
    }

    /// The given status with a small HTML page naming it; for error pages and `204`/`304` tests.
    ///
    /// # Panics
    /// If `code` is not in 100..=999.
    pub fn status(code: u16) -> Route {
        let status = status_code(code);
        let reason = status.canonical_reason().unwrap_or("Status");
        let body = if status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
            String::new()
        } else {
            format!(
                "<!doctype html><html lang=\"en\"><head><title>{code} {reason}</title></head>\
                 <body><h1>{code} {reason}</h1></body></html>\n"
            )
        };
        Route::fixed(status, HTML, body)
    }

    /// A redirect (`code` is normally 301, 302, 303, 307 or 308) to `location`, sent verbatim: it
    /// may be relative, absolute, point to another host, or even contain raw non-ASCII bytes.
    ///
    /// # Panics
    /// If `code` is not a valid status or `location` contains control characters.
    pub fn redirect(code: u16, location: &str) -> Route {
        let body = format!(
            "<!doctype html><html lang=\"en\"><head><title>Moved</title></head>\
             <body><a href=\"{0}\">{0}</a></body></html>\n",
            escape(location)
        );
        Route::with_header_value(
            LOCATION,
            header_value(location.as_bytes()),
            Route::fixed(status_code(code), HTML, body),
        )
    }

    /// Waits `delay` before answering `inner`: slow servers and timing-sensitive pace tests.
    /// Stops waiting (and answers 503) when the server shuts down.
    pub fn slow(delay: Duration, inner: Route) -> Route {
        Route::new(Kind::Slow(delay, Box::new(inner)))
    }

    /// Never answers: the request stays open until the client gives up or the server shuts down.
    /// For testing the crawler's request timeout.
    pub fn hang() -> Route {
        Route::new(Kind::Hang)
    }

    /// Sends `200` headers and the start of an HTML page, then stalls the body until the client
    /// gives up or the server shuts down: a timeout must cover the whole body, not just the head.
    pub fn hang_body() -> Route {
        Route::new(Kind::HangBody)
    }

    /// `429 Too Many Requests` for the first `times` requests to this path, then `then`.
    /// `retry_after` is sent verbatim as `Retry-After` (delay seconds or an HTTP date, see
    /// [`super::http_date_in`]); `None` sends no such header.
    ///
    /// # Panics
    /// If `retry_after` is not a valid header value.
    pub fn too_many(retry_after: Option<&str>, times: u32, then: Route) -> Route {
        Route::first(times, Route::rate_limited(retry_after), then)
    }

    /// A `429 Too Many Requests` page, with `retry_after` as `Retry-After` if given.
    pub(crate) fn rate_limited(retry_after: Option<&str>) -> Route {
        let page = Route::status(429);
        match retry_after {
            Some(value) => Route::with_header_value(RETRY_AFTER, header_value(value.as_bytes()), page),
            None => page,
        }
    }

    /// `status` (normally 5xx, e.g. 503) for the first `times` requests to this path, then `then`.
    ///
    /// # Panics
    /// If `status` is not a valid status code.
    pub fn fail(status: u16, times: u32, then: Route) -> Route {
        Route::first(times, Route::status(status), then)
    }

    /// `first` for the first `times` requests to this path, then `then`; the general form of
    /// [`Route::too_many`] and [`Route::fail`].
    pub fn first(times: u32, first: Route, then: Route) -> Route {
        Route::new(Kind::Times { times, first: Box::new(first), then: Box::new(then) })
    }

    /// The nth request to this path gets the nth route; the last one repeats forever after.
    ///
    /// # Panics
    /// If `routes` is empty.
    pub fn sequence(routes: Vec<Route>) -> Route {
        assert!(!routes.is_empty(), "Route::sequence needs at least one route");
        Route::new(Kind::Sequence(routes))
    }

    /// Adds a response header to `inner`, e.g. `Set-Cookie`, `X-Robots-Tag`, `Cache-Control`.
    /// It replaces a header of the same name that `inner` set itself (such as `Content-Type`);
    /// several `with_header` calls with one name send several values (several `Set-Cookie`).
    ///
    /// # Panics
    /// If `name` or `value` is not valid in a header.
    pub fn with_header(name: &str, value: &str, inner: Route) -> Route {
        Route::with_header_value(header_name(name), header_value(value.as_bytes()), inner)
    }

    fn with_header_value(name: HeaderName, value: HeaderValue, inner: Route) -> Route {
        Route::new(Kind::Header(name, value, Box::new(inner)))
    }

    /// `inner` with its status replaced, e.g. an HTML page served with 410, or a "not found"
    /// page served with 200 (a soft 404).
    ///
    /// # Panics
    /// If `code` is not a valid status code.
    pub fn with_status(code: u16, inner: Route) -> Route {
        Route::new(Kind::Status(status_code(code), Box::new(inner)))
    }

    /// `inner` compressed with `Content-Encoding: gzip`, whatever the request's `Accept-Encoding`
    /// says (as some real servers do). Fixed bodies keep a `Content-Length`; streamed ones are
    /// compressed on the fly.
    pub fn gzip(inner: Route) -> Route {
        Route::new(Kind::Gzip(Box::new(inner)))
    }

    /// `inner` sent with chunked transfer encoding and no `Content-Length`, so the client cannot
    /// know the size in advance and must cap what it reads.
    pub fn no_content_length(inner: Route) -> Route {
        Route::new(Kind::NoContentLength(Box::new(inner)))
    }

    /// A 200 HTML page of exactly `bytes` bytes (with `Content-Length`), generated in 64 KiB chunks
    /// while it is sent, so a multi-gigabyte page costs the server no memory.
    pub fn huge(bytes: u64) -> Route {
        Route::new(Kind::Huge { bytes })
    }

    /// A 200 HTML response with `Content-Encoding: gzip` whose body is small on the wire (about
    /// 1/1000 of its size) but inflates to exactly `decompressed_bytes` bytes of spaces. The
    /// compressed pieces are computed once here and streamed by reference.
    pub fn gzip_bomb(decompressed_bytes: u64) -> Route {
        Route::new(Kind::Bomb(Arc::new(GzipBomb::new(decompressed_bytes))))
    }

    /// A 200 page declared `text/html; charset=utf-8` that is neither valid UTF-8 nor well-formed
    /// HTML: unclosed tags, stray bytes, a truncated attribute. Parsing it must not fail the crawl.
    pub fn malformed() -> Route {
        let mut body = b"<!doctype html><html><head><title>Broken \xff\xfe title</head><body>".to_vec();
        body.extend_from_slice(b"<h1>Unclosed <b>bold <p>text \xc3\x28 and \xe2\x82 half a char</span></div>");
        body.extend_from_slice(b"<a href=\"/ok\">fine link</a> <a href=\"/broken\xff\">bad byte</a> <a href=\"/trunc");
        body.extend_from_slice(b"\x00\x01<img src=x alt=<<<>>> <script>var x = '</p>';</scr");
        Route::bytes(HTML, body)
    }

    /// Declares twice `bytes` as `Content-Length`, sends `bytes` bytes of HTML, then (50 ms later)
    /// drops the connection: a response cut off mid-body.
    pub fn cut_off(bytes: usize) -> Route {
        Route::new(Kind::CutOff { bytes })
    }

    /// Chainable form of [`Route::with_header`].
    #[must_use]
    pub fn header(self, name: &str, value: &str) -> Route {
        Route::with_header(name, value, self)
    }

    /// Chainable form of [`Route::slow`].
    #[must_use]
    pub fn delayed(self, delay: Duration) -> Route {
        Route::slow(delay, self)
    }

    /// Chainable form of [`Route::gzip`].
    #[must_use]
    pub fn gzipped(self) -> Route {
        Route::gzip(self)
    }

    /// Chainable form of [`Route::with_status`].
    #[must_use]
    pub fn status_code(self, code: u16) -> Route {
        Route::with_status(code, self)
    }

    /// Resolves the counting combinators for the `n`th (0-based) request to this path.
    fn plan(&self, mut n: u32) -> Plan<'_> {
        let mut delay = Duration::ZERO;
        let mut wraps = Vec::new();
        let mut route = self;
        loop {
            match &route.kind {
                Kind::Slow(d, inner) => {
                    delay += *d;
                    route = inner;
                }
                Kind::Header(name, value, inner) => {
                    wraps.push(Wrap::Header(name, value));
                    route = inner;
                }
                Kind::Status(status, inner) => {
                    wraps.push(Wrap::Status(*status));
                    route = inner;
                }
                Kind::Gzip(inner) => {
                    wraps.push(Wrap::Gzip);
                    route = inner;
                }
                Kind::NoContentLength(inner) => {
                    wraps.push(Wrap::NoContentLength);
                    route = inner;
                }
                Kind::Times { times, first, then } => {
                    if n < *times {
                        route = first;
                    } else {
                        n -= times;
                        route = then;
                    }
                }
                Kind::Sequence(routes) => {
                    let last = u32::try_from(routes.len() - 1).unwrap_or(u32::MAX);
                    if n < last {
                        route = &routes[n as usize];
                        n = 0;
                    } else {
                        n -= last;
                        route = &routes[last as usize];
                    }
                }
                leaf => {
                    // Wraps were collected outside-in; apply them inside-out.
                    wraps.reverse();
                    return Plan { delay, wraps, leaf };
                }
            }
        }
    }

    /// Answers the `n`th (0-based) request to this path. `extra_delay` is the site's latency.
    pub(crate) async fn respond(&self, n: u32, extra_delay: Duration, cancel: &CancellationToken) -> Response {
        let plan = self.plan(n);
        let delay = plan.delay + extra_delay;
        if !delay.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = cancel.cancelled() => return shutting_down(),
            }
        }
        if matches!(plan.leaf, Kind::Hang) {
            cancel.cancelled().await;
            return shutting_down();
        }
        plan.build(cancel)
    }

    /// The response to the `n`th request without waiting for any delay (a hang answers 503 at once).
    pub(crate) fn respond_ready(&self, n: u32) -> Response {
        self.plan(n).build(&CancellationToken::new())
    }
}

impl Plan<'_> {
    /// Builds the leaf response and applies the wraps, innermost first.
    fn build(self, cancel: &CancellationToken) -> Response {
        let mut reply = Reply::from_leaf(self.leaf, cancel);
        let mut replaced: Vec<&HeaderName> = Vec::new();
        for wrap in self.wraps {
            match wrap {
                Wrap::Header(name, value) => {
                    if replaced.contains(&name) {
                        reply.headers.append(name, value.clone());
                    } else {
                        reply.headers.insert(name, value.clone());
                        replaced.push(name);
                    }
                }
                Wrap::Status(status) => reply.status = status,
                Wrap::Gzip => reply = reply.gzip(),
                Wrap::NoContentLength => reply = reply.chunked(),
            }
        }
        reply.into_response()
    }
}

struct Plan<'a> {
    delay: Duration,
    wraps: Vec<Wrap<'a>>,
    leaf: &'a Kind,
}

enum Wrap<'a> {
    Header(&'a HeaderName, &'a HeaderValue),
    Status(StatusCode),
    Gzip,
    NoContentLength,
}

/// A response body: fixed bytes, or a stream with an optional declared length.
pub(crate) enum Payload {
    Full(Bytes),
    Stream { chunks: BoxStream<'static, io::Result<Bytes>>, len: Option<u64> },
}

/// A response under construction.
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    payload: Payload,
}

impl Reply {
    fn html_stream(chunks: BoxStream<'static, io::Result<Bytes>>, len: Option<u64>) -> Reply {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(HTML));
        Reply { status: StatusCode::OK, headers, payload: Payload::Stream { chunks, len } }
    }

    fn from_leaf(leaf: &Kind, cancel: &CancellationToken) -> Reply {
        match leaf {
            Kind::Fixed { status, headers, body } => Reply {
                status: *status,
                headers: headers.iter().cloned().collect(),
                payload: Payload::Full(body.clone()),
            },
            Kind::Huge { bytes } => Reply::html_stream(huge_stream(*bytes, cancel.clone()), Some(*bytes)),
            Kind::Bomb(bomb) => {
                let mut reply =
                    Reply::html_stream(until_cancelled(bomb.stream(), cancel.clone()), Some(bomb.wire_len()));
                reply.headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
                reply
            }
            Kind::HangBody => {
                let head = Bytes::from_static(b"<!doctype html><html lang=\"en\"><head><title>Stalled");
                let cancel = cancel.clone();
                let stall = stream::once(async move {
                    cancel.cancelled().await;
                    Err(io::Error::other("server shutting down"))
                });
                Reply::html_stream(stream::once(async { Ok(head) }).chain(stall).boxed(), None)
            }
            Kind::CutOff { bytes } => {
                let body = Bytes::from(html_filler(*bytes));
                // The pause lets the head and first bytes reach the client before the reset.
                let cut = stream::once(async { Ok(body) }).chain(stream::once(async {
                    tokio::time::sleep(CUT_PAUSE).await;
                    Err(io::Error::other("cut off on purpose"))
                }));
                Reply::html_stream(cut.boxed(), Some(2 * *bytes as u64))
            }
            // A hang that must answer at once (respond_ready) says so; combinators are never leaves.
            _ => {
                let body = Bytes::from_static(b"testsite: shutting down");
                Reply {
                    status: StatusCode::SERVICE_UNAVAILABLE,
                    headers: HeaderMap::new(),
                    payload: Payload::Full(body),
                }
            }
        }
    }

    fn gzip(mut self) -> Reply {
        self.headers.remove(CONTENT_LENGTH);
        self.headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        self.payload = match self.payload {
            Payload::Full(body) => Payload::Full(gzip::compress(&body)),
            Payload::Stream { chunks, .. } => Payload::Stream { chunks: gzip::compress_stream(chunks), len: None },
        };
        self
    }

    fn chunked(mut self) -> Reply {
        self.headers.remove(CONTENT_LENGTH);
        self.payload = match self.payload {
            Payload::Full(body) => Payload::Stream { chunks: stream::once(async { Ok(body) }).boxed(), len: None },
            Payload::Stream { chunks, .. } => Payload::Stream { chunks, len: None },
        };
        self
    }

    fn into_response(self) -> Response {
        let Reply { status, mut headers, payload } = self;
        let body = match payload {
            Payload::Full(bytes) => Body::from(bytes),
            Payload::Stream { chunks, len } => {
                if let Some(len) = len {
                    headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
                }
                Body::from_stream(chunks)
            }
        };
        let mut response = Response::new(body);
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        response
    }
}

/// What a request gets when the server shuts down while it waits.
fn shutting_down() -> Response {
    let mut response = Route::status(503).respond_ready(0);
    response.headers_mut().insert(axum::http::header::CONNECTION, HeaderValue::from_static("close"));
    response
}

const HUGE_HEAD: &[u8] =
    b"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Huge page</title></head><body>\n";
const HUGE_TAIL: &[u8] = b"</body></html>\n";
const FILLER: &[u8] = b"<p>Shoal test filler: a deliberately enormous page, streamed.</p>\n";

/// 64 KiB (rounded down to whole paragraphs) of filler paragraphs, built once and sliced.
fn filler_chunk() -> Bytes {
    static CHUNK_BYTES: OnceLock<Bytes> = OnceLock::new();
    CHUNK_BYTES.get_or_init(|| Bytes::from(FILLER.repeat(CHUNK / FILLER.len()))).clone()
}

/// `len` bytes of filler paragraphs (the last one may be cut).
fn html_filler(len: usize) -> Vec<u8> {
    FILLER.iter().copied().cycle().take(len).collect()
}

/// Exactly `total` bytes: page head, filler, page tail (or a prefix of head+tail if tiny).
fn huge_stream(total: u64, cancel: CancellationToken) -> BoxStream<'static, io::Result<Bytes>> {
    let frame = (HUGE_HEAD.len() + HUGE_TAIL.len()) as u64;
    if total <= frame {
        let all: Vec<u8> = HUGE_HEAD.iter().chain(HUGE_TAIL).copied().take(total as usize).collect();
        return stream::once(async { Ok(Bytes::from(all)) }).boxed();
    }
    let chunk = filler_chunk();
    let middle = stream::unfold(total - frame, move |left| {
        let chunk = chunk.clone();
        async move {
            if left == 0 {
                return None;
            }
            let take = left.min(chunk.len() as u64);
            Some((Ok(chunk.slice(..take as usize)), left - take))
        }
    });
    let head = stream::once(async { Ok(Bytes::from_static(HUGE_HEAD)) });
    let tail = stream::once(async { Ok(Bytes::from_static(HUGE_TAIL)) });
    until_cancelled(head.chain(middle).chain(tail).boxed(), cancel)
}

/// Ends a long stream with an error (aborting the connection) once the server shuts down, so a
/// slow reader cannot hold the shutdown up.
fn until_cancelled(
    chunks: BoxStream<'static, io::Result<Bytes>>,
    cancel: CancellationToken,
) -> BoxStream<'static, io::Result<Bytes>> {
    chunks
        .map(move |chunk| if cancel.is_cancelled() { Err(io::Error::other("server shutting down")) } else { chunk })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_of(route: &Route, n: u32) -> StatusCode {
        match route.plan(n).leaf {
            Kind::Fixed { status, .. } => *status,
            other => panic!("unexpected leaf {other:?}"),
        }
    }

    #[test]
    fn counting_combinators_pick_by_request_number() {
        let ok = || Route::html("ok");
        let cases: Vec<(Route, Vec<u16>)> = vec![
            (Route::too_many(Some("1"), 2, ok()), vec![429, 429, 200, 200]),
            (Route::fail(503, 1, ok()), vec![503, 200, 200]),
            (Route::sequence(vec![Route::status(500), Route::status(404), ok()]), vec![500, 404, 200, 200]),
            (Route::sequence(vec![ok()]), vec![200, 200]),
            (Route::sequence(vec![Route::status(500), Route::fail(502, 2, ok())]), vec![500, 502, 502, 200, 200]),
            (Route::too_many(None, 0, ok()), vec![200]),
        ];
        for (route, want) in cases {
            let got: Vec<u16> = (0..want.len() as u32).map(|n| status_of(&route, n).as_u16()).collect();
            assert_eq!(got, want, "{route:?}");
        }
    }

    #[test]
    fn huge_pages_have_exactly_the_requested_size() {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        for total in [0u64, 10, 120, 64 * 1024 + 7, 300_000] {
            let got = rt.block_on(async {
                let mut sum = 0u64;
                let mut s = huge_stream(total, CancellationToken::new());
                while let Some(chunk) = s.next().await {
                    sum += chunk.expect("huge stream never fails before shutdown").len() as u64;
                }
                sum
            });
            assert_eq!(got, total);
        }
    }
}
