//! `shoal audit`: one process, embedded frontier, the same engine as the coordinator.

use crate::cli::{AuditArgs, LogFormat};
use crate::progress::Progress;
use crate::{Exit, Failure};
use shoal_coordinator::local::{AuditRequest, run_audit};
use std::io::Write;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Runs the audit, writes the report if asked, prints the one-line summary.
///
/// # Errors
/// Bad settings or start URLs (3), the audit database (4), anything else (1).
pub async fn run(args: &AuditArgs, log_format: LogFormat, shutdown: CancellationToken) -> Result<Exit, Failure> {
    let config = crate::cli::CrawlConfig::try_from(&args.crawl)?;
    let branding = crate::cmd::report::load_branding(&args.branding)?;
    let starts = crate::cli::start_urls(&args.urls, args.file.as_ref())?;
    let req = AuditRequest {
        starts,
        db: args.db.clone(),
        engine: config.engine,
        worker: config.worker,
        concurrency: args.concurrency.max(1),
    };
    let show_progress = !args.no_progress;
    let observer: shoal_coordinator::local::MakeObserver = Box::new(move |sites| {
        let names = sites.iter().map(|(id, url)| (*id, url.to_string())).collect();
        Arc::new(Progress::new(show_progress, &names))
    });
    let metrics = super::MetricsEndpoint::start(args.metrics_listen, shutdown.child_token());
    let outcome = run_audit(req, observer, shutdown).await;
    metrics.stop().await;
    let outcome = outcome?;
    if let Some(format) = args.report {
        let db = shoal_store::AuditDb::open(&args.db)?;
        crate::cmd::report::write(&db, outcome.audit, format, args.out.as_deref(), &branding, None)?;
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
    if log_format == LogFormat::Json {
        // Log collectors read stderr line by line: keep every line JSON.
        tracing::info!(audit = outcome.audit.0, "{summary}");
    } else {
        let _ = writeln!(std::io::stderr().lock(), "{summary}");
    }
    Ok(if outcome.interrupted { Exit::Interrupted } else { Exit::Ok })
}
