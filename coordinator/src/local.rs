//! `shoal audit`: the engine on the embedded frontier with crawl workers in the same process.
//!
//! The same pieces the distributed mode uses (the frontier trait, the crawler, the engine's
//! aggregation into the audit database), wired together in one process, so both modes produce
//! the same pages and findings. Every task started here is owned by one [`JoinSet`]: an early
//! return aborts them all.

use crate::config::EngineConfig;
use crate::engine::{Coordinator, EngineError, Observer};
use shoal_shared::frontier::Frontier;
use shoal_shared::frontier::embedded::EmbeddedFrontier;
use shoal_shared::ids::{AuditId, SiteId, WorkerId};
use shoal_shared::url::NormalizedUrl;
use shoal_store::{AuditDb, AuditStatus};
use shoal_worker::config::WorkerConfig;
use shoal_worker::crawl::Crawler;
use shoal_worker::fetch::Fetcher;
use shoal_worker::run::WorkerSettings;
use shoal_worker::run::run_with_browser;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// What `shoal audit` was asked to do.
#[derive(Debug, Clone)]
pub struct AuditRequest {
    /// One site per start URL.
    pub starts: Vec<NormalizedUrl>,
    /// The audit database.
    pub db: PathBuf,
    /// The engine's settings and the audit's defaults.
    pub engine: EngineConfig,
    /// The in-process workers' settings.
    pub worker: WorkerConfig,
    /// Fetches in flight at most.
    pub concurrency: usize,
}

/// What an audit run ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditOutcome {
    /// The audit's id in the database.
    pub audit: AuditId,
    /// Sites audited.
    pub sites: usize,
    /// Pages recorded.
    pub pages: u64,
    /// Findings recorded.
    pub findings: u64,
    /// Stopped by the user before it finished (what was crawled is kept).
    pub interrupted: bool,
}

/// Builds the observer once the audit's sites are known (their ids and start URLs).
pub type MakeObserver = Box<dyn FnOnce(&[(SiteId, NormalizedUrl)]) -> Arc<dyn Observer> + Send>;

/// Runs an audit to completion or until `shutdown` is cancelled.
///
/// # Errors
/// The database cannot be opened or written, the fetcher cannot start, the frontier failed.
pub async fn run_audit(
    req: AuditRequest,
    observer: MakeObserver,
    shutdown: CancellationToken,
) -> Result<AuditOutcome, EngineError> {
    let span = tracing::info_span!("audit", db = %req.db.display(), sites = req.starts.len());
    tracing::Instrument::instrument(run_audit_inner(req, observer, shutdown), span).await
}

async fn run_audit_inner(
    req: AuditRequest,
    make_observer: MakeObserver,
    shutdown: CancellationToken,
) -> Result<AuditOutcome, EngineError> {
    let db = AuditDb::open(&req.db)?;
    db.sync_at_checkpoints_only()?;
    let frontier = Arc::new(EmbeddedFrontier::new(req.engine.frontier));
    let engine = Arc::new(Coordinator::new(db, Arc::clone(&frontier), req.engine.clone(), "embedded")?);
    let fetcher = Fetcher::new(req.worker.fetch.clone())?;
    let (audit, sites) = engine.start(req.starts, req.engine.defaults.limits.clone()).await?;
    engine.observe(make_observer(&sites));
    tracing::info!(audit = %audit, sites = sites.len(), db = %req.db.display(), "audit started");
    let mut crawler = Crawler::new(Arc::clone(&frontier), fetcher, req.worker.crawl.clone());
    // --browser-pages, --render: an in-process browser worker beside the crawl workers (Chromium
    // starts at its first task, so a site `auto` does not render never starts it).
    let browser = req.engine.defaults.limits.needs_browser();
    if browser {
        crawler = crawler.with_browser();
    }
    let crawler = Arc::new(crawler);

    let stop_workers = CancellationToken::new();
    let stop_engine = CancellationToken::new();
    let mut tasks = JoinSet::new();
    {
        let stop = stop_workers.clone();
        let settings = WorkerSettings::new(WorkerId("local".into()), req.concurrency, req.engine.frontier.lease_ttl());
        tasks.spawn(async move {
            if let Err(e) = run_with_browser(crawler, settings, browser, stop).await {
                tracing::error!(error = %e, "worker stopped with an error");
            }
        });
    }
    tasks.spawn(Arc::clone(&engine).run(stop_engine.clone()));

    let interrupted = tokio::select! {
        () = engine.finished(audit) => false,
        () = shutdown.cancelled() => true,
    };
    // Phase one: stop taking work. Phase two: let fetches in flight finish (bounded), then store
    // everything they produced.
    stop_workers.cancel();
    if interrupted {
        frontier.cancel(audit).await?;
    }
    stop_engine.cancel();
    while let Some(r) = tasks.join_next().await {
        if let Err(e) = r {
            tracing::error!(error = %e, "an audit task failed");
        }
    }
    engine.drain().await?;
    if let Some(o) = engine.observer() {
        o.finish();
    }
    if interrupted {
        engine.end(audit, AuditStatus::Cancelled).await?;
    }
    let summary = {
        let db = crate::aggregate::lock(engine.db());
        db.audit(audit)?
    };
    // Every URL fetched counts, as the events did before the engine was shared (resources too).
    let (pages, findings) = summary.map_or((0, 0), |s| (s.urls, s.findings));
    tracing::info!(audit = %audit, pages, findings, interrupted, "audit finished");
    Ok(AuditOutcome { audit, sites: sites.len(), pages, findings, interrupted })
}
