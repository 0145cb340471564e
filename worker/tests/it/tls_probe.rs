//! The TLS probe against local HTTPS servers with certificates generated here (rcgen): a private CA
//! and leaves that are valid, expiring soon, expired, not yet valid, self-signed, for the wrong
//! name, from an unknown CA; plus servers that are not TLS, too old, or silent. Only 127.0.0.1.

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use shoal_shared::time::UnixMs;
use shoal_worker::tls::{ProbeError, Roots, TlsFacts, TlsVerdict, probe};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use shoal_test_support::tls10;

const DAY: i64 = 86_400;
const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const BOUND: Duration = Duration::from_secs(5);

/// The clock, read here (the shared core reads none).
fn now() -> UnixMs {
    UnixMs::from(std::time::SystemTime::now())
}

/// The moment every test judges at, in whole seconds (certificates carry seconds only), so
/// `days_left` comes out exact.
fn now_secs() -> i64 {
    i64::try_from(now().0 / 1000).expect("the clock fits in i64 seconds")
}

fn at(secs: i64) -> UnixMs {
    UnixMs(u64::try_from(secs).expect("test times are after 1970") * 1000)
}

fn date(secs: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(secs).expect("test times are representable")
}

/// A private CA: its PEM (for [`Roots::from_pem`]) and an issuer to sign leaves with.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(common_name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("no names is fine for a CA");
    params.distinguished_name.push(DnType::CommonName, common_name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().expect("generating the CA key");
    let cert = params.self_signed(&key).expect("self-signing the CA");
    Ca { pem: cert.pem(), issuer: Issuer::new(params, key) }
}

/// What a leaf looks like: its names, validity in seconds, and who signs it (`None`: itself).
struct Leaf<'a> {
    names: &'a [&'a str],
    common_name: &'a str,
    not_before: i64,
    not_after: i64,
    signer: Option<&'a Ca>,
    ca_flag: bool,
}

impl<'a> Leaf<'a> {
    fn new(names: &'a [&'a str], now: i64, signer: &'a Ca) -> Leaf<'a> {
        Leaf {
            names,
            common_name: names.first().copied().unwrap_or("leaf"),
            not_before: now - DAY,
            not_after: now + 90 * DAY,
            signer: Some(signer),
            ca_flag: false,
        }
    }

    fn build(&self) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
        let (der, key, _) = self.build_with_pem();
        (der, key)
    }

    /// The certificate, its key, and the certificate as PEM.
    fn build_with_pem(&self) -> (CertificateDer<'static>, PrivateKeyDer<'static>, String) {
        let names: Vec<String> = self.names.iter().map(|s| (*s).to_owned()).collect();
        let mut params = CertificateParams::new(names).expect("valid test names");
        params.distinguished_name.push(DnType::CommonName, self.common_name);
        params.not_before = date(self.not_before);
        params.not_after = date(self.not_after);
        if self.ca_flag {
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        let key = KeyPair::generate().expect("generating the leaf key");
        let cert = match self.signer {
            Some(ca) => params.signed_by(&key, &ca.issuer).expect("signing the leaf"),
            None => params.self_signed(&key).expect("self-signing the leaf"),
        };
        (cert.der().clone(), PrivatePkcs8KeyDer::from(key.serialize_der()).into(), cert.pem())
    }
}

/// A task serving one thing on 127.0.0.1, stopped when dropped.
struct Server {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A TLS server that completes handshakes with `cert` and then waits for the client to close.
/// `tls12_only` forces TLS 1.2.
async fn tls_server(cert: CertificateDer<'static>, key: PrivateKeyDer<'static>, tls12_only: bool) -> Server {
    let versions: &[&rustls::SupportedProtocolVersion] =
        if tls12_only { &[&rustls::version::TLS12] } else { rustls::DEFAULT_VERSIONS };
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .expect("protocol versions the provider supports")
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .expect("the generated key matches the certificate");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.expect("binding a test port");
    let addr = listener.local_addr().expect("the bound address");
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(mut tls) = acceptor.accept(tcp).await {
                    let mut buf = [0u8; 1024];
                    while matches!(tls.read(&mut buf).await, Ok(n) if n > 0) {}
                }
            });
        }
    });
    Server { addr, task }
}

/// A raw TCP server that answers every connection with `reply` after reading what the client sent
/// first, then closes it (`None`: never answers and holds the connection open).
async fn raw_server(reply: Option<Vec<u8>>) -> Server {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.expect("binding a test port");
    let addr = listener.local_addr().expect("the bound address");
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut tcp, _)) = listener.accept().await {
            match &reply {
                Some(bytes) => {
                    let mut buf = [0u8; 4096];
                    let _ = tcp.read(&mut buf).await;
                    let _ = tcp.write_all(bytes).await;
                    let _ = tcp.flush().await;
                }
                None => held.push(tcp),
            }
        }
    });
    Server { addr, task }
}

async fn probe_leaf(leaf: &Leaf<'_>, host: &str, roots: &Roots, now: i64, tls12_only: bool) -> TlsFacts {
    let (cert, key) = leaf.build();
    let server = tls_server(cert, key, tls12_only).await;
    probe(host, server.addr.port(), LOCALHOST, BOUND, roots, at(now)).await.expect("the handshake completes")
}

fn roots_of(ca: &Ca) -> Roots {
    Roots::from_pem(ca.pem.as_bytes()).expect("the CA PEM loads")
}

#[tokio::test]
async fn valid_certificate_from_the_private_ca() {
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let leaf = Leaf::new(&["a.test", "www.a.test"], now, &ca);
    let facts = probe_leaf(&leaf, "a.test", &roots_of(&ca), now, false).await;
    assert_eq!(facts.verdict, TlsVerdict::Valid);
    assert_eq!(facts.days_left(at(now)), Some(90));
    assert_eq!(facts.not_after, Some(at(now + 90 * DAY)));
    assert_eq!(facts.not_before, Some(at(now - DAY)));
    assert_eq!(facts.issuer.as_deref(), Some("CN=Shoal Test CA"));
    assert_eq!(facts.subject.as_deref(), Some("CN=a.test"));
    assert_eq!(facts.names, ["a.test", "www.a.test"]);
    assert!(facts.name_matches);
    assert!(!facts.self_signed);
    assert_eq!(facts.version.as_deref(), Some("TLSv1.3"));
}

#[tokio::test]
async fn host_name_case_and_trailing_dot_do_not_matter() {
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let facts = probe_leaf(&Leaf::new(&["a.test"], now, &ca), "A.Test.", &roots_of(&ca), now, false).await;
    assert_eq!(facts.verdict, TlsVerdict::Valid);
}

#[tokio::test]
async fn tls12_only_server_reports_its_version() {
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let facts = probe_leaf(&Leaf::new(&["a.test"], now, &ca), "a.test", &roots_of(&ca), now, true).await;
    assert_eq!(facts.version.as_deref(), Some("TLSv1.2"));
    assert_eq!(facts.verdict, TlsVerdict::Valid);
}

#[tokio::test]
async fn expiring_in_ten_days_is_valid_with_ten_days_left() {
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let leaf = Leaf { not_after: now + 10 * DAY, ..Leaf::new(&["a.test"], now, &ca) };
    let facts = probe_leaf(&leaf, "a.test", &roots_of(&ca), now, false).await;
    assert_eq!(facts.verdict, TlsVerdict::Valid);
    assert_eq!(facts.days_left(at(now)), Some(10));
    // An hour later it has entered its last ten days.
    assert_eq!(facts.days_left(at(now + 3600)), Some(9));
}

#[tokio::test]
async fn expired_certificate() {
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let leaf = Leaf { not_before: now - 100 * DAY, not_after: now - 2 * DAY, ..Leaf::new(&["a.test"], now, &ca) };
    let facts = probe_leaf(&leaf, "a.test", &roots_of(&ca), now, false).await;
    assert_eq!(facts.verdict, TlsVerdict::Expired);
    assert_eq!(facts.days_left(at(now)), Some(-2));
    assert!(facts.name_matches);
}

#[tokio::test]
async fn not_yet_valid_certificate() {
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let leaf = Leaf { not_before: now + 5 * DAY, not_after: now + 100 * DAY, ..Leaf::new(&["a.test"], now, &ca) };
    let facts = probe_leaf(&leaf, "a.test", &roots_of(&ca), now, false).await;
    assert_eq!(facts.verdict, TlsVerdict::NotYetValid);
    assert_eq!(facts.not_before, Some(at(now + 5 * DAY)));
    // The same certificate judged a week later is fine: the verdict follows the caller's `now`.
    let week_later = probe_leaf(&leaf, "a.test", &roots_of(&ca), now + 7 * DAY, false).await;
    assert_eq!(week_later.verdict, TlsVerdict::Valid);
}

#[tokio::test]
async fn self_signed_leaf() {
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let leaf = Leaf { signer: None, common_name: "a.test self-signed", ..Leaf::new(&["a.test"], now, &ca) };
    let facts = probe_leaf(&leaf, "a.test", &roots_of(&ca), now, false).await;
    assert_eq!(facts.verdict, TlsVerdict::SelfSigned);
    assert!(facts.self_signed);
    assert_eq!(facts.issuer.as_deref(), Some("CN=a.test self-signed"));
    assert_eq!(facts.issuer, facts.subject);
    assert_eq!(facts.names, ["a.test"]);
    assert!(facts.name_matches);
    assert_eq!(facts.days_left(at(now)), Some(90));
}

#[tokio::test]
async fn self_signed_leaf_with_the_ca_flag() {
    // What `openssl req -x509` makes by default: webpki calls it a CA used as an end entity.
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let leaf = Leaf { signer: None, ca_flag: true, ..Leaf::new(&["a.test"], now, &ca) };
    let facts = probe_leaf(&leaf, "a.test", &roots_of(&ca), now, false).await;
    assert_eq!(facts.verdict, TlsVerdict::SelfSigned);
    assert!(facts.self_signed);
}

#[tokio::test]
async fn self_signed_leaf_that_the_roots_trust_is_valid() {
    let now = now_secs();
    let ca = ca("unused");
    let (cert, key, pem) = Leaf { signer: None, ..Leaf::new(&["a.test"], now, &ca) }.build_with_pem();
    let roots = Roots::from_pem(pem.as_bytes()).expect("the leaf itself loads as an anchor");
    let server = tls_server(cert, key, false).await;
    let facts = probe("a.test", server.addr.port(), LOCALHOST, BOUND, &roots, at(now)).await.expect("handshake");
    assert_eq!(facts.verdict, TlsVerdict::Valid);
    assert!(facts.self_signed);
}

#[tokio::test]
async fn leaf_named_like_its_ca_is_not_self_signed() {
    // Same DN as the issuer, but signed by the CA's key: the signature check tells them apart.
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let leaf = Leaf { common_name: "Shoal Test CA", ..Leaf::new(&["a.test"], now, &ca) };
    let facts = probe_leaf(&leaf, "a.test", &roots_of(&ca), now, false).await;
    assert_eq!(facts.issuer, facts.subject);
    assert!(!facts.self_signed);
    assert_eq!(facts.verdict, TlsVerdict::Valid);
}

#[tokio::test]
async fn wrong_hostname() {
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let facts = probe_leaf(&Leaf::new(&["b.test"], now, &ca), "a.test", &roots_of(&ca), now, false).await;
    assert_eq!(facts.verdict, TlsVerdict::WrongHostname);
    assert!(!facts.name_matches);
    assert_eq!(facts.names, ["b.test"]);
    assert_eq!(facts.subject.as_deref(), Some("CN=b.test"));
}

#[tokio::test]
async fn expired_and_wrong_name_reports_expiry_and_still_knows_the_name_is_wrong() {
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let leaf = Leaf { not_before: now - 100 * DAY, not_after: now - DAY, ..Leaf::new(&["b.test"], now, &ca) };
    let facts = probe_leaf(&leaf, "a.test", &roots_of(&ca), now, false).await;
    assert_eq!(facts.verdict, TlsVerdict::Expired);
    assert!(!facts.name_matches);
}

#[tokio::test]
async fn wildcard_name_matches_one_label() {
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let leaf = Leaf::new(&["*.a.test"], now, &ca);
    let roots = roots_of(&ca);
    let facts = probe_leaf(&leaf, "www.a.test", &roots, now, false).await;
    assert_eq!(facts.verdict, TlsVerdict::Valid);
    assert_eq!(facts.names, ["*.a.test"]);
    let apex = probe_leaf(&leaf, "a.test", &roots, now, false).await;
    assert_eq!(apex.verdict, TlsVerdict::WrongHostname);
}

#[tokio::test]
async fn certificate_from_another_ca_is_unknown_issuer() {
    let now = now_secs();
    let ours = ca("Shoal Test CA");
    let theirs = ca("Somebody Else's CA");
    let facts = probe_leaf(&Leaf::new(&["a.test"], now, &theirs), "a.test", &roots_of(&ours), now, false).await;
    assert_eq!(facts.verdict, TlsVerdict::UnknownIssuer);
    assert!(!facts.self_signed);
    assert_eq!(facts.issuer.as_deref(), Some("CN=Somebody Else's CA"));
}

#[tokio::test]
async fn private_ca_is_unknown_to_the_mozilla_roots() {
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let facts = probe_leaf(&Leaf::new(&["a.test"], now, &ca), "a.test", &Roots::webpki(), now, false).await;
    assert_eq!(facts.verdict, TlsVerdict::UnknownIssuer);
}

#[tokio::test]
async fn plain_tcp_server_is_a_handshake_error() {
    let server = raw_server(Some(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".to_vec())).await;
    let roots = Roots::webpki();
    let err = probe("a.test", server.addr.port(), LOCALHOST, BOUND, &roots, now())
        .await
        .expect_err("an HTTP answer is not a TLS handshake");
    assert!(matches!(err, ProbeError::Handshake { .. }), "{err:?}");
    assert_eq!(err.kind(), "handshake");
}

#[tokio::test]
async fn server_that_closes_at_once_is_a_handshake_error() {
    let server = raw_server(Some(Vec::new())).await;
    let err = probe("a.test", server.addr.port(), LOCALHOST, BOUND, &Roots::webpki(), now())
        .await
        .expect_err("no handshake without a ServerHello");
    assert!(matches!(err, ProbeError::Handshake { .. }), "{err:?}");
}

#[tokio::test]
async fn tls10_only_server_is_an_unsupported_version() {
    // A minimal TLS 1.0 ServerHello, what a server stuck on TLS 1.0 answers our ClientHello with.
    let server = raw_server(Some(tls10::server_hello())).await;
    let err = probe("a.test", server.addr.port(), LOCALHOST, BOUND, &Roots::webpki(), now())
        .await
        .expect_err("rustls speaks no TLS 1.0");
    assert!(matches!(err, ProbeError::UnsupportedVersion { .. }), "{err:?}");
}

#[tokio::test]
async fn protocol_version_alert_is_an_unsupported_version() {
    let server = raw_server(Some(vec![0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46])).await;
    let err = probe("a.test", server.addr.port(), LOCALHOST, BOUND, &Roots::webpki(), now())
        .await
        .expect_err("the server refused our versions");
    assert!(matches!(err, ProbeError::UnsupportedVersion { .. }), "{err:?}");
}

#[tokio::test]
async fn silent_server_times_out_within_the_bound() {
    let server = raw_server(None).await;
    let bound = Duration::from_millis(300);
    let started = Instant::now();
    let err = probe("a.test", server.addr.port(), LOCALHOST, bound, &Roots::webpki(), now())
        .await
        .expect_err("a server that never answers");
    let took = started.elapsed();
    assert!(matches!(err, ProbeError::Timeout { after, .. } if after == bound), "{err:?}");
    assert!(took >= bound && took < bound + Duration::from_secs(2), "took {took:?}");
}

#[tokio::test]
async fn refused_connection_is_a_connect_error() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.expect("binding a test port");
    let port = listener.local_addr().expect("the bound address").port();
    drop(listener);
    let err = probe("a.test", port, LOCALHOST, BOUND, &Roots::webpki(), now())
        .await
        .expect_err("nobody listens there any more");
    assert!(matches!(err, ProbeError::Connect { .. }), "{err:?}");
}

#[tokio::test]
async fn invalid_host_name_is_refused_before_connecting() {
    let err = probe("not a host", 443, LOCALHOST, BOUND, &Roots::webpki(), now())
        .await
        .expect_err("spaces are not allowed in a server name");
    assert!(matches!(err, ProbeError::InvalidName { .. }), "{err:?}");
}

#[tokio::test]
async fn probe_sends_no_http_request() {
    // A TLS server that records what the client sends after the handshake: only close_notify, so
    // the decrypted stream ends without a single byte.
    let now = now_secs();
    let ca = ca("Shoal Test CA");
    let (cert, key) = Leaf::new(&["a.test"], now, &ca).build();
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("default versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .expect("the generated key matches the certificate");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.expect("binding a test port");
    let port = listener.local_addr().expect("the bound address").port();
    let server = tokio::spawn(async move {
        let (tcp, _): (TcpStream, _) = listener.accept().await.expect("one connection");
        let mut tls = acceptor.accept(tcp).await.expect("the handshake completes");
        let mut received = Vec::new();
        let read = tls.read_to_end(&mut received).await;
        (read.is_ok(), received)
    });
    let facts = probe("a.test", port, LOCALHOST, BOUND, &roots_of(&ca), at(now)).await.expect("handshake");
    assert_eq!(facts.verdict, TlsVerdict::Valid);
    let (clean_close, received) = server.await.expect("the server task finishes");
    assert!(received.is_empty(), "the probe sent {} bytes of application data", received.len());
    assert!(clean_close, "the probe ends with close_notify, not a bare TCP close");
}

#[test]
fn roots_from_bad_pem_are_refused() {
    assert!(Roots::from_pem(b"").is_err());
    let garbage = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    assert!(Roots::from_pem(garbage.as_bytes()).is_err());
}
