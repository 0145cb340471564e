//! The coordinator's web dashboard end to end: a real `shoal coordinator` process on a private
//! `redis-server`, one real `shoal worker` crawling the in-process test web server, and the pages
//! read both over plain HTTP (status codes, headers, cookies, CSRF) and in headless Chromium (what a
//! person sees: the audits list, live per-site progress, the batch overview, a site's report with
//! its charts, an issue across sites).
//!
//! Two audits are submitted before the worker starts, so the "running" state is seen for certain:
//! audit A is then crawled to the end, audit B is cancelled from the dashboard's form. Last, the
//! login throttle: wrong tokens until 429, and then even the right one is refused.

use crate::procs;

use procs::{Coordinator, TOKEN, ensure_built, tails, worker};
use serde_json::json;
use shoal_tests::chromium::{chromium, run_chromium};
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::{Site, TestServer};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Charts per site in the HTML report: status codes, depth, families, severity, response times.
const CHARTS_PER_SITE: usize = 5;
/// How long one Chromium run may take.
const CHROMIUM_DEADLINE: Duration = Duration::from_secs(60);

#[expect(clippy::print_stderr, reason = "timings of the run, shown with --nocapture")]
fn note(msg: &str) {
    eprintln!("[dashboard] {msg}");
}

// ---------------------------------------------------------------------------------------------
// Plain HTTP

/// One answer: status, headers, body.
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }
}

/// A client that shows redirects instead of following them, and keeps no cookies (the test sends
/// the `Cookie` header itself: reqwest's cookie store is not enabled in the workspace).
fn client() -> reqwest::Client {
    shoal_worker::tls::install_crypto_provider();
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .expect("an HTTP client")
}

async fn send(req: reqwest::RequestBuilder) -> Answer {
    let resp = req.send().await.expect("the coordinator answers");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.text().await.expect("a body");
    Answer { status, headers, body }
}

/// The text between the first `open` and the next `close`.
fn between<'a>(s: &'a str, open: &str, close: &str) -> &'a str {
    let start = s.find(open).unwrap_or_else(|| panic!("{open} not found")) + open.len();
    let len = s[start..].find(close).unwrap_or_else(|| panic!("{close} not found after {open}"));
    &s[start..start + len]
}

/// How a request authenticates.
#[derive(Clone, Copy)]
enum As<'a> {
    Nobody,
    Cookie(&'a str),
    Bearer(&'a str),
}

fn with(req: reqwest::RequestBuilder, who: As<'_>) -> reqwest::RequestBuilder {
    match who {
        As::Nobody => req,
        As::Cookie(c) => req.header(reqwest::header::COOKIE, c),
        As::Bearer(t) => req.bearer_auth(t),
    }
}

async fn get(http: &reqwest::Client, url: &str, who: As<'_>) -> Answer {
    send(with(http.get(url), who)).await
}

async fn post_form(
    http: &reqwest::Client,
    url: &str,
    who: As<'_>,
    form: &[(&str, &str)],
    extra: &[(&str, &str)],
) -> Answer {
    let body: String = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
    let mut req =
        with(http.post(url), who).header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded").body(body);
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    send(req).await
}

/// The `name=value` of the session cookie a login answer sets, after checking its attributes.
fn session_cookie(a: &Answer) -> String {
    let set = a.header("set-cookie");
    assert!(set.starts_with("shoal_session="), "a session cookie is set: {set:?}");
    let attrs: Vec<String> = set.split(';').skip(1).map(|s| s.trim().to_ascii_lowercase()).collect();
    for want in ["httponly", "samesite=strict", "path=/"] {
        assert!(attrs.iter().any(|a| a == want), "cookie attribute {want}: {set:?}");
    }
    assert!(!set.contains(TOKEN), "the cookie is not the token: {set:?}");
    set.split(';').next().expect("name=value").to_owned()
}

/// The value of `<input type="hidden" name="csrf" value="…">` in a page.
fn csrf_in(html: &str) -> String {
    let marker = r#"name="csrf" value=""#;
    let start = html.find(marker).unwrap_or_else(|| panic!("no CSRF field in\n{html}")) + marker.len();
    let end = start + html[start..].find('"').expect("closing quote");
    html[start..end].to_owned()
}

/// The dashboard's security headers.
fn assert_page_headers(a: &Answer, what: &str) {
    let csp = a.header("content-security-policy");
    assert!(csp.contains("default-src 'none'"), "{what}: CSP {csp:?}");
    assert!(csp.contains("frame-ancestors 'none'"), "{what}: CSP {csp:?}");
    assert!(!csp.contains("unsafe"), "{what}: CSP {csp:?}");
    assert_eq!(a.header("x-content-type-options"), "nosniff", "{what}");
    assert_eq!(a.header("referrer-policy"), "no-referrer", "{what}");
}

/// The numbers in `<td … data-col="COL">N</td>` cells, in document order.
fn column(html: &str, col: &str) -> Vec<u64> {
    let marker = format!(r#"data-col="{col}">"#);
    html.match_indices(&marker)
        .map(|(i, _)| {
            let rest = &html[i + marker.len()..];
            rest[..rest.find('<').expect("cell end")].trim().parse().expect("a number")
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Headless Chromium

/// Fills in the dashboard's login form for a fresh Chromium profile: on its own port of 127.0.0.1
/// (another origin, the same site as the coordinator), `GET /login?next=PAGE` answers a copy of the
/// coordinator's real login form for PAGE, with the token filled in and the form's action made
/// absolute, and a script that submits it: what a person does in the form. The token travels only
/// in the POST body; the coordinator sets the session cookie and redirects to PAGE, which the
/// browser then loads with the cookie.
struct LoginHelper {
    base: String,
    task: tokio::task::JoinHandle<()>,
}

impl LoginHelper {
    async fn start(coordinator: &str) -> LoginHelper {
        use axum::extract::{Query, State};
        use axum::response::Html;
        #[derive(serde::Deserialize)]
        struct Next {
            next: String,
        }
        async fn page(State(coordinator): State<String>, Query(q): Query<Next>) -> Html<String> {
            let next: String = url::form_urlencoded::byte_serialize(q.next.as_bytes()).collect();
            let a = get(&client(), &format!("{coordinator}/ui/login?next={next}"), As::Nobody).await;
            assert_eq!(a.status, 200, "the login form: {}", a.body);
            let start = a.body.find("<form").expect("a form on the login page");
            let end = a.body[start..].find("</form>").expect("the form ends") + start + "</form>".len();
            let form = a.body[start..end]
                .replacen(r#"action="/ui/login""#, &format!(r#"action="{coordinator}/ui/login""#), 1)
                .replacen(r#"name="token""#, &format!(r#"name="token" value="{TOKEN}""#), 1);
            assert!(
                form.contains(&format!(r#"action="{coordinator}/ui/login""#)),
                "the form posts to /ui/login: {form}"
            );
            assert!(form.contains(r#"method="post""#), "the form is a POST: {form}");
            Html(format!("<!DOCTYPE html><html><body>{form}<script>document.forms[0].submit()</script></body></html>"))
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port for the login helper");
        let base = format!("http://{}", listener.local_addr().expect("its address"));
        let app = axum::Router::new().route("/login", axum::routing::get(page)).with_state(coordinator.to_owned());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        LoginHelper { base, task }
    }
}

impl Drop for LoginHelper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Drives Chromium against one coordinator. Every run is a fresh browser profile, so a page behind
/// the login is opened through the [`LoginHelper`].
struct Browser {
    bin: PathBuf,
    dir: tempfile::TempDir,
    login: LoginHelper,
    runs: usize,
}

impl Browser {
    async fn new(base: &str) -> Browser {
        Browser {
            bin: chromium(),
            dir: tempfile::tempdir().expect("temp dir"),
            login: LoginHelper::start(base).await,
            runs: 0,
        }
    }

    fn profile(&mut self) -> PathBuf {
        self.runs += 1;
        self.dir.path().join(format!("profile-{}", self.runs))
    }

    fn login_url(&self, page: &str) -> String {
        let next: String = url::form_urlencoded::byte_serialize(page.as_bytes()).collect();
        format!("{}/login?next={next}", self.login.base)
    }

    /// The DOM of `url` after it loaded (and, with `budget_ms`, after that much virtual time).
    async fn dom(&mut self, url: &str, budget_ms: Option<u32>) -> (String, String) {
        let (bin, profile, url) = (self.bin.clone(), self.profile(), url.to_owned());
        let started = Instant::now();
        let (ok, dom, log) = tokio::task::spawn_blocking(move || {
            let budget = budget_ms.map(|b| format!("--virtual-time-budget={b}"));
            let mut args: Vec<&str> = budget.iter().map(String::as_str).collect();
            args.extend(["--dump-dom", &url]);
            run_chromium(&bin, &profile, &args, CHROMIUM_DEADLINE)
        })
        .await
        .expect("the chromium task ran");
        note(&format!("chromium --dump-dom took {:?}", started.elapsed()));
        assert!(ok, "chromium --dump-dom failed:\n{log}");
        assert!(!log.contains("Content Security Policy"), "a CSP violation was reported:\n{log}");
        (dom, log)
    }

    /// A screenshot of `url`, as PNG bytes.
    async fn screenshot(&mut self, url: &str) -> Vec<u8> {
        let (bin, profile, url) = (self.bin.clone(), self.profile(), url.to_owned());
        let shot = profile.with_extension("png");
        let shot2 = shot.clone();
        let (ok, _, log) = tokio::task::spawn_blocking(move || {
            let arg = format!("--screenshot={}", shot2.display());
            run_chromium(
                &bin,
                &profile,
                &[&arg, "--window-size=1280,900", "--hide-scrollbars", &url],
                CHROMIUM_DEADLINE,
            )
        })
        .await
        .expect("the chromium task ran");
        assert!(ok, "chromium --screenshot failed:\n{log}");
        std::fs::read(&shot).expect("screenshot written")
    }
}

// ---------------------------------------------------------------------------------------------
// The test

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_lists_shows_progress_opens_the_report_and_refuses_without_the_token() {
    let t0 = Instant::now();
    let bin = chromium(); // fail first, and clearly, when Chromium is missing
    drop(bin);
    ensure_built().await;
    let names = vec!["dash0.test".to_owned(), "dash1.test".to_owned(), "dash2.test".to_owned()];
    let server =
        TestServer::start(names.iter().map(|h| Site::generated(h, 12, 3)).collect()).await.expect("server starts");
    let redis = RedisServer::start().expect("redis-server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    let ns = "dash";
    let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), ns, &db, &[]).await;
    let base = coord.base.clone();
    let http = client();

    // No worker yet: both audits stay `running` until the worker starts.
    let starts_a: Vec<String> = names[..2].iter().map(|h| server.url(h, "/")).collect();
    let audit_a = coord.submit(&starts_a, json!({"gap_ms": 20, "in_flight": 2})).await;
    let audit_b = coord.submit(&[server.url(&names[2], "/")], json!({})).await;
    let (ui_a, ui_b) = (format!("/ui/audits/{audit_a}"), format!("/ui/audits/{audit_b}"));

    // --- Without the token: the dashboard sends browsers to the login form, the API says 401.
    for path in ["/ui/", &ui_a, &format!("{ui_a}/report"), &format!("{ui_a}/report.json"), "/ui/nope"] {
        let a = get(&http, &format!("{base}{path}"), As::Nobody).await;
        assert_eq!(a.status, 303, "GET {path} without a token: {}", a.body);
        let location = a.header("location");
        assert!(location.starts_with("/ui/login?next="), "GET {path} → {location}");
        let wrong = get(&http, &format!("{base}{path}"), As::Bearer("wrong-token")).await;
        assert_eq!(wrong.status, 303, "GET {path} with a wrong bearer token");
        let forged = get(&http, &format!("{base}{path}"), As::Cookie("shoal_session=0123abcd")).await;
        assert_eq!(forged.status, 303, "GET {path} with an unknown session");
    }
    let a = get(&http, &format!("{base}/ui/"), As::Nobody).await;
    assert_eq!(a.header("location"), "/ui/login?next=%2Fui%2F");
    assert_eq!(get(&http, &format!("{base}/"), As::Nobody).await.header("location"), "/ui/");
    let a = post_form(&http, &format!("{base}{ui_b}/cancel"), As::Nobody, &[("csrf", "")], &[]).await;
    assert_eq!(a.status, 401, "POST cancel without a token");
    let a = get(&http, &format!("{base}/v1/audits"), As::Nobody).await;
    assert_eq!(a.status, 401, "the API refuses without the token");
    assert!(a.header("content-type").starts_with("application/json"), "the API answers JSON");
    let a = get(&http, &format!("{base}/v1/audits"), As::Cookie("shoal_token=x")).await;
    assert_eq!(a.status, 401, "the API takes no cookie");

    // The login form itself, and a wrong token.
    let a = get(&http, &format!("{base}/ui/login?next=%2Fui%2F"), As::Nobody).await;
    assert_eq!(a.status, 200);
    assert!(a.body.contains(r#"name="token""#) && a.body.contains(r#"action="/ui/login""#), "{}", a.body);
    assert_page_headers(&a, "login");
    let a =
        post_form(&http, &format!("{base}/ui/login"), As::Nobody, &[("token", "wrong"), ("next", "/ui/")], &[]).await;
    assert_eq!(a.status, 401, "a wrong token");
    assert!(a.header("set-cookie").is_empty(), "no cookie for a wrong token");
    assert!(a.body.contains("Wrong token"), "{}", a.body);
    // The token in a URL is refused, even the right one: it would be kept in logs and history.
    let a = get(&http, &format!("{base}/ui/login?token={TOKEN}&next=%2Fui%2F"), As::Nobody).await;
    assert_eq!(a.status, 400, "a token in the query: {}", a.body);
    assert!(a.header("set-cookie").is_empty(), "no cookie for a token in the query");
    assert!(a.body.contains("not accepted in the address") && a.body.contains(r#"name="token""#), "{}", a.body);
    assert!(!a.body.contains(TOKEN), "the token is not echoed");
    let evil = [("token", TOKEN), ("next", "//evil.test/")];
    let a = post_form(&http, &format!("{base}/ui/login"), As::Nobody, &evil, &[]).await;
    assert_eq!((a.status, a.header("location")), (303, "/ui/"), "no open redirect");

    // --- Logging in with the form.
    let a = post_form(&http, &format!("{base}/ui/login"), As::Nobody, &[("token", TOKEN), ("next", &ui_b)], &[]).await;
    assert_eq!(a.status, 303, "login: {}", a.body);
    assert_eq!(a.header("location"), ui_b);
    let cookie = session_cookie(&a);
    let me = As::Cookie(&cookie);

    let list = get(&http, &format!("{base}/ui/"), me).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.header("content-type").starts_with("text/html"));
    assert_page_headers(&list, "list");
    assert!(list.body.contains(&format!(r#"href="/ui/audits/{audit_a}""#)), "{}", list.body);
    assert!(list.body.contains(r#"http-equiv="refresh""#), "live while audits run: {}", list.body);
    let css = get(&http, &format!("{base}/ui/static/dashboard.css"), As::Nobody).await;
    assert_eq!(css.status, 200);
    assert!(css.header("content-type").starts_with("text/css"));

    // --- Cancelling audit B from its page: the CSRF value is required with a session.
    let page_b = get(&http, &format!("{base}{ui_b}"), me).await;
    assert_eq!(page_b.status, 200, "{}", page_b.body);
    let csrf = csrf_in(&page_b.body);
    let cancel_url = format!("{base}{ui_b}/cancel");
    for (form, extra, why) in [
        (vec![], vec![], "no CSRF field"),
        (vec![("csrf", "0000")], vec![], "a wrong CSRF value"),
        (vec![("csrf", csrf.as_str())], vec![("sec-fetch-site", "cross-site")], "a cross-site form"),
    ] {
        let a = post_form(&http, &cancel_url, me, &form, &extra).await;
        assert_eq!(a.status, 403, "cancel with {why}: {}", a.body);
    }
    assert_eq!(coord.status(audit_b).await.expect("status")["status"], "running", "not cancelled by refused posts");
    let a = post_form(&http, &cancel_url, me, &[("csrf", &csrf)], &[("sec-fetch-site", "same-origin")]).await;
    assert_eq!((a.status, a.header("location")), (303, ui_b.as_str()), "cancel: {}", a.body);
    assert_eq!(coord.status(audit_b).await.expect("status")["status"], "cancelled");

    // --- Chromium, while audit A runs: per-site progress, live.
    let mut browser = Browser::new(&base).await;
    let (dom, _) = browser.dom(&format!("{base}/ui/"), None).await;
    assert!(dom.contains(r#"name="token""#), "Chromium without the token sees the login form:\n{dom}");
    assert!(!dom.contains("data-audit="), "and no audit:\n{dom}");
    let (dom, _) = browser.dom(&browser.login_url(&ui_a), None).await;
    assert!(dom.contains(&format!(r#"data-audit="{audit_a}" data-status="running""#)), "audit A running:\n{dom}");
    assert_eq!(dom.matches("<tr data-site=").count(), 2, "one row per site:\n{dom}");
    for h in &names[..2] {
        assert!(dom.contains(&format!("http://{h}:")), "site {h} listed:\n{dom}");
    }
    assert!(dom.contains(r#"data-status="running""#) && dom.contains("<progress"), "progress shown:\n{dom}");
    assert!(column(&dom, "queued").iter().sum::<u64>() > 0, "queued work shown:\n{dom}");
    assert!(dom.contains(r#"http-equiv="refresh""#), "the page reloads itself while running:\n{dom}");
    assert!(dom.contains("Cancel audit"), "a cancel button:\n{dom}");

    // --- The worker crawls audit A to the end.
    let w = worker(dir.path(), "w1", &redis.url(), ns, &names, 4);
    let finished = coord.wait_finished(audit_a, Duration::from_secs(40)).await;
    let logs = tails([&w, &coord.proc]);
    let (view, took) = finished.unwrap_or_else(|e| panic!("{e}\n{logs}"));
    assert_eq!(view["status"], "done", "{view}\n{logs}");
    note(&format!("audit {audit_a} crawled in {took:?}"));

    // --- Chromium, after: the list, the audit's final progress, the report.
    let (dom, _) = browser.dom(&browser.login_url("/ui/"), None).await;
    assert!(dom.contains(&format!(r#"data-audit="{audit_a}" data-status="done""#)), "audit A listed done:\n{dom}");
    assert!(dom.contains(&format!(r#"data-audit="{audit_b}" data-status="cancelled""#)), "audit B listed:\n{dom}");
    assert!(!dom.contains(r#"http-equiv="refresh""#), "nothing runs, no reload:\n{dom}");
    assert!(dom.contains(&format!(r#"href="/ui/audits/{audit_a}/report""#)), "a report link:\n{dom}");

    let (dom, _) = browser.dom(&browser.login_url(&ui_a), None).await;
    assert_eq!(dom.matches(r#"<tr data-site=""#).count(), 2, "{dom}");
    assert_eq!(dom.matches(r#"data-status="done""#).count(), 3, "the audit and both sites done:\n{dom}");
    let pages = column(&dom, "pages");
    assert_eq!(pages, vec![12, 12], "every page of both sites counted:\n{dom}");
    assert!(!dom.contains("Cancel audit"), "no cancel button once done:\n{dom}");

    let png = browser.screenshot(&browser.login_url(&ui_a)).await;
    assert!(png.starts_with(b"\x89PNG") && png.len() > 5_000, "a real screenshot ({} bytes)", png.len());
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-artifacts");
    std::fs::create_dir_all(&artifacts).expect("artifact dir");
    std::fs::write(artifacts.join("dashboard.png"), &png).expect("artifact kept");

    // The report: the batch overview first, each site linked to its own report, each issue to
    // the sites that have it.
    let (dom, _) = browser.dom(&browser.login_url(&format!("{ui_a}/report")), Some(2000)).await;
    assert!(
        dom.contains(r#"data-js="ready""#),
        "the report's script ran under its CSP:\n{}",
        &dom[..dom.len().min(2000)]
    );
    assert!(dom.contains(r#"data-css="ready""#), "the report's stylesheet applied under its CSP");
    assert!(dom.contains(r#"data-chart="scores""#), "the overview's score chart rendered");
    let site_ids: Vec<u64> = coord.status(audit_a).await.expect("status")["sites"]
        .as_array()
        .expect("sites")
        .iter()
        .filter_map(|s| s["id"].as_u64())
        .collect();
    assert_eq!(site_ids.len(), 2);
    for id in &site_ids {
        assert!(dom.contains(&format!(r#"href="/ui/audits/{audit_a}/sites/{id}""#)), "site {id} linked:\n{dom}");
    }
    let across = between(&dom, r#"id="across""#, "</table>");
    let issue = between(across, r#"href="/ui/audits/"#, "\"");
    assert!(issue.contains("/issues/"), "an issue across sites is linked: {issue}");
    let png = browser.screenshot(&browser.login_url(&format!("{ui_a}/report"))).await;
    std::fs::write(artifacts.join("dashboard-overview.png"), &png).expect("artifact kept");

    // A site's own report: its health, its issues, and the charts.
    let site_page = format!("{ui_a}/sites/{}", site_ids[0]);
    let (dom, _) = browser.dom(&browser.login_url(&site_page), Some(2000)).await;
    assert!(dom.contains(r#"data-js="ready""#), "the site report's script ran:\n{}", &dom[..dom.len().min(2000)]);
    assert!(dom.contains("Health score") && dom.contains(&format!(r#"id="issues-{}""#, site_ids[0])), "{dom}");
    assert_eq!(dom.matches("<svg").count(), CHARTS_PER_SITE, "the site's charts rendered");
    assert!(dom.contains(&format!(r#"href="/ui/audits/{audit_a}/report""#)), "back to the overview");
    let png = browser.screenshot(&browser.login_url(&site_page)).await;
    std::fs::write(artifacts.join("dashboard-site.png"), &png).expect("artifact kept");
    // An issue across sites and one page of a site's issue group.
    let code = issue.rsplit('/').next().expect("a code").to_owned();
    let (dom, _) = browser.dom(&browser.login_url(&format!("{ui_a}/issues/{code}")), Some(2000)).await;
    assert!(dom.contains(&format!("<code>{code}</code>")) && dom.contains(r#"id="issue-sites""#), "{dom}");
    let a = get(&http, &format!("{base}{ui_a}/sites/{}/issues/{code}?page=1", site_ids[0]), me).await;
    let b = get(&http, &format!("{base}{ui_a}/sites/{}/issues/{code}?page=1", site_ids[1]), me).await;
    assert!(a.status == 200 || b.status == 200, "the code's group on one of the sites: {} {}", a.status, b.status);
    // Another audit's site, an unknown code: not found.
    let a = get(&http, &format!("{base}/ui/audits/{audit_b}/sites/{}", site_ids[0]), me).await;
    assert_eq!(a.status, 404, "a site of another audit");
    let a = get(&http, &format!("{base}{ui_a}/issues/no_such_code"), me).await;
    assert_eq!(a.status, 404);
    let a = get(&http, &format!("{base}{ui_a}/overview.json"), me).await;
    let overview: serde_json::Value = serde_json::from_str(&a.body).expect("the overview JSON parses");
    assert_eq!(overview["schema"], "shoal.overview/v1");
    assert_eq!(overview["sites"].as_array().map(Vec::len), Some(2));
    let a = get(&http, &format!("{base}{site_page}/report.json"), me).await;
    let site_json: serde_json::Value = serde_json::from_str(&a.body).expect("the site JSON parses");
    assert_eq!(site_json["sites"][0]["id"], site_ids[0]);

    // --- The report over HTTP: its own policy in the header; the JSON report.
    let a = get(&http, &format!("{base}{ui_a}/report"), me).await;
    assert_eq!(a.status, 200);
    let csp = a.header("content-security-policy");
    assert!(csp.contains("script-src 'sha256-") && csp.contains("frame-ancestors 'none'"), "report CSP {csp:?}");
    assert_eq!(a.header("x-content-type-options"), "nosniff");
    let a = get(&http, &format!("{base}{ui_a}/report.json"), me).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let report: serde_json::Value = serde_json::from_str(&a.body).expect("the JSON report parses");
    assert_eq!(report["audit"]["id"], audit_a, "{}", &a.body[..a.body.len().min(500)]);
    let a = get(&http, &format!("{base}/ui/audits/999/report.json"), me).await;
    assert_eq!(a.status, 404);

    // --- The bearer header works on the dashboard too; POSTs with it need no CSRF value.
    let a = get(&http, &format!("{base}/ui/"), As::Bearer(TOKEN)).await;
    assert_eq!(a.status, 200);
    assert!(!a.body.contains("/ui/logout"), "no logout button without a session");

    // --- Logging out ends the session for good.
    let a = post_form(&http, &format!("{base}/ui/logout"), me, &[("csrf", "wrong")], &[]).await;
    assert_eq!(a.status, 403, "logout needs the CSRF value");
    let a = post_form(&http, &format!("{base}/ui/logout"), me, &[("csrf", &csrf)], &[]).await;
    assert_eq!((a.status, a.header("location")), (303, "/ui/login"));
    assert!(a.header("set-cookie").contains("Max-Age=0"), "the cookie is cleared");
    let a = get(&http, &format!("{base}/ui/"), me).await;
    assert_eq!(a.status, 303, "the old cookie no longer opens the dashboard");

    // --- The login throttle (5 failures per address at once, server/src/auth/throttle.rs):
    // wrong tokens from this address until 429. Successful logins took nothing; the one wrong token
    // above may still count or may have been forgiven (one per 12 s), so the 5th or 6th is refused.
    let login = format!("{base}/ui/login");
    let mut refused_after = None;
    for i in 1..=10 {
        let a =
            post_form(&http, &login, As::Nobody, &[("token", "wrong-token-0123456789"), ("next", "/ui/")], &[]).await;
        if a.status == 429 {
            let retry: u64 = a.header("retry-after").parse().expect("Retry-After in seconds");
            assert!((1..=12).contains(&retry), "Retry-After {retry}");
            assert!(a.body.contains("Too many failed logins from your address"), "{}", a.body);
            refused_after = Some(i);
            break;
        }
        assert_eq!(a.status, 401, "wrong token {i}: {}", a.body);
    }
    assert!(refused_after.is_some_and(|n| n >= 5), "at least 4 wrong tokens, then 429: {refused_after:?}");
    let a = post_form(&http, &login, As::Nobody, &[("token", TOKEN), ("next", "/ui/")], &[]).await;
    assert_eq!(a.status, 429, "a throttled login is refused before the token is compared: {}", a.body);
    assert!(a.header("set-cookie").is_empty(), "no session while throttled");
    let a = get(&http, &format!("{base}/ui/"), As::Bearer(TOKEN)).await;
    assert_eq!(a.status, 200, "the bearer header is not throttled");

    drop(w);
    drop(coord);
    drop(server);
    note(&format!("whole test {:?}", t0.elapsed()));
}
