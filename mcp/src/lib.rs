//! `shoal mcp`: a Model Context Protocol server over the local audit database, so an AI assistant
//! can read what Shoal found the way a user reads `shoal report` (issue 42); and the same tools
//! over streamable HTTP ([`http`]), which the coordinator serves at `/mcp` behind its tokens.
//!
//! The tools ([`tools`]) are thin: each validates its input, then calls one read in [`queries`],
//! which uses the same store queries and report rules (health score, issue impact, comparison
//! matching, `docs/findings.md` texts, robots.txt verdicts) as the reports and `shoal robots`, so
//! an assistant and a report never disagree. Every answer is JSON, paged or capped to a size an
//! assistant can hold; the tool descriptions say the caps.
//!
//! Bad input is the caller's error (`invalid_params`, with what was wrong and what is accepted);
//! a database failure is ours (`internal_error`). Neither ends the session.

pub mod audit;
pub mod http;
pub mod queries;
pub mod tools;

use shoal_store::{AuditDb, DbError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

pub use audit::{AuditFuture, AuditPlan, AuditRun, Auditor, Ceilings};
pub use tools::{Access, Grant, ShoalMcp};

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// There is no database at the path given.
    #[error("no audit database at {path}")]
    NoDatabase {
        /// The path given.
        path: PathBuf,
    },
    /// The database could not be opened.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The MCP session could not start (the client never initialised, or the pipe closed).
    #[error("MCP session over stdio: {0}")]
    Session(String),
}

/// Opens the audit database for the tools. An existing file only: opening a path that holds no
/// database would create an empty one, and an assistant would then see "no audits" instead of
/// the mistake in its configuration.
///
/// # Errors
/// [`McpError::NoDatabase`], or [`McpError::Db`] when the file is not an audit database.
pub fn open_db(path: &Path) -> Result<Arc<Mutex<AuditDb>>, McpError> {
    if !path.is_file() {
        return Err(McpError::NoDatabase { path: path.to_owned() });
    }
    Ok(Arc::new(Mutex::new(AuditDb::open(path)?)))
}

/// Serves the tools over standard input and output until the client closes the session or
/// `shutdown` is cancelled; `audit_site` runs audits with `auditor`. Logs must go to standard error: standard output is the protocol.
///
/// # Errors
/// As [`open_db`], or [`McpError::Session`] when the session cannot start or ends abnormally.
pub async fn serve_stdio(
    db_path: &Path,
    auditor: Option<Arc<dyn Auditor>>,
    shutdown: CancellationToken,
) -> Result<(), McpError> {
    use rmcp::ServiceExt;
    let server = ShoalMcp::new(open_db(db_path)?, auditor, Access::Local, Arc::new(tokio::sync::Semaphore::new(1)));
    let running =
        server.serve_with_ct(rmcp::transport::stdio(), shutdown).await.map_err(|e| McpError::Session(e.to_string()))?;
    let reason = running.waiting().await.map_err(|e| McpError::Session(e.to_string()))?;
    tracing::info!(reason = ?reason, "MCP session ended");
    Ok(())
}
