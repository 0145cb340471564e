//! The `shoal` program: its command line, configuration and commands.
//!
//! This crate is only wiring. What each command does lives in the crates below it: the crawl in
//! `shoal-worker`, the coordinator role in `shoal-coordinator`, the audit database in
//! `shoal-store`, reports in `shoal-report`, the API and dashboard in `shoal-server`. Here:
//! [`cli`] (flags), [`config`] (the config file, precedence and the one validation into typed
//! settings), one module per command ([`cmd`], [`client`] for `submit` and `status`,
//! [`config::check`], [`botpage`]), the progress display, and [`Failure`], which turns every
//! error into the documented exit status by its type.
//!
//! `main.rs` only calls [`entry::main`]; the program is in the library so the end-to-end tests can
//! build the very same program as a binary of their own.

pub mod botpage;
pub mod cli;
pub mod client;
pub mod cmd;
pub mod commit;
pub mod config;
pub mod entry;
pub mod progress;
pub mod schedule;
pub mod sitelist;

use cli::{Cli, Command};
use shoal_coordinator::EngineError;
use shoal_report::ReportError;
use shoal_shared::frontier::FrontierError;
use shoal_store::DbError;
use tokio_util::sync::CancellationToken;

/// Exit statuses scripts can rely on (SPEC §1: non-zero only when Shoal could not do its job).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// The command did its job (an audit ran, whatever it found).
    Ok = 0,
    /// An unexpected failure inside Shoal.
    Internal = 1,
    /// Bad arguments (clap's own errors also exit 2).
    Usage = 2,
    /// Unusable input: a bad start URL, an unreadable file, invalid settings.
    Input = 3,
    /// The audit database could not be opened or written.
    Database = 4,
    /// `shoal report --fail-on` found findings of that severity (the report was written).
    Findings = 5,
    /// Stopped by Ctrl-C or SIGTERM; what was crawled is kept.
    Interrupted = 130,
}

/// An error with the exit status it should produce.
///
/// The status comes from the error's type where it is made (the `From` impls below and the
/// constructors), never from searching an error chain afterwards: a database error inside a
/// report error is still a database error (4). Errors without a type of their own (`anyhow`
/// context from the wiring) are internal (1).
#[derive(Debug)]
pub struct Failure {
    /// The exit status.
    pub exit: Exit,
    /// What went wrong, with context.
    pub error: anyhow::Error,
}

impl Failure {
    /// Unusable input (3).
    pub fn input(e: impl Into<anyhow::Error>) -> Failure {
        Failure { exit: Exit::Input, error: e.into() }
    }

    /// Shoal's own failure (1).
    pub fn internal(e: impl Into<anyhow::Error>) -> Failure {
        Failure { exit: Exit::Internal, error: e.into() }
    }

    /// The audit database failed (4).
    pub fn database(e: impl Into<anyhow::Error>) -> Failure {
        Failure { exit: Exit::Database, error: e.into() }
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Failure {
        Failure::internal(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::internal(e)
    }
}

impl From<serde_json::Error> for Failure {
    fn from(e: serde_json::Error) -> Failure {
        Failure::internal(e)
    }
}

impl From<DbError> for Failure {
    fn from(e: DbError) -> Failure {
        Failure::database(e)
    }
}

impl From<cli::ConfigError> for Failure {
    fn from(e: cli::ConfigError) -> Failure {
        Failure::input(e)
    }
}

impl From<FrontierError> for Failure {
    fn from(e: FrontierError) -> Failure {
        Failure::internal(e)
    }
}

impl From<ReportError> for Failure {
    fn from(e: ReportError) -> Failure {
        match e {
            ReportError::Db(db) => Failure::database(db),
            ReportError::UnknownAudit { .. } | ReportError::UnknownSite { .. } | ReportError::UnknownIssue { .. } => {
                Failure::input(e)
            }
            // Output files are the user's to choose: an unwritable one is unusable input.
            e @ (ReportError::File { .. } | ReportError::Csv { .. }) => Failure::input(e),
            e => Failure::internal(e),
        }
    }
}

impl From<EngineError> for Failure {
    fn from(e: EngineError) -> Failure {
        match e {
            EngineError::Store(db) => Failure::database(db),
            e @ (EngineError::BadRequest(_)
            | EngineError::NotFound(_)
            | EngineError::NoSchedule(_)
            | EngineError::NoBrowserWorker { .. }) => Failure::input(e),
            e => Failure::internal(e),
        }
    }
}

/// Runs a parsed command line until done or until `shutdown` is cancelled.
///
/// # Errors
/// A [`Failure`] carrying the exit status its error type calls for.
pub async fn run(cli: Cli, shutdown: CancellationToken) -> Result<Exit, Failure> {
    let log_format = cli.log_format;
    match cli.command {
        Command::Audit(args) => cmd::audit::run(&args, log_format, shutdown).await,
        Command::Report(args) => cmd::report::run(&args),
        Command::Robots(args) => cmd::robots::run(&args),
        Command::Coordinator(args) => cmd::coordinator::run(&args, shutdown).await,
        Command::Worker(args) => cmd::worker::run(&args, shutdown).await,
        Command::Submit(args) => client::submit(&args, shutdown).await,
        Command::Status(args) => client::status(&args).await,
        Command::Schedule(cmd) => schedule::run(&cmd).await,
        Command::Prune(args) => cmd::prune::run(&args),
        Command::Token(cmd) => cmd::token::run(&cmd),
        Command::Config(cli::ConfigCommand::Check(args)) => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            config::check(&args, cli.config.as_deref(), &mut out)
        }
        Command::Botpage(args) => {
            botpage::write(&args)?;
            Ok(Exit::Ok)
        }
        Command::Completions(args) => cmd::manual::completions(&args, &mut std::io::stdout().lock()),
        Command::Man(args) => cmd::manual::man(&args, &mut std::io::stdout().lock()),
        Command::Mcp(args) => cmd::mcp::run(&args, shutdown).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn db_error() -> DbError {
        shoal_store::AuditDb::open(std::path::Path::new("/proc/shoal-no-such-dir/a.db")).expect_err("cannot open")
    }

    #[test]
    fn a_database_error_is_four_however_it_is_wrapped() {
        assert_eq!(Failure::from(db_error()).exit, Exit::Database);
        assert_eq!(Failure::from(ReportError::Db(db_error())).exit, Exit::Database);
        assert_eq!(Failure::from(EngineError::Store(db_error())).exit, Exit::Database);
    }

    #[test]
    fn input_and_internal_by_type() {
        let io = || std::io::Error::other("disk full");
        assert_eq!(Failure::from(ReportError::Write { source: io() }).exit, Exit::Internal);
        assert_eq!(Failure::from(ReportError::File { path: PathBuf::from("/x"), source: io() }).exit, Exit::Input);
        assert_eq!(Failure::from(cli::ConfigError::NoUrls).exit, Exit::Input);
        assert_eq!(Failure::from(EngineError::BadRequest("x".into())).exit, Exit::Input);
        assert_eq!(Failure::from(anyhow::anyhow!("anything else")).exit, Exit::Internal);
    }
}
