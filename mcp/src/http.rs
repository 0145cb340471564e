//! The tools over MCP's streamable HTTP transport, as a tower service the coordinator mounts at
//! `/mcp` behind its own authentication. That middleware runs first on every request and puts the
//! caller's [`crate::Grant`] in the request's extensions; rmcp hands the request's parts to the tool,
//! which reads the grant from there ([`Access::PerRequest`]).
//!
//! Stateless: no MCP session is kept between requests (no `Mcp-Session-Id`), so the coordinator
//! holds nothing per client that would have to expire, every request is authorised on its own
//! token (a removed token is refused from its next request on), and any coordinator replica can
//! answer any request. Answers are plain JSON, not an event stream: every tool answers once.

use crate::Auditor;
use crate::tools::{Access, ShoalMcp};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use shoal_store::AuditDb;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Request bodies larger than this are refused (413): the largest input is `robots_verdict`'s
/// robots.txt text, at most 1 MiB, in JSON.
pub const MAX_BODY: usize = 4 * 1024 * 1024;

/// The service answering MCP requests over `db` (a connection of its own, for reading), starting
/// audits with `auditor`; it stops answering when `shutdown` is cancelled.
///
/// `Host` and `Origin` are not checked here (rmcp's defaults accept loopback names only): those
/// checks guard a server that trusts whoever reaches it, and this one trusts only a bearer token,
/// which a page in a browser cannot send on another site's behalf.
pub fn service(
    db: Arc<Mutex<AuditDb>>,
    auditor: Option<Arc<dyn Auditor>>,
    shutdown: CancellationToken,
) -> StreamableHttpService<ShoalMcp, NeverSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts()
        .with_max_request_body_bytes(MAX_BODY)
        .with_cancellation_token(shutdown);
    // One audit at a time for every request of this service, as over stdio.
    let audit_slot = Arc::new(Semaphore::new(1));
    let make = move || Ok(ShoalMcp::new(Arc::clone(&db), auditor.clone(), Access::PerRequest, Arc::clone(&audit_slot)));
    StreamableHttpService::new(make, Arc::new(NeverSessionManager::default()), config)
}
