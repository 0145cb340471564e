//! HTTP fetching with Shoal's manners and caps: GET and HEAD only, no cookies, no Referer, no
//! proxies, redirects returned (never followed here), bodies read through one size-capped helper,
//! response heads capped ([`MAX_RESPONSE_HEADERS`], [`MAX_RESPONSE_HEAD_BYTES`]), and every
//! connection to an address this worker's [`Guard`] allows, whatever told us the address.

use crate::guard::{Guard, NonPublic};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use hickory_resolver::TokioResolver;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use shoal_shared::record::FetchFailure;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use url::{Host, Url};

/// Default cap on a decompressed response body.
pub const DEFAULT_MAX_BODY: u64 = 5 * 1024 * 1024;
/// Default time a request may take, body included (SPEC §4).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);
/// Header fields an HTTP/1 response may have (SPEC §7 header cap); more is
/// [`FetchError::HeadersTooLarge`].
pub const MAX_RESPONSE_HEADERS: usize = 200;
/// Bytes a response's header fields may take (names, values and separators); more is
/// [`FetchError::HeadersTooLarge`]. Checked on the parsed headers, so the cap is exact; hyper's
/// read buffer (about 400 KiB, a soft limit reqwest does not expose) bounds what is read before.
pub const MAX_RESPONSE_HEAD_BYTES: usize = 256 * 1024;

/// How the fetcher connects and what it accepts.
#[derive(Debug, Clone)]
pub struct FetchSettings {
    /// The User-Agent header.
    pub user_agent: String,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Cap on decompressed body bytes.
    pub max_body: u64,
    /// Allow loopback and private addresses (tests, intranets). This worker's own setting: an
    /// address pinned by the frontier (chosen by another worker) passes this worker's guard too.
    pub allow_private: bool,
    /// Fixed name → address overrides (`--resolve HOST=IP`). Still subject to the guard.
    pub resolve: HashMap<String, IpAddr>,
    /// Resolve only names in `resolve`; everything else fails as if it did not exist. For tests and
    /// air-gapped runs, so nothing leaves the machine.
    pub no_dns: bool,
    /// Extra trusted CA certificates (PEM), for intranets and tests.
    pub extra_roots_pem: Option<Vec<u8>>,
    /// DNS servers to ask instead of the system's (`--dns-server IP:PORT`): every name this
    /// worker resolves (hosts to fetch, mail servers, the DNS checks) goes there, except the
    /// `resolve` overrides. Empty: the system's configuration.
    pub dns_servers: Vec<SocketAddr>,
}

impl Default for FetchSettings {
    fn default() -> Self {
        FetchSettings {
            user_agent: format!("ShoalBot/{} (+https://example.invalid/shoalbot)", env!("CARGO_PKG_VERSION")),
            timeout: DEFAULT_TIMEOUT,
            max_body: DEFAULT_MAX_BODY,
            allow_private: false,
            resolve: HashMap::new(),
            no_dns: false,
            extra_roots_pem: None,
            dns_servers: Vec::new(),
        }
    }
}

/// The only methods Shoal uses. There is no way to send anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET.
    Get,
    /// HEAD.
    Head,
}

/// Why a request got no HTTP answer. Website failures: recorded, never a worker error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The name does not resolve.
    #[error("DNS: {0}")]
    Dns(String),
    /// The host resolves only to addresses the guard refuses (or is pinned to one).
    #[error("refused non-public address {0}")]
    PrivateAddress(IpAddr),
    /// The response's head is over the header cap ([`MAX_RESPONSE_HEADERS`] fields or
    /// [`MAX_RESPONSE_HEAD_BYTES`] bytes). Not retried: the server would send the same again.
    #[error("response headers over the cap ({MAX_RESPONSE_HEADERS} fields or {MAX_RESPONSE_HEAD_BYTES} bytes)")]
    HeadersTooLarge,
    /// Over the time limit.
    #[error("timed out")]
    Timeout,
    /// Connection refused, reset, TLS failure.
    #[error("connection failed: {0}")]
    Connect(String),
    /// The answer could not be read (protocol error, broken body).
    #[error("bad response: {0}")]
    Protocol(String),
}

impl FetchError {
    /// What the record keeps of it.
    #[must_use]
    pub fn kind(&self) -> FetchFailure {
        match self {
            FetchError::Dns(_) => FetchFailure::Dns,
            FetchError::PrivateAddress(_) => FetchFailure::PrivateAddress,
            FetchError::HeadersTooLarge => FetchFailure::HeadersTooLarge,
            FetchError::Timeout => FetchFailure::Timeout,
            FetchError::Connect(_) => FetchFailure::Connect,
            FetchError::Protocol(_) => FetchFailure::Protocol,
        }
    }

    /// Whether SPEC §4 retries it (timeouts and connection errors are; DNS, the guard and caps are
    /// not).
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(self, FetchError::Timeout | FetchError::Connect(_) | FetchError::Protocol(_))
    }
}

/// An HTTP answer with its body read up to the cap.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Status code.
    pub status: u16,
    /// Response headers.
    pub headers: reqwest::header::HeaderMap,
    /// Body (decompressed), at most the cap.
    pub body: Bytes,
    /// The body was longer than the cap (or its Content-Length said so).
    pub truncated: bool,
    /// Request start to end of body.
    pub elapsed: Duration,
    /// Request start to the response's head: how long the request took to reach the server and
    /// be answered, without the body's transfer.
    pub head_after: Duration,
    /// The address connected to, when known.
    pub ip: Option<IpAddr>,
}

impl Fetched {
    /// A header's value as text.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// All values of a header.
    #[must_use]
    pub fn header_all(&self, name: &str) -> Vec<String> {
        self.headers.get_all(name).iter().filter_map(|v| v.to_str().ok().map(str::to_owned)).collect()
    }
}

/// Names whose chosen address a worker remembers at most; the least recently used go first.
const MAX_CHOSEN: u64 = 100_000;
/// A chosen address not used for this long is forgotten (a lease pins it again when needed).
const CHOSEN_IDLE: Duration = Duration::from_secs(60 * 60);

/// The guarded resolver: a pin or an earlier choice first, then overrides, then DNS (unless
/// disabled); whatever the source, the address handed to the connector passes the guard here, at
/// connect time. One address is chosen and remembered, so the IP the frontier paces is the IP we
/// connect to.
#[derive(Debug)]
struct GuardedResolver {
    dns: Option<crate::dns::Resolver>,
    overrides: HashMap<String, IpAddr>,
    guard: Guard,
    /// Name → the address last used, and pins from leases that this worker's guard allows.
    /// Bounded and expiring (a worker runs for months); least recently used first out, so the pin
    /// of a lease in flight (touched at its start and at every connect) stays.
    chosen: crate::Cache<String, IpAddr>,
}

/// Resolver failure carrying its cause, found again in reqwest's error chain.
#[derive(Debug, thiserror::Error)]
enum ResolveError {
    #[error("{0} does not resolve: {1}")]
    NoSuchName(String, String),
    #[error("{name} resolves only to non-public address {ip}")]
    Private { name: String, ip: IpAddr },
}

impl GuardedResolver {
    async fn lookup(&self, name: &str) -> Result<IpAddr, ResolveError> {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        if let Some(ip) = self.chosen.get(&name) {
            // `chosen` only ever holds addresses that passed this guard (a pin in `Fetcher::pin`,
            // a lookup below), and the guard never changes: nothing to check again.
            return Ok(ip);
        }
        let (ip, _) = self.fresh(&name, None).await?;
        self.chosen.insert(name, ip);
        Ok(ip)
    }

    /// Asks the overrides or DNS (never `chosen`) for `name`: the address this worker's guard
    /// allows, `prefer` if it is still among the answers (a host with several addresses keeps the
    /// one it is paced under), and how long the answer may be used (its TTL; an override's is
    /// unlimited).
    async fn fresh(&self, name: &str, prefer: Option<IpAddr>) -> Result<(IpAddr, Duration), ResolveError> {
        let (candidates, ttl): (Vec<IpAddr>, Duration) = if let Some(ip) = self.overrides.get(name) {
            (vec![*ip], Duration::MAX)
        } else if let Some(dns) = &self.dns {
            let answer =
                dns.lookup_ip(name).await.map_err(|e| ResolveError::NoSuchName(name.to_owned(), e.to_string()))?;
            let ttl = answer.valid_until().saturating_duration_since(Instant::now());
            (answer.iter().collect(), ttl)
        } else {
            return Err(ResolveError::NoSuchName(name.to_owned(), "not in --resolve and DNS is off".into()));
        };
        let Some(first) = candidates.first().copied() else {
            return Err(ResolveError::NoSuchName(name.to_owned(), "no addresses".into()));
        };
        let allowed = |ip: &IpAddr| self.guard.check(*ip).is_ok();
        let ip = prefer
            .filter(|p| candidates.contains(p) && allowed(p))
            .or_else(|| candidates.iter().copied().find(allowed))
            .ok_or(ResolveError::Private { name: name.to_owned(), ip: first })?;
        Ok((ip, ttl))
    }
}

#[derive(Debug, Clone)]
struct SharedResolver(Arc<GuardedResolver>);

impl Resolve for SharedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let inner = Arc::clone(&self.0);
        let name = name.as_str().to_owned();
        Box::pin(async move {
            let ip = inner.lookup(&name).await?;
            let addrs: Addrs = Box::new(std::iter::once(SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// The HTTP client of a worker. Cheap to share (`Arc` inside).
#[derive(Debug, Clone)]
pub struct Fetcher {
    /// Replaced by a fresh one (new connection pool) when a host's address changes: reqwest pools
    /// connections by scheme, host and port, so a kept-alive connection would otherwise go on
    /// talking to a server the host has left.
    client: Arc<RwLock<reqwest::Client>>,
    resolver: Arc<GuardedResolver>,
    settings: Arc<FetchSettings>,
}

/// Why a [`Fetcher`] could not be built: the machine's configuration, not a website.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetcherError {
    /// The system's DNS configuration could not be read.
    #[error("reading DNS configuration: {0}")]
    DnsConfig(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The DNS resolver could not be built.
    #[error("building DNS resolver: {0}")]
    DnsResolver(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The extra CA certificates (`--ca-file`) could not be read.
    #[error("reading CA certificates: {0}")]
    CaCertificates(#[source] reqwest::Error),
    /// The HTTP client could not be built (TLS roots).
    #[error("building HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

impl Fetcher {
    /// Builds the client. Fails only if TLS or the system DNS configuration cannot be loaded.
    ///
    /// # Errors
    /// [`FetcherError`] naming what could not be loaded.
    pub fn new(settings: FetchSettings) -> Result<Fetcher, FetcherError> {
        let dns = if settings.no_dns {
            None
        } else {
            Some(crate::dns::Resolver::new(build_resolver(&settings.dns_servers)?, &settings.dns_servers))
        };
        let chosen = moka::sync::Cache::builder()
            .max_capacity(MAX_CHOSEN)
            .time_to_idle(CHOSEN_IDLE)
            .eviction_policy(moka::policy::EvictionPolicy::lru())
            .build_with_hasher(foldhash::fast::RandomState::default());
        let resolver = Arc::new(GuardedResolver {
            dns,
            overrides: settings.resolve.iter().map(|(k, v)| (k.to_ascii_lowercase(), *v)).collect(),
            guard: Guard::new(settings.allow_private),
            chosen,
        });
        let client = build_client(&settings, &resolver)?;
        Ok(Fetcher { client: Arc::new(RwLock::new(client)), resolver, settings: Arc::new(settings) })
    }

    /// The resolver every name goes through (`None` with `--no-dns`): the DNS checks ask it too,
    /// so `--dns-server` holds for them.
    #[must_use]
    pub fn dns(&self) -> Option<&TokioResolver> {
        self.resolver.dns.as_ref().map(crate::dns::Resolver::inner)
    }

    /// The same resolver with its watch ([`crate::dns::Resolver`]): questions asked through it
    /// fail at once while it gives no answers at all, as this fetcher's own lookups do.
    #[must_use]
    pub fn resolver(&self) -> Option<&crate::dns::Resolver> {
        self.resolver.dns.as_ref()
    }

    /// Lets the address cache drop what has expired; how many names it holds.
    pub fn housekeeping(&self) -> u64 {
        self.resolver.chosen.run_pending_tasks();
        self.resolver.chosen.entry_count()
    }

    /// The client in force (a cheap clone: it shares the pool).
    fn client(&self) -> reqwest::Client {
        self.client.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Drops every pooled connection: requests under way finish on the old pool, new ones
    /// connect afresh through the resolver.
    fn renew_pool(&self) {
        match build_client(&self.settings, &self.resolver) {
            Ok(c) => *self.client.write().unwrap_or_else(std::sync::PoisonError::into_inner) = c,
            Err(e) => tracing::warn!(error = %e, "could not build a fresh HTTP client; keeping the old pool"),
        }
    }
}

/// The worker's one DNS resolver: the system's configuration, or only `servers` when given
/// (each asked over UDP and TCP at its own port). Five seconds per try, two tries per question
/// (hickory's `attempts` counts the retries: 2 made it three tries, 15 s per unanswered
/// question and 30 s per unanswered address lookup, A then AAAA).
fn build_resolver(servers: &[SocketAddr]) -> Result<TokioResolver, FetcherError> {
    use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig};
    let mut b = if servers.is_empty() {
        TokioResolver::builder_tokio().map_err(|e| FetcherError::DnsConfig(Box::new(e)))?
    } else {
        let name_servers = servers
            .iter()
            .map(|s| {
                let mut ns = NameServerConfig::udp_and_tcp(s.ip());
                ns.connections = [ConnectionConfig::udp(), ConnectionConfig::tcp()]
                    .into_iter()
                    .map(|mut c| {
                        c.port = s.port();
                        c
                    })
                    .collect();
                ns
            })
            .collect();
        TokioResolver::builder_with_config(
            ResolverConfig::from_name_servers(name_servers),
            hickory_resolver::net::runtime::TokioRuntimeProvider::default(),
        )
    };
    b.options_mut().timeout = Duration::from_secs(5);
    b.options_mut().attempts = 1;
    b.build().map_err(|e| FetcherError::DnsResolver(Box::new(e)))
}

/// The one HTTP client configuration of a worker.
fn build_client(settings: &FetchSettings, resolver: &Arc<GuardedResolver>) -> Result<reqwest::Client, FetcherError> {
    crate::tls::install_crypto_provider();
    let mut builder = reqwest::Client::builder();
    if let Some(pem) = &settings.extra_roots_pem {
        let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(FetcherError::CaCertificates)?;
        builder = builder.tls_certs_merge(certs);
    }
    // Decompression is ours (`read_capped`), not reqwest's: reqwest removes Content-Encoding
    // and Content-Length from the headers it hands over when it decodes, so the compression
    // check, the declared-size check and the stored headers would see every compressed answer
    // as uncompressed.
    let mut accept = reqwest::header::HeaderMap::new();
    accept.insert(reqwest::header::ACCEPT_ENCODING, reqwest::header::HeaderValue::from_static(ACCEPT_ENCODING));
    let client = builder
        .no_gzip()
        .no_brotli()
        .no_deflate()
        .no_zstd()
        .default_headers(accept)
        .user_agent(settings.user_agent.clone())
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .no_proxy()
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout.min(Duration::from_secs(10)))
        .pool_idle_timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(16)
        .http1_max_headers(MAX_RESPONSE_HEADERS)
        .dns_resolver(SharedResolver(Arc::clone(resolver)))
        .build()
        .map_err(FetcherError::Client)?;
    Ok(client)
}

impl Fetcher {
    /// The settings in force.
    #[must_use]
    pub fn settings(&self) -> &FetchSettings {
        &self.settings
    }

    /// Pins a host name to the address the frontier paces it under, if this worker's guard allows
    /// it. The pin may come from another worker (one started with `--allow-private`, say) or from
    /// anyone who can write to the frontier, so it is checked like any other address: a refused
    /// pin is not kept (and any earlier address for the name is forgotten), and the caller must
    /// not fetch anything from the host under that lease.
    pub fn pin(&self, host: &str, ip: IpAddr) -> Result<(), NonPublic> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        match self.resolver.guard.check(ip) {
            Ok(()) => {
                // Every lease pins its host; nearly always to the address already chosen, which
                // the read has just kept alive (the cache forgets by idle time), so only a new or
                // changed address is written.
                let before = self.resolver.chosen.get(&host);
                if before != Some(ip) {
                    self.resolver.chosen.insert(host, ip);
                    if before.is_some() {
                        self.renew_pool();
                    }
                }
                Ok(())
            }
            Err(refused) => {
                self.resolver.chosen.invalidate(&host);
                Err(refused)
            }
        }
    }

    /// Looks a URL's host up afresh through the guard (not from what this worker remembers):
    /// the address, `prefer` if it is still among the answers, and the answer's TTL (unlimited
    /// for `--resolve` overrides and IP literals). What a [`shoal_shared::frontier::Lease::resolve`]
    /// lease asks for; the caller pins the answer.
    pub async fn look_up(&self, url: &Url, prefer: Option<IpAddr>) -> Result<(IpAddr, Duration), FetchError> {
        match url.host() {
            Some(Host::Ipv4(ip)) => self.check_literal(IpAddr::V4(ip)).map(|ip| (ip, Duration::MAX)),
            Some(Host::Ipv6(ip)) => self.check_literal(IpAddr::V6(ip)).map(|ip| (ip, Duration::MAX)),
            Some(Host::Domain(d)) => {
                let name = d.trim_end_matches('.').to_ascii_lowercase();
                self.resolver.fresh(&name, prefer).await.map_err(|e| match e {
                    ResolveError::NoSuchName(_, m) => FetchError::Dns(m),
                    ResolveError::Private { ip, .. } => FetchError::PrivateAddress(ip),
                })
            }
            None => Err(FetchError::Dns("URL has no host".into())),
        }
    }

    /// Resolves a URL's host through the guard (also for IP literals), without connecting.
    pub async fn resolve(&self, url: &Url) -> Result<IpAddr, FetchError> {
        match url.host() {
            Some(Host::Ipv4(ip)) => self.check_literal(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => self.check_literal(IpAddr::V6(ip)),
            Some(Host::Domain(d)) => self.resolver.lookup(d).await.map_err(|e| match e {
                ResolveError::NoSuchName(_, m) => FetchError::Dns(m),
                ResolveError::Private { ip, .. } => FetchError::PrivateAddress(ip),
            }),
            None => Err(FetchError::Dns("URL has no host".into())),
        }
    }

    fn check_literal(&self, ip: IpAddr) -> Result<IpAddr, FetchError> {
        match self.resolver.guard.check(ip) {
            Ok(()) => Ok(ip),
            Err(_) => Err(FetchError::PrivateAddress(ip)),
        }
    }

    /// One request, body read up to `max_body` (or the settings' cap), no redirects followed.
    pub async fn fetch(&self, method: Method, url: &Url, max_body: Option<u64>) -> Result<Fetched, FetchError> {
        let ip = self.resolve(url).await?;
        let cap = max_body.unwrap_or(self.settings.max_body);
        let started = Instant::now();
        let client = self.client();
        let req = match method {
            Method::Get => client.get(url.clone()),
            Method::Head => client.head(url.clone()),
        };
        let method_label = match method {
            Method::Get => "GET",
            Method::Head => "HEAD",
        };
        let m = shoal_metrics::metrics();
        let resp = match req.send().await.map_err(classify) {
            Ok(r) => r,
            Err(e) => {
                let labels = shoal_metrics::RequestLabels { method: method_label, class: e.kind().as_str() };
                m.requests.get_or_create(&labels).inc();
                return Err(e);
            }
        };
        let head_after = started.elapsed();
        let head_bytes: usize = resp.headers().iter().map(|(n, v)| n.as_str().len() + v.len() + 4).sum();
        if head_bytes > MAX_RESPONSE_HEAD_BYTES {
            let e = FetchError::HeadersTooLarge;
            let labels = shoal_metrics::RequestLabels { method: method_label, class: e.kind().as_str() };
            m.requests.get_or_create(&labels).inc();
            return Err(e);
        }
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let declared_over = resp.content_length().is_some_and(|n| n > cap) && headers.get("content-encoding").is_none();
        let (body, truncated) =
            if method == Method::Head { (Bytes::new(), false) } else { read_capped(resp, cap).await? };
        let elapsed = started.elapsed();
        m.requests
            .get_or_create(&shoal_metrics::RequestLabels {
                method: method_label,
                class: shoal_metrics::status_class(status),
            })
            .inc();
        m.fetch_seconds.observe(elapsed.as_secs_f64());
        m.response_bytes.inc_by(body.len() as u64);
        Ok(Fetched { status, headers, body, truncated: truncated || declared_over, elapsed, head_after, ip: Some(ip) })
    }
}

/// What Shoal asks servers for, as a browser does; `read_capped` (below) decodes each of them.
pub const ACCEPT_ENCODING: &str = "gzip, deflate, br, zstd";

/// Reads a body up to `cap` decompressed bytes; the rest is never read (or inflated) into memory.
/// The body is decoded by its Content-Encoding (gzip, deflate, br, zstd; anything else is kept as
/// sent), so a small compressed answer that inflates past the cap is cut at the cap.
async fn read_capped(resp: reqwest::Response, cap: u64) -> Result<(Bytes, bool), FetchError> {
    use async_compression::tokio::bufread::{BrotliDecoder, GzipDecoder, ZlibDecoder, ZstdDecoder};
    use tokio::io::{AsyncRead, AsyncReadExt};
    let encoding = resp
        .headers()
        .get(reqwest::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    if !matches!(encoding.as_str(), "gzip" | "x-gzip" | "deflate" | "br" | "zstd") {
        return read_plain(resp, cap).await;
    }
    // Transport errors come back out of the reader as io::Error; keep reqwest's to classify them.
    let transport: Arc<Mutex<Option<reqwest::Error>>> = Arc::default();
    let seen = Arc::clone(&transport);
    let stream = resp.bytes_stream().map(move |r| {
        r.map_err(|e| {
            let msg = e.to_string();
            *seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
            std::io::Error::other(msg)
        })
    });
    let raw = tokio_util::io::StreamReader::new(stream);
    let mut reader: std::pin::Pin<Box<dyn AsyncRead + Send>> = match encoding.as_str() {
        "gzip" | "x-gzip" => Box::pin(GzipDecoder::new(raw)),
        "deflate" => Box::pin(ZlibDecoder::new(raw)),
        "br" => Box::pin(BrotliDecoder::new(raw)),
        _ => Box::pin(ZstdDecoder::new(raw)),
    };
    let mut buf = BytesMut::new();
    loop {
        // One byte past the cap tells a body of exactly `cap` bytes from a longer one.
        let want = (64 * 1024).min((cap - buf.len()).saturating_add(1));
        let n = match (&mut reader).take(want as u64).read_buf(&mut buf).await {
            Ok(n) => n,
            Err(e) => {
                let taken = transport.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
                return Err(match taken {
                    Some(t) => classify(t),
                    None => FetchError::Protocol(format!("cannot decode the {encoding} body: {e}")),
                });
            }
        };
        if n == 0 {
            return Ok((buf.freeze(), false));
        }
        if buf.len() > cap {
            buf.truncate(cap);
            return Ok((buf.freeze(), true));
        }
    }
}

/// A body without content coding, up to `cap` bytes: kept as it came when it came in one piece
/// (most pages), so it is neither copied nor its buffer zeroed.
async fn read_plain(resp: reqwest::Response, cap: usize) -> Result<(Bytes, bool), FetchError> {
    gather(resp.bytes_stream(), cap).await.map_err(classify)
}

/// The chunks of a body up to `cap` bytes, and whether there were more: the first chunk itself
/// when no second one follows, else one copy of them all.
async fn gather<E>(
    mut chunks: impl futures_util::Stream<Item = Result<Bytes, E>> + Unpin,
    cap: usize,
) -> Result<(Bytes, bool), E> {
    let mut first: Option<Bytes> = None;
    let mut rest = BytesMut::new();
    while let Some(chunk) = chunks.next().await {
        let mut chunk = chunk?;
        let held = first.as_ref().map_or(0, Bytes::len) + rest.len();
        let over = chunk.len() > cap - held;
        if over {
            chunk.truncate(cap - held);
        }
        match first.take() {
            None if rest.is_empty() => first = Some(chunk),
            earlier => {
                if let Some(f) = earlier {
                    rest.extend_from_slice(&f);
                }
                rest.extend_from_slice(&chunk);
            }
        }
        if over {
            return Ok((first.unwrap_or_else(|| rest.freeze()), true));
        }
    }
    Ok((first.unwrap_or_else(|| rest.freeze()), false))
}

/// Maps reqwest's error to a website outcome, finding our resolver's verdict or hyper's header
/// cap in the chain.
fn classify(e: reqwest::Error) -> FetchError {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(s) = src {
        if let Some(r) = s.downcast_ref::<ResolveError>() {
            return match r {
                ResolveError::NoSuchName(_, m) => FetchError::Dns(m.clone()),
                ResolveError::Private { ip, .. } => FetchError::PrivateAddress(*ip),
            };
        }
        if s.downcast_ref::<hyper::Error>().is_some_and(is_head_too_large) {
            return FetchError::HeadersTooLarge;
        }
        src = s.source();
    }
    if e.is_timeout() {
        FetchError::Timeout
    } else if e.is_connect() {
        FetchError::Connect(chain(&e))
    } else {
        FetchError::Protocol(chain(&e))
    }
}

/// hyper's parse error for a response head over the header cap (too many fields, or more bytes
/// than its read buffer holds). `hyper::Error::is_parse_too_large` exists only with hyper's server feature, so the
/// parse error is recognised by its fixed description; the header-cap tests fail if it changes.
fn is_head_too_large(e: &hyper::Error) -> bool {
    e.is_parse() && e.to_string() == "message head is too large"
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetcher(allow_private: bool) -> Fetcher {
        let settings = FetchSettings {
            allow_private,
            no_dns: true,
            resolve: HashMap::from([("override.test".to_owned(), IpAddr::from([127, 0, 0, 1]))]),
            ..FetchSettings::default()
        };
        Fetcher::new(settings).expect("a fetcher without DNS builds")
    }

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL parses")
    }

    /// A plain body: one chunk is kept as it came, several are joined, and the cap cuts at
    /// exactly `cap` bytes, a body of exactly `cap` bytes not counting as cut.
    #[tokio::test]
    async fn plain_bodies_are_gathered_up_to_the_cap() {
        async fn run(parts: &[&'static [u8]], cap: usize) -> (Bytes, bool) {
            let chunks = parts.iter().map(|p| Ok::<_, ()>(Bytes::from_static(p))).collect::<Vec<_>>();
            gather(futures_util::stream::iter(chunks), cap).await.expect("no error")
        }
        let one = b"hello world";
        let (body, cut) = run(&[one], 100).await;
        assert_eq!((&body[..], cut), (&one[..], false));
        assert_eq!(body.as_ptr(), one.as_ptr(), "a body in one piece is not copied");
        assert_eq!(run(&[b"ab", b"cd", b"ef"], 100).await, (Bytes::from_static(b"abcdef"), false));
        assert_eq!(run(&[b"ab", b"cd", b"ef"], 6).await, (Bytes::from_static(b"abcdef"), false));
        assert_eq!(run(&[b"ab", b"cd", b"ef"], 5).await, (Bytes::from_static(b"abcde"), true));
        assert_eq!(run(&[b"abcdef"], 3).await, (Bytes::from_static(b"abc"), true));
        assert_eq!(run(&[b"ab", b"", b"cd"], 4).await, (Bytes::from_static(b"abcd"), false));
        assert_eq!(run(&[], 4).await, (Bytes::new(), false));
        let failed = gather(futures_util::stream::iter(vec![Ok(Bytes::from_static(b"ab")), Err("reset")]), 10).await;
        assert_eq!(failed, Err("reset"));
    }

    /// Issue 9: a pin from the frontier skipped the guard. Every source of an address passes it.
    #[tokio::test]
    async fn pins_overrides_and_literals_all_pass_the_guard() {
        let strict = fetcher(false);
        let loopback = IpAddr::from([127, 0, 55, 1]);
        let public = IpAddr::from([93, 184, 216, 34]);
        assert!(strict.pin("pinned.test", public).is_ok());
        assert_eq!(strict.resolve(&url("http://pinned.test/")).await, Ok(public));
        // A refused pin is not kept, and it removes the earlier one: the name is not reachable.
        let refused = strict.pin("pinned.test", loopback).expect_err("loopback pin refused");
        assert_eq!(refused.ip, loopback);
        assert!(matches!(strict.resolve(&url("http://pinned.test/")).await, Err(FetchError::Dns(_))));
        let nat64 = "64:ff9b::7f00:1".parse().expect("parses");
        assert!(strict.pin("nat64.test", nat64).is_err());
        assert_eq!(
            strict.resolve(&url("http://override.test/")).await,
            Err(FetchError::PrivateAddress(IpAddr::from([127, 0, 0, 1])))
        );
        assert_eq!(
            strict.resolve(&url("http://[::ffff:127.0.0.1]/")).await,
            Err(FetchError::PrivateAddress("::ffff:127.0.0.1".parse().expect("parses")))
        );

        let open = fetcher(true);
        assert!(open.pin("pinned.test", loopback).is_ok());
        assert_eq!(open.resolve(&url("http://pinned.test/")).await, Ok(loopback));
        assert_eq!(open.resolve(&url("http://override.test/")).await, Ok(IpAddr::from([127, 0, 0, 1])));
    }

    /// A raw HTTP/1 server on loopback answering every connection with `head` and a 2-byte body
    /// (it lives as long as the test's runtime).
    #[allow(clippy::disallowed_methods, reason = "a test server that ends with the test's runtime")]
    async fn raw_server(head: String) -> std::net::SocketAddr {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.expect("bind loopback");
        let addr = listener.local_addr().expect("bound address");
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let head = head.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = tcp.read(&mut buf).await;
                    let _ = tcp.write_all(format!("{head}Content-Length: 2\r\n\r\nok").as_bytes()).await;
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn response_heads_over_the_header_cap_are_headers_too_large() {
        let open = fetcher(true);
        let big = format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\n", "a".repeat(MAX_RESPONSE_HEAD_BYTES + 1000));
        let many: String = (0..=MAX_RESPONSE_HEADERS).map(|i| format!("X-Filler-{i}: 1\r\n")).collect();
        let fine = "HTTP/1.1 200 OK\r\nX-Small: 1\r\n".to_owned();
        for (head, want) in [(big, true), (format!("HTTP/1.1 200 OK\r\n{many}"), true), (fine, false)] {
            let addr = raw_server(head).await;
            let got = open.fetch(Method::Get, &url(&format!("http://{addr}/")), None).await;
            assert_eq!(matches!(got, Err(FetchError::HeadersTooLarge)), want, "{:?}", got.map(|r| r.status));
        }
    }
}
