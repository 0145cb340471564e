//! The coordinator's HTTP face: the JSON API ([`api`]), the dashboard ([`dashboard`]), the MCP
//! tools ([`mcp`]) and the one authentication they use ([`auth`]), mounted in one router by
//! [`serve`].
//!
//! It holds no state of its own beyond login sessions: every answer comes from the
//! [`Coordinator`] engine or, for reports, from the audit database read on a connection of its
//! own (WAL mode lets it read while the engine writes), so a long report never holds the writer.

pub mod api;
pub mod auth;
pub mod dashboard;
pub mod mcp;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use shoal_coordinator::Coordinator;
use shoal_coordinator::engine::EngineError;
use shoal_report::{Branding, ReportError};
use shoal_shared::frontier::Frontier;
use shoal_shared::ids::AuditId;
use shoal_store::AuditDb;
use std::future::IntoFuture as _;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What a request can fail with, and so which HTTP status it gets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The request itself is wrong (400).
    #[error("{0}")]
    BadRequest(String),
    /// What the request names does not exist, or not for its token (404).
    #[error("{0}")]
    NotFound(String),
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
            ServerError::Engine(EngineError::NotFound(_) | EngineError::NoSchedule(_))
            | ServerError::NotFound(_)
            | ServerError::Report(ReportError::UnknownSite { .. }) => (StatusCode::NOT_FOUND, self.to_string()),
            // The request is fine; the fleet cannot run it now (no browser worker is live).
            ServerError::Engine(EngineError::NoBrowserWorker { .. }) => (StatusCode::CONFLICT, self.to_string()),
            _ => {
                tracing::error!(error = %self, "API request failed");
                (StatusCode::INTERNAL_SERVER_ERROR, "internal error; see the coordinator's log".to_owned())
            }
        };
        (status, Json(api::openapi::ErrorBody { error: msg })).into_response()
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

/// How long the API's and the dashboard's requests in flight get after shutdown before the server
/// stops without them: a client that never finishes (a stalled report download, a connection
/// held open) must not keep the coordinator from exiting. The same order as the worker's drain.
pub const DRAIN_DEADLINE: Duration = Duration::from_secs(10);

/// Serves the API and the dashboard on `listener` until `shutdown`, then lets requests in flight
/// finish for at most [`DRAIN_DEADLINE`]; the dashboard's reports carry `branding` (the
/// operator's name and logo).
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
    let app = api::router(engine, token, Arc::new(branding), &shutdown)
        .map_err(|e| std::io::Error::other(format!("opening the audit database for /mcp: {e}")))?;
    serve_app(listener, app, shutdown, DRAIN_DEADLINE).await
}

/// Serves `app` until `shutdown`, then drains for at most `drain`. Past it the serving future is
/// dropped: the connections still open are axum's own tasks, which end with the runtime when the
/// coordinator returns.
async fn serve_app(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    shutdown: CancellationToken,
    drain: Duration,
) -> std::io::Result<()> {
    // The peer address is what the dashboard's login throttle counts per client.
    let serving = axum::serve(listener, app.into_make_service_with_connect_info::<std::net::SocketAddr>())
        .with_graceful_shutdown(shutdown.clone().cancelled_owned());
    let mut serving = std::pin::pin!(serving.into_future());
    tokio::select! {
        done = &mut serving => done,
        () = shutdown.cancelled() => match tokio::time::timeout(drain, serving).await {
            Ok(done) => done,
            Err(_) => {
                tracing::warn!(
                    deadline_ms = u64::try_from(drain.as_millis()).unwrap_or(u64::MAX),
                    "API requests still in flight at the drain deadline; the server stops without them"
                );
                Ok(())
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// A request whose handler never answers would hold a graceful shutdown forever; the drain
    /// deadline ends it. (Without the deadline this test's outer timeout fires.)
    #[tokio::test]
    async fn a_request_that_never_ends_does_not_hold_the_shutdown_past_the_deadline() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (entered_tx, entered_rx) = tokio::sync::oneshot::channel::<()>();
        let entered = std::sync::Mutex::new(Some(entered_tx));
        let entered = Arc::new(entered);
        let app = axum::Router::new().route(
            "/hang",
            axum::routing::get(move || {
                let entered = Arc::clone(&entered);
                async move {
                    if let Some(tx) = entered.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
                        let _ = tx.send(());
                    }
                    std::future::pending::<&'static str>().await
                }
            }),
        );
        let shutdown = CancellationToken::new();
        let mut server = tokio::task::JoinSet::new();
        server.spawn(serve_app(listener, app, shutdown.clone(), Duration::from_millis(300)));

        let mut client = tokio::net::TcpStream::connect(addr).await.expect("connect");
        client.write_all(b"GET /hang HTTP/1.1\r\nhost: x\r\n\r\n").await.expect("send");
        tokio::time::timeout(Duration::from_secs(10), entered_rx).await.expect("the handler runs").expect("entered");

        shutdown.cancel();
        let ended = tokio::time::timeout(Duration::from_secs(10), server.join_next()).await;
        let done = ended.expect("serve returns after the drain deadline").expect("one task").expect("no panic");
        assert!(done.is_ok(), "{done:?}");
        // The client got no answer, and was not answered after the server returned either.
        let mut buf = [0u8; 16];
        let read = tokio::time::timeout(Duration::from_millis(100), client.read(&mut buf)).await;
        assert!(!matches!(read, Ok(Ok(n)) if n > 0), "no answer to the hanging request");
    }

    /// With nothing in flight the server returns at once, not after the deadline.
    #[tokio::test]
    async fn an_idle_server_stops_at_once() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let shutdown = CancellationToken::new();
        let mut server = tokio::task::JoinSet::new();
        server.spawn(serve_app(listener, axum::Router::new(), shutdown.clone(), Duration::from_secs(3600)));
        shutdown.cancel();
        let ended = tokio::time::timeout(Duration::from_secs(10), server.join_next()).await;
        assert!(matches!(ended, Ok(Some(Ok(Ok(()))))), "{ended:?}");
    }
}
