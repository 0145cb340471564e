//! The coordinator's HTTP API (JSON), behind a bearer token: the admin token (`--token`), or a
//! token with a scope (`read`, `submit`, `site`; [`crate::auth::access`] says which route needs
//! which). No token or an unknown one is 401; a token without the scope a route needs is 403.
//!
//! | method | path | what |
//! |---|---|---|
//! | GET | `/healthz` | liveness, no token needed |
//! | GET | `/metrics` | Prometheus metrics (OpenMetrics text), no token needed |
//! | GET | `/v1/openapi.json` | the OpenAPI 3.1 document of this API ([`openapi`], docs/openapi.json), no token needed |
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
//! | POST | `/mcp` | the MCP tools over streamable HTTP ([`crate::mcp`], docs/mcp.md): `read` or `submit`; `audit_site` needs `submit` |
//! | GET, POST | `/`, `/ui/...` | the web dashboard ([`crate::dashboard`], docs/dashboard.md) |

pub mod openapi;

use crate::ServerError;
use crate::auth::access::{self, Caller, View};
use crate::auth::bearer_ok;
use axum::Router;
use axum::extract::{MatchedPath, Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json};
use openapi::{ErrorBody, Removed, Submitted};
use serde::Deserialize;
use shoal_coordinator::Coordinator;
use shoal_coordinator::{schedule, tokens};
use shoal_report::{Branding, HtmlOptions, Links, ReportError};
use shoal_shared::frontier::Frontier;
use shoal_shared::ids::{AuditId, ScheduleId, SiteId, TokenId};
use shoal_shared::time::UnixMs;
use shoal_shared::token::{NewToken, TokenRequest, TokenView};
use shoal_shared::wire::{AuditView, ScheduleRequest, ScheduleView, SitePage, SubmitRequest};
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;

/// [`openapi::described`] for a handler generic over the frontier `F` in scope: the handler and
/// the type its `#[utoipa::path]` generated beside it, named once.
macro_rules! described {
    ($handler:ident) => {
        utoipa_axum::paste! { openapi::described::<[<__path_ $handler>], _, _, _>($handler::<F>) }
    };
}

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
/// `/healthz`, `/metrics` and `/v1/openapi.json`, and the MCP endpoint `/mcp` ([`crate::mcp`])
/// behind the same tokens; the dashboard's reports carry `branding`. `/mcp` stops answering at
/// `shutdown`.
///
/// # Errors
/// The audit database could not be opened for `/mcp`'s reads.
pub fn router<F: Frontier>(
    engine: Arc<Coordinator<F>>,
    token: String,
    branding: Arc<Branding>,
    shutdown: &tokio_util::sync::CancellationToken,
) -> Result<Router, shoal_store::DbError> {
    let mcp = crate::mcp::service(&engine, shutdown)?;
    let state = AppState { engine, token: Arc::from(token), branding: Arc::clone(&branding) };
    let dashboard = crate::dashboard::router(Arc::clone(&state.engine), Arc::clone(&state.token), branding);
    let (api, doc) = described_routes::<F>()
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token::<F>))
        .merge(public_routes())
        .split_for_parts();
    // Serialised once: the document is the same for every request.
    let doc = openapi::Served(Arc::from(openapi::json(openapi::complete(doc))));
    // The token check runs first (the outer layer), then the grant it allows the tools.
    let mcp = Router::new()
        .route(access::MCP, mcp)
        .route_layer(middleware::from_fn(crate::mcp::grant))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token::<F>));
    Ok(Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics))
        .merge(api)
        .layer(Extension(doc))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
        .merge(mcp)
        .merge(dashboard))
}

/// The OpenAPI document of the API ([`openapi`]), as `GET /v1/openapi.json` serves it.
#[must_use]
pub fn openapi_json() -> String {
    // The document does not depend on the frontier: any will do to name the handlers.
    let routes = described_routes::<shoal_shared::frontier::embedded::EmbeddedFrontier>().merge(public_routes());
    openapi::json(openapi::complete(routes.into_openapi()))
}

/// The routes under `/v1` without a token: the document itself.
fn public_routes<S: Clone + Send + Sync + 'static>() -> OpenApiRouter<S> {
    OpenApiRouter::new().routes(utoipa_axum::routes!(openapi::document))
}

/// Every route behind a token, each served and described from its handler's `#[utoipa::path]`
/// ([`openapi::described`]): there is no other way to add one, so none lacks its description.
fn described_routes<F: Frontier>() -> OpenApiRouter<AppState<F>> {
    OpenApiRouter::with_openapi(utoipa::openapi::OpenApiBuilder::new().build())
        .routes(described!(submit))
        .routes(described!(list))
        .routes(described!(status))
        .routes(described!(cancel))
        .routes(described!(report))
        .routes(described!(site_report))
        .routes(described!(add_schedule))
        .routes(described!(list_schedules))
        .routes(described!(get_schedule))
        .routes(described!(remove_schedule))
        .routes(described!(add_token))
        .routes(described!(list_tokens))
        .routes(described!(remove_token))
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
/// sees ([`View`]) and who it is ([`Caller`]) as extensions; 401 without a known token, 403 with
/// one whose scope does not reach.
async fn require_token<F: Frontier>(State(st): State<AppState<F>>, mut req: Request, next: Next) -> Response {
    let who = match caller(&st, req.headers()).await {
        Ok(Some(who)) => who,
        Ok(None) => {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                Json(ErrorBody { error: "missing or wrong bearer token".to_owned() }),
            )
                .into_response();
        }
        Err(e) => return e.into_response(),
    };
    let route = req.extensions().get::<MatchedPath>().map_or_else(String::new, |m| m.as_str().to_owned());
    match access::allow(&who, req.method(), &route) {
        Ok(view) => {
            req.extensions_mut().insert(view);
            req.extensions_mut().insert(who);
            next.run(req).await
        }
        Err(refused) => {
            tracing::debug!(method = %req.method(), route, "API request refused for its token's scope");
            (StatusCode::FORBIDDEN, Json(ErrorBody { error: refused.0 })).into_response()
        }
    }
}

#[utoipa::path(post, path = "/v1/audits", operation_id = "submit_audit", tag = "audits",
    summary = "Submit an audit of one site per start URL",
    request_body = SubmitRequest,
    responses(
        (status = 201, description = "The audit was accepted", body = Submitted),
        (status = 400, description = "The body or an option is wrong", body = ErrorBody),
        (status = 409, description = "The audit needs a browser (`browser_pages` over 0) and no worker \
            started with `--browser` is live: start one, or submit without browser pages and with render never", body = ErrorBody),
    ))]
async fn submit<F: Frontier>(
    State(st): State<AppState<F>>,
    body: Result<Json<SubmitRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ServerError> {
    let Json(req) = body.map_err(|e| ServerError::BadRequest(format!("invalid request body: {e}")))?;
    let id = st.engine.submit(req).await?;
    Ok((StatusCode::CREATED, Json(Submitted { id: id.0 })).into_response())
}

#[utoipa::path(get, path = "/v1/audits", operation_id = "list_audits", tag = "audits",
    summary = "Every audit with its totals (a site token: the audits holding its sites, counted over them)",
    responses((status = 200, description = "The audits, newest last", body = Vec<AuditView>)))]
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

#[utoipa::path(get, path = "/v1/audits/{id}", operation_id = "get_audit", tag = "audits",
    summary = "One audit with the progress of a page of its sites",
    params(("id" = u64, Path, description = "The audit's id"), SitePage),
    responses(
        (status = 200, description = "The audit; `sites_next_after` names the next page's `after`", body = AuditView),
        (status = 400, description = "A wrong query", body = ErrorBody),
        (status = 404, description = "No such audit (or none for this site token)", body = ErrorBody),
    ))]
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

#[utoipa::path(post, path = "/v1/audits/{id}/cancel", operation_id = "cancel_audit", tag = "audits",
    summary = "Cancel an audit; what was crawled is kept",
    params(("id" = u64, Path, description = "The audit's id")),
    responses(
        (status = 200, description = "The audit's state after the cancel", body = AuditView),
        (status = 404, description = "No such audit", body = ErrorBody),
    ))]
async fn cancel<F: Frontier>(State(st): State<AppState<F>>, Path(id): Path<u64>) -> Result<Response, ServerError> {
    Ok(Json(st.engine.cancel(AuditId(id)).await?).into_response())
}

#[utoipa::path(post, path = "/v1/schedules", operation_id = "add_schedule", tag = "schedules",
    summary = "Add a recurring audit",
    request_body = ScheduleRequest,
    responses(
        (status = 201, description = "The schedule as added, with its next run", body = ScheduleView),
        (status = 400, description = "The body, the pattern or the time zone is wrong", body = ErrorBody),
    ))]
async fn add_schedule<F: Frontier>(
    State(st): State<AppState<F>>,
    body: Result<Json<ScheduleRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ServerError> {
    let Json(req) = body.map_err(|e| ServerError::BadRequest(format!("invalid request body: {e}")))?;
    let added = schedule::add(&st.engine, req, UnixMs::from(std::time::SystemTime::now())).await?;
    Ok((StatusCode::CREATED, Json(added)).into_response())
}

#[utoipa::path(get, path = "/v1/schedules", operation_id = "list_schedules", tag = "schedules",
    summary = "Every schedule with its last and next run",
    responses((status = 200, description = "The schedules", body = Vec<ScheduleView>)))]
async fn list_schedules<F: Frontier>(State(st): State<AppState<F>>) -> Result<Response, ServerError> {
    Ok(Json(schedule::list(&st.engine).await?).into_response())
}

#[utoipa::path(get, path = "/v1/schedules/{id}", operation_id = "get_schedule", tag = "schedules",
    summary = "One schedule with its start URLs",
    params(("id" = u64, Path, description = "The schedule's id")),
    responses(
        (status = 200, description = "The schedule", body = ScheduleView),
        (status = 404, description = "No such schedule", body = ErrorBody),
    ))]
async fn get_schedule<F: Frontier>(
    State(st): State<AppState<F>>,
    Path(id): Path<u64>,
) -> Result<Response, ServerError> {
    Ok(Json(schedule::get(&st.engine, ScheduleId(id)).await?).into_response())
}

#[utoipa::path(delete, path = "/v1/schedules/{id}", operation_id = "remove_schedule", tag = "schedules",
    summary = "Remove a schedule (its runs stay)",
    params(("id" = u64, Path, description = "The schedule's id")),
    responses(
        (status = 200, description = "It was removed", body = Removed),
        (status = 404, description = "No such schedule", body = ErrorBody),
    ))]
async fn remove_schedule<F: Frontier>(
    State(st): State<AppState<F>>,
    Path(id): Path<u64>,
) -> Result<Response, ServerError> {
    schedule::remove(&st.engine, ScheduleId(id)).await?;
    Ok(Json(Removed { removed: id }).into_response())
}

#[utoipa::path(post, path = "/v1/tokens", operation_id = "add_token", tag = "tokens",
    summary = "Make a token with a scope; the only answer that shows its secret",
    request_body = TokenRequest,
    responses(
        (status = 201, description = "The token and its secret", body = NewToken),
        (status = 400, description = "A wrong scope, host or name", body = ErrorBody),
    ))]
async fn add_token<F: Frontier>(
    State(st): State<AppState<F>>,
    body: Result<Json<TokenRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ServerError> {
    let Json(req) = body.map_err(|e| ServerError::BadRequest(format!("invalid request body: {e}")))?;
    let made = tokens::add(&st.engine, req, UnixMs::from(std::time::SystemTime::now())).await?;
    Ok((StatusCode::CREATED, Json(made)).into_response())
}

#[utoipa::path(get, path = "/v1/tokens", operation_id = "list_tokens", tag = "tokens",
    summary = "Every token, never a secret",
    responses((status = 200, description = "The tokens", body = Vec<TokenView>)))]
async fn list_tokens<F: Frontier>(State(st): State<AppState<F>>) -> Result<Response, ServerError> {
    Ok(Json(tokens::list(&st.engine).await?).into_response())
}

#[utoipa::path(delete, path = "/v1/tokens/{id}", operation_id = "remove_token", tag = "tokens",
    summary = "Remove a token: refused from the next request on",
    params(("id" = u64, Path, description = "The token's id")),
    responses(
        (status = 200, description = "It was removed", body = Removed),
        (status = 404, description = "No such token", body = ErrorBody),
    ))]
async fn remove_token<F: Frontier>(
    State(st): State<AppState<F>>,
    Path(id): Path<u64>,
) -> Result<Response, ServerError> {
    if tokens::remove(&st.engine, TokenId(id)).await? {
        Ok(Json(Removed { removed: id }).into_response())
    } else {
        Err(ServerError::NotFound(format!("no token {id}")))
    }
}

/// `GET /v1/audits/{id}/sites/{site}/report?format=json|html`: one site's report. A site token
/// gets only its hosts' sites; any other site, like one of another audit, is not found.
#[utoipa::path(get, path = "/v1/audits/{id}/sites/{site}/report", operation_id = "get_site_report", tag = "reports",
    summary = "One site's report",
    description = "`json`: the site's `shoal.report/v1` document, described in docs/report-json.md (not repeated \
                   here: it is large and versioned by its own `schema` field). `html`: its self-contained HTML report.",
    params(
        ("id" = u64, Path, description = "The audit's id"),
        ("site" = u64, Path, description = "The site's id (`sites[].id` of the audit's status)"),
        ("format" = inline(Option<SiteReportFormat>), Query, description = "`json` unless given"),
    ),
    responses(
        (status = 200, description = "The report",
            content((Object = "application/json"), (String = "text/html"))),
        (status = 400, description = "An unknown format", body = ErrorBody),
        (status = 404, description = "No such audit or site (or not one of this site token's)", body = ErrorBody),
    ))]
async fn site_report<F: Frontier>(
    State(st): State<AppState<F>>,
    Extension(view): Extension<View>,
    Path((id, site)): Path<(u64, u64)>,
    q: Result<Query<ReportQuery<SiteReportFormat>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ServerError> {
    let format = format_of(q)?;
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
    match format {
        SiteReportFormat::Json => {
            let write = move |db: &_, out: &mut dyn std::io::Write| {
                check(db)?;
                shoal_report::write_site_json(db, site, out)
            };
            // A site's report lists only that site's start URL among the audit's options (the
            // report crate's rule), so a site token sees no other tenant's start URL in it.
            let body = crate::render_with(&st.engine, audit, write).await?;
            Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
        }
        SiteReportFormat::Html => {
            let branding = Arc::clone(&st.branding);
            let write = move |db: &_, out: &mut dyn std::io::Write| {
                check(db)?;
                let opts = HtmlOptions { branding: &branding, links: Links::SingleFile { inline: false } };
                shoal_report::write_site_html(db, site, opts, out)
            };
            Ok(crate::dashboard::report_page(crate::render_with(&st.engine, audit, write).await?))
        }
    }
}

/// `?format=` of a report route: the format type's spellings are what the document lists.
#[derive(Debug, Deserialize)]
struct ReportQuery<T> {
    format: Option<T>,
}

/// The formats of a whole audit's report.
#[derive(Debug, Clone, Copy, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
enum ReportFormat {
    /// `shoal.report/v1` (docs/report-json.md).
    #[default]
    Json,
    /// `shoal.overview/v1`.
    Overview,
    /// SARIF 2.1.0.
    Sarif,
    /// JUnit XML.
    Junit,
}

/// The formats of one site's report.
#[derive(Debug, Clone, Copy, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
enum SiteReportFormat {
    /// The site's `shoal.report/v1` document.
    #[default]
    Json,
    /// Its self-contained HTML report.
    Html,
}

/// The format a report route was asked for, or 400 naming the ones there are (serde's message
/// lists them) as JSON, like every error of the API, where axum's own rejection is plain text.
fn format_of<T: Default>(
    q: Result<Query<ReportQuery<T>>, axum::extract::rejection::QueryRejection>,
) -> Result<T, ServerError> {
    let Query(q) = q.map_err(|e| ServerError::BadRequest(e.body_text()))?;
    Ok(q.format.unwrap_or_default())
}

#[utoipa::path(get, path = "/v1/audits/{id}/report", operation_id = "get_audit_report", tag = "reports",
    summary = "The whole audit's report",
    description = "`json`: `shoal.report/v1` (docs/report-json.md); `overview`: `shoal.overview/v1`; `sarif`: \
                   SARIF 2.1.0; `junit`: JUnit XML whose test cases fail on errors (docs/report-ci.md). The JSON \
                   documents are described in those pages, not repeated here.",
    params(
        ("id" = u64, Path, description = "The audit's id"),
        ("format" = inline(Option<ReportFormat>), Query, description = "`json` unless given"),
    ),
    responses(
        (status = 200, description = "The report",
            content((Object = "application/json"), (Object = "application/sarif+json"), (String = "application/xml"))),
        (status = 400, description = "An unknown format", body = ErrorBody),
        (status = 404, description = "No such audit", body = ErrorBody),
    ))]
async fn report<F: Frontier>(
    State(st): State<AppState<F>>,
    Path(id): Path<u64>,
    q: Result<Query<ReportQuery<ReportFormat>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ServerError> {
    let format = format_of(q)?;
    let audit = AuditId(id);
    let (body, content_type) = match format {
        ReportFormat::Json => {
            (crate::render_report(&st.engine, audit, shoal_report::write_json).await?, "application/json")
        }
        ReportFormat::Overview => {
            let write = move |db: &_, out: &mut dyn std::io::Write| {
                shoal_report::write_overview_json(db, audit, shoal_report::Links::Dashboard { audit }, out)
            };
            (crate::render_with(&st.engine, audit, write).await?, "application/json")
        }
        ReportFormat::Sarif => {
            (crate::render_report(&st.engine, audit, shoal_report::write_sarif).await?, "application/sarif+json")
        }
        ReportFormat::Junit => {
            let gate = shoal_report::Gate { level: shoal_shared::finding::Severity::Error, new_only: false };
            let write = move |db: &_, out: &mut dyn std::io::Write| shoal_report::write_junit(db, audit, gate, out);
            (crate::render_with(&st.engine, audit, write).await?, "application/xml")
        }
    };
    Ok(([(header::CONTENT_TYPE, content_type)], body).into_response())
}
