//! The flags of `shoal mcp`.

use clap::Args;
use std::path::PathBuf;

/// `shoal mcp --db PATH`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The audit database to serve (it must exist: `shoal audit` makes it). Read only: the tools
    /// change nothing in it.
    #[arg(long, env = "SHOAL_DB", default_value = "shoal.db")]
    pub db: PathBuf,
}
