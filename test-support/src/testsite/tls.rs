//! HTTPS for the test server: certificates from a private test CA (rcgen) and a TLS front for
//! [`super::TestServer`] ([`super::TestServer::start_tls`]).
//!
//! One TLS server picks its certificate by the SNI name the client sends, so one port can serve a
//! valid site, an expired one, a self-signed one and one with the wrong name side by side. A TLS
//! port can also answer plain HTTP ([`PlainHttp`]): the first byte of a connection tells a TLS
//! ClientHello (`0x16`) from an HTTP request, so the `http://` form of an https site can be tested
//! on the same port, whether it serves the site, redirects to https, or is refused like on a
//! TLS-only server.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use shoal_test_support::testsite::{PlainHttp, Site, TestCa, TestServer, TlsConfig};
//! let ca = TestCa::new("Shoal Test CA");
//! let tls = TlsConfig::new(ca.leaf(&["a.test"]).build())
//!     .host_cert("old.test", ca.leaf(&["old.test"]).expired().build())
//!     .plain_http(PlainHttp::RedirectToHttps)
//!     .https_header("strict-transport-security", "max-age=31536000");
//! let server = TestServer::start_tls(vec![Site::generated("a.test", 10, 3)], tls).await?;
//! assert!(server.url("a.test", "/").starts_with("https://"));
//! // ... audit with --ca-file pointing at ca.pem() written to a file ...
//! # Ok(()) }
//! ```
//!
//! Requests answered by [`PlainHttp::RedirectToHttps`] never reach the sites and are not logged.

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::http::header::HOST;
use axum::http::{HeaderName, HeaderValue, Request};
use axum::response::Response;
use hyper::body::Incoming;
use hyper::service::{Service as _, service_fn};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use super::route::Route;

/// How long a connection may take to send its first byte and finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// The first byte of a TLS record carrying a handshake message (a ClientHello).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;
const DAY: Duration = Duration::from_secs(86_400);

/// A private certificate authority for tests: its certificate as PEM (for `--ca-file`) and its key
/// to sign leaves with.
pub struct TestCa {
    name: String,
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl fmt::Debug for TestCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestCa").field("name", &self.name).finish_non_exhaustive()
    }
}

impl TestCa {
    /// A new CA (ECDSA P-256) whose subject is `CN={common_name}`.
    ///
    /// # Panics
    /// If rcgen cannot generate the key or sign the certificate (it always can for these inputs).
    pub fn new(common_name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("a CA needs no names");
        params.distinguished_name.push(DnType::CommonName, common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.not_before = offset_time(SystemTime::now() - DAY);
        params.not_after = offset_time(SystemTime::now() + 3650 * DAY);
        let key = KeyPair::generate().expect("generating the CA key");
        let cert = params.self_signed(&key).expect("self-signing the CA");
        TestCa { name: common_name.to_owned(), pem: cert.pem(), issuer: Issuer::new(params, key) }
    }

    /// The CA certificate as PEM.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// Writes the CA certificate to `dir/{file}` and returns the path (for `--ca-file`).
    ///
    /// # Errors
    /// If the file cannot be written.
    pub fn write_pem(&self, dir: &Path, file: &str) -> io::Result<PathBuf> {
        let path = dir.join(file);
        std::fs::write(&path, &self.pem)?;
        Ok(path)
    }

    /// A leaf certificate for `names` (DNS names), signed by this CA, valid from a day ago for 90
    /// days; adjust it with the [`LeafSpec`] methods, then [`LeafSpec::build`].
    pub fn leaf<'a>(&'a self, names: &[&str]) -> LeafSpec<'a> {
        let now = SystemTime::now();
        LeafSpec {
            names: names.iter().map(|n| (*n).to_owned()).collect(),
            not_before: now - DAY,
            not_after: now + 90 * DAY,
            signer: Some(self),
        }
    }
}

/// A leaf certificate to build: its names, validity and signer.
#[derive(Debug, Clone)]
pub struct LeafSpec<'a> {
    names: Vec<String>,
    not_before: SystemTime,
    not_after: SystemTime,
    signer: Option<&'a TestCa>,
}

impl LeafSpec<'_> {
    /// Expires `days` days from now (still valid until then).
    #[must_use]
    pub fn expiring_in_days(mut self, days: u32) -> Self {
        self.not_after = SystemTime::now() + DAY * days;
        self
    }

    /// Valid from 100 days ago until 2 days ago.
    #[must_use]
    pub fn expired(mut self) -> Self {
        let now = SystemTime::now();
        self.not_before = now - 100 * DAY;
        self.not_after = now - 2 * DAY;
        self
    }

    /// Signed by its own key instead of the CA's.
    #[must_use]
    pub fn self_signed(mut self) -> Self {
        self.signer = None;
        self
    }

    /// The certificate and its key.
    ///
    /// # Panics
    /// If a name is not a valid DNS name for rcgen, or signing fails.
    pub fn build(&self) -> TlsCert {
        let mut params = CertificateParams::new(self.names.clone()).expect("valid test DNS names");
        let cn = self.names.first().map_or("leaf", String::as_str);
        params.distinguished_name.push(DnType::CommonName, cn);
        params.not_before = offset_time(self.not_before);
        params.not_after = offset_time(self.not_after);
        let key = KeyPair::generate().expect("generating the leaf key");
        let cert = match self.signer {
            Some(ca) => params.signed_by(&key, &ca.issuer).expect("signing the leaf"),
            None => params.self_signed(&key).expect("self-signing the leaf"),
        };
        TlsCert {
            chain: vec![cert.der().clone()],
            key: PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
            pem: cert.pem(),
            key_pem: Some(key.serialize_pem()),
        }
    }
}

fn offset_time(t: SystemTime) -> time::OffsetDateTime {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    };
    time::OffsetDateTime::from_unix_timestamp(secs).expect("test certificate dates are representable")
}

/// A certificate chain (leaf first) and the leaf's private key, as a TLS server presents them.
#[derive(Debug)]
pub struct TlsCert {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    pem: String,
    /// The key as PKCS#8 PEM, for servers that read files (`redis-server --tls-key-file`); only
    /// for keys made here.
    key_pem: Option<String>,
}

impl Clone for TlsCert {
    fn clone(&self) -> Self {
        TlsCert {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
            pem: self.pem.clone(),
            key_pem: self.key_pem.clone(),
        }
    }
}

impl TlsCert {
    /// A certificate chain and key from elsewhere (`pem` is the leaf as PEM, for [`TlsCert::pem`]).
    pub fn new(chain: Vec<CertificateDer<'static>>, key: PrivateKeyDer<'static>, pem: String) -> TlsCert {
        TlsCert { chain, key, pem, key_pem: None }
    }

    /// The private key as PEM, for a key made by [`LeafSpec::build`] (`None` for one given to
    /// [`TlsCert::new`]).
    pub fn key_pem(&self) -> Option<&str> {
        self.key_pem.as_deref()
    }

    /// The leaf certificate as PEM (for trusting a self-signed leaf directly).
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// A rustls server configuration presenting this certificate (for servers other than the
    /// test web server: the mail servers' STARTTLS).
    ///
    /// # Errors
    /// If the key cannot be loaded.
    pub fn server_config(&self) -> io::Result<Arc<rustls::ServerConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_no_client_auth()
            .with_single_cert(self.chain.clone(), self.key.clone_key())
            .map_err(io::Error::other)?;
        Ok(Arc::new(config))
    }

    fn certified(&self, provider: &rustls::crypto::CryptoProvider) -> io::Result<Arc<CertifiedKey>> {
        let key = provider.key_provider.load_private_key(self.key.clone_key()).map_err(io::Error::other)?;
        Ok(Arc::new(CertifiedKey::new(self.chain.clone(), key)))
    }
}

/// What a TLS port does with a connection that starts with plain HTTP instead of a ClientHello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlainHttp {
    /// Treat it as TLS like a TLS-only server: the handshake fails and the connection is closed.
    Refuse,
    /// Serve the sites over plain HTTP too (an `http://` form that does not redirect).
    Serve,
    /// Answer every request with `301` to the same host, port and path over `https://`.
    RedirectToHttps,
}

/// How [`super::TestServer::start_tls`] serves TLS: a default certificate, per-host certificates
/// chosen by SNI, what plain HTTP gets, and headers added to every response sent over TLS.
#[derive(Debug, Clone)]
pub struct TlsConfig {
    default: TlsCert,
    by_host: HashMap<String, TlsCert>,
    plain: PlainHttp,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl TlsConfig {
    /// Serves `cert` to every client (whatever its SNI name); plain HTTP is refused.
    pub fn new(cert: TlsCert) -> TlsConfig {
        TlsConfig { default: cert, by_host: HashMap::new(), plain: PlainHttp::Refuse, headers: Vec::new() }
    }

    /// Serves `cert` to clients that ask for `host` (SNI, case-insensitive).
    #[must_use]
    pub fn host_cert(mut self, host: &str, cert: TlsCert) -> TlsConfig {
        self.by_host.insert(host.to_ascii_lowercase(), cert);
        self
    }

    /// What plain HTTP connections to the port get (default [`PlainHttp::Refuse`]).
    #[must_use]
    pub fn plain_http(mut self, plain: PlainHttp) -> TlsConfig {
        self.plain = plain;
        self
    }

    /// Adds (or replaces) a header on every response sent over TLS, as a server configuration
    /// would (e.g. `Strict-Transport-Security`).
    ///
    /// # Panics
    /// If `name` or `value` is not valid in a header.
    #[must_use]
    pub fn https_header(mut self, name: &str, value: &str) -> TlsConfig {
        let name = HeaderName::try_from(name).unwrap_or_else(|_| panic!("{name:?} is not a valid header name"));
        let value = HeaderValue::try_from(value).unwrap_or_else(|_| panic!("{value:?} is not a valid header value"));
        self.headers.push((name, value));
        self
    }

    /// The running form: the rustls acceptor and the rest.
    pub(super) fn into_tls(self) -> io::Result<Tls> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let default = self.default.certified(&provider)?;
        let by_host = self
            .by_host
            .iter()
            .map(|(host, cert)| Ok((host.clone(), cert.certified(&provider)?)))
            .collect::<io::Result<HashMap<_, _>>>()?;
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(rustls::DEFAULT_VERSIONS)
            .map_err(io::Error::other)?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(BySni { default, by_host }));
        Ok(Tls { acceptor: TlsAcceptor::from(Arc::new(config)), plain: self.plain, headers: Arc::new(self.headers) })
    }
}

/// Picks the certificate by the client's SNI name.
#[derive(Debug)]
struct BySni {
    default: Arc<CertifiedKey>,
    by_host: HashMap<String, Arc<CertifiedKey>>,
}

impl ResolvesServerCert for BySni {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let chosen = hello.server_name().and_then(|name| self.by_host.get(&name.to_ascii_lowercase()));
        Some(Arc::clone(chosen.unwrap_or(&self.default)))
    }
}

/// A TLS front, shared by all connections of one server.
pub(super) struct Tls {
    acceptor: TlsAcceptor,
    plain: PlainHttp,
    headers: Arc<Vec<(HeaderName, HeaderValue)>>,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls").field("plain", &self.plain).field("headers", &self.headers).finish_non_exhaustive()
    }
}

/// One connection to a TLS port: sniff, then TLS (or plain HTTP as configured), then HTTP/1.1.
pub(super) async fn serve_connection(tls: Arc<Tls>, stream: TcpStream, router: Router, cancel: CancellationToken) {
    if let Err(e) = stream.set_nodelay(true) {
        debug!(error = %e, "set_nodelay failed");
    }
    let mut first = [0u8; 1];
    let peeked = tokio::select! {
        peeked = tokio::time::timeout(HANDSHAKE_TIMEOUT, stream.peek(&mut first)) => peeked,
        () = cancel.cancelled() => return,
    };
    match peeked {
        Ok(Ok(1..)) => {}
        Ok(Ok(0)) => return,
        Ok(Err(e)) => {
            debug!(error = %e, "test server: reading the first byte failed");
            return;
        }
        Err(_) => {
            debug!("test server: client sent nothing");
            return;
        }
    }
    if first[0] != TLS_HANDSHAKE_RECORD {
        match tls.plain {
            PlainHttp::Refuse => {} // fall through: the handshake fails as on a TLS-only server
            PlainHttp::Serve => {
                return serve_http(TokioIo::new(stream), TowerToHyperService::new(router), cancel).await;
            }
            PlainHttp::RedirectToHttps => {
                return serve_http(TokioIo::new(stream), service_fn(redirect_to_https), cancel).await;
            }
        }
    }
    let accepted = tokio::select! {
        accepted = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.acceptor.accept(stream)) => accepted,
        () = cancel.cancelled() => return,
    };
    let stream = match accepted {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            debug!(error = %e, "test server: TLS handshake failed");
            return;
        }
        Err(_) => {
            debug!("test server: TLS handshake timed out");
            return;
        }
    };
    let inner = TowerToHyperService::new(router);
    let headers = Arc::clone(&tls.headers);
    let service = service_fn(move |request: Request<Incoming>| {
        let answer = inner.call(request);
        let headers = Arc::clone(&headers);
        async move {
            let mut response = answer.await?;
            for (name, value) in headers.iter() {
                response.headers_mut().insert(name.clone(), value.clone());
            }
            Ok::<_, Infallible>(response)
        }
    });
    serve_http(TokioIo::new(stream), service, cancel).await;
}

/// `301` to the `https://` form of the request's URL (same host and port, from `Host`).
async fn redirect_to_https(request: Request<Incoming>) -> Result<Response, Infallible> {
    let host = request.headers().get(HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
    Ok(Route::redirect(301, &format!("https://{host}{path}")).respond_ready(0))
}

/// HTTP/1.1 over any stream until the client is done or the server shuts down (gracefully).
async fn serve_http<I, S>(io: I, service: S, cancel: CancellationToken)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: hyper::service::HttpService<Incoming, ResBody = Body>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut connection = pin!(hyper::server::conn::http1::Builder::new().serve_connection(io, service));
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
