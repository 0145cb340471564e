//! `shoal mcp`: the Model Context Protocol server over standard input and output, for an AI
//! assistant (the tools are the `shoal-mcp` crate's; docs/mcp.md). Its `audit_site` tool runs
//! `shoal audit`'s engine with this command's crawl settings.

use crate::cli::{CrawlConfig, McpArgs};
use crate::progress::Progress;
use crate::{Exit, Failure};
use shoal_coordinator::local::{AuditRequest, run_audit};
use shoal_mcp::{AuditFuture, AuditPlan, AuditRun, Auditor, Ceilings, McpError};
use shoal_shared::status::AuditStatus;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Serves the database until the client ends the session or `shutdown` is cancelled.
///
/// # Errors
/// Bad crawl settings or no database at the path (3), one that cannot be read (4), a session
/// that cannot start (1).
pub async fn run(args: &McpArgs, shutdown: CancellationToken) -> Result<Exit, Failure> {
    let config = CrawlConfig::try_from(&args.crawl)?;
    let auditor =
        LocalAuditor { config, db: args.db.clone(), concurrency: args.concurrency.max(1), shutdown: shutdown.clone() };
    match shoal_mcp::serve_stdio(&args.db, Some(Arc::new(auditor)), shutdown).await {
        Ok(()) => Ok(Exit::Ok),
        Err(McpError::Db(e)) => Err(Failure::database(e)),
        Err(e @ McpError::NoDatabase { .. }) => Err(Failure::input(e)),
        Err(e) => Err(Failure::internal(e)),
    }
}

/// `shoal audit` of one site, for the assistant: the validated settings of this command with the
/// page and depth limits narrowed to what was asked (never widened: `shoal_mcp::audit::plan`).
#[derive(Debug)]
struct LocalAuditor {
    config: CrawlConfig,
    db: PathBuf,
    concurrency: usize,
    /// The server's: stopping the server stops a running audit (what it crawled is kept).
    shutdown: CancellationToken,
}

impl Auditor for LocalAuditor {
    fn ceilings(&self) -> Ceilings {
        let limits = &self.config.engine.defaults.limits;
        Ceilings { max_pages: limits.max_pages, max_depth: limits.max_depth }
    }

    fn audit(&self, plan: AuditPlan) -> AuditFuture {
        let mut engine = self.config.engine.clone();
        engine.defaults.limits.max_pages = plan.max_pages;
        engine.defaults.limits.max_depth = plan.max_depth;
        let req = AuditRequest {
            starts: vec![plan.start],
            db: self.db.clone(),
            engine,
            worker: self.config.worker.clone(),
            concurrency: self.concurrency,
        };
        // Standard output is the protocol: no progress bar, log lines on standard error only.
        let observer: shoal_coordinator::local::MakeObserver = Box::new(|sites| {
            let names = sites.iter().map(|(id, url)| (*id, url.to_string())).collect();
            Arc::new(Progress::new(false, &names))
        });
        let shutdown = self.shutdown.child_token();
        Box::pin(async move {
            let outcome = run_audit(req, observer, shutdown).await.map_err(|e| e.to_string())?;
            Ok(AuditRun {
                audit: outcome.audit.0,
                urls: outcome.pages,
                findings: outcome.findings,
                status: if outcome.interrupted { AuditStatus::Interrupted } else { AuditStatus::Done },
            })
        })
    }
}
