//! The flags of `shoal mcp`.

use super::CrawlArgs;
use clap::Args;
use std::path::PathBuf;

/// `shoal mcp --db PATH [crawl settings]`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The audit database to serve (it must exist: `shoal audit` makes it). The reading tools
    /// change nothing in it; `audit_site` adds its audits to it.
    #[arg(long, env = "SHOAL_DB", default_value = "shoal.db")]
    pub db: PathBuf,
    /// The crawl settings of the audits the assistant starts (`audit_site`), as for `shoal audit`:
    /// `--max-pages` and `--max-depth` are the most an assistant can ask for.
    #[command(flatten)]
    pub crawl: CrawlArgs,
    /// Fetches in flight at most in an audit the assistant starts.
    #[arg(long, env = "SHOAL_CONCURRENCY", default_value_t = 64)]
    pub concurrency: usize,
}
