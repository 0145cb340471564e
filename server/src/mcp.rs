//! `/mcp`: the MCP tools of `shoal mcp` ([`shoal_mcp`]) on the coordinator, over streamable HTTP,
//! behind the API's tokens ([`crate::auth::access`]: `/mcp` needs `read` or `submit`; the admin
//! token may do everything). A `site` token is refused: the tools read the whole database, and the
//! API's site report is that token's view.
//!
//! The reading tools read the audit database on a connection of their own (WAL: never the
//! engine's writer). `audit_site` submits the audit to the fleet as `POST /v1/audits` would, with
//! the coordinator's default limits as its ceilings, and needs `submit`: the API's middleware
//! decides it per request and hands the tools a [`Grant`].

use axum::Extension;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use shoal_coordinator::Coordinator;
use shoal_mcp::{AuditFuture, AuditPlan, AuditRun, Auditor, Ceilings, Grant};
use shoal_shared::frontier::Frontier;
use shoal_shared::status::AuditStatus;
use shoal_shared::wire::{AuditOptions, SubmitRequest};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use crate::auth::access::{self, Action, Caller};

/// How long `audit_site` waits for the audit it submitted before it answers `running` with the
/// counts so far: under the tool-call timeouts of common MCP clients (about a minute), and the
/// audit goes on in the fleet whether anyone waits or not.
pub const AUDIT_WAIT: Duration = Duration::from_secs(45);

/// The `/mcp` service over `engine`'s database (on a connection opened here), starting audits on
/// `engine`; it stops answering at `shutdown`.
///
/// # Errors
/// The database could not be opened for reading.
pub(crate) fn service<F: Frontier>(
    engine: &Arc<Coordinator<F>>,
    shutdown: &CancellationToken,
) -> Result<axum::routing::MethodRouter, shoal_store::DbError> {
    let path = shoal_coordinator::aggregate::lock(engine.db()).path().to_owned();
    let db = Arc::new(std::sync::Mutex::new(shoal_store::AuditDb::open(&path)?));
    let auditor = FleetAuditor { engine: Arc::clone(engine), shutdown: shutdown.clone() };
    let mcp = shoal_mcp::http::service(db, Some(Arc::new(auditor)), shutdown.child_token());
    Ok(axum::routing::post_service(mcp))
}

/// After the API's token check (which put the [`Caller`] in the request): what the caller may do
/// with the tools.
pub(crate) async fn grant(Extension(who): Extension<Caller>, mut req: Request, next: Next) -> Response {
    let audits = access::reaches(&who, access::need(Action::Submit)).is_some();
    let grant = if audits { Grant::ReadAndAudit } else { Grant::Read };
    req.extensions_mut().insert(grant);
    next.run(req).await
}

/// Audits submitted to the coordinator's fleet.
struct FleetAuditor<F> {
    engine: Arc<Coordinator<F>>,
    /// The coordinator's: a waiting call ends at shutdown (the audit itself is the engine's).
    shutdown: CancellationToken,
}

impl<F> std::fmt::Debug for FleetAuditor<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FleetAuditor")
    }
}

impl<F: Frontier> Auditor for FleetAuditor<F> {
    fn ceilings(&self) -> Ceilings {
        let limits = &self.engine.config().defaults.limits;
        Ceilings { max_pages: limits.max_pages, max_depth: limits.max_depth }
    }

    fn audit(&self, plan: AuditPlan) -> AuditFuture {
        let engine = Arc::clone(&self.engine);
        let shutdown = self.shutdown.clone();
        Box::pin(async move {
            let options =
                AuditOptions { max_pages: Some(plan.max_pages), max_depth: Some(plan.max_depth), ..Default::default() };
            let req = SubmitRequest { urls: vec![plan.start.to_string()], options };
            let audit = engine.submit(req).await.map_err(|e| e.to_string())?;
            tracing::info!(audit = %audit, start = %plan.start, "audit submitted over MCP");
            tokio::select! {
                () = engine.finished(audit) => {}
                () = tokio::time::sleep(AUDIT_WAIT) => {}
                () = shutdown.cancelled() => {}
            }
            let view = engine.status(audit).await.map_err(|e| e.to_string())?;
            if view.status == AuditStatus::Failed {
                return Err(format!("audit {audit} failed: {}", view.reason.unwrap_or_default()));
            }
            Ok(AuditRun {
                audit: audit.0,
                urls: view.sites.iter().map(|s| s.urls).sum(),
                findings: view.findings,
                status: view.status,
            })
        })
    }
}
