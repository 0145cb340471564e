//! The TLS probe: what a site's certificate and handshake look like, for the HTTPS findings
//! (certificate expired, expiring soon, not yet valid, self-signed, unknown issuer, wrong hostname,
//! TLS version).
//!
//! Why a separate probe and not reqwest: a failed verification aborts reqwest's request instead of
//! saying why, and its `TlsInfo` has only the leaf. Here the handshake runs with a verifier that
//! *records* the real webpki verdict (against the configured roots, for the given name and time)
//! and then lets the handshake finish, so the leaf can be read even when it would be refused.
//!
//! The probe only shakes hands: no HTTP request is sent, the connection is closed with
//! `close_notify` right after. It connects to the address it is given, which the caller has already
//! passed through the private-address guard ([`crate::fetch::Fetcher::resolve`]); it never
//! resolves names itself.
//!
//! Limits, by construction of rustls: only TLS 1.2 and 1.3 are spoken. A server that offers nothing
//! newer than TLS 1.1 fails with [`ProbeError::UnsupportedVersion`] (that *is* the "old TLS
//! version" finding); whether a modern server *also* accepts TLS 1.0/1.1 cannot be seen.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{Resumption, WebPkiServerVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, SignatureVerificationAlgorithm, UnixTime};
use rustls::{AlertDescription, CertificateError, DigitallySignedStruct, PeerIncompatible, SignatureScheme};
use shoal_shared::time::UnixMs;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use x509_parser::asn1_rs::{Any, FromDer};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

const MS_PER_DAY: i128 = 86_400_000;

/// What the probe learned about one host's TLS: the negotiated version, the leaf certificate's
/// facts, and the verification verdict. Plain data, so the caller maps it to findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFacts {
    /// The negotiated protocol version: `"TLSv1.3"` or `"TLSv1.2"` (the only two rustls speaks).
    pub version: Option<String>,
    /// The leaf's notBefore, when it could be parsed. Times before 1970 read as 0.
    pub not_before: Option<UnixMs>,
    /// The leaf's notAfter, when it could be parsed.
    pub not_after: Option<UnixMs>,
    /// The leaf's issuer distinguished name, e.g. `"CN=R11, O=Let's Encrypt, C=US"`.
    pub issuer: Option<String>,
    /// The leaf's subject distinguished name.
    pub subject: Option<String>,
    /// The leaf names itself as its issuer (same raw DN) *and* its signature verifies with its own
    /// public key. The DN alone would also match a leaf whose CA happens to share its name. Can be
    /// true with a [`TlsVerdict::Valid`] verdict when the caller's roots trust that very certificate.
    pub self_signed: bool,
    /// The DNS names in the leaf's subjectAltName, as written (wildcards included).
    pub names: Vec<String>,
    /// Whether the leaf is valid for the probed host name, checked on its own (webpki's rules), so a
    /// wrong name is known even when the verdict reports an earlier problem such as expiry.
    pub name_matches: bool,
    /// The verification verdict (see [`TlsVerdict`] for which problem wins when there are several).
    pub verdict: TlsVerdict,
}

impl TlsFacts {
    /// Whole days from `now` until the leaf expires, rounded down: 0 on its last day, negative once
    /// expired (-1 in the first day after). `None` when notAfter could not be read.
    #[must_use]
    pub fn days_left(&self, now: UnixMs) -> Option<i64> {
        let left = i128::from(self.not_after?.0) - i128::from(now.0);
        i64::try_from(left.div_euclid(MS_PER_DAY)).ok()
    }
}

/// The outcome of verifying the server's certificate chain for the probed name at the given time.
///
/// When several things are wrong, the first webpki finds wins: validity period (leaf, then each
/// issuer), then issuer/chain, then the host name. A self-signed leaf that is not in the roots
/// reports [`TlsVerdict::SelfSigned`] rather than [`TlsVerdict::UnknownIssuer`] (or the
/// "CA used as end entity" error self-signed CA-flagged leaves get). The other facts in
/// [`TlsFacts`] (`self_signed`, `name_matches`, `not_after`) let the caller report every problem.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsVerdict {
    /// Chains to a root, in its validity period, valid for the name.
    Valid,
    /// The leaf (or a certificate in its chain) is past its notAfter.
    Expired,
    /// The leaf (or a certificate in its chain) is before its notBefore.
    NotYetValid,
    /// The leaf signed itself and is not trusted by the roots.
    SelfSigned,
    /// The chain does not lead to any configured root (missing intermediate, private CA).
    UnknownIssuer,
    /// Chains fine, but is not valid for the probed host name.
    WrongHostname,
    /// Anything else webpki refused (bad signature, bad encoding, wrong key usage, ...), as its text.
    OtherError(String),
}

/// Why the probe learned nothing about the certificate. The site's failures (timeout, refused,
/// not TLS, obsolete TLS) are outcomes to record, like [`crate::fetch::FetchError`]; only
/// [`ProbeError::Setup`] is ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// The host is neither a DNS name nor an IP address, so it cannot be sent as SNI.
    #[error("{host:?} is not a valid TLS server name")]
    InvalidName {
        /// The host as given.
        host: String,
    },
    /// Connecting or the handshake did not finish within the bound.
    #[error("TLS probe of {host} at {addr} timed out after {after:?}")]
    Timeout {
        /// The probed host.
        host: String,
        /// The address connected to.
        addr: SocketAddr,
        /// The bound that ran out.
        after: Duration,
    },
    /// The TCP connection failed (refused, unreachable, reset).
    #[error("connecting to {addr} for {host}: {reason}")]
    Connect {
        /// The probed host.
        host: String,
        /// The address connected to.
        addr: SocketAddr,
        /// The system's error text.
        reason: String,
    },
    /// The server speaks no TLS version rustls supports (1.2, 1.3): it offers only TLS 1.1 or older.
    #[error("{host} at {addr} offers no TLS 1.2 or 1.3: {reason}")]
    UnsupportedVersion {
        /// The probed host.
        host: String,
        /// The address connected to.
        addr: SocketAddr,
        /// rustls's error text.
        reason: String,
    },
    /// The handshake failed otherwise: not TLS at all, an alert, a closed connection, no certificate.
    #[error("TLS handshake with {host} at {addr}: {reason}")]
    Handshake {
        /// The probed host.
        host: String,
        /// The address connected to.
        addr: SocketAddr,
        /// rustls's (or the socket's) error text.
        reason: String,
    },
    /// Our TLS configuration could not be built (a bug, not the site's fault).
    #[error("building the TLS client configuration: {0}")]
    Setup(String),
}

impl ProbeError {
    /// Short stable name for records.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            ProbeError::InvalidName { .. } => "invalid_name",
            ProbeError::Timeout { .. } => "timeout",
            ProbeError::Connect { .. } => "connect",
            ProbeError::UnsupportedVersion { .. } => "unsupported_version",
            ProbeError::Handshake { .. } => "handshake",
            ProbeError::Setup(_) => "setup",
        }
    }
}

/// Why a root store could not be built from PEM.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RootsError {
    /// The PEM text could not be read.
    #[error("reading PEM: {0}")]
    Pem(String),
    /// A certificate in it is not usable as a trust anchor.
    #[error("certificate {index} is not a usable trust anchor: {reason}")]
    BadCertificate {
        /// Position among the PEM's certificates, from 0.
        index: usize,
        /// webpki's error text.
        reason: String,
    },
    /// The PEM held no certificate at all; an empty store would refuse everything.
    #[error("no CERTIFICATE found in the PEM")]
    Empty,
}

/// Makes `ring` the process's TLS crypto provider, once; later calls do nothing.
///
/// reqwest is built without a provider of its own (`rustls-no-provider`: the default, aws-lc-rs,
/// costs minutes of C build on every fresh machine) and panics when it builds a client in a
/// process that has none, so everything that builds a `reqwest::Client` calls this first.
pub fn install_crypto_provider() {
    // Err means a provider is already installed (ours, or the embedding program's): keep it.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The trust anchors verdicts are computed against, with the crypto used to check signatures.
/// Cheap to clone (`Arc` inside); build once and share.
#[derive(Debug, Clone)]
pub struct Roots {
    verifier: Arc<WebPkiServerVerifier>,
    provider: Arc<CryptoProvider>,
    anchors: usize,
}

impl Roots {
    /// Mozilla's roots as shipped in `webpki-roots`: built into the binary, not read from the
    /// machine, so every worker reaches the same verdict for the same site.
    ///
    /// # Panics
    /// Never in practice: building fails only for an empty root store, and webpki-roots is not.
    #[must_use]
    pub fn webpki() -> Roots {
        let store = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        Roots::from_store(store).expect("webpki-roots ships a non-empty root store")
    }

    /// The CA certificates in `pem` (one or more `CERTIFICATE` blocks) and nothing else: for tests
    /// and intranet audits whose sites use a private CA.
    pub fn from_pem(pem: &[u8]) -> Result<Roots, RootsError> {
        let mut store = rustls::RootCertStore::empty();
        for (index, cert) in CertificateDer::pem_slice_iter(pem).enumerate() {
            let cert = cert.map_err(|e| RootsError::Pem(e.to_string()))?;
            store.add(cert).map_err(|e| RootsError::BadCertificate { index, reason: e.to_string() })?;
        }
        if store.is_empty() {
            return Err(RootsError::Empty);
        }
        Roots::from_store(store).map_err(|e| RootsError::BadCertificate { index: 0, reason: e.to_string() })
    }

    /// How many trust anchors there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.anchors
    }

    /// Never true: both constructors refuse an empty store.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn from_store(store: rustls::RootCertStore) -> Result<Roots, rustls::client::VerifierBuilderError> {
        let anchors = store.len();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(store), Arc::clone(&provider)).build()?;
        Ok(Roots { verifier, provider, anchors })
    }
}

/// What the recording verifier saw during one handshake.
#[derive(Debug)]
struct Seen {
    leaf: CertificateDer<'static>,
    outcome: Result<(), rustls::Error>,
    name_matches: bool,
}

/// A verifier that runs the real webpki verification, writes down the outcome and accepts, so the
/// handshake completes and the certificate can be inspected whatever the verdict. Handshake
/// signatures are still checked for real: a server that cannot prove it holds the key fails.
#[derive(Debug)]
struct Recorder {
    inner: Arc<WebPkiServerVerifier>,
    now: UnixTime,
    seen: Mutex<Option<Seen>>,
}

impl Recorder {
    fn take(&self) -> Option<Seen> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }
}

impl ServerCertVerifier for Recorder {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The caller's clock, not rustls's, so a verdict is reproducible for a given `now`.
        let outcome =
            self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, self.now).map(|_| ());
        let name_matches = rustls::server::ParsedCertificate::try_from(end_entity)
            .and_then(|cert| rustls::client::verify_server_name(&cert, server_name))
            .is_ok();
        let seen = Seen { leaf: end_entity.clone().into_owned(), outcome, name_matches };
        *self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(seen);
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Shakes hands with `host` (sent as SNI) at `ip:port` and reports the certificate and verdict.
///
/// `ip` must already have passed the private-address guard: the probe connects to exactly that
/// address. Connecting and the handshake together are bounded by `timeout`; no HTTP request is
/// sent, and the connection is closed with `close_notify` (within the same bound, best effort).
/// `now` is the time the certificate is judged at. Session resumption is off, so every probe sees
/// a full handshake and the certificate.
pub async fn probe(
    host: &str,
    port: u16,
    ip: IpAddr,
    timeout: Duration,
    roots: &Roots,
    now: UnixMs,
) -> Result<TlsFacts, ProbeError> {
    let addr = SocketAddr::new(ip, port);
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    if ServerName::try_from(name.clone()).is_err() {
        return Err(ProbeError::InvalidName { host: name });
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let timed_out = || ProbeError::Timeout { host: host.to_owned(), addr, after: timeout };
    let tcp = tokio::time::timeout_at(deadline, TcpStream::connect(addr))
        .await
        .map_err(|_| timed_out())?
        .map_err(|e| ProbeError::Connect { host: host.to_owned(), addr, reason: e.to_string() })?;
    let (facts, mut tls) = handshake(tcp, host, addr, (deadline, timeout), roots, now).await?;
    // Best effort: the facts are already in hand, a peer that does not read is not our problem.
    let _ = tokio::time::timeout_at(deadline, tls.shutdown()).await;
    Ok(facts)
}

/// The handshake of [`probe`] on a connection already open (a mail server's, after `STARTTLS`):
/// the same verifier, so the same verdicts, bounded by `deadline` (`bound` is the time limit it
/// stands for, named in a timeout). Returns the facts and the TLS stream, for the caller to finish
/// its conversation and close.
pub async fn handshake<S>(
    stream: S,
    host: &str,
    addr: SocketAddr,
    (deadline, bound): (tokio::time::Instant, Duration),
    roots: &Roots,
    now: UnixMs,
) -> Result<(TlsFacts, tokio_rustls::client::TlsStream<S>), ProbeError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let server_name = ServerName::try_from(host.clone()).map_err(|_| ProbeError::InvalidName { host: host.clone() })?;
    let recorder = Arc::new(Recorder {
        inner: Arc::clone(&roots.verifier),
        now: UnixTime::since_unix_epoch(Duration::from_millis(now.0)),
        seen: Mutex::new(None),
    });
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::clone(&roots.provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| ProbeError::Setup(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::clone(&recorder) as Arc<dyn ServerCertVerifier>)
        .with_no_client_auth();
    config.resumption = Resumption::disabled();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tls = tokio::time::timeout_at(deadline, connector.connect(server_name, stream))
        .await
        .map_err(|_| ProbeError::Timeout { host: host.clone(), addr, after: bound })?
        .map_err(|e| handshake_error(&host, addr, &e))?;
    let version = tls.get_ref().1.protocol_version().map(version_name);
    let seen = recorder.take().ok_or_else(|| ProbeError::Handshake {
        host: host.clone(),
        addr,
        reason: "the server presented no certificate".into(),
    })?;
    Ok((facts(version, &seen, roots.provider.signature_verification_algorithms.all), tls))
}

/// A certificate problem, whoever presented the certificate (a web server, a mail server): the
/// one list of verdicts both checks report, each caller with its own finding codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertProblem {
    /// Past its notAfter (or a certificate of its chain is).
    Expired,
    /// Self-signed and not trusted.
    SelfSigned,
    /// Not trusted otherwise (unknown issuer, not yet valid, refused by webpki), with why.
    Untrusted(String),
    /// Not valid for the name asked, with the names it has.
    WrongName(Vec<String>),
    /// Expires within 30 days: the days left.
    Expiring(i64),
}

impl TlsFacts {
    /// Every problem the facts show at `now`, in the order the HTTPS check has always reported
    /// them (verdict, then name, then expiry soon).
    #[must_use]
    pub fn problems(&self, now: UnixMs) -> Vec<CertProblem> {
        let mut out = Vec::new();
        match &self.verdict {
            TlsVerdict::Valid | TlsVerdict::WrongHostname => {}
            TlsVerdict::Expired => out.push(CertProblem::Expired),
            TlsVerdict::SelfSigned => out.push(CertProblem::SelfSigned),
            other => out.push(CertProblem::Untrusted(format!("{other:?}"))),
        }
        if !self.name_matches || self.verdict == TlsVerdict::WrongHostname {
            out.push(CertProblem::WrongName(self.names.clone()));
        }
        if let Some(days) = self.days_left(now)
            && (0..30).contains(&days)
        {
            out.push(CertProblem::Expiring(days));
        }
        out
    }
}

/// Builds the facts from the recorded handshake; fields stay `None` if x509-parser cannot read a
/// certificate webpki accepted.
fn facts(version: Option<String>, seen: &Seen, algs: &[&dyn SignatureVerificationAlgorithm]) -> TlsFacts {
    let mut facts = TlsFacts {
        version,
        not_before: None,
        not_after: None,
        issuer: None,
        subject: None,
        self_signed: false,
        names: Vec::new(),
        name_matches: seen.name_matches,
        verdict: TlsVerdict::Valid,
    };
    if let Ok((_, cert)) = x509_parser::parse_x509_certificate(seen.leaf.as_ref()) {
        facts.not_before = Some(unix_ms(cert.validity().not_before.timestamp()));
        facts.not_after = Some(unix_ms(cert.validity().not_after.timestamp()));
        facts.issuer = Some(cert.issuer().to_string());
        facts.subject = Some(cert.subject().to_string());
        facts.self_signed =
            cert.issuer().as_raw() == cert.subject().as_raw() && signed_by_own_key(&cert, seen.leaf.as_ref(), algs);
        if let Ok(Some(san)) = cert.subject_alternative_name() {
            facts.names = san
                .value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    GeneralName::DNSName(d) => Some((*d).to_owned()),
                    _ => None,
                })
                .collect();
        }
    }
    facts.verdict = verdict(&seen.outcome, facts.self_signed);
    facts
}

fn verdict(outcome: &Result<(), rustls::Error>, self_signed: bool) -> TlsVerdict {
    let Err(err) = outcome else { return TlsVerdict::Valid };
    match err {
        rustls::Error::InvalidCertificate(CertificateError::Expired | CertificateError::ExpiredContext { .. }) => {
            TlsVerdict::Expired
        }
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. },
        ) => TlsVerdict::NotYetValid,
        // Past the validity check, webpki refuses a self-signed leaf as an unknown issuer, or as a
        // CA used as an end entity when it carries the CA flag: either way, it is self-signed.
        _ if self_signed => TlsVerdict::SelfSigned,
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => TlsVerdict::UnknownIssuer,
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => TlsVerdict::WrongHostname,
        other => TlsVerdict::OtherError(other.to_string()),
    }
}

/// Whether the certificate's signature verifies with its own public key, using the same algorithm
/// matching webpki does (signature algorithm and key algorithm identifiers compared as DER).
fn signed_by_own_key(cert: &X509Certificate<'_>, der: &[u8], algs: &[&dyn SignatureVerificationAlgorithm]) -> bool {
    // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue }
    let Ok((_, outer)) = Any::from_der(der) else { return false };
    let Ok((after_tbs, _)) = Any::from_der(outer.data) else { return false };
    let Ok((_, sig_alg)) = Any::from_der(after_tbs) else { return false };
    // SubjectPublicKeyInfo ::= SEQUENCE { algorithm, subjectPublicKey }
    let spki = cert.public_key();
    let Ok((_, spki_seq)) = Any::from_der(spki.raw) else { return false };
    let Ok((_, key_alg)) = Any::from_der(spki_seq.data) else { return false };
    if spki.subject_public_key.unused_bits != 0 || cert.signature_value.unused_bits != 0 {
        return false;
    }
    let tbs = cert.tbs_certificate.as_ref();
    algs.iter()
        .filter(|a| a.signature_alg_id().as_ref() == sig_alg.data && a.public_key_alg_id().as_ref() == key_alg.data)
        .any(|a| a.verify_signature(&spki.subject_public_key.data, tbs, &cert.signature_value.data).is_ok())
}

fn unix_ms(secs: i64) -> UnixMs {
    UnixMs(u64::try_from(secs).unwrap_or(0).saturating_mul(1000))
}

fn version_name(v: rustls::ProtocolVersion) -> String {
    match v {
        rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".into(),
        rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".into(),
        rustls::ProtocolVersion::TLSv1_1 => "TLSv1.1".into(),
        rustls::ProtocolVersion::TLSv1_0 => "TLSv1.0".into(),
        other => format!("{other:?}"),
    }
}

/// Sorts a failed handshake: an obsolete-version server apart from everything else.
fn handshake_error(host: &str, addr: SocketAddr, e: &std::io::Error) -> ProbeError {
    let tls = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>());
    let old_version = matches!(
        tls,
        Some(
            rustls::Error::PeerIncompatible(
                PeerIncompatible::ServerDoesNotSupportTls12Or13
                    | PeerIncompatible::ServerTlsVersionIsDisabledByOurConfig
            ) | rustls::Error::AlertReceived(AlertDescription::ProtocolVersion)
        )
    );
    let reason = tls.map_or_else(|| e.to_string(), ToString::to_string);
    if old_version {
        ProbeError::UnsupportedVersion { host: host.to_owned(), addr, reason }
    } else {
        ProbeError::Handshake { host: host.to_owned(), addr, reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_after(ms: Option<u64>) -> TlsFacts {
        TlsFacts {
            version: None,
            not_before: None,
            not_after: ms.map(UnixMs),
            issuer: None,
            subject: None,
            self_signed: false,
            names: Vec::new(),
            name_matches: true,
            verdict: TlsVerdict::Valid,
        }
    }

    #[test]
    fn days_left_rounds_down_and_goes_negative() {
        let day = 86_400_000;
        let now = UnixMs(100 * day);
        let cases = [
            (Some(100 * day + 10 * day), Some(10)),
            (Some(100 * day + 10 * day - 1), Some(9)),
            (Some(100 * day + 1), Some(0)),
            (Some(100 * day), Some(0)),
            (Some(100 * day - 1), Some(-1)),
            (Some(100 * day - 3 * day), Some(-3)),
            (None, None),
        ];
        for (after, want) in cases {
            assert_eq!(with_after(after).days_left(now), want, "not_after {after:?}");
        }
    }

    #[test]
    fn verdict_prefers_time_then_self_signed() {
        let expired = Err(rustls::Error::InvalidCertificate(CertificateError::Expired));
        assert_eq!(verdict(&expired, true), TlsVerdict::Expired);
        let unknown = Err(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer));
        assert_eq!(verdict(&unknown, true), TlsVerdict::SelfSigned);
        assert_eq!(verdict(&unknown, false), TlsVerdict::UnknownIssuer);
        let name = Err(rustls::Error::InvalidCertificate(CertificateError::NotValidForName));
        assert_eq!(verdict(&name, false), TlsVerdict::WrongHostname);
        assert_eq!(verdict(&Ok(()), true), TlsVerdict::Valid);
        let sig = Err(rustls::Error::InvalidCertificate(CertificateError::BadSignature));
        assert!(matches!(verdict(&sig, false), TlsVerdict::OtherError(_)));
    }

    #[test]
    fn webpki_roots_are_loaded() {
        assert!(Roots::webpki().len() > 100);
    }

    #[test]
    fn pem_without_certificates_is_refused() {
        assert_eq!(Roots::from_pem(b"nothing here").err(), Some(RootsError::Empty));
    }
}
