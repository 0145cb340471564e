//! The `shoal` command: its subcommands, the audit database, aggregation and reports.
//!
//! `main.rs` only parses arguments, sets up logging and signals, and calls [`run`]; everything
//! else is here so tests can call it.

pub mod aggregate;
pub mod api;
pub mod audit;
pub mod botpage;
pub mod cli;
pub mod client;
pub mod config;
pub mod dashboard;
pub mod db;
pub mod entry;
pub mod progress;
pub mod report;
pub mod service;
pub mod sitelist;

use anyhow::Context;
use cli::{Cli, Command, ReportFormat};
use shoal_shared::ids::AuditId;
use std::io::Write;
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
    /// Stopped by Ctrl-C or SIGTERM; what was crawled is kept.
    Interrupted = 130,
}

/// An error with the exit status it should produce.
#[derive(Debug)]
pub struct Failure {
    /// The exit status.
    pub exit: Exit,
    /// What went wrong, with context.
    pub error: anyhow::Error,
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Failure {
        let error = e.into();
        let exit = if error.downcast_ref::<db::DbError>().is_some() {
            Exit::Database
        } else if error.downcast_ref::<cli::ConfigError>().is_some() {
            Exit::Input
        } else {
            Exit::Internal
        };
        Failure { exit, error }
    }
}

fn input(e: impl Into<anyhow::Error>) -> Failure {
    Failure { exit: Exit::Input, error: e.into() }
}

/// Runs a parsed command line until done or until `shutdown` is cancelled.
pub async fn run(cli: Cli, shutdown: CancellationToken) -> Result<Exit, Failure> {
    let log_format = cli.log_format;
    match cli.command {
        Command::Audit(args) => {
            let config = args.crawl.validate().map_err(input)?;
            let starts = cli::start_urls(&args.urls, args.file.as_ref()).map_err(input)?;
            let req = audit::AuditRequest {
                starts,
                db: args.db.clone(),
                config,
                concurrency: args.concurrency.max(1),
                progress: !args.no_progress,
            };
            let metrics_stop = shutdown.child_token();
            let metrics_task =
                args.metrics_listen.map(|addr| tokio::spawn(api::serve_metrics(addr, metrics_stop.clone())));
            let outcome = audit::run_audit(req, shutdown).await;
            metrics_stop.cancel();
            if let Some(t) = metrics_task {
                let _ = t.await;
            }
            let outcome = outcome?;
            if let Some(format) = args.report {
                write_report(&args.db, Some(outcome.audit.0), format, args.out.as_deref(), None)?;
            }
            let summary = format!(
                "audit {} {}: {} site(s), {} page(s), {} finding(s); database {}",
                outcome.audit,
                if outcome.interrupted { "stopped (partial results kept)" } else { "finished" },
                outcome.sites,
                outcome.pages,
                outcome.findings,
                args.db.display()
            );
            if log_format == cli::LogFormat::Json {
                // Log collectors read stderr line by line: keep every line JSON.
                tracing::info!(audit = outcome.audit.0, "{summary}");
            } else {
                let _ = writeln!(std::io::stderr().lock(), "{summary}");
            }
            Ok(if outcome.interrupted { Exit::Interrupted } else { Exit::Ok })
        }
        Command::Report(args) => {
            write_report(&args.db, args.audit, args.format, args.out.as_deref(), args.compare.as_deref())?;
            Ok(Exit::Ok)
        }
        Command::Robots(args) => robots(&args),
        Command::Coordinator(args) => {
            let crawl = args.crawl.validate().map_err(input)?;
            cli::check_token(&args.token).map_err(input)?;
            let cfg = service::CoordinatorConfig {
                redis: args.redis.redis.clone(),
                namespace: args.redis.namespace.clone(),
                db: args.db.clone(),
                listen: args.listen,
                token: args.token.clone(),
                crawl,
            };
            service::run_coordinator(cfg, shutdown).await?;
            Ok(Exit::Ok)
        }
        Command::Worker(args) => {
            worker(&args, shutdown).await?;
            Ok(Exit::Ok)
        }
        Command::Submit(args) => Ok(client::submit(&args, shutdown).await?),
        Command::Status(args) => Ok(client::status(&args).await?),
        Command::Config(cli::ConfigCommand::Check(args)) => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            config::check(&args, cli.config.as_deref(), &mut out)
        }
        Command::Botpage(args) => {
            botpage::write(&args)?;
            Ok(Exit::Ok)
        }
    }
}

async fn worker(args: &cli::WorkerArgs, shutdown: CancellationToken) -> Result<(), Failure> {
    use shoal_frontier_redis::RedisFrontier;
    use shoal_worker::crawl::Crawler;
    use shoal_worker::fetch::Fetcher;
    let config = args.crawl.validate().map_err(input)?;
    let id = args.id.clone().unwrap_or_else(|| {
        let host =
            std::fs::read_to_string("/etc/hostname").map(|s| s.trim().to_owned()).unwrap_or_else(|_| "worker".into());
        format!("{host}-{}", std::process::id())
    });
    let mut frontier = RedisFrontier::connect(&args.redis.redis, &args.redis.namespace, config.frontier, &id)
        .await
        .with_context(|| format!("connecting to Redis at {}", service::redact(&args.redis.redis)))?;
    if !frontier.load_settings().await? {
        tracing::warn!("no coordinator settings in Redis yet; using this worker's own per-IP cap and lease time");
    }
    let fetcher = Fetcher::new(config.fetch.clone()).map_err(anyhow::Error::msg)?;
    let crawler = std::sync::Arc::new(Crawler::new(std::sync::Arc::new(frontier), fetcher, config.crawl.clone()));
    tracing::info!(worker = %id, concurrency = args.concurrency, "worker started");
    let metrics_task = args.metrics_listen.map(|addr| tokio::spawn(api::serve_metrics(addr, shutdown.clone())));
    shoal_worker::run::run(
        crawler,
        shoal_worker::run::WorkerSettings { id: shoal_shared::ids::WorkerId(id), concurrency: args.concurrency.max(1) },
        shutdown,
    )
    .await?;
    if let Some(t) = metrics_task {
        match t.await {
            Ok(Err(e)) => tracing::error!(error = %format!("{e:#}"), "metrics endpoint failed"),
            Err(e) => tracing::error!(error = %e, "metrics endpoint task failed"),
            Ok(Ok(())) => {}
        }
    }
    tracing::info!("worker stopped");
    Ok(())
}

fn write_report(
    db_path: &std::path::Path,
    audit: Option<u64>,
    format: ReportFormat,
    out: Option<&std::path::Path>,
    compare: Option<&[u64]>,
) -> Result<(), Failure> {
    if !db_path.exists() {
        return Err(input(anyhow::anyhow!("no audit database at {}", db_path.display())));
    }
    let db = db::AuditDb::open(db_path)?;
    // Writes to --out, or standard output when it is not given (json, html and comparisons).
    let to_file_or_stdout = |write: &dyn Fn(&mut dyn Write) -> Result<(), report::ReportError>| -> Result<(), Failure> {
        match out {
            Some(path) => {
                let f = std::fs::File::create(path)
                    .with_context(|| format!("creating {}", path.display()))
                    .map_err(input)?;
                let mut w = std::io::BufWriter::new(f);
                write(&mut w)?;
                w.flush().with_context(|| format!("writing {}", path.display()))?;
            }
            None => {
                let stdout = std::io::stdout();
                let mut w = std::io::BufWriter::new(stdout.lock());
                write(&mut w)?;
                w.flush().context("writing the report to standard output")?;
            }
        }
        Ok(())
    };
    if let Some(ids) = compare {
        let [old, new] = ids else {
            return Err(input(anyhow::anyhow!("--compare takes two audit ids: OLD NEW")));
        };
        let (old, new) = (AuditId(*old), AuditId(*new));
        for a in [old, new] {
            if db.audit(a)?.is_none() {
                return Err(input(anyhow::anyhow!("no audit {a} in {}", db_path.display())));
            }
        }
        return match format {
            ReportFormat::Json => to_file_or_stdout(&|w| report::write_compare_json(&db, old, new, w)),
            ReportFormat::Html => to_file_or_stdout(&|w| report::write_compare_html(&db, old, new, w)),
            ReportFormat::Csv => Err(input(anyhow::anyhow!("--compare writes json or html, not csv"))),
        };
    }
    let audit = match audit {
        Some(a) => AuditId(a),
        None => db
            .latest_audit()?
            .ok_or_else(|| input(anyhow::anyhow!("the database {} holds no audit yet", db_path.display())))?,
    };
    if db.audit(audit)?.is_none() {
        return Err(input(anyhow::anyhow!("no audit {audit} in {}", db_path.display())));
    }
    match format {
        ReportFormat::Json => match out {
            Some(path) => {
                let f = std::fs::File::create(path)
                    .with_context(|| format!("creating {}", path.display()))
                    .map_err(input)?;
                let mut w = std::io::BufWriter::new(f);
                report::write_json(&db, audit, &mut w)?;
                w.flush().with_context(|| format!("writing {}", path.display()))?;
            }
            None => {
                let stdout = std::io::stdout();
                let mut w = std::io::BufWriter::new(stdout.lock());
                report::write_json(&db, audit, &mut w)?;
                w.flush().context("writing the report to standard output")?;
            }
        },
        ReportFormat::Csv => {
            let dir = out.map_or_else(|| std::path::PathBuf::from("."), std::path::Path::to_path_buf);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display())).map_err(input)?;
            let files = report::write_csv(&db, audit, &dir)?;
            for f in files {
                tracing::info!(file = %f.display(), "wrote");
            }
        }
        ReportFormat::Html => to_file_or_stdout(&|w| report::write_html(&db, audit, w))?,
    }
    Ok(())
}

fn robots(args: &cli::RobotsArgs) -> Result<Exit, Failure> {
    use shoal_shared::robots::{ProductToken, RobotsRules, verdict_line};
    let body = std::fs::read(&args.file)
        .with_context(|| format!("cannot read robots.txt file {}", args.file.display()))
        .map_err(input)?;
    let token = ProductToken::from_agent(&args.agent);
    let rules = RobotsRules::parse(&body, &token);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = if args.sitemaps {
        rules.sitemaps().iter().try_for_each(|s| writeln!(out, "{s}"))
    } else if args.crawl_delay {
        match rules.crawl_delay() {
            Some(d) => writeln!(out, "{}", d.as_secs_f64()),
            None => writeln!(out, "none"),
        }
    } else {
        args.urls.iter().try_for_each(|u| writeln!(out, "{}", verdict_line(&rules.check_str(u), u)))
    };
    result.and_then(|()| out.flush()).context("writing to standard output")?;
    Ok(Exit::Ok)
}
