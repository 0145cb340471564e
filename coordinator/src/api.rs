//! The coordinator's HTTP API (JSON), behind a bearer token.
//!
//! | method | path | what |
//! |---|---|---|
//! | GET | `/healthz` | liveness, no token needed |
//! | GET | `/metrics` | Prometheus metrics (OpenMetrics text), no token needed |
//! | POST | `/v1/audits` | submit `{"urls": [...], "options": {...}}` → 201 `{"id": N}` |
//! | GET | `/v1/audits` | every audit with totals |
//! | GET | `/v1/audits/{id}` | one audit with per-site progress |
//! | POST | `/v1/audits/{id}/cancel` | cancel; answers the audit's state |
//! | GET | `/v1/audits/{id}/report?format=json` | the JSON report (docs/report-json.md) |
//! | GET, POST | `/`, `/ui/...` | the web dashboard ([`crate::dashboard`], docs/dashboard.md) |

use crate::service::{Service, ServiceError, SubmitRequest};
use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use shoal_shared::ids::AuditId;
use std::sync::Arc;

/// Request bodies larger than this are refused (a submit of 100,000 URLs fits).
const MAX_BODY: usize = 16 * 1024 * 1024;

#[derive(Clone)]
struct AppState {
    service: Arc<Service>,
    token: Arc<str>,
}

impl IntoResponse for ServiceError {
    fn into_response(self) -> Response {
        let (status, msg) = match &self {
            ServiceError::BadRequest(m) => (StatusCode::BAD_REQUEST, m.clone()),
            ServiceError::NotFound(_) => (StatusCode::NOT_FOUND, self.to_string()),
            _ => {
                tracing::error!(error = %format!("{self:#}"), "API request failed");
                (StatusCode::INTERNAL_SERVER_ERROR, "internal error; see the coordinator's log".to_owned())
            }
        };
        (status, Json(serde_json::json!({ "error": msg }))).into_response()
    }
}

/// The API's routes over `service`, requiring `Authorization: Bearer <token>` on everything but
/// `/healthz`.
pub fn router(service: Arc<Service>, token: String) -> Router {
    let state = AppState { service, token: Arc::from(token) };
    let dashboard = crate::dashboard::router(Arc::clone(&state.service), Arc::clone(&state.token));
    let api = Router::new()
        .route("/v1/audits", post(submit).get(list))
        .route("/v1/audits/{id}", get(status))
        .route("/v1/audits/{id}/cancel", post(cancel))
        .route("/v1/audits/{id}/report", get(report))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
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
) -> anyhow::Result<()> {
    use anyhow::Context;
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("metrics listener on {addr}"))?;
    tracing::info!(listen = %addr, "serving /metrics");
    let app: Router = Router::new().route("/metrics", get(metrics)).route("/healthz", get(|| async { "ok" }));
    axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.cancelled().await }).await?;
    Ok(())
}

/// Whether `given` equals the secret `want`, in time that depends only on `given`'s length: the
/// token (or a CSRF value) can be guessed neither byte by byte nor by its length from response
/// times. Every byte of `given` is compared with a byte of `want` (cycling), and the lengths are
/// compared without a branch.
pub(crate) fn same(given: &[u8], want: &[u8]) -> bool {
    let Some(&first) = want.first() else { return given.is_empty() };
    let mut diff = u8::from(given.len() != want.len());
    for (i, g) in given.iter().enumerate() {
        // `want` is not empty, so `get` always finds a byte; `first` keeps the loop branch-free.
        diff |= g ^ want.get(i % want.len()).copied().unwrap_or(first);
    }
    std::hint::black_box(diff) == 0
}

/// Whether `headers` carry `Authorization: Bearer <token>` (constant-time; an empty `token` never
/// matches). Shared with the dashboard, which also accepts the header.
pub(crate) fn bearer_ok(headers: &axum::http::HeaderMap, token: &str) -> bool {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    !token.is_empty() && same(given.as_bytes(), token.as_bytes())
}

async fn require_token(State(st): State<AppState>, req: Request, next: Next) -> Response {
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

async fn submit(
    State(st): State<AppState>,
    body: Result<Json<SubmitRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ServiceError> {
    let Json(req) = body.map_err(|e| ServiceError::BadRequest(format!("invalid request body: {e}")))?;
    let id = st.service.submit(req).await?;
    Ok((StatusCode::CREATED, Json(serde_json::json!({ "id": id.0 }))).into_response())
}

async fn list(State(st): State<AppState>) -> Result<Response, ServiceError> {
    Ok(Json(st.service.list().await?).into_response())
}

async fn status(State(st): State<AppState>, Path(id): Path<u64>) -> Result<Response, ServiceError> {
    Ok(Json(st.service.status(AuditId(id)).await?).into_response())
}

async fn cancel(State(st): State<AppState>, Path(id): Path<u64>) -> Result<Response, ServiceError> {
    Ok(Json(st.service.cancel(AuditId(id)).await?).into_response())
}

#[derive(Debug, Deserialize)]
struct ReportQuery {
    format: Option<String>,
}

async fn report(
    State(st): State<AppState>,
    Path(id): Path<u64>,
    Query(q): Query<ReportQuery>,
) -> Result<Response, ServiceError> {
    match q.format.as_deref().unwrap_or("json") {
        "json" => {
            let service = Arc::clone(&st.service);
            let body = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, ServiceError> {
                let mut buf = Vec::new();
                service.report_json(AuditId(id), &mut buf)?;
                Ok(buf)
            })
            .await
            .map_err(|e| ServiceError::Internal(anyhow::anyhow!("report task: {e}")))??;
            Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
        }
        other => Err(ServiceError::BadRequest(format!("unknown report format {other:?}; use json"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_compares_whole_values() {
        assert!(same(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!same(b"0123456789abcdeF", b"0123456789abcdef"));
        assert!(!same(b"0123456789abcde", b"0123456789abcdef"), "a prefix");
        assert!(!same(b"0123456789abcdef0", b"0123456789abcdef"), "longer");
        assert!(!same(b"01234567", b"0123456701234567"), "the first half of a repeating token");
        assert!(!same(b"", b"x"));
        assert!(same(b"", b""));
        assert!(!same(b"x", b""));
    }

    #[test]
    fn bearer_needs_the_exact_token() {
        let mut h = axum::http::HeaderMap::new();
        assert!(!bearer_ok(&h, "0123456789abcdef"));
        h.insert(header::AUTHORIZATION, axum::http::HeaderValue::from_static("Bearer 0123456789abcdef"));
        assert!(bearer_ok(&h, "0123456789abcdef"));
        assert!(!bearer_ok(&h, "0123456789abcdeX"));
        assert!(!bearer_ok(&h, ""), "an empty token never matches");
        h.insert(header::AUTHORIZATION, axum::http::HeaderValue::from_static("Bearer "));
        assert!(!bearer_ok(&h, ""), "not even an empty header");
    }
}
