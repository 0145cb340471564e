//! The web dashboard the coordinator serves next to its JSON API (docs/dashboard.md): the audits,
//! one audit's per-site progress (reloading itself while it runs), a cancel button, and the
//! audit's HTML and JSON reports.
//!
//! Why it looks the way it does:
//! - **Server-rendered, no assets from elsewhere.** Pages are askama templates
//!   (`templates/dashboard/`), with one stylesheet served by the coordinator itself and no script.
//!   "Live" is a `<meta http-equiv="refresh">` on pages that show a running audit, so the dashboard
//!   works in any browser, behind any proxy, offline.
//! - **The admin token only.** Scoped API tokens (`shoal token`) are refused with 403 and a
//!   message saying so, whether sent as a bearer header or typed into the login form.
//! - **The same secret as the API.** A request is let in with `Authorization: Bearer <token>`
//!   (scripts, `curl`) or with a session cookie that the login form sets after checking the token
//!   in constant time. The cookie holds a random session id, never the token, and is `HttpOnly;
//!   SameSite=Strict; Path=/` (plus `Secure` behind an HTTPS proxy that says so). The JSON API under
//!   `/v1/` does not accept the cookie: it keeps answering 401 without the header.
//! - **Logging in.** The token is taken only from a POST body, never from the URL, where it would
//!   end up in access logs and browser history (`GET /ui/login?token=` is refused with 400). Login
//!   attempts are throttled per client address and overall, before the token is compared
//!   (`dashboard::throttle`); a throttled one gets 429 with `Retry-After`.
//! - **CSRF.** Every state-changing request is a POST. With a session, a POST must carry the
//!   session's CSRF value in a form field (compared in constant time); SameSite=Strict already keeps
//!   the cookie off cross-site requests, the field also stops same-site ones (a sibling subdomain).
//!   A POST authenticated by the bearer header needs no field: browsers never add that header on
//!   their own. A POST a browser marks `Sec-Fetch-Site: cross-site` is refused outright.
//! - **Headers.** Every response carries a Content-Security-Policy (`default-src 'none'`, the
//!   stylesheet from `'self'`, forms to `'self'`, `frame-ancestors 'none'`), `X-Content-Type-Options:
//!   nosniff`, `Referrer-Policy: no-referrer`, `X-Frame-Options: DENY` and `Cache-Control: no-store`.
//!   The HTML report keeps its own hash-based policy, copied from its meta element into the header.
//! - **The report does not stop aggregation.** It is rendered on a second connection to the audit
//!   database (WAL mode lets it read while the aggregator writes), off the async threads.

mod reports;
mod views;

use crate::ServerError;
use crate::auth::session::{self, COOKIE, SESSION_TTL, Sessions};
use crate::auth::throttle::{Limited, Throttle};
use crate::auth::{bearer_ok, same};
use askama::Template;
use axum::extract::rejection::FormRejection;
use axum::extract::{ConnectInfo, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Form, Router};
use serde::Deserialize;
use shoal_coordinator::Coordinator;
use shoal_coordinator::engine::EngineError;
use shoal_report::{Branding, ReportError};
use shoal_shared::frontier::Frontier;
use shoal_shared::ids::AuditId;
use shoal_shared::status::AuditStatus;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use views::{
    AuditLine, AuditPage, CSS, CSS_PATH, Chrome, ListPage, LoginPage, MessagePage, ScheduleLine, SchedulesPage,
    SiteLine,
};

/// The policy of every dashboard page: nothing loads but the coordinator's own stylesheet, no
/// script runs, forms post only back here, and no other site may frame the dashboard.
pub const PAGE_CSP: &str =
    "default-src 'none'; style-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Added to the HTML report's own policy (a meta element cannot say it).
const REPORT_CSP_EXTRA: &str = "frame-ancestors 'none'";

/// Form bodies larger than this are refused (a token and a CSRF value fit many times over).
const MAX_FORM: usize = 16 * 1024;

struct Dash<F> {
    engine: Arc<Coordinator<F>>,
    token: Arc<str>,
    /// The operator's name and logo on reports.
    branding: Arc<Branding>,
    sessions: Arc<Sessions>,
    /// Login attempts per client address and overall.
    throttle: Arc<Throttle>,
}

// By hand: a derive would ask `F: Clone`, and only the `Arc`s are cloned.
impl<F> Clone for Dash<F> {
    fn clone(&self) -> Self {
        Dash {
            engine: Arc::clone(&self.engine),
            token: Arc::clone(&self.token),
            branding: Arc::clone(&self.branding),
            sessions: Arc::clone(&self.sessions),
            throttle: Arc::clone(&self.throttle),
        }
    }
}

/// How a request to a protected page got in.
#[derive(Debug, Clone)]
enum Auth {
    /// `Authorization: Bearer <token>`: a script; POSTs need no CSRF value.
    Bearer,
    /// The login form's session cookie.
    Session {
        /// The value POST forms must echo.
        csrf: String,
    },
}

impl Auth {
    /// The CSRF value for forms on a page, empty when none is needed.
    fn csrf(&self) -> String {
        match self {
            Auth::Bearer => String::new(),
            Auth::Session { csrf } => csrf.clone(),
        }
    }

    /// The logout form's value, shown only to a session.
    fn logout(&self) -> Option<String> {
        match self {
            Auth::Bearer => None,
            Auth::Session { csrf } => Some(csrf.clone()),
        }
    }
}

/// The dashboard's routes (see the module docs), to merge into the API router: `/` and everything
/// under `/ui/`. `token` is the coordinator's bearer token; reports carry `branding`.
pub fn router<F: Frontier>(engine: Arc<Coordinator<F>>, token: Arc<str>, branding: Arc<Branding>) -> Router {
    let state = Dash {
        engine,
        token,
        branding,
        sessions: Arc::new(Sessions::default()),
        throttle: Arc::new(Throttle::default()),
    };
    let protected = Router::new()
        .route("/ui/", get(list::<F>))
        .route("/ui/audits/{id}", get(audit::<F>))
        .route("/ui/schedules", get(schedules::<F>))
        .route("/ui/audits/{id}/cancel", post(cancel::<F>))
        .route("/ui/audits/{id}/report", get(reports::overview::<F>))
        .route("/ui/audits/{id}/report.json", get(report_json::<F>))
        .route("/ui/audits/{id}/overview.json", get(reports::overview_json::<F>))
        .route("/ui/audits/{id}/issues/{code}", get(reports::audit_issue::<F>))
        .route("/ui/audits/{id}/sites/{site}", get(reports::site::<F>))
        .route("/ui/audits/{id}/sites/{site}/report.json", get(reports::site_json::<F>))
        .route("/ui/audits/{id}/sites/{site}/issues/{code}", get(reports::site_issue::<F>))
        .route("/ui/{*rest}", get(not_found))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_login::<F>));
    Router::new()
        .route("/", get(|| async { Redirect::to("/ui/") }))
        .route("/ui", get(|| async { Redirect::to("/ui/") }))
        .route(CSS_PATH, get(stylesheet))
        .route("/ui/login", get(login_page).post(login_submit::<F>))
        .route("/ui/logout", post(logout::<F>))
        .merge(protected)
        .layer(middleware::map_response(security_headers))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_FORM))
        .with_state(state)
}

async fn security_headers(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.entry(header::CONTENT_SECURITY_POLICY).or_insert(HeaderValue::from_static(PAGE_CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    resp
}

impl<F: Frontier> Dash<F> {
    /// The request's credentials: the bearer header, or a live session cookie.
    fn authenticate(&self, headers: &HeaderMap) -> Option<Auth> {
        if bearer_ok(headers, &self.token) {
            return Some(Auth::Bearer);
        }
        let id = session::cookie(headers, COOKIE)?;
        self.sessions.csrf(id).map(|csrf| Auth::Session { csrf })
    }

    /// Checks `given` (the login form's token) from `client`, unless the throttle refuses the
    /// attempt first, and, if right, starts a session and redirects to `next`.
    /// `scoped`: `given` is a scoped API token's secret, refused with 403 and a message saying so.
    fn login(
        &self,
        headers: &HeaderMap,
        client: Option<SocketAddr>,
        given: &str,
        scoped: bool,
        next: String,
    ) -> Response {
        let ip = client.map(|c| c.ip());
        if let Err(limited) = self.throttle.attempt(ip, Instant::now()) {
            // Not a warning each: a guesser would fill the log. The failures that led here were.
            tracing::debug!(
                client = ?ip,
                retry_after_s = limited.retry_after_secs(),
                overall = limited.overall,
                "dashboard login throttled"
            );
            return throttled(next, limited);
        }
        let right = !self.token.is_empty() && same(given.as_bytes(), self.token.as_bytes());
        if !right && scoped {
            tracing::warn!(client = ?ip, "dashboard login with a scoped API token");
            return login_form(StatusCode::FORBIDDEN, next, Some(SCOPED_TOKEN.into()));
        }
        if !right {
            tracing::warn!(client = ?ip, "dashboard login with a wrong token");
            return login_form(StatusCode::UNAUTHORIZED, next, Some("Wrong token.".into()));
        }
        self.throttle.succeeded(ip, Instant::now());
        let new = match self.sessions.start() {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the random source for a dashboard session");
                return message(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Cannot start a session; see the coordinator's log.",
                );
            }
        };
        let cookie = format!(
            "{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
            new.id,
            SESSION_TTL.as_secs(),
            if behind_https(headers) { "; Secure" } else { "" }
        );
        see_other(&next, Some(cookie))
    }
}

/// The login form, with an error above it if any.
fn login_form(status: StatusCode, next: String, error: Option<String>) -> Response {
    render(status, &LoginPage { chrome: Chrome::new("Log in", None), next, error })
}

/// 429 with `Retry-After` and the login form saying how long to wait.
fn throttled(next: String, limited: Limited) -> Response {
    let secs = limited.retry_after_secs();
    let whose = if limited.overall { "on this coordinator" } else { "from your address" };
    let text =
        format!("Too many failed logins {whose}. Try again in {secs} second{}.", if secs == 1 { "" } else { "s" });
    let mut resp = login_form(StatusCode::TOO_MANY_REQUESTS, next, Some(text));
    resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    resp
}

/// Whether a proxy in front says the browser spoke HTTPS (then the cookie gets `Secure`).
fn behind_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').next().is_some_and(|p| p.trim().eq_ignore_ascii_case("https")))
}

/// A 303 to a local path, optionally setting a cookie.
fn see_other(location: &str, cookie: Option<String>) -> Response {
    let mut resp = Redirect::to(location).into_response();
    if let Some(c) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        resp.headers_mut().insert(header::SET_COOKIE, c);
    }
    resp
}

/// What the dashboard answers a scoped API token (`shoal token`): it takes the admin token only.
const SCOPED_TOKEN: &str = "The dashboard accepts only the coordinator's admin token. This is an API token with a \
     scope (read, submit or site): use it with the JSON API under /v1/.";

/// Whether `given` is a scoped API token's secret (the dashboard refuses those with 403, not as a
/// wrong token). A failed lookup counts as no.
async fn is_scoped<F: Frontier>(d: &Dash<F>, given: Option<&str>) -> bool {
    let Some(given) = given.filter(|g| !g.is_empty()) else { return false };
    match shoal_coordinator::tokens::authenticate(&d.engine, given.to_owned()).await {
        Ok(found) => found.is_some(),
        Err(e) => {
            tracing::error!(error = %e, "looking up an API token failed");
            false
        }
    }
}

/// Lets a request in with the bearer header or a session; answers a scoped API token 403, and
/// sends a browser without either to the login form (GET) or answers 401 (anything else).
async fn require_login<F: Frontier>(State(d): State<Dash<F>>, mut req: Request, next: Next) -> Response {
    match d.authenticate(req.headers()) {
        Some(auth) => {
            req.extensions_mut().insert(auth);
            next.run(req).await
        }
        None if is_scoped(&d, crate::auth::bearer(req.headers())).await => message(StatusCode::FORBIDDEN, SCOPED_TOKEN),
        None if req.method() == Method::GET || req.method() == Method::HEAD => {
            let here = req.uri().path_and_query().map_or("/ui/", |p| p.as_str());
            let next: String = url::form_urlencoded::byte_serialize(safe_next(Some(here)).as_bytes()).collect();
            Redirect::to(&format!("/ui/login?next={next}")).into_response()
        }
        None => message(StatusCode::UNAUTHORIZED, "Log in first: this needs the coordinator's token."),
    }
}

/// Where to go after logging in: a dashboard path, never another site (`//evil`, `\\evil`) nor
/// anything that would not be a valid header value; `/ui/` otherwise.
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if (n == "/ui" || n.starts_with("/ui/"))
                && !n.starts_with("/ui/login")
                && !n.contains("//")
                && !n.contains('\\')
                && n.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            n.to_owned()
        }
        _ => "/ui/".to_owned(),
    }
}

/// Whether a POST may proceed: not one a browser marks as cross-site, and, with a session, one
/// carrying the session's CSRF value.
fn post_allowed(auth: Option<&Auth>, headers: &HeaderMap, csrf: &str) -> bool {
    if headers.get("sec-fetch-site").is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"cross-site")) {
        return false;
    }
    match auth {
        Some(Auth::Bearer) | None => true,
        Some(Auth::Session { csrf: want }) => !csrf.is_empty() && same(csrf.as_bytes(), want.as_bytes()),
    }
}

/// The answer to a POST [`post_allowed`] refused.
fn refused() -> Response {
    message(
        StatusCode::FORBIDDEN,
        "Refused: this form did not come from this dashboard. Reload the page and try again.",
    )
}

fn render<T: Template>(status: StatusCode, page: &T) -> Response {
    match page.render() {
        Ok(body) => (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "rendering a dashboard page failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "internal error; see the coordinator's log").into_response()
        }
    }
}

fn message(status: StatusCode, text: &str) -> Response {
    let title = status.canonical_reason().unwrap_or("Error");
    let page = MessagePage {
        chrome: Chrome::new(title, None),
        message: text.to_owned(),
        link_href: "/ui/".into(),
        link_text: "Back to the audits".into(),
    };
    render(status, &page)
}

fn service_error(e: ServerError) -> Response {
    match e {
        ServerError::Engine(EngineError::NotFound(a)) => {
            message(StatusCode::NOT_FOUND, &format!("There is no audit {a}."))
        }
        ServerError::BadRequest(m) | ServerError::Engine(EngineError::BadRequest(m)) => {
            message(StatusCode::BAD_REQUEST, &m)
        }
        ServerError::Report(e @ (ReportError::UnknownSite { .. } | ReportError::UnknownIssue { .. })) => {
            message(StatusCode::NOT_FOUND, &e.to_string())
        }
        other => {
            tracing::error!(error = %format!("{other:#}"), "dashboard request failed");
            message(StatusCode::INTERNAL_SERVER_ERROR, "Internal error; see the coordinator's log.")
        }
    }
}

async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            // The URL carries the version, so a long cache is safe across upgrades.
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        CSS,
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
struct LoginQuery {
    /// Only to refuse it: a token in a URL is kept in access logs and browser history.
    token: Option<String>,
    next: Option<String>,
}

/// `GET /ui/login`: the form. A `?token=` is refused (400), not used: the token is taken only from
/// the form's POST body.
async fn login_page(Query(q): Query<LoginQuery>) -> Response {
    let next = safe_next(q.next.as_deref());
    if q.token.is_some() {
        tracing::warn!("dashboard login refused: the token was in the URL, not the form");
        return login_form(
            StatusCode::BAD_REQUEST,
            next,
            Some(
                "The token is not accepted in the address (it would be kept in logs and browser history). \
                 Type it into this form."
                    .into(),
            ),
        );
    }
    login_form(StatusCode::OK, next, None)
}

#[derive(Debug, Deserialize)]
struct LoginForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    next: Option<String>,
}

/// `POST /ui/login`: the login form (throttled, see [`throttle`]).
async fn login_submit<F: Frontier>(
    State(d): State<Dash<F>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return message(StatusCode::BAD_REQUEST, "The login form was not understood.");
    };
    if !post_allowed(None, &headers, "") {
        return refused();
    }
    let client = peer.map(|Extension(ConnectInfo(addr))| addr);
    let scoped = is_scoped(&d, Some(&form.token)).await;
    d.login(&headers, client, &form.token, scoped, safe_next(form.next.as_deref()))
}

#[derive(Debug, Default, Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

fn csrf_of(form: Result<Form<CsrfForm>, FormRejection>) -> String {
    form.map(|Form(f)| f.csrf).unwrap_or_default()
}

/// `POST /ui/logout`: ends the session and clears the cookie.
async fn logout<F: Frontier>(
    State(d): State<Dash<F>>,
    headers: HeaderMap,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    let csrf = csrf_of(form);
    let session = session::cookie(&headers, COOKIE).map(str::to_owned);
    if let Some(id) = &session
        && let Some(want) = d.sessions.csrf(id)
    {
        if !post_allowed(Some(&Auth::Session { csrf: want }), &headers, &csrf) {
            return refused();
        }
        d.sessions.end(id);
    }
    see_other("/ui/login", Some(format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")))
}

/// `GET /ui/`: every audit, newest first; reloads while any is running.
async fn list<F: Frontier>(State(d): State<Dash<F>>, Extension(auth): Extension<Auth>) -> Response {
    match d.engine.list().await {
        Ok(audits) => {
            let running = audits.iter().any(|a| a.status == AuditStatus::Running);
            let page = ListPage {
                chrome: Chrome::new("Audits", auth.logout()).live(running),
                audits: audits.iter().rev().map(AuditLine::from).collect(),
            };
            render(StatusCode::OK, &page)
        }
        Err(e) => service_error(e.into()),
    }
}

/// `GET /ui/schedules`: every recurring audit, with its last run (linked) and its next one.
async fn schedules<F: Frontier>(State(d): State<Dash<F>>, Extension(auth): Extension<Auth>) -> Response {
    match shoal_coordinator::schedule::list(&d.engine).await {
        Ok(all) => {
            let running = all.iter().any(|s| s.last_status == Some(AuditStatus::Running));
            let page = SchedulesPage {
                chrome: Chrome::new("Schedules", auth.logout()).live(running),
                schedules: all.iter().map(ScheduleLine::from).collect(),
            };
            render(StatusCode::OK, &page)
        }
        Err(e) => service_error(e.into()),
    }
}

/// `GET /ui/audits/{id}`: one audit's per-site progress; reloads while it runs.
async fn audit<F: Frontier>(
    State(d): State<Dash<F>>,
    Extension(auth): Extension<Auth>,
    Path(id): Path<u64>,
) -> Response {
    match d.engine.status(AuditId(id)).await {
        Ok(v) => {
            let page = AuditPage {
                chrome: Chrome::new(format!("Audit {}", v.id), auth.logout()).live(v.status == AuditStatus::Running),
                audit: AuditLine::from(&v),
                sites: v.sites.iter().map(SiteLine::from).collect(),
                csrf: auth.csrf(),
            };
            render(StatusCode::OK, &page)
        }
        Err(e) => service_error(e.into()),
    }
}

/// `POST /ui/audits/{id}/cancel`: cancels, then shows the audit again.
async fn cancel<F: Frontier>(
    State(d): State<Dash<F>>,
    Extension(auth): Extension<Auth>,
    headers: HeaderMap,
    Path(id): Path<u64>,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    if !post_allowed(Some(&auth), &headers, &csrf_of(form)) {
        return refused();
    }
    match d.engine.cancel(AuditId(id)).await {
        Ok(_) => see_other(&format!("/ui/audits/{id}"), None),
        Err(e) => service_error(e.into()),
    }
}

/// A report page under its own policy: the report's meta policy copied into the header, plus what
/// a meta element cannot say.
pub(crate) fn report_page(body: Vec<u8>) -> Response {
    let policy = meta_csp(&body)
        .map(|p| format!("{p}; {REPORT_CSP_EXTRA}"))
        .and_then(|p| HeaderValue::from_str(&p).ok())
        // Without its meta policy the report would still be escaped; keep what a header can add.
        .unwrap_or(HeaderValue::from_static("frame-ancestors 'none'; base-uri 'none'; object-src 'none'"));
    let mut resp = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response();
    resp.headers_mut().insert(header::CONTENT_SECURITY_POLICY, policy);
    resp
}

/// A JSON document, named for a download.
fn json_download(body: Vec<u8>, filename: &str) -> Response {
    let mut resp = ([(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("inline; filename=\"{filename}\"")) {
        resp.headers_mut().insert(header::CONTENT_DISPOSITION, v);
    }
    resp
}

/// `GET /ui/audits/{id}/report.json`: the JSON report (docs/report-json.md).
async fn report_json<F: Frontier>(State(d): State<Dash<F>>, Path(id): Path<u64>) -> Response {
    match crate::render_report(&d.engine, AuditId(id), shoal_report::write_json).await {
        Ok(body) => json_download(body, &format!("shoal-audit-{id}.json")),
        Err(e) => service_error(e),
    }
}

async fn not_found() -> Response {
    message(StatusCode::NOT_FOUND, "There is no such dashboard page.")
}

/// The policy in the report's `<meta http-equiv="Content-Security-Policy">`, unescaped, so the
/// header can repeat it (and add what a meta element cannot, `frame-ancestors`).
fn meta_csp(html: &[u8]) -> Option<String> {
    const MARKER: &str = r#"http-equiv="Content-Security-Policy" content=""#;
    let head = String::from_utf8_lossy(&html[..html.len().min(16 * 1024)]);
    let start = head.find(MARKER)? + MARKER.len();
    let end = start + head[start..].find('"')?;
    let policy = unescape(&head[start..end])?;
    (!policy.is_empty() && policy.bytes().all(|b| b == b' ' || b.is_ascii_graphic())).then_some(policy)
}

/// Undoes HTML escaping of an attribute value (`&#39;`, `&#x27;`, `&amp;`, `&quot;`, `&lt;`, `&gt;`,
/// `&apos;`); `None` on an entity it does not know.
fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let end = after.find(';')?;
        let entity = &after[..end];
        let c = match entity {
            "amp" => '&',
            "quot" => '"',
            "apos" => '\'',
            "lt" => '<',
            "gt" => '>',
            _ => {
                let code = match entity.strip_prefix("#x").or_else(|| entity.strip_prefix("#X")) {
                    Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                    None => entity.strip_prefix('#')?.parse().ok()?,
                };
                char::from_u32(code)?
            }
        };
        out.push(c);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_stays_on_the_dashboard() {
        assert_eq!(safe_next(Some("/ui/audits/3")), "/ui/audits/3");
        assert_eq!(safe_next(Some("/ui/audits/3/report?x=1")), "/ui/audits/3/report?x=1");
        for bad in [
            "//evil.test/",
            "https://evil.test/",
            "/ui//evil.test",
            "/\\evil.test",
            "/ui/\\\\evil",
            "/v1/audits",
            "/ui/login?token=x",
            "/ui/a b",
            "/ui/\r\nSet-Cookie: x",
            "",
        ] {
            assert_eq!(safe_next(Some(bad)), "/ui/", "{bad:?}");
        }
        assert_eq!(safe_next(None), "/ui/");
    }

    #[test]
    fn the_report_policy_is_read_back_from_its_meta_element() {
        let html = br#"<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; script-src &#39;sha256-ab+/=&#39;; style-src &#x27;sha256-cd&#x27;">
<title>x</title>"#;
        assert_eq!(
            meta_csp(html).as_deref(),
            Some("default-src 'none'; script-src 'sha256-ab+/='; style-src 'sha256-cd'")
        );
        assert_eq!(meta_csp(b"<html><head><title>none</title>"), None);
        let bad = br#"<meta http-equiv="Content-Security-Policy" content="a&#10;b">"#;
        assert_eq!(meta_csp(bad), None, "a newline would not be a valid header value");
        assert_eq!(unescape("a &bogus; b"), None);
        assert_eq!(unescape("&lt;&amp;&gt;&quot;&apos;").as_deref(), Some("<&>\"'"));
    }

    #[test]
    fn posts_need_the_csrf_value_with_a_session_only() {
        let h = HeaderMap::new();
        let s = Auth::Session { csrf: "abc".into() };
        assert!(post_allowed(Some(&s), &h, "abc"));
        assert!(!post_allowed(Some(&s), &h, "abd"));
        assert!(!post_allowed(Some(&s), &h, ""));
        assert!(post_allowed(Some(&Auth::Bearer), &h, ""));
        let mut cross = HeaderMap::new();
        cross.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(!post_allowed(Some(&Auth::Bearer), &cross, ""));
        assert!(!post_allowed(Some(&s), &cross, "abc"));
        let mut same_origin = HeaderMap::new();
        same_origin.insert("sec-fetch-site", HeaderValue::from_static("same-origin"));
        assert!(post_allowed(Some(&s), &same_origin, "abc"));
    }

    #[test]
    fn https_is_read_from_the_proxy_header() {
        let mut h = HeaderMap::new();
        assert!(!behind_https(&h));
        h.insert("x-forwarded-proto", HeaderValue::from_static("https, http"));
        assert!(behind_https(&h));
        h.insert("x-forwarded-proto", HeaderValue::from_static("http"));
        assert!(!behind_https(&h));
    }
}
