//! Shared pieces of the finding-code tests (`finding_codes.rs`, `finding_tls.rs`): findings read
//! back as [`Row`]s, matching them to where they are expected, small HTML builders (used by the
//! other end-to-end tests too), and the HTTPS test sites (a test CA, one TLS port choosing
//! certificates by SNI, a server stuck on TLS 1.0).

#![allow(dead_code, reason = "each test binary uses a different subset of the helpers")]

use shoal_tests::testsite::{PlainHttp, Route, Site, TestCa, TestServer, TlsConfig};
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A tiny valid PNG (1x1), for image resources.
pub const PIXEL: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// One finding as stored: code, URL, detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub code: String,
    pub url: String,
    pub detail: String,
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} @ {} ({})", self.code, self.url, self.detail)
    }
}

/// Every finding of the database's audits ([`crate::db::findings`]), sorted by code, URL and detail.
pub fn rows(db: &Path) -> Vec<Row> {
    crate::db::findings(db).into_iter().map(|(code, url, detail)| Row { code, url, detail }).collect()
}

/// Where a finding is expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Where {
    /// On exactly this URL.
    Url(String),
    /// On a URL starting with this (a random probe path, or a host-level finding that may name
    /// the start page or robots.txt).
    Prefix(String),
}

impl Where {
    pub fn matches(&self, url: &str) -> bool {
        match self {
            Where::Url(u) => u == url,
            Where::Prefix(p) => url.starts_with(p.as_str()),
        }
    }
}

impl fmt::Display for Where {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Where::Url(u) => f.write_str(u),
            Where::Prefix(p) => write!(f, "{p}*"),
        }
    }
}

/// The rows with this code.
pub fn with_code<'a>(rows: &'a [Row], code: &str) -> Vec<&'a Row> {
    rows.iter().filter(|r| r.code == code).collect()
}

/// A page with lang, a title, a description and one h1 (nothing to report), plus `body`.
pub fn clean_page(title: &str, body: &str) -> String {
    doc(
        &format!("<title>{title}</title><meta name=\"description\" content=\"About {title}\">"),
        &format!("<h1>{title}</h1>{body}"),
    )
}

/// A page with lang, this title, this meta description and this one h1, and nothing else.
pub fn titled_page(title: &str, description: &str, h1: &str) -> String {
    doc(
        &format!("<title>{title}</title><meta name=\"description\" content=\"{description}\">"),
        &format!("<h1>{h1}</h1>"),
    )
}

/// `<!doctype html><html lang="en"><head>{head}</head><body>{body}</body></html>`.
pub fn doc(head: &str, body: &str) -> String {
    format!("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">{head}</head><body>{body}</body></html>")
}

/// The HTTPS side of the finding tests: a test CA (written to `ca_file` for `--ca-file`), and one
/// TLS port serving, chosen by SNI:
///
/// - `expiring.test`: a CA-signed certificate expiring in 10 days; its start page sends no HSTS
///   and loads an image of its own over `http://` (same host and port); plain HTTP on the port
///   serves the site (no redirect);
/// - `expired.test`, `selfsigned.test`, `wrong.test` (certificate for `other.test`),
///   `untrusted.test` (signed by another CA): each a small generated site nobody can fetch;
///
/// plus `old.test` on a port of its own that answers every ClientHello with a TLS 1.0 ServerHello.
#[derive(Debug)]
pub struct TlsSites {
    pub server: TestServer,
    pub old: OldTlsServer,
    pub ca_file: PathBuf,
    _dir: tempfile::TempDir,
}

/// The hosts [`TlsSites`] serves over TLS (old.test included).
pub const TLS_HOSTS: [&str; 6] =
    ["expiring.test", "expired.test", "selfsigned.test", "wrong.test", "untrusted.test", "old.test"];

impl TlsSites {
    pub async fn start() -> TlsSites {
        let dir = tempfile::tempdir().expect("temp dir");
        let ca = TestCa::new("Shoal Test CA");
        let other_ca = TestCa::new("Somebody Else's CA");
        let ca_file = ca.write_pem(dir.path(), "ca.pem").expect("write the CA certificate");
        // The start page names its own port (the http:// image), so the port is chosen first.
        let port = crate::procs::free_port();
        let expiring_home = doc(
            "<title>Expiring</title><meta name=\"description\" content=\"A site whose certificate expires soon\">",
            &format!(
                "<h1>Expiring</h1><img src=\"http://expiring.test:{port}/pixel.png\" alt=\"pixel\">\
                 <a href=\"/about\">about</a>"
            ),
        );
        let sites = vec![
            Site::new("expiring.test")
                .page("/", &expiring_home)
                .page("/about", &clean_page("About the expiring site", ""))
                .route("/pixel.png", Route::bytes("image/png", PIXEL).header("cache-control", "max-age=3600")),
            Site::generated("expired.test", 2, 1),
            Site::generated("selfsigned.test", 2, 1),
            Site::generated("wrong.test", 2, 1),
            Site::generated("untrusted.test", 2, 1),
        ];
        let tls = TlsConfig::new(ca.leaf(&["expiring.test"]).expiring_in_days(10).build())
            .host_cert("expired.test", ca.leaf(&["expired.test"]).expired().build())
            .host_cert("selfsigned.test", ca.leaf(&["selfsigned.test"]).self_signed().build())
            .host_cert("wrong.test", ca.leaf(&["other.test"]).build())
            .host_cert("untrusted.test", other_ca.leaf(&["untrusted.test"]).build())
            .plain_http(PlainHttp::Serve);
        let server = TestServer::start_tls_on(SocketAddr::from((Ipv4Addr::LOCALHOST, port)), sites, tls)
            .await
            .expect("TLS server starts on a free port");
        let old = OldTlsServer::start().await;
        TlsSites { server, old, ca_file, _dir: dir }
    }

    /// The start URL of each TLS host, in [`TLS_HOSTS`] order.
    pub fn starts(&self) -> Vec<String> {
        TLS_HOSTS.iter().map(|h| self.url(h, "/")).collect()
    }

    /// `https://{host}:{port}{path}` on the right port (old.test has its own).
    pub fn url(&self, host: &str, path: &str) -> String {
        if host == "old.test" {
            format!("https://old.test:{}{path}", self.old.addr.port())
        } else {
            self.server.url(host, path)
        }
    }

    /// The `--ca-file` path as text.
    pub fn ca_arg(&self) -> String {
        self.ca_file.display().to_string()
    }
}

/// A raw TCP server that answers what a server stuck on TLS 1.0 answers a modern ClientHello
/// with: a TLS 1.0 ServerHello ([`shoal_tests::tls10`], also used by `worker/tests/it/tls_probe.rs`).
/// Stopped when dropped.
#[derive(Debug)]
pub struct OldTlsServer {
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for OldTlsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl OldTlsServer {
    pub async fn start() -> OldTlsServer {
        let record = shoal_tests::tls10::server_hello();
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.expect("bind a loopback port");
        let addr = listener.local_addr().expect("the bound address");
        let task = tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let record = record.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = tcp.read(&mut buf).await;
                    let _ = tcp.write_all(&record).await;
                    let _ = tcp.flush().await;
                });
            }
        });
        OldTlsServer { addr, task }
    }
}
