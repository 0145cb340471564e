//! The coordinator's HTTP API (JSON), behind a bearer token.
//!
//! | method | path | what |
//! |---|---|---|
//! | GET | `/healthz` | liveness, no token needed |
//! | GET | `/metrics` | Prometheus metrics (OpenMetrics text), no token needed |
//! | POST | `/v1/audits` | submit `{"urls": [...], "options": {...}}` → 201 `{"id": N}` |
//! | GET | `/v1/audits` | every audit with totals |
//! | GET | `/v1/audits/{id}?after=ID&limit=N` | one audit with the progress of a page of its sites (1,000 unless `limit`, at most 10,000; `sites_next_after` names the next page's `after`) |
//! | POST | `/v1/audits/{id}/cancel` | cancel; answers the audit's state |
//! | GET | `/v1/audits/{id}/report?format=json` | the JSON report (docs/report-json.md); `format=overview` the overview (`shoal.overview/v1`), `sarif` SARIF 2.1.0, `junit` JUnit XML (test cases fail on errors) |
//! | POST | `/v1/schedules` | add a recurring audit `{"name", "urls", "options", "when", "time_zone"}` → 201 with it |
//! | GET | `/v1/schedules` | every schedule with its last and next run |
//! | GET | `/v1/schedules/{id}` | one schedule with its start URLs |
//! | DELETE | `/v1/schedules/{id}` | remove it (its runs stay) → `{"removed": id}` |
//! | GET, POST | `/`, `/ui/...` | the web dashboard ([`crate::dashboard`], docs/dashboard.md) |

use crate::ServerError;
use crate::auth::bearer_ok;
use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use shoal_coordinator::Coordinator;
use shoal_coordinator::schedule;
use shoal_report::Branding;
use shoal_shared::frontier::Frontier;
use shoal_shared::ids::{AuditId, ScheduleId};
use shoal_shared::time::UnixMs;
use shoal_shared::wire::{ScheduleRequest, SitePage, SubmitRequest};
use std::sync::Arc;

/// Request bodies larger than this are refused (a submit of 100,000 URLs fits).
const MAX_BODY: usize = 16 * 1024 * 1024;

struct AppState<F> {
    engine: Arc<Coordinator<F>>,
    token: Arc<str>,
}

// By hand: a derive would ask `F: Clone`, and only the `Arc`s are cloned.
impl<F> Clone for AppState<F> {
    fn clone(&self) -> Self {
        AppState { engine: Arc::clone(&self.engine), token: Arc::clone(&self.token) }
    }
}

/// The API's routes over `engine`, requiring `Authorization: Bearer <token>` on everything but
/// `/healthz`; the dashboard's reports carry `branding`.
pub fn router<F: Frontier>(engine: Arc<Coordinator<F>>, token: String, branding: Arc<Branding>) -> Router {
    let state = AppState { engine, token: Arc::from(token) };
    let dashboard = crate::dashboard::router(Arc::clone(&state.engine), Arc::clone(&state.token), branding);
    let api = Router::new()
        .route("/v1/audits", post(submit::<F>).get(list::<F>))
        .route("/v1/audits/{id}", get(status::<F>))
        .route("/v1/audits/{id}/cancel", post(cancel::<F>))
        .route("/v1/audits/{id}/report", get(report::<F>))
        .route("/v1/schedules", post(add_schedule::<F>).get(list_schedules::<F>))
        .route("/v1/schedules/{id}", get(get_schedule::<F>).delete(remove_schedule::<F>))
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

async fn require_token<F: Frontier>(State(st): State<AppState<F>>, req: Request, next: Next) -> Response {
    if bearer_ok(req.headers(), &st.token) {
        next.run(req).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            Json(serde_json::json!({ "error": "missing or wrong bearer token" })),
        )
            .into_response()
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

async fn list<F: Frontier>(State(st): State<AppState<F>>) -> Result<Response, ServerError> {
    Ok(Json(st.engine.list().await?).into_response())
}

async fn status<F: Frontier>(
    State(st): State<AppState<F>>,
    Path(id): Path<u64>,
    page: Result<Query<SitePage>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ServerError> {
    let Query(page) = page.map_err(|e| ServerError::BadRequest(format!("invalid query: {e}")))?;
    Ok(Json(st.engine.status_page(AuditId(id), page).await?).into_response())
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
