//! The coordinator's HTTP face: the JSON API ([`api`]), the dashboard ([`dashboard`]) and the one
//! authentication both use ([`auth`]), mounted in one router by [`serve`].
//!
//! It holds no state of its own beyond login sessions: every answer comes from the
//! [`Coordinator`] engine or, for reports, from the audit database read on a connection of its
//! own (WAL mode lets it read while the engine writes), so a long report never holds the writer.

pub mod api;
pub mod auth;
pub mod dashboard;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use shoal_coordinator::Coordinator;
use shoal_coordinator::engine::EngineError;
use shoal_report::{Branding, ReportError};
use shoal_shared::frontier::Frontier;
use shoal_shared::ids::AuditId;
use shoal_store::AuditDb;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a request can fail with, and so which HTTP status it gets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The request itself is wrong (400).
    #[error("{0}")]
    BadRequest(String),
    /// The engine refused or failed (400, 404 or 500 by its kind).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A report could not be written (500).
    #[error(transparent)]
    Report(#[from] ReportError),
    /// The blocking task that renders a report failed (500).
    #[error("report task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

impl IntoResponse for ServerError {
    fn into_response(self) -> Response {
        let (status, msg) = match &self {
            ServerError::BadRequest(m) | ServerError::Engine(EngineError::BadRequest(m)) => {
                (StatusCode::BAD_REQUEST, m.clone())
            }
            ServerError::Engine(EngineError::NotFound(_) | EngineError::NoSchedule(_)) => {
                (StatusCode::NOT_FOUND, self.to_string())
            }
            _ => {
                tracing::error!(error = %self, "API request failed");
                (StatusCode::INTERNAL_SERVER_ERROR, "internal error; see the coordinator's log".to_owned())
            }
        };
        (status, Json(serde_json::json!({ "error": msg }))).into_response()
    }
}

/// The signature of a report writer ([`shoal_report::write_json`], [`shoal_report::write_html`]).
pub type ReportWriter = fn(&AuditDb, AuditId, &mut dyn std::io::Write) -> Result<(), ReportError>;

/// Renders a report of `audit` on its own database connection, off the async threads.
///
/// # Errors
/// No such audit, or the database or the writer failed.
pub async fn render_report<F: Frontier>(
    engine: &Coordinator<F>,
    audit: AuditId,
    write: ReportWriter,
) -> Result<Vec<u8>, ServerError> {
    render_with(engine, audit, move |db, out| write(db, audit, out)).await
}

/// Renders what `write` writes about `audit` on its own database connection, off the async
/// threads (reports of large audits take seconds and must not hold the engine's connection).
///
/// # Errors
/// No such audit, or the database or the writer failed.
pub async fn render_with<F, W>(engine: &Coordinator<F>, audit: AuditId, write: W) -> Result<Vec<u8>, ServerError>
where
    F: Frontier,
    W: FnOnce(&AuditDb, &mut dyn std::io::Write) -> Result<(), ReportError> + Send + 'static,
{
    let path = shoal_coordinator::aggregate::lock(engine.db()).path().to_owned();
    tokio::task::spawn_blocking(move || -> Result<Vec<u8>, ServerError> {
        let db = AuditDb::open(&path).map_err(|e| ServerError::Engine(e.into()))?;
        if db.audit(audit).map_err(|e| ServerError::Engine(e.into()))?.is_none() {
            return Err(EngineError::NotFound(audit).into());
        }
        let mut buf = Vec::new();
        write(&db, &mut buf)?;
        Ok(buf)
    })
    .await?
}

/// Serves the API and the dashboard on `listener` until `shutdown`; the dashboard's reports carry
/// `branding` (the operator's name and logo).
///
/// # Errors
/// The listener failed.
pub async fn serve<F: Frontier>(
    listener: tokio::net::TcpListener,
    engine: Arc<Coordinator<F>>,
    token: String,
    branding: Branding,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = api::router(engine, token, Arc::new(branding));
    // The peer address is what the dashboard's login throttle counts per client.
    axum::serve(listener, app.into_make_service_with_connect_info::<std::net::SocketAddr>())
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}
