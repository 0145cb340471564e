//! HTTP fetching with Shoal's manners and caps: GET and HEAD only, no cookies, no Referer, no
//! proxies, redirects returned (never followed here), bodies read through one size-capped helper,
//! and every connection to an address the private-address guard allows.

use crate::guard::is_public;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use hickory_resolver::TokioResolver;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use url::{Host, Url};

/// Default cap on a decompressed response body.
pub const DEFAULT_MAX_BODY: u64 = 5 * 1024 * 1024;
/// Default time a request may take, body included (SPEC §4).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// How the fetcher connects and what it accepts.
#[derive(Debug, Clone)]
pub struct FetchSettings {
    /// The User-Agent header.
    pub user_agent: String,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Cap on decompressed body bytes.
    pub max_body: u64,
    /// Allow loopback and private addresses (tests, intranets).
    pub allow_private: bool,
    /// Fixed name → address overrides (`--resolve HOST=IP`). Still subject to the guard.
    pub resolve: HashMap<String, IpAddr>,
    /// Resolve only names in `resolve`; everything else fails as if it did not exist. For tests and
    /// air-gapped runs, so nothing leaves the machine.
    pub no_dns: bool,
    /// Extra trusted CA certificates (PEM), for intranets and tests.
    pub extra_roots_pem: Option<Vec<u8>>,
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
    /// The host resolves only to addresses the guard refuses.
    #[error("refused non-public address {0}")]
    PrivateAddress(IpAddr),
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
    /// Short stable name for records.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            FetchError::Dns(_) => "dns",
            FetchError::PrivateAddress(_) => "private_address",
            FetchError::Timeout => "timeout",
            FetchError::Connect(_) => "connect",
            FetchError::Protocol(_) => "protocol",
        }
    }

    /// Whether SPEC §4 retries it (timeouts and connection errors are; DNS and the guard are not).
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

/// The guarded resolver: overrides first, then DNS (unless disabled), then the guard, then one
/// address is chosen and remembered, so the IP the frontier paces is the IP we connect to.
#[derive(Debug)]
struct GuardedResolver {
    dns: Option<TokioResolver>,
    overrides: HashMap<String, IpAddr>,
    allow_private: bool,
    /// Name → the address last used, and pins from leases.
    chosen: Mutex<HashMap<String, IpAddr>>,
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
        if let Some(ip) = self.lock().get(&name).copied() {
            return Ok(ip);
        }
        let candidates: Vec<IpAddr> = if let Some(ip) = self.overrides.get(&name) {
            vec![*ip]
        } else if let Some(dns) = &self.dns {
            dns.lookup_ip(name.as_str())
                .await
                .map_err(|e| ResolveError::NoSuchName(name.clone(), e.to_string()))?
                .iter()
                .collect()
        } else {
            return Err(ResolveError::NoSuchName(name, "not in --resolve and DNS is off".into()));
        };
        let Some(first) = candidates.first().copied() else {
            return Err(ResolveError::NoSuchName(name, "no addresses".into()));
        };
        let ip = if self.allow_private {
            first
        } else {
            candidates
                .iter()
                .copied()
                .find(|ip| is_public(*ip))
                .ok_or(ResolveError::Private { name: name.clone(), ip: first })?
        };
        self.lock().insert(name, ip);
        Ok(ip)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, IpAddr>> {
        self.chosen.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
    client: reqwest::Client,
    resolver: Arc<GuardedResolver>,
    settings: Arc<FetchSettings>,
}

impl Fetcher {
    /// Builds the client. Fails only if TLS or the system DNS configuration cannot be loaded.
    pub fn new(settings: FetchSettings) -> Result<Fetcher, String> {
        let dns = if settings.no_dns {
            None
        } else {
            let mut b = TokioResolver::builder_tokio().map_err(|e| format!("reading DNS configuration: {e}"))?;
            b.options_mut().timeout = Duration::from_secs(5);
            b.options_mut().attempts = 2;
            Some(b.build().map_err(|e| format!("building DNS resolver: {e}"))?)
        };
        let resolver = Arc::new(GuardedResolver {
            dns,
            overrides: settings.resolve.iter().map(|(k, v)| (k.to_ascii_lowercase(), *v)).collect(),
            allow_private: settings.allow_private,
            chosen: Mutex::new(HashMap::new()),
        });
        crate::tls::install_crypto_provider();
        let mut builder = reqwest::Client::builder();
        if let Some(pem) = &settings.extra_roots_pem {
            let certs =
                reqwest::Certificate::from_pem_bundle(pem).map_err(|e| format!("reading CA certificates: {e}"))?;
            builder = builder.tls_certs_merge(certs);
        }
        let client = builder
            .user_agent(settings.user_agent.clone())
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .no_proxy()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout.min(Duration::from_secs(10)))
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(16)
            .http1_max_headers(200)
            .dns_resolver(SharedResolver(Arc::clone(&resolver)))
            .build()
            .map_err(|e| format!("building HTTP client: {e}"))?;
        Ok(Fetcher { client, resolver, settings: Arc::new(settings) })
    }

    /// The settings in force.
    #[must_use]
    pub fn settings(&self) -> &FetchSettings {
        &self.settings
    }

    /// Pins a host name to the address the frontier paces it under.
    pub fn pin(&self, host: &str, ip: IpAddr) {
        self.resolver.lock().insert(host.to_ascii_lowercase(), ip);
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
        if self.settings.allow_private || is_public(ip) { Ok(ip) } else { Err(FetchError::PrivateAddress(ip)) }
    }

    /// One request, body read up to `max_body` (or the settings' cap), no redirects followed.
    pub async fn fetch(&self, method: Method, url: &Url, max_body: Option<u64>) -> Result<Fetched, FetchError> {
        let ip = self.resolve(url).await?;
        let cap = max_body.unwrap_or(self.settings.max_body);
        let started = Instant::now();
        let req = match method {
            Method::Get => self.client.get(url.clone()),
            Method::Head => self.client.head(url.clone()),
        };
        let method_label = match method {
            Method::Get => "GET",
            Method::Head => "HEAD",
        };
        let m = shoal_metrics::metrics();
        let resp = match req.send().await.map_err(classify) {
            Ok(r) => r,
            Err(e) => {
                m.requests.get_or_create(&shoal_metrics::RequestLabels { method: method_label, class: e.kind() }).inc();
                return Err(e);
            }
        };
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
        Ok(Fetched { status, headers, body, truncated: truncated || declared_over, elapsed, ip: Some(ip) })
    }
}

/// Reads a body up to `cap` decompressed bytes; the rest is never read into memory.
async fn read_capped(resp: reqwest::Response, cap: u64) -> Result<(Bytes, bool), FetchError> {
    let mut stream = resp.bytes_stream();
    let cap_usize = usize::try_from(cap).unwrap_or(usize::MAX);
    let mut buf = BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(classify)?;
        let room = cap_usize - buf.len();
        if chunk.len() > room {
            buf.extend_from_slice(&chunk[..room]);
            return Ok((buf.freeze(), true));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok((buf.freeze(), false))
}

/// Maps reqwest's error to a website outcome, finding our resolver's verdict in the chain.
fn classify(e: reqwest::Error) -> FetchError {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(s) = src {
        if let Some(r) = s.downcast_ref::<ResolveError>() {
            return match r {
                ResolveError::NoSuchName(_, m) => FetchError::Dns(m.clone()),
                ResolveError::Private { ip, .. } => FetchError::PrivateAddress(*ip),
            };
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
