//! `shoal audit`: coordinator, workers and the embedded frontier in one process.
//!
//! The same pieces the distributed mode uses (frontier trait, crawler, aggregation into the audit
//! database) wired together in-process, so both modes produce the same pages and findings.

use crate::aggregate::{aggregate_batch, lock};
use crate::cli::CrawlConfig;
use crate::db::{AuditDb, AuditStatus};
use crate::progress::Progress;
use anyhow::Context;
use shoal_shared::frontier::embedded::EmbeddedFrontier;
use shoal_shared::frontier::{Frontier, SiteSeed};
use shoal_shared::ids::{AuditId, SiteId, WorkerId};
use shoal_shared::record::Event;
use shoal_shared::task::{FoundVia, ProbeKind, Task, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_shared::url::NormalizedUrl;
use shoal_worker::crawl::Crawler;
use shoal_worker::fetch::Fetcher;
use shoal_worker::run::{WorkerSettings, run};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the aggregator looks for new events when there were none.
const AGGREGATE_IDLE: Duration = Duration::from_millis(100);
/// How often expired leases are reclaimed.
const REAP_EVERY: Duration = Duration::from_secs(1);

/// What `shoal audit` was asked to do.
#[derive(Debug, Clone)]
pub struct AuditRequest {
    /// One site per start URL.
    pub starts: Vec<NormalizedUrl>,
    /// The audit database.
    pub db: PathBuf,
    /// Crawl settings.
    pub config: CrawlConfig,
    /// Fetches in flight at most.
    pub concurrency: usize,
    /// Show a progress bar (on a terminal).
    pub progress: bool,
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

/// Runs an audit to completion or until `shutdown` is cancelled.
pub async fn run_audit(req: AuditRequest, shutdown: CancellationToken) -> anyhow::Result<AuditOutcome> {
    let span = tracing::info_span!("audit", db = %req.db.display(), sites = req.starts.len());
    tracing::Instrument::instrument(run_audit_inner(req, shutdown), span).await
}

async fn run_audit_inner(req: AuditRequest, shutdown: CancellationToken) -> anyhow::Result<AuditOutcome> {
    let db_path = req.db.clone();
    let mut db = AuditDb::open(&db_path)?;
    let options = serde_json::json!({
        "starts": req.starts.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "limits": req.config.limits,
        "user_agent": req.config.fetch.user_agent,
        "robots_token": req.config.crawl.token.as_str(),
    });
    let audit = db.create_audit(&options.to_string(), UnixMs::now())?;
    let frontier = Arc::new(EmbeddedFrontier::new(req.config.frontier));
    let mut sites: HashMap<SiteId, String> = HashMap::new();
    for start in &req.starts {
        let site = db.add_site(audit, start.as_str())?;
        sites.insert(site, start.to_string());
        frontier.seed(site_seed(audit, site, start, &req.config)).await?;
    }
    tracing::info!(audit = %audit, sites = sites.len(), db = %db_path.display(), "audit started");
    let fetcher = Fetcher::new(req.config.fetch.clone()).map_err(anyhow::Error::msg)?;
    let crawler = Arc::new(Crawler::new(Arc::clone(&frontier), fetcher, req.config.crawl.clone()));

    let stop_workers = shutdown.child_token();
    let worker = tokio::spawn(run(
        crawler,
        WorkerSettings { id: WorkerId("local".into()), concurrency: req.concurrency },
        stop_workers.clone(),
    ));
    let reaper = {
        let frontier = Arc::clone(&frontier);
        let stop = stop_workers.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(REAP_EVERY);
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        if let Ok(n) = frontier.reap(UnixMs::now()).await && n > 0 {
                            shoal_metrics::metrics().leases_reclaimed.inc_by(n as u64);
                            tracing::warn!(leases = n, "reclaimed expired leases");
                        }
                    }
                    () = stop.cancelled() => break,
                }
            }
        })
    };

    let db = Arc::new(Mutex::new(db));
    let progress = Progress::new(req.progress, &sites);
    let mut totals = Totals::default();
    let mut done_sites = 0usize;
    let interrupted = loop {
        if done_sites == sites.len() {
            break false;
        }
        if shutdown.is_cancelled() {
            break true;
        }
        let n = aggregate(&*frontier, &db, &progress, &mut totals, &mut done_sites).await?;
        if n == 0 {
            tokio::select! {
                () = tokio::time::sleep(AGGREGATE_IDLE) => {}
                () = shutdown.cancelled() => {}
            }
        }
        let (mut queued, mut leased) = (0u64, 0u64);
        for site in sites.keys() {
            if let Some(p) = frontier.progress(*site).await? {
                progress.site_queue(*site, p.queued + p.leased);
                queued += p.queued;
                leased += p.leased;
            }
        }
        let m = shoal_metrics::metrics();
        m.queue_depth.set(i64::try_from(queued).unwrap_or(i64::MAX));
        m.leased.set(i64::try_from(leased).unwrap_or(i64::MAX));
        m.sites_running.set(i64::try_from(sites.len() - done_sites).unwrap_or(0));
        m.audits_running.set(1);
    };
    // Phase one: stop taking work. Phase two: let fetches in flight finish (bounded), then store
    // everything they produced.
    stop_workers.cancel();
    if interrupted {
        frontier.cancel(audit).await?;
    }
    match worker.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::error!(error = %e, "worker stopped with an error"),
        Err(e) => tracing::error!(error = %e, "worker task failed"),
    }
    let _ = reaper.await;
    while aggregate(&*frontier, &db, &progress, &mut totals, &mut done_sites).await? > 0 {}
    progress.finish();
    shoal_metrics::metrics().audits_running.set(0);
    shoal_metrics::metrics().sites_running.set(0);
    let status = if interrupted { AuditStatus::Cancelled } else { AuditStatus::Done };
    let dbc = Arc::clone(&db);
    tokio::task::spawn_blocking(move || lock(&dbc).finish_audit(audit, status, UnixMs::now()))
        .await
        .context("database writer")??;
    tracing::info!(audit = %audit, pages = totals.pages, findings = totals.findings, interrupted, "audit finished");
    Ok(AuditOutcome { audit, sites: sites.len(), pages: totals.pages, findings: totals.findings, interrupted })
}

/// The seed of one site: the start page, then the standard probes (SPEC §2: `/llms.txt`,
/// `/.well-known/security.txt`, one random never-existing path, and for an https start the
/// `http://` form of the start page), all behind the robots.txt of its hosts.
#[must_use]
pub fn site_seed(audit: AuditId, site: SiteId, start: &NormalizedUrl, config: &CrawlConfig) -> SiteSeed {
    let mut initial = vec![Task::new(audit, site, start.clone(), TaskKind::Page, 0, FoundVia::Start)];
    // Random enough that no site has it, stable for one site so a replayed seed is the same.
    let token = xxhash_rust::xxh3::xxh3_64(format!("{audit}/{site}/{start}").as_bytes());
    let probes = vec![
        (ProbeKind::LlmsTxt, "/llms.txt".to_owned()),
        (ProbeKind::SecurityTxt, "/.well-known/security.txt".to_owned()),
        (ProbeKind::Soft404, format!("/shoal-soft-404-check-{token:016x}")),
    ];
    let mut http_form = None;
    if start.as_url().scheme() == "https" {
        let mut u = start.as_url().clone();
        if u.set_scheme("http").is_ok() {
            http_form = NormalizedUrl::from_url(u).ok();
        }
    }
    for (kind, path) in probes {
        if let Ok(u) = NormalizedUrl::join(start.as_url(), &path) {
            initial.push(Task::new(audit, site, u, TaskKind::Probe(kind), 0, FoundVia::Standard));
        }
    }
    if let Some(u) = http_form {
        initial.push(Task::new(audit, site, u, TaskKind::Probe(ProbeKind::HttpsRedirect), 0, FoundVia::Standard));
    }
    SiteSeed { audit, site, start: start.clone(), limits: config.limits, initial }
}

#[derive(Debug, Default)]
struct Totals {
    pages: u64,
    findings: u64,
}

/// Applies one batch of events and updates progress; returns how many events it moved.
async fn aggregate<F: Frontier>(
    frontier: &F,
    db: &Arc<Mutex<AuditDb>>,
    progress: &Progress,
    totals: &mut Totals,
    done_sites: &mut usize,
) -> anyhow::Result<usize> {
    let events = aggregate_batch(frontier, db).await?;
    for e in &events {
        match e {
            Event::Page(p) => {
                totals.pages += 1;
                let failed = p.error.is_some() || p.status.is_some_and(|s| s >= 400);
                progress.page(p.site, failed);
            }
            Event::Finding(_) => totals.findings += 1,
            Event::SiteDone { site, .. } => {
                *done_sites += 1;
                progress.site_done(*site);
            }
        }
    }
    Ok(events.len())
}
