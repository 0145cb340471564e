//! `shoal coordinator`: the long-running service. It accepts audits, seeds them into the Redis
//! frontier, aggregates the workers' events into the audit database, reclaims expired leases and
//! marks audits done.
//!
//! Crash safety: events are acknowledged only after their SQLite commit and applying them is
//! idempotent, so a coordinator killed at any moment resumes where it stopped; leases expire on
//! their own, so no worker's death loses a URL.

use crate::aggregate::{aggregate_batch, lock};
use crate::audit::site_seed;
use crate::cli::{ConfigError, CrawlConfig};
use crate::db::{AuditDb, AuditStatus, AuditSummary, SiteSummary};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use shoal_frontier_redis::RedisFrontier;
use shoal_shared::frontier::{Frontier, SiteProgress};
use shoal_shared::ids::AuditId;
use shoal_shared::pace::PaceLimits;
use shoal_shared::record::Event;
use shoal_shared::task::SiteLimits;
use shoal_shared::time::UnixMs;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Running sites whose queues are summed into the queue-depth gauge at most.
pub const GAUGE_SITES: usize = 2_000;
/// How often expired leases are reclaimed.
const REAP_EVERY: Duration = Duration::from_secs(1);
/// How long the aggregator sleeps when there were no events.
const AGGREGATE_IDLE: Duration = Duration::from_millis(100);
/// Sites per audit at most (a batch of thousands is the point; this only stops mistakes).
pub const MAX_SITES_PER_AUDIT: usize = 100_000;

/// Per-audit options a client may set; everything else comes from the coordinator's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditOptions {
    /// Pages per site.
    pub max_pages: Option<u32>,
    /// Link depth.
    pub max_depth: Option<u16>,
    /// Resource checks per site.
    pub max_resources: Option<u32>,
    /// Requests in flight per host (1-16).
    pub in_flight: Option<u32>,
    /// Milliseconds between request starts per host (0-60000).
    pub gap_ms: Option<u64>,
    /// Follow nofollow links.
    pub follow_nofollow: Option<bool>,
}

/// A request to audit sites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitRequest {
    /// Start URLs, one site each.
    pub urls: Vec<String>,
    /// Options.
    #[serde(default)]
    pub options: AuditOptions,
}

/// One site's state as the API reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteView {
    /// Site id.
    pub id: u64,
    /// Start URL.
    pub start_url: String,
    /// `running` or `done`.
    pub status: String,
    /// Pages recorded.
    pub pages: u64,
    /// URLs recorded (all kinds).
    pub urls: u64,
    /// Findings recorded.
    pub findings: u64,
    /// Tasks queued in the frontier now.
    pub queued: u64,
    /// Tasks leased to workers now.
    pub leased: u64,
}

/// An audit's state as the API reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditView {
    /// Audit id.
    pub id: u64,
    /// `running`, `done`, `cancelled`, `interrupted`.
    pub status: String,
    /// Creation time (ms since the epoch).
    pub created_at_ms: u64,
    /// End time, if it ended.
    pub finished_at_ms: Option<u64>,
    /// Number of sites.
    pub sites_total: u64,
    /// Sites finished.
    pub sites_done: u64,
    /// Pages recorded.
    pub pages: u64,
    /// Findings recorded.
    pub findings: u64,
    /// Per-site detail (only in single-audit answers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<SiteView>,
}

/// A failure the API reports to its client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// The request is wrong.
    #[error("{0}")]
    BadRequest(String),
    /// No such audit.
    #[error("no audit {0}")]
    NotFound(AuditId),
    /// Shoal's own failure.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// The coordinator's shared state.
#[derive(Debug)]
pub struct Service {
    db: Arc<Mutex<AuditDb>>,
    frontier: RedisFrontier,
    defaults: CrawlConfig,
    /// Sites not yet done, per running audit.
    open: Mutex<HashMap<AuditId, HashSet<u64>>>,
}

fn view(a: &AuditSummary, sites: &[SiteSummary]) -> AuditView {
    AuditView {
        id: a.id.0,
        status: a.status.as_str().to_owned(),
        created_at_ms: a.created_at.0,
        finished_at_ms: a.finished_at.map(|t| t.0),
        sites_total: a.sites,
        sites_done: sites.iter().filter(|s| s.status.as_str() == "done").count() as u64,
        pages: a.pages,
        findings: a.findings,
        sites: Vec::new(),
    }
}

impl Service {
    /// Opens the database and remembers the running audits (after a restart they resume).
    pub fn new(db: AuditDb, frontier: RedisFrontier, defaults: CrawlConfig) -> anyhow::Result<Service> {
        let mut open = HashMap::new();
        for a in db.audits()? {
            if a.status == AuditStatus::Running {
                let pending: HashSet<u64> =
                    db.site_counts(a.id)?.into_iter().filter(|s| s.status.as_str() != "done").map(|s| s.id.0).collect();
                open.insert(a.id, pending);
            }
        }
        Ok(Service { db: Arc::new(Mutex::new(db)), frontier, defaults, open: Mutex::new(open) })
    }

    /// Settles what a crash can leave half done, at start: an audit whose sites were all done
    /// but which was not yet marked done (the coordinator died between acknowledging the last
    /// site's event and writing the audit), and sites recorded in the database but never seeded
    /// into the frontier (it died during a submit). Seeding is idempotent: a site already in the
    /// frontier is left as it is.
    pub async fn recover(&self) -> anyhow::Result<()> {
        let running: Vec<(AuditId, Vec<u64>)> =
            lock_open(&self.open).iter().map(|(a, s)| (*a, s.iter().copied().collect())).collect();
        for (audit, pending) in running {
            if pending.is_empty() {
                let db = Arc::clone(&self.db);
                tokio::task::spawn_blocking(move || lock(&db).finish_audit(audit, AuditStatus::Done, UnixMs::now()))
                    .await
                    .context("database writer")??;
                lock_open(&self.open).remove(&audit);
                tracing::info!(audit = %audit, "audit done (found finished at start)");
                continue;
            }
            let (options, sites) = {
                let db = lock(&self.db);
                let options = db.audit(audit)?.map(|a| a.options_json).unwrap_or_default();
                (options, db.site_counts(audit)?)
            };
            let limits: SiteLimits = serde_json::from_str::<serde_json::Value>(&options)
                .ok()
                .and_then(|v| serde_json::from_value(v.get("limits")?.clone()).ok())
                .unwrap_or(self.defaults.limits);
            let mut config = self.defaults.clone();
            config.limits = limits;
            for site in sites.iter().filter(|s| pending.contains(&s.id.0)) {
                if self.frontier.progress(site.id).await?.is_some() {
                    continue;
                }
                let Ok(start) = shoal_shared::url::NormalizedUrl::parse(&site.start_url) else { continue };
                match self.frontier.seed(site_seed(audit, site.id, &start, &config)).await {
                    Ok(()) => {
                        tracing::warn!(audit = %audit, site = %site.id, "seeded a site a crash had left unseeded")
                    }
                    Err(shoal_shared::frontier::FrontierError::AlreadySeeded(_)) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }

    fn limits(&self, o: &AuditOptions) -> Result<SiteLimits, ServiceError> {
        let d = self.defaults.limits;
        let pace = PaceLimits::new(
            o.in_flight.unwrap_or(d.pace.max_in_flight()),
            o.gap_ms.map_or(d.pace.gap(), Duration::from_millis),
        )
        .map_err(|e| ServiceError::BadRequest(e.to_string()))?;
        let limits = SiteLimits {
            max_pages: o.max_pages.unwrap_or(d.max_pages),
            max_depth: o.max_depth.unwrap_or(d.max_depth),
            max_resources: o.max_resources.unwrap_or(d.max_resources),
            pace,
            follow_nofollow: o.follow_nofollow.unwrap_or(d.follow_nofollow),
        };
        if limits.max_pages == 0 {
            return Err(ServiceError::BadRequest("max_pages must be at least 1".into()));
        }
        Ok(limits)
    }

    /// Records an audit and seeds its sites into the frontier.
    pub async fn submit(&self, req: SubmitRequest) -> Result<AuditId, ServiceError> {
        if req.urls.len() > MAX_SITES_PER_AUDIT {
            return Err(ServiceError::BadRequest(format!("more than {MAX_SITES_PER_AUDIT} sites")));
        }
        let starts = crate::cli::start_urls(&req.urls, None)
            .map_err(|e: ConfigError| ServiceError::BadRequest(e.to_string()))?;
        let limits = self.limits(&req.options)?;
        let mut config = self.defaults.clone();
        config.limits = limits;
        let options = serde_json::json!({
            "starts": starts.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "limits": limits,
            "mode": "distributed",
        });
        let db = Arc::clone(&self.db);
        let starts2 = starts.clone();
        let (audit, sites) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
            let mut db = lock(&db);
            let audit = db.create_audit(&options.to_string(), UnixMs::now())?;
            let mut sites = Vec::new();
            for s in &starts2 {
                sites.push(db.add_site(audit, s.as_str())?);
            }
            Ok((audit, sites))
        })
        .await
        .context("database writer")??;
        lock_open(&self.open).insert(audit, sites.iter().map(|s| s.0).collect());
        for (site, start) in sites.iter().zip(&starts) {
            self.frontier.seed(site_seed(audit, *site, start, &config)).await.context("seeding the frontier")?;
        }
        tracing::info!(audit = %audit, sites = sites.len(), "audit submitted");
        Ok(audit)
    }

    /// Every audit, oldest first.
    pub async fn list(&self) -> Result<Vec<AuditView>, ServiceError> {
        let db = Arc::clone(&self.db);
        let out = tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<AuditView>> {
            let db = lock(&db);
            let mut out = Vec::new();
            for a in db.audits()? {
                let sites = db.site_counts(a.id)?;
                out.push(view(&a, &sites));
            }
            Ok(out)
        })
        .await
        .context("database reader")??;
        Ok(out)
    }

    /// One audit with per-site progress.
    pub async fn status(&self, audit: AuditId) -> Result<AuditView, ServiceError> {
        let db = Arc::clone(&self.db);
        let (a, sites) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
            let db = lock(&db);
            let a = db.audit(audit)?;
            let sites = match &a {
                Some(_) => db.site_counts(audit)?,
                None => Vec::new(),
            };
            Ok((a, sites))
        })
        .await
        .context("database reader")??;
        let a = a.ok_or(ServiceError::NotFound(audit))?;
        let mut v = view(&a, &sites);
        for s in &sites {
            let p = if s.status.as_str() == "done" {
                SiteProgress::default()
            } else {
                self.frontier.progress(s.id).await.context("reading progress")?.unwrap_or_default()
            };
            v.sites.push(SiteView {
                id: s.id.0,
                start_url: s.start_url.clone(),
                status: s.status.as_str().to_owned(),
                pages: s.pages,
                urls: s.urls,
                findings: s.findings,
                queued: p.queued,
                leased: p.leased,
            });
        }
        Ok(v)
    }

    /// Cancels an audit: its queues are dropped, fetches in flight finish, it ends `cancelled`.
    pub async fn cancel(&self, audit: AuditId) -> Result<AuditView, ServiceError> {
        let v = self.status(audit).await?;
        if v.status == "running" {
            self.frontier.cancel(audit).await.context("cancelling in the frontier")?;
            let db = Arc::clone(&self.db);
            tokio::task::spawn_blocking(move || lock(&db).finish_audit(audit, AuditStatus::Cancelled, UnixMs::now()))
                .await
                .context("database writer")?
                .map_err(anyhow::Error::from)?;
            lock_open(&self.open).remove(&audit);
            tracing::info!(audit = %audit, "audit cancelled");
        }
        self.status(audit).await
    }

    /// Writes a report of an audit into `out`.
    pub fn report_json(&self, audit: AuditId, out: &mut dyn std::io::Write) -> Result<(), ServiceError> {
        let db = lock(&self.db);
        if db.audit(audit).map_err(anyhow::Error::from)?.is_none() {
            return Err(ServiceError::NotFound(audit));
        }
        crate::report::write_json(&db, audit, out).map_err(anyhow::Error::from)?;
        Ok(())
    }

    /// The database path (for reports written to files).
    #[must_use]
    pub fn db(&self) -> &Arc<Mutex<AuditDb>> {
        &self.db
    }

    /// One aggregation step: events into the database, audits whose sites are all done marked done.
    /// Returns how many events were applied.
    pub async fn aggregate(&self) -> anyhow::Result<usize> {
        let events = aggregate_batch(&self.frontier, &self.db).await?;
        let mut finished = Vec::new();
        {
            let mut open = lock_open(&self.open);
            for e in &events {
                if let Event::SiteDone { audit, site } = e
                    && let Some(pending) = open.get_mut(audit)
                {
                    pending.remove(&site.0);
                    if pending.is_empty() {
                        finished.push(*audit);
                    }
                }
            }
            for a in &finished {
                open.remove(a);
            }
        }
        for audit in finished {
            let db = Arc::clone(&self.db);
            tokio::task::spawn_blocking(move || lock(&db).finish_audit(audit, AuditStatus::Done, UnixMs::now()))
                .await
                .context("database writer")??;
            tracing::info!(audit = %audit, "audit done");
            if let Err(e) = self.frontier.forget(audit).await {
                tracing::warn!(audit = %audit, error = %e, "could not drop the finished audit's records from Redis");
            }
        }
        Ok(events.len())
    }

    /// Reclaims expired leases.
    pub async fn reap(&self) -> anyhow::Result<usize> {
        let n = self.frontier.reap(UnixMs::now()).await?;
        shoal_metrics::metrics().leases_reclaimed.inc_by(n as u64);
        Ok(n)
    }

    /// Updates the gauges: running audits and sites, and the frontier's queued and leased tasks
    /// summed over the running sites (the first [`GAUGE_SITES`] of them, to bound the cost).
    pub async fn update_gauges(&self) -> anyhow::Result<()> {
        let sites: Vec<u64> = {
            let open = lock_open(&self.open);
            let m = shoal_metrics::metrics();
            m.audits_running.set(i64::try_from(open.len()).unwrap_or(i64::MAX));
            let all: usize = open.values().map(HashSet::len).sum();
            m.sites_running.set(i64::try_from(all).unwrap_or(i64::MAX));
            open.values().flat_map(|s| s.iter().copied()).take(GAUGE_SITES).collect()
        };
        let (mut queued, mut leased) = (0u64, 0u64);
        for site in sites {
            if let Some(p) = self.frontier.progress(shoal_shared::ids::SiteId(site)).await? {
                queued += p.queued;
                leased += p.leased;
            }
        }
        let m = shoal_metrics::metrics();
        m.queue_depth.set(i64::try_from(queued).unwrap_or(i64::MAX));
        m.leased.set(i64::try_from(leased).unwrap_or(i64::MAX));
        Ok(())
    }
}

fn lock_open(m: &Mutex<HashMap<AuditId, HashSet<u64>>>) -> std::sync::MutexGuard<'_, HashMap<AuditId, HashSet<u64>>> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Everything `shoal coordinator` needs.
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    /// Redis URL.
    pub redis: String,
    /// Frontier namespace.
    pub namespace: String,
    /// Audit database.
    pub db: PathBuf,
    /// Where the HTTP API listens.
    pub listen: std::net::SocketAddr,
    /// The bearer token clients must present.
    pub token: String,
    /// Default crawl settings for submitted audits, and frontier settings.
    pub crawl: CrawlConfig,
}

/// Runs the coordinator until `shutdown`: API, aggregation and lease reaping.
pub async fn run_coordinator(cfg: CoordinatorConfig, shutdown: CancellationToken) -> anyhow::Result<()> {
    // Refuse to start with a token too short to keep the API and the dashboard closed.
    crate::cli::check_token(&cfg.token)?;
    let db = AuditDb::open(&cfg.db)?;
    let frontier = RedisFrontier::connect(&cfg.redis, &cfg.namespace, cfg.crawl.frontier, "coordinator")
        .await
        .with_context(|| format!("connecting to Redis at {}", redact(&cfg.redis)))?;
    frontier.publish_settings().await?;
    let service = Arc::new(Service::new(db, frontier, cfg.crawl.clone())?);
    service.recover().await.context("recovering after a restart")?;
    let listener =
        tokio::net::TcpListener::bind(cfg.listen).await.with_context(|| format!("listening on {}", cfg.listen))?;
    tracing::info!(listen = %listener.local_addr().unwrap_or(cfg.listen), db = %cfg.db.display(), "coordinator started");
    let app = crate::api::router(Arc::clone(&service), cfg.token.clone());
    let mut tasks = tokio::task::JoinSet::new();
    {
        let stop = shutdown.clone();
        tasks.spawn(async move {
            // The peer address is what the dashboard's login throttle counts per client.
            axum::serve(listener, app.into_make_service_with_connect_info::<std::net::SocketAddr>())
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await
                .context("HTTP API")
        });
    }
    {
        let service = Arc::clone(&service);
        let stop = shutdown.clone();
        tasks.spawn(async move {
            loop {
                match service.aggregate().await {
                    Ok(0) => {
                        tokio::select! {
                            () = tokio::time::sleep(AGGREGATE_IDLE) => {}
                            () = stop.cancelled() => return Ok(()),
                        }
                    }
                    Ok(_) => {
                        if stop.is_cancelled() {
                            return Ok(());
                        }
                    }
                    Err(e) => {
                        tracing::error!(error = %format!("{e:#}"), "aggregation failed; retrying in 1 s");
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_secs(1)) => {}
                            () = stop.cancelled() => return Ok(()),
                        }
                    }
                }
            }
        });
    }
    {
        let service = Arc::clone(&service);
        let stop = shutdown.clone();
        tasks.spawn(async move {
            let mut tick = tokio::time::interval(REAP_EVERY);
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        match service.reap().await {
                            Ok(0) => {}
                            Ok(n) => tracing::warn!(leases = n, "reclaimed expired leases"),
                            Err(e) => tracing::error!(error = %format!("{e:#}"), "reaping leases failed"),
                        }
                        if let Err(e) = service.update_gauges().await {
                            tracing::warn!(error = %format!("{e:#}"), "updating gauges failed");
                        }
                    }
                    () = stop.cancelled() => return Ok(()),
                }
            }
        });
    }
    let mut result = Ok(());
    while let Some(r) = tasks.join_next().await {
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                shutdown.cancel();
                result = Err(e);
            }
            Err(e) => {
                shutdown.cancel();
                result = Err(anyhow::anyhow!("coordinator task failed: {e}"));
            }
        }
    }
    tracing::info!("coordinator stopped");
    result
}

/// A Redis URL without its password, for messages.
#[must_use]
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_owned(),
    }
}
