//! The flags of `shoal token add|list|remove`: API tokens with scopes, made and removed in the
//! audit database directly ([`crate::cmd::token`]); a running coordinator sees the change at its
//! next request.

use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

/// `shoal token`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a token with a scope and print its secret (shown this once; only its hash is kept).
    Add(TokenAddArgs),
    /// List the tokens: id, name, scope, hosts, when made; never a secret.
    List(TokenListArgs),
    /// Remove a token: the coordinator refuses it from its next request on.
    Remove(TokenRemoveArgs),
}

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScopeName {
    /// Read every audit: lists, status, whole-audit and per-site reports.
    Read,
    /// What read may, and submit and cancel audits.
    Submit,
    /// Only the sites of the --host hosts: their status and their JSON and HTML reports.
    Site,
}

impl ScopeName {
    /// As the API and the database spell it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ScopeName::Read => "read",
            ScopeName::Submit => "submit",
            ScopeName::Site => "site",
        }
    }
}

/// `shoal token add`.
#[derive(Debug, Args)]
pub struct TokenAddArgs {
    /// The audit database (SQLite) the coordinator uses.
    #[arg(long, env = "SHOAL_DB", default_value = "shoal.db")]
    pub db: PathBuf,
    /// What the token may do.
    #[arg(long, value_enum)]
    pub scope: ScopeName,
    /// A host a site token sees (repeat for several, at most 100): its sites, and those of its
    /// www/apex twin. Only with --scope site, which needs at least one.
    #[arg(long = "host", value_name = "HOST")]
    pub hosts: Vec<String>,
    /// A name for people: who holds the token.
    #[arg(long, default_value = "")]
    pub name: String,
}

/// `shoal token list`.
#[derive(Debug, Args)]
pub struct TokenListArgs {
    /// The audit database (SQLite) the coordinator uses.
    #[arg(long, env = "SHOAL_DB", default_value = "shoal.db")]
    pub db: PathBuf,
    /// One JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `shoal token remove`.
#[derive(Debug, Args)]
pub struct TokenRemoveArgs {
    /// The audit database (SQLite) the coordinator uses.
    #[arg(long, env = "SHOAL_DB", default_value = "shoal.db")]
    pub db: PathBuf,
    /// The token's id (`shoal token list`).
    #[arg(value_name = "ID")]
    pub id: u64,
}
