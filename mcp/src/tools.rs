//! The MCP tools: names, descriptions (which state each tool's caps, since that is all an assistant
//! reads before calling), and the hand-off of each call to [`crate::queries`] on a blocking thread.

use crate::audit::{self, AuditSite, Auditor};
use crate::queries::{
    self, CompareAudits, ExplainFinding, IssueUrls, ListAudits, RobotsVerdict, SiteHealthParams, ToolError,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorData, Extensions, Implementation, ServerCapabilities, ServerConfig,
};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use serde_json::Value;
use shoal_store::AuditDb;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// What the server tells an assistant about itself when the session starts.
const INSTRUCTIONS: &str = "Shoal's audit database: website audits (broken links, redirects, robots.txt, TLS, \
security headers, SEO). Start with list_audits, then site_health (without a site: the audit's sites by score; \
with one: its issues ranked by impact), issue_urls for the URLs behind one issue, explain_finding for what a code \
means and how to fix it, compare_audits for what changed, audit_site to audit a site now. Answers are JSON and paged: follow page.next_offset.";

/// What the caller of one request over HTTP may do: the coordinator's token scopes, as its
/// authentication middleware decided them, put in the request's extensions for the tools to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// The reading tools.
    Read,
    /// The reading tools and `audit_site`.
    ReadAndAudit,
}

/// Who decides what a caller may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `shoal mcp` over stdio: the user who started it, on their own database, may do everything.
    Local,
    /// The coordinator's `/mcp`: each request carries its [`Grant`]; a request without one (a
    /// route mounted without the middleware) may only read.
    PerRequest,
}

/// The MCP server of one audit database.
#[derive(Debug, Clone)]
pub struct ShoalMcp {
    db: Arc<Mutex<AuditDb>>,
    auditor: Option<Arc<dyn Auditor>>,
    access: Access,
    /// One audit at a time per process: a second request while one runs is refused, not queued,
    /// so an assistant cannot pile up crawls.
    audit_slot: Arc<Semaphore>,
    tool_router: ToolRouter<ShoalMcp>,
}

impl ShoalMcp {
    /// A server reading `db`, starting audits with `auditor` if given (without one, `audit_site`
    /// says so), for callers allowed what `access` says. `audit_slot` is shared by every server
    /// of one process (one audit at a time).
    #[must_use]
    pub fn new(
        db: Arc<Mutex<AuditDb>>,
        auditor: Option<Arc<dyn Auditor>>,
        access: Access,
        audit_slot: Arc<Semaphore>,
    ) -> ShoalMcp {
        ShoalMcp { db, auditor, access, audit_slot, tool_router: Self::tool_router() }
    }

    /// Whether the caller of this request may start an audit.
    fn may_audit(&self, extensions: &Extensions) -> bool {
        match self.access {
            Access::Local => true,
            Access::PerRequest => extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Grant>())
                .is_some_and(|g| *g == Grant::ReadAndAudit),
        }
    }

    /// Runs `read` on the database on a blocking thread (SQLite calls block; the session's other
    /// requests keep being read meanwhile) and turns its answer into the tool's result.
    async fn read<F>(&self, read: F) -> Result<CallToolResult, ErrorData>
    where
        F: FnOnce(&AuditDb) -> Result<Value, ToolError> + Send + 'static,
    {
        let db = Arc::clone(&self.db);
        // The handle is awaited right here, so the task cannot outlive the call.
        let answer = tokio::task::spawn_blocking(move || {
            // A panic in an earlier read poisons the lock, not the data: reads change nothing.
            let db = db.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            read(&db)
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("the read failed: {e}"), None))?;
        answer_of(answer)
    }
}

/// A query's answer as a tool result: JSON text, or the error a caller can act on.
fn answer_of(answer: Result<Value, ToolError>) -> Result<CallToolResult, ErrorData> {
    match answer {
        Ok(v) => Ok(CallToolResult::success(vec![ContentBlock::text(v.to_string())])),
        Err(ToolError::Input(msg)) => Err(ErrorData::invalid_params(msg, None)),
        Err(ToolError::Db(e)) => {
            tracing::error!(error = %e, "audit database read failed");
            Err(ErrorData::internal_error(format!("reading the audit database: {e}"), None))
        }
    }
}

#[tool_router]
impl ShoalMcp {
    #[tool(description = "List the audits in the database, newest first: id, status, dates, sites, pages and \
                          findings. Paged: limit default 20, at most 100; follow page.next_offset.")]
    async fn list_audits(&self, Parameters(p): Parameters<ListAudits>) -> Result<CallToolResult, ErrorData> {
        self.read(move |db| queries::list_audits(db, &p)).await
    }

    #[tool(description = "A site's health: score 0-100, findings by severity, trend since its previous audit, and \
                          its issues (one per finding code) ranked by impact, i.e. by severity and how many URLs \
                          they affect. Without `site`, the audit's sites worst score first. audit defaults to the \
                          latest. Paged: limit default 25, at most 100.")]
    async fn site_health(&self, Parameters(p): Parameters<SiteHealthParams>) -> Result<CallToolResult, ErrorData> {
        self.read(move |db| queries::site_health(db, &p)).await
    }

    #[tool(description = "The URLs behind one issue: the findings of one code on one site, in URL order, with \
                          their detail and up to 5 related URLs each. Paged: limit default 50, at most 200.")]
    async fn issue_urls(&self, Parameters(p): Parameters<IssueUrls>) -> Result<CallToolResult, ErrorData> {
        self.read(move |db| queries::issue_urls(db, &p)).await
    }

    #[tool(description = "Compare two audits: sites matched by start URL, findings by code, URL and detail. Per \
                          site the counts of new, fixed and remaining findings and the first new and fixed ones \
                          (findings_per_site default 10, at most 50); sites added or removed. Paged by site pair: \
                          limit default 10, at most 50.")]
    async fn compare_audits(&self, Parameters(p): Parameters<CompareAudits>) -> Result<CallToolResult, ErrorData> {
        self.read(move |db| queries::compare_audits(db, &p)).await
    }

    #[tool(description = "Explain a finding code: its severity and family, what it means, why it matters and how \
                          to fix it (the text of Shoal's reports and docs/findings.md).")]
    async fn explain_finding(&self, Parameters(p): Parameters<ExplainFinding>) -> Result<CallToolResult, ErrorData> {
        answer_of(queries::explain_finding(&p))
    }

    #[tool(description = "robots.txt verdict: may this crawler (agent, default ShoalBot) fetch this URL under this \
                          robots.txt text (at most 1 MiB)? RFC 9309 as Shoal's crawler applies it: the deciding \
                          rule, the crawl delay and up to 5 sitemaps.")]
    async fn robots_verdict(&self, Parameters(p): Parameters<RobotsVerdict>) -> Result<CallToolResult, ErrorData> {
        answer_of(queries::robots_verdict(&p))
    }

    #[tool(description = "Audit a site now, with the same engine, politeness and limits as `shoal audit`, into \
                          this database, and wait for it to end: start_url, and optionally max_pages and \
                          max_depth, which default to and cannot exceed this server's limits. One audit at a \
                          time. Answers the audit id (for site_health, issue_urls, compare_audits), its status \
                          (done, interrupted, or running when it outlasts the server's wait: follow it with \
                          list_audits), the URLs fetched and the findings so far.")]
    async fn audit_site(
        &self,
        Parameters(p): Parameters<AuditSite>,
        extensions: Extensions,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(auditor) = &self.auditor else {
            return Err(ErrorData::invalid_request("this server was started without audits", None));
        };
        if !self.may_audit(&extensions) {
            return Err(ErrorData::invalid_request(
                "audit_site needs a token with scope submit (or the coordinator's admin token); this token may only read",
                None,
            ));
        }
        let plan = match audit::plan(&p, auditor.ceilings()) {
            Ok(plan) => plan,
            Err(e) => return answer_of(Err(e)),
        };
        let Ok(_slot) = Arc::clone(&self.audit_slot).try_acquire_owned() else {
            return Err(ErrorData::invalid_request("an audit is already running: wait for it to end", None));
        };
        tracing::info!(start = %plan.start, max_pages = plan.max_pages, "audit requested over MCP");
        match auditor.audit(plan.clone()).await {
            Ok(run) => answer_of(Ok(serde_json::json!({
                "audit": run.audit,
                "start_url": plan.start.to_string(),
                "max_pages": plan.max_pages,
                "max_depth": plan.max_depth,
                "urls_fetched": run.urls,
                "findings": run.findings,
                "status": run.status.as_str(),
            }))),
            Err(e) => Err(ErrorData::internal_error(format!("the audit failed: {e}"), None)),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for ShoalMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("shoal", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}
