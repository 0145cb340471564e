//! TLS end to end: `shoal audit --ca-file CA.pem` against local HTTPS test servers whose
//! certificates come from a test CA (rcgen): valid, expiring in 10 days, expired, self-signed,
//! for the wrong name, from another CA, and a server stuck on TLS 1.0. Each certificate raises its
//! one `tls_*` code and no other; a valid certificate with HSTS and an http-to-https redirect
//! raises nothing at all. Plus what the `http://` probe of an https site reports when the port
//! serves the page, redirects, or speaks only TLS.

use crate::common;
use crate::finding_support;

use crate::db;
use common::audit;
use finding_support::{Row, TLS_HOSTS, TlsSites, clean_page, rows, with_code};
use shoal::Exit;
use shoal_tests::testsite::{PlainHttp, Site, TestCa, TestServer, TlsConfig};
use std::collections::BTreeSet;

/// The `tls_*` codes.
const TLS_CODES: [&str; 7] = [
    "tls_certificate_expired",
    "tls_certificate_expiring",
    "tls_self_signed",
    "tls_untrusted",
    "tls_hostname_mismatch",
    "tls_old_version",
    "https_redirect_missing",
];

/// The codes of the rows whose URL is on `host` (any scheme, any path).
fn codes_on(found: &[Row], host: &str) -> BTreeSet<String> {
    found
        .iter()
        .filter(|r| url::Url::parse(&r.url).ok().and_then(|u| u.host_str().map(str::to_owned)).as_deref() == Some(host))
        .map(|r| r.code.clone())
        .collect()
}

fn dump(found: &[Row]) -> String {
    found.iter().map(|r| format!("  {r}\n")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_certificate_problem_raises_its_one_tls_code() {
    let tls = TlsSites::start().await;
    let ca = tls.ca_arg();
    let run = audit(&tls.server, &TLS_HOSTS, &tls.starts(), &["--gap-ms", "0", "--ca-file", ca.as_str()]).await;
    assert_eq!(run.exit, Exit::Ok);
    let found = rows(&run.db);
    let expected = [
        ("expiring.test", "tls_certificate_expiring"),
        ("expired.test", "tls_certificate_expired"),
        ("selfsigned.test", "tls_self_signed"),
        ("wrong.test", "tls_hostname_mismatch"),
        ("untrusted.test", "tls_untrusted"),
        ("old.test", "tls_old_version"),
    ];
    for (host, code) in expected {
        let on_host = codes_on(&found, host);
        let tls_codes: Vec<&String> = on_host.iter().filter(|c| c.starts_with("tls_")).collect();
        assert_eq!(tls_codes, vec![code], "{host}: exactly one TLS finding\n{}", dump(&found));
        let raised = with_code(&found, code);
        assert_eq!(raised.len(), 1, "{code} once (the retried robots.txt lease checks again)\n{}", dump(&found));
        assert_eq!(raised[0].url, tls.url(host, "/"), "{code} names the https origin");
    }
    // A certificate the crawler refuses also stops its fetches: robots.txt cannot be read, so the
    // host is off limits and nothing reaches the site (only the certificate check shook hands).
    let log = tls.server.log();
    for host in ["expired.test", "selfsigned.test", "wrong.test", "untrusted.test", "old.test"] {
        let other: BTreeSet<String> = codes_on(&found, host).into_iter().filter(|c| !c.starts_with("tls_")).collect();
        assert_eq!(other, BTreeSet::from(["robots_unreachable".to_owned()]), "{host}\n{}", dump(&found));
        assert!(log.for_host(host).is_empty(), "{host} served HTTP over a refused certificate\n{}", log.dump());
    }
    // The expiring certificate is still valid: the site is crawled over https with the test CA.
    let pages = db::pages(&run.db);
    for path in ["/", "/about"] {
        let url = tls.url("expiring.test", path);
        let row = pages.iter().find(|p| p.0 == url).unwrap_or_else(|| panic!("{url} recorded: {pages:#?}"));
        assert_eq!(row.2, Some(200), "{row:?}");
    }
    let detail = &with_code(&found, "tls_certificate_expiring")[0].detail;
    assert!(detail == "9 days left" || detail == "10 days left", "{detail}");
    assert_eq!(with_code(&found, "tls_hostname_mismatch")[0].detail, "certificate names: other.test");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_certificate_with_hsts_and_redirect_raises_nothing() {
    const PAGES: usize = 20;
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = TestCa::new("Shoal Test CA");
    let ca_file = ca.write_pem(dir.path(), "ca.pem").expect("write the CA certificate");
    let tls = TlsConfig::new(ca.leaf(&["valid.test", "www.valid.test"]).build())
        .plain_http(PlainHttp::RedirectToHttps)
        .https_header("strict-transport-security", "max-age=31536000; includeSubDomains");
    let server = TestServer::start_tls(vec![Site::generated("valid.test", PAGES, 4)], tls).await.expect("TLS server");
    let start = server.url("valid.test", "/");
    assert!(start.starts_with("https://"), "{start}");
    let ca_arg = ca_file.display().to_string();
    let run =
        audit(&server, &["valid.test"], std::slice::from_ref(&start), &["--gap-ms", "0", "--ca-file", &ca_arg]).await;
    assert_eq!(run.exit, Exit::Ok);
    let http_form = format!("http://valid.test:{}/", server.port());
    let log = server.shutdown().await;
    assert_eq!(common::page_paths(&log, "valid.test").len(), PAGES, "every page fetched over https\n{}", log.dump());
    let found = rows(&run.db);
    assert!(found.is_empty(), "a valid https site with HSTS and a redirect raised findings:\n{}", dump(&found));
    // The http:// probe was made, on the same port, and answered with the redirect.
    let pages = db::pages(&run.db);
    let probe = pages.iter().find(|p| p.0 == http_form).unwrap_or_else(|| panic!("{http_form} probed: {pages:#?}"));
    assert_eq!((probe.1.as_str(), probe.2), ("probe_https_redirect", Some(301)), "{probe:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_form_that_serves_the_page_is_https_redirect_missing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = TestCa::new("Shoal Test CA");
    let ca_file = ca.write_pem(dir.path(), "ca.pem").expect("write the CA certificate");
    let tls = TlsConfig::new(ca.leaf(&["plain.test"]).build())
        .plain_http(PlainHttp::Serve)
        .https_header("strict-transport-security", "max-age=31536000");
    let server = TestServer::start_tls(vec![Site::generated("plain.test", 3, 2)], tls).await.expect("TLS server");
    let start = server.url("plain.test", "/");
    let ca_arg = ca_file.display().to_string();
    let run =
        audit(&server, &["plain.test"], std::slice::from_ref(&start), &["--gap-ms", "0", "--ca-file", &ca_arg]).await;
    assert_eq!(run.exit, Exit::Ok);
    let found = rows(&run.db);
    let http_form = format!("http://plain.test:{}/", server.port());
    let codes: Vec<(&str, &str, &str)> =
        found.iter().map(|r| (r.code.as_str(), r.url.as_str(), r.detail.as_str())).collect();
    assert_eq!(codes, vec![("https_redirect_missing", http_form.as_str(), "http:// answered 200")], "{}", dump(&found));
    for code in TLS_CODES.iter().filter(|c| **c != "https_redirect_missing") {
        assert!(with_code(&found, code).is_empty(), "{code}");
    }
}

/// An https site on a TLS-only port (like a site whose port 80 is closed, or a TLS port that
/// refuses plain HTTP): its `http://` form does not redirect to https, because it does not answer
/// at all. `https_redirect_missing` ("the http:// form of the start page does not redirect to
/// https://") says so, without retries (regression: it used to be retried and reported as
/// `fetch_failed`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_form_that_does_not_answer_is_https_redirect_missing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = TestCa::new("Shoal Test CA");
    let ca_file = ca.write_pem(dir.path(), "ca.pem").expect("write the CA certificate");
    let tls = TlsConfig::new(ca.leaf(&["tlsonly.test"]).build())
        .plain_http(PlainHttp::Refuse)
        .https_header("strict-transport-security", "max-age=31536000");
    let page = clean_page("TLS only", "");
    let site = Site::new("tlsonly.test").page("/", &page).route(
        "/.well-known/security.txt",
        shoal_tests::testsite::Route::text("Contact: mailto:a@tlsonly.test\nExpires: 2099-01-01T00:00:00Z\n"),
    );
    let server = TestServer::start_tls(vec![site], tls).await.expect("TLS server");
    let start = server.url("tlsonly.test", "/");
    let ca_arg = ca_file.display().to_string();
    let run =
        audit(&server, &["tlsonly.test"], std::slice::from_ref(&start), &["--gap-ms", "0", "--ca-file", &ca_arg]).await;
    assert_eq!(run.exit, Exit::Ok);
    let found = rows(&run.db);
    let http_form = format!("http://tlsonly.test:{}/", server.port());
    let security_headers =
        ["csp_missing", "content_type_options_missing", "frame_protection_missing", "referrer_policy_missing"];
    let rest: Vec<&Row> = found.iter().filter(|r| !security_headers.contains(&r.code.as_str())).collect();
    assert!(
        rest.iter().any(|r| r.code == "https_redirect_missing" && r.url == http_form),
        "the http:// form of an https-only site answers nothing, so it does not redirect to https; \
         expected https_redirect_missing on {http_form}, got:\n{}",
        dump(&found)
    );
}
