//! The coordinator's HTTP API (JSON), behind a bearer token: the admin token (`--token`), or a
//! token with a scope (`read`, `submit`, `site`; [`crate::auth::access`] says which route needs
//! which). No token or an unknown one is 401; a token without the scope a route needs is 403.
//!
//! | method | path | what |
//! |---|---|---|
//! | GET | `/healthz` | liveness, no token needed |
//! | GET | `/metrics` | Prometheus metrics (OpenMetrics text), no token needed |
//! | POST | `/v1/audits` | submit `{"urls": [...], "options": {...}}` → 201 `{"id": N}` |
//! | GET | `/v1/audits` | every audit with totals |
//! | GET | `/v1/audits/{id}?after=ID&limit=N` | one audit with the progress of a page of its sites (1,000 unless `limit`, at most 10,000; `sites_next_after` names the next page's `after`) |
//! | POST | `/v1/audits/{id}/cancel` | cancel; answers the audit's state |
//! | GET | `/v1/audits/{id}/sites/{site}/report?format=json` | one site's report: `json` (`shoal.report/v1` of the site) or `html` (its self-contained HTML report) |
//! | GET | `/v1/audits/{id}/report?format=json` | the JSON report (docs/report-json.md); `format=overview` the overview (`shoal.overview/v1`), `sarif` SARIF 2.1.0, `junit` JUnit XML (test cases fail on errors) |
//! | POST | `/v1/schedules` | add a recurring audit `{"name", "urls", "options", "when", "time_zone"}` → 201 with it |
//! | GET | `/v1/schedules` | every schedule with its last and next run |
//! | GET | `/v1/schedules/{id}` | one schedule with its start URLs |
//! | DELETE | `/v1/schedules/{id}` | remove it (its runs stay) → `{"removed": id}` |
//! | POST | `/v1/tokens` | make a token `{"name", "scope": "read"\|"submit"\|"site", "hosts": [...]}` → 201 with its `secret`, shown only here (admin only) |
//! | GET | `/v1/tokens` | every token: id, name, scope, hosts, creation time, never the secret (admin only) |
//! | DELETE | `/v1/tokens/{id}` | remove it: refused from the next request on → `{"removed": id}` (admin only) |
//! | GET, POST | `/`, `/ui/...` | the web dashboard ([`crate::dashboard`], docs/dashboard.md) |

use crate::ServerError;
use crate::auth::access::{self, Caller, View};
use crate::auth::bearer_ok;
use axum::Router;
use axum::extract::{MatchedPath, Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Extension, Json};
use serde::Deserialize;
use shoal_coordinator::Coordinator;
use shoal_coordinator::{schedule, tokens};
use shoal_report::{Branding, HtmlOptions, Links, ReportError};
use shoal_shared::frontier::Frontier;
use shoal_shared::ids::{AuditId, ScheduleId, SiteId, TokenId};
use shoal_shared::time::UnixMs;
use shoal_shared::token::TokenRequest;
use shoal_shared::wire::{ScheduleRequest, SitePage, SubmitRequest};
use std::sync::Arc;

/// Request bodies larger than this are refused (a submit of 100,000 URLs fits).
const MAX_BODY: usize = 16 * 1024 * 1024;

struct AppState<F> {
    engine: Arc<Coordinator<F>>,
    token: Arc<str>,
    /// The operator's name and logo on a site's HTML report.
    branding: Arc<Branding>,
}

// By hand: a derive would ask `F: Clone`, and only the `Arc`s are cloned.
impl<F> Clone for AppState<F> {
    fn clone(&self) -> Self {
        AppState {
            engine: Arc::clone(&self.engine),
            token: Arc::clone(&self.token),
            branding: Arc::clone(&self.branding),
        }
    }
}

/// The API's routes over `engine`, requiring `Authorization: Bearer <token>` on everything but
/// `/healthz`; the dashboard's reports carry `branding`.
pub fn router<F: Frontier>(engine: Arc<Coordinator<F>>, token: String, branding: Arc<Branding>) -> Router {
    let state = AppState { engine, token: Arc::from(token), branding: Arc::clone(&branding) };
    let dashboard = crate::dashboard::router(Arc::clone(&state.engine), Arc::clone(&state.token), branding);
    let api = Router::new()
        .route("/v1/audits", post(submit::<F>).get(list::<F>))
        .route("/v1/audits/{id}", get(status::<F>))
        .route("/v1/audits/{id}/cancel", post(cancel::<F>))
        .route("/v1/audits/{id}/report", get(report::<F>))
        .route("/v1/audits/{id}/sites/{site}/report", get(site_report::<F>))
        .route("/v1/schedules", post(add_schedule::<F>).get(list_schedules::<F>))
        .route("/v1/schedules/{id}", get(get_schedule::<F>).delete(remove_schedule::<F>))
        .route("/v1/tokens", post(add_token::<F>).get(list_tokens::<F>))
        .route("/v1/tokens/{id}", delete(remove_token::<F>))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token::<F>));
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics))
        .merge(api)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
        .merge(dashboard)
}

/// Prometheus scrape endpoint. Unauthenticated like `/healthz`: it carries counts only, never a
/// host, URL or finding text.
pub async fn metrics() -> Response {
    ([(header::CONTENT_TYPE, shoal_metrics::CONTENT_TYPE)], shoal_metrics::metrics().encode()).into_response()
}

/// Serves `/metrics` (and `/healthz`) on `addr` until `shutdown`, for processes without the API
/// (workers, `shoal audit`).
pub async fn serve_metrics(
    addr: std::net::SocketAddr,
    shutdown: tokio_util::sync::CancellationToken,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("metrics listener on {addr}: {e}")))?;
    tracing::info!(listen = %addr, "serving /metrics");
    let app: Router = Router::new().route("/metrics", get(metrics)).route("/healthz", get(|| async { "ok" }));
    axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.cancelled().await }).await
}

/// Who sent the request: the admin token (compared in constant time), a stored token (looked up
/// per request, so a removed one is refused at once), or nobody.
async fn caller<F: Frontier>(st: &AppState<F>, headers: &axum::http::HeaderMap) -> Result<Option<Caller>, ServerError> {
    if bearer_ok(headers, &st.token) {
        return Ok(Some(Caller::Admin));
    }
    let Some(given) = crate::auth::bearer(headers) else { return Ok(None) };
    Ok(tokens::authenticate(&st.engine, given.to_owned()).await?.map(Caller::Token))
}

/// Lets a request in if its token may do what the route does ([`access::allow`]), with what it
/// sees as an extension ([`View`]); 401 without a known token, 403 with one whose scope does not
/// reach.
async fn require_token<F: Frontier>(State(st): State<AppState<F>>, mut req: Request, next: Next) -> Response {
    let who = match caller(&st, req.headers()).await {
        Ok(Some(who)) => who,
        Ok(None) => {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                Json(serde_json::json!({ "error": "missing or wrong bearer token" })),
            )
                .into_response();
        }
        Err(e) => return e.into_response(),
    };
    let route = req.extensions().get::<MatchedPath>().map_or_else(String::new, |m| m.as_str().to_owned());
    match access::allow(&who, req.method(), &route) {
        Ok(view) => {
            req.extensions_mut().insert(view);
            next.run(req).await
        }
        Err(refused) => {
            tracing::debug!(method = %req.method(), route, "API request refused for its token's scope");
            (StatusCode::FORBIDDEN, Json(serde_json::json!({ "error": refused.0 }))).into_response()
        }
    }
}

async fn submit<F: Frontier>(
    State(st): State<AppState<F>>,
    body: Result<Json<SubmitRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ServerError> {
    let Json(req) = body.map_err(|e| ServerError::BadRequest(format!("invalid request body: {e}")))?;
    let id = st.engine.submit(req).await?;
    Ok((StatusCode::CREATED, Json(serde_json::json!({ "id": id.0 }))).into_response())
}

async fn list<F: Frontier>(
    State(st): State<AppState<F>>,
    Extension(view): Extension<View>,
) -> Result<Response, ServerError> {
    let audits = match view {
        View::All => st.engine.list().await?,
        View::Sites(hosts) => tokens::list_for_hosts(&st.engine, hosts).await?,
    };
    Ok(Json(audits).into_response())
}

async fn status<F: Frontier>(
    State(st): State<AppState<F>>,
    Extension(view): Extension<View>,
    Path(id): Path<u64>,
    page: Result<Query<SitePage>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ServerError> {
    let Query(page) = page.map_err(|e| ServerError::BadRequest(format!("invalid query: {e}")))?;
    let audit = match view {
        View::All => st.engine.status_page(AuditId(id), page).await?,
        View::Sites(hosts) => tokens::status_for_hosts(&st.engine, AuditId(id), hosts, page).await?,
    };
    Ok(Json(audit).into_response())
}

async fn cancel<F: Frontier>(State(st): State<AppState<F>>, Path(id): Path<u64>) -> Result<Response, ServerError> {
    Ok(Json(st.engine.cancel(AuditId(id)).await?).into_response())
}

async fn add_schedule<F: Frontier>(
    State(st): State<AppState<F>>,
    body: Result<Json<ScheduleRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ServerError> {
    let Json(req) = body.map_err(|e| ServerError::BadRequest(format!("invalid request body: {e}")))?;
    let added = schedule::add(&st.engine, req, UnixMs::from(std::time::SystemTime::now())).await?;
    Ok((StatusCode::CREATED, Json(added)).into_response())
}

async fn list_schedules<F: Frontier>(State(st): State<AppState<F>>) -> Result<Response, ServerError> {
    Ok(Json(schedule::list(&st.engine).await?).into_response())
}

async fn get_schedule<F: Frontier>(
    State(st): State<AppState<F>>,
    Path(id): Path<u64>,
) -> Result<Response, ServerError> {
    Ok(Json(schedule::get(&st.engine, ScheduleId(id)).await?).into_response())
}

async fn remove_schedule<F: Frontier>(
    State(st): State<AppState<F>>,
    Path(id): Path<u64>,
) -> Result<Response, ServerError> {
    schedule::remove(&st.engine, ScheduleId(id)).await?;
    Ok(Json(serde_json::json!({ "removed": id })).into_response())
}

async fn add_token<F: Frontier>(
    State(st): State<AppState<F>>,
    body: Result<Json<TokenRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ServerError> {
    let Json(req) = body.map_err(|e| ServerError::BadRequest(format!("invalid request body: {e}")))?;
    let made = tokens::add(&st.engine, req, UnixMs::from(std::time::SystemTime::now())).await?;
    Ok((StatusCode::CREATED, Json(made)).into_response())
}

async fn list_tokens<F: Frontier>(State(st): State<AppState<F>>) -> Result<Response, ServerError> {
    Ok(Json(tokens::list(&st.engine).await?).into_response())
}

async fn remove_token<F: Frontier>(
    State(st): State<AppState<F>>,
    Path(id): Path<u64>,
) -> Result<Response, ServerError> {
    if tokens::remove(&st.engine, TokenId(id)).await? {
        Ok(Json(serde_json::json!({ "removed": id })).into_response())
    } else {
        Err(ServerError::NotFound(format!("no token {id}")))
    }
}

/// `GET /v1/audits/{id}/sites/{site}/report?format=json|html`: one site's report. A site token
/// gets only its hosts' sites; any other site, like one of another audit, is not found.
async fn site_report<F: Frontier>(
    State(st): State<AppState<F>>,
    Extension(view): Extension<View>,
    Path((id, site)): Path<(u64, u64)>,
    Query(q): Query<ReportQuery>,
) -> Result<Response, ServerError> {
    let (audit, site) = (AuditId(id), SiteId(site));
    if let View::Sites(hosts) = &view
        && !tokens::covers_site(&st.engine, audit, site, hosts.clone()).await?
    {
        return Err(ReportError::UnknownSite { site }.into());
    }
    let check = move |db: &shoal_store::AuditDb| match db.site(site)? {
        Some(s) if s.audit == audit => Ok(()),
        _ => Err(ReportError::UnknownSite { site }),
    };
    match q.format.as_deref().unwrap_or("json") {
        "json" => {
            let write = move |db: &_, out: &mut dyn std::io::Write| {
                check(db)?;
                shoal_report::write_site_json(db, site, out)
            };
            // A site's report lists only that site's start URL among the audit's options (the
            // report crate's rule), so a site token sees no other tenant's start URL in it.
            let body = crate::render_with(&st.engine, audit, write).await?;
            Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
        }
        "html" => {
            let branding = Arc::clone(&st.branding);
            let write = move |db: &_, out: &mut dyn std::io::Write| {
                check(db)?;
                let opts = HtmlOptions { branding: &branding, links: Links::SingleFile { inline: false } };
                shoal_report::write_site_html(db, site, opts, out)
            };
            Ok(crate::dashboard::report_page(crate::render_with(&st.engine, audit, write).await?))
        }
        other => Err(ServerError::BadRequest(format!("unknown site report format {other:?}; use json or html"))),
    }
}

#[derive(Debug, Deserialize)]
struct ReportQuery {
    format: Option<String>,
}

async fn report<F: Frontier>(
    State(st): State<AppState<F>>,
    Path(id): Path<u64>,
    Query(q): Query<ReportQuery>,
) -> Result<Response, ServerError> {
    let audit = AuditId(id);
    let (body, content_type) = match q.format.as_deref().unwrap_or("json") {
        "json" => (crate::render_report(&st.engine, audit, shoal_report::write_json).await?, "application/json"),
        "overview" => {
            let write = move |db: &_, out: &mut dyn std::io::Write| {
                shoal_report::write_overview_json(db, audit, shoal_report::Links::Dashboard { audit }, out)
            };
            (crate::render_with(&st.engine, audit, write).await?, "application/json")
        }
        "sarif" => {
            (crate::render_report(&st.engine, audit, shoal_report::write_sarif).await?, "application/sarif+json")
        }
        "junit" => {
            let gate = shoal_report::Gate { level: shoal_shared::finding::Severity::Error, new_only: false };
            let write = move |db: &_, out: &mut dyn std::io::Write| shoal_report::write_junit(db, audit, gate, out);
            (crate::render_with(&st.engine, audit, write).await?, "application/xml")
        }
        other => {
            return Err(ServerError::BadRequest(format!(
                "unknown report format {other:?}; use json, overview, sarif or junit"
            )));
        }
    };
    Ok(([(header::CONTENT_TYPE, content_type)], body).into_response())
}
