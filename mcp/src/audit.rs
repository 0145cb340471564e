//! `audit_site`: an audit started by the assistant. The crawl itself is the binary's (`shoal
//! audit`'s engine and settings, which this crate cannot and should not build): it hands the
//! server an [`Auditor`], and this module only validates what the assistant asked for against the
//! ceilings the server was started with. The assistant can lower the limits, never raise them.

use crate::queries::ToolError;
use rmcp::schemars;
use serde::Deserialize;
use shoal_shared::starts::StartList;
use shoal_shared::status::AuditStatus;
use shoal_shared::url::NormalizedUrl;
use std::future::Future;
use std::pin::Pin;

/// `audit_site`'s input.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditSite {
    /// The start URL of the site (http or https).
    pub start_url: String,
    /// Pages to fetch at most: default and ceiling are the server's --max-pages.
    pub max_pages: Option<u32>,
    /// Link depth at most: default and ceiling are the server's --max-depth.
    pub max_depth: Option<u16>,
}

/// What the server may run: the limits every audit it starts stays within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ceilings {
    /// `--max-pages` of `shoal mcp`.
    pub max_pages: u32,
    /// `--max-depth` of `shoal mcp`.
    pub max_depth: u16,
}

/// A validated request: one start URL (normalised as `shoal audit` normalises it) and limits
/// within the ceilings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditPlan {
    /// The site.
    pub start: NormalizedUrl,
    /// Pages at most.
    pub max_pages: u32,
    /// Depth at most.
    pub max_depth: u16,
}

/// How an audit ended, or stands when the server stopped waiting for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRun {
    /// Its id in the database.
    pub audit: u64,
    /// URLs fetched (pages, robots.txt, sitemaps, resources), as `shoal audit`'s summary counts.
    pub urls: u64,
    /// Findings recorded.
    pub findings: u64,
    /// How it stands when the tool answers: `done`, `interrupted` (the server is shutting down;
    /// what was crawled is kept), `cancelled`, `failed`, or `running` when it goes on past the
    /// server's wait (the coordinator's fleet crawls it whether or not anyone waits; the counts
    /// are so far).
    pub status: AuditStatus,
}

/// The future of one audit.
pub type AuditFuture = Pin<Box<dyn Future<Output = Result<AuditRun, String>> + Send>>;

/// Runs audits into the server's database with the server's settings: implemented by the binary
/// on `shoal audit`'s engine (stdio), and by the coordinator on its fleet (`/mcp`).
pub trait Auditor: Send + Sync + std::fmt::Debug + 'static {
    /// The ceilings of every audit.
    fn ceilings(&self) -> Ceilings;
    /// Runs one audit to its end, or until the implementation stops waiting for it.
    fn audit(&self, plan: AuditPlan) -> AuditFuture;
}

/// Checks the assistant's request against the ceilings.
///
/// # Errors
/// A start URL `shoal audit` would refuse, or a limit of 0 or over its ceiling.
pub fn plan(p: &AuditSite, ceilings: Ceilings) -> Result<AuditPlan, ToolError> {
    let mut list = StartList::default();
    list.push(p.start_url.trim()).map_err(|e| ToolError::Input(e.to_string()))?;
    let start = list.into_urls().pop().ok_or_else(|| ToolError::Input("start_url is empty".to_owned()))?;
    let max_pages = match p.max_pages {
        None => ceilings.max_pages,
        Some(0) => return Err(ToolError::Input("max_pages must be at least 1".to_owned())),
        Some(n) if n > ceilings.max_pages => {
            return Err(ToolError::Input(format!(
                "max_pages {n} is over this server's limit of {} (shoal mcp --max-pages)",
                ceilings.max_pages
            )));
        }
        Some(n) => n,
    };
    let max_depth = match p.max_depth {
        None => ceilings.max_depth,
        Some(n) if n > ceilings.max_depth => {
            return Err(ToolError::Input(format!(
                "max_depth {n} is over this server's limit of {} (shoal mcp --max-depth)",
                ceilings.max_depth
            )));
        }
        Some(n) => n,
    };
    Ok(AuditPlan { start, max_pages, max_depth })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CEIL: Ceilings = Ceilings { max_pages: 50, max_depth: 5 };

    fn input(msg: Result<AuditPlan, ToolError>) -> String {
        match msg {
            Err(ToolError::Input(m)) => m,
            other => panic!("expected refused, got {other:?}"),
        }
    }

    #[test]
    fn limits_default_to_the_ceilings_and_cannot_exceed_them() {
        let p = plan(&AuditSite { start_url: "https://Example.com".into(), ..Default::default() }, CEIL);
        let p = p.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((p.start.to_string().as_str(), p.max_pages, p.max_depth), ("https://example.com/", 50, 5));
        let low = AuditSite { start_url: "https://example.com/".into(), max_pages: Some(3), max_depth: Some(1) };
        assert_eq!(plan(&low, CEIL).map(|p| (p.max_pages, p.max_depth)).ok(), Some((3, 1)));
        let high = AuditSite { start_url: "https://example.com/".into(), max_pages: Some(51), max_depth: None };
        assert!(input(plan(&high, CEIL)).contains("limit of 50"));
        let deep = AuditSite { start_url: "https://example.com/".into(), max_pages: None, max_depth: Some(6) };
        assert!(input(plan(&deep, CEIL)).contains("limit of 5"));
        let zero = AuditSite { start_url: "https://example.com/".into(), max_pages: Some(0), max_depth: None };
        assert!(input(plan(&zero, CEIL)).contains("at least 1"));
        let ftp = AuditSite { start_url: "ftp://example.com/".into(), ..Default::default() };
        assert!(input(plan(&ftp, CEIL)).contains("ftp://example.com/"));
    }
}
