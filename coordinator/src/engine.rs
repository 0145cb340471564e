//! The coordinator engine: one implementation of the coordinator role over any [`Frontier`].
//!
//! `shoal audit` runs it on the embedded frontier beside in-process workers ([`crate::local`]);
//! `shoal coordinator` runs it on Redis behind the HTTP server. Either way it submits audits
//! (database rows, then frontier seeds), moves the workers' events into the audit database,
//! reclaims expired leases, marks sites and audits done and keeps the gauges, with the same loops,
//! constants and metrics.
//!
//! Crash safety: events are acknowledged only after their SQLite commit and applying them is
//! idempotent, so a coordinator killed at any moment resumes where it stopped ([`Coordinator::recover`]);
//! leases expire on their own, so no worker's death loses a URL.

mod quarantine;
mod request;
mod retention;
#[cfg(test)]
mod tests;

pub use quarantine::{QUARANTINE_READ, QUARANTINE_TIMEOUT, Verdict, judge};
pub use retention::RetentionPass;

use crate::admission::Admission;
use crate::aggregate::{EVENT_BATCH, lock};
use crate::config::{AuditSettings, EngineConfig};
use shoal_shared::frontier::{EventId, Frontier, FrontierError, SiteProgress};
use shoal_shared::ids::{AuditId, ScheduleId, SiteId};
use shoal_shared::record::Event;
use shoal_shared::task::SiteLimits;
use shoal_shared::time::UnixMs;
use shoal_shared::url::NormalizedUrl;
use shoal_shared::wire::{AuditView, SitePage, SiteView, SubmitRequest};
use shoal_store::{
    AuditDb, AuditStatus, AuditSummary, DbError, OPTIONS_VERSION, SiteStatus, SiteSummary, StoredOptions,
};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Running sites whose queues are summed into the queue-depth gauge at most.
pub const GAUGE_SITES: usize = 2_000;
/// How often expired leases are reclaimed and the gauges refreshed.
pub const REAP_EVERY: Duration = Duration::from_secs(1);
/// How long the aggregator sleeps when there were no events.
pub const AGGREGATE_IDLE: Duration = Duration::from_millis(100);
/// How long the aggregator lets events gather after a batch smaller than [`EVENT_BATCH`]: one
/// transaction for what a busy crawl publishes in that time instead of one per handful of pages
/// (each commit writes every page it dirtied, and each batch is a thread hop). Findings reach the
/// database this much later; a full batch is followed at once.
pub const AGGREGATE_GATHER: Duration = Duration::from_millis(50);
/// How long the aggregator waits after a failure before trying again.
pub const AGGREGATE_RETRY: Duration = Duration::from_secs(1);

/// What can go wrong in the engine, by what failed (the binary maps these to exit statuses and
/// the server to HTTP statuses).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The request is wrong (a bad start URL, an option out of range).
    #[error("{0}")]
    BadRequest(String),
    /// No such audit.
    #[error("no audit {0}")]
    NotFound(AuditId),
    /// No such schedule (recurring audits, [`crate::schedule`]).
    #[error("no schedule {0}")]
    NoSchedule(ScheduleId),
    /// The audit needs a worker started with `--browser`
    /// ([`SiteLimits::needs_browser`](shoal_shared::task::SiteLimits::needs_browser)) and none is
    /// live: refused rather than left waiting for one forever after its crawl.
    #[error(
        "this audit opens pages in Chromium ({why}), but no worker started with --browser \
         is live: start one (`shoal worker --browser …`) or submit without browser pages and with render never"
    )]
    NoBrowserWorker {
        /// What of the audit's options asks for Chromium (`browser_pages 3`, `render auto`).
        why: String,
    },
    /// The audit database failed.
    #[error(transparent)]
    Store(#[from] DbError),
    /// The frontier (Redis, or the embedded one) failed.
    #[error(transparent)]
    Frontier(#[from] FrontierError),
    /// The blocking task that owns the database writer panicked or was cancelled.
    #[error("the database writer task failed: {0}")]
    Writer(#[from] tokio::task::JoinError),
    /// The HTTP fetcher could not be built (for the in-process workers of `shoal audit`).
    #[error("cannot start the fetcher: {0}")]
    Fetcher(#[from] shoal_worker::fetch::FetcherError),
}

/// Told about what the engine applies, for a progress display. Both methods default to nothing.
pub trait Observer: Send + Sync + std::fmt::Debug + 'static {
    /// A batch of events was committed to the database.
    fn applied(&self, _events: &[Event]) {}
    /// A running site has `waiting` tasks queued or leased in the frontier now.
    fn queue(&self, _site: SiteId, _waiting: u64) {}
    /// The run is over (the display can draw its last state).
    fn finish(&self) {}
}

/// The schedule a run started by [`Coordinator::start_run`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduledStart {
    /// The schedule.
    pub schedule: ScheduleId,
    /// When its next run is due, recorded with this one.
    pub next_run: UnixMs,
}

/// The coordinator role: one per process, shared by the loops of [`Coordinator::run`] and by the
/// server's handlers.
#[derive(Debug)]
pub struct Coordinator<F> {
    db: Arc<Mutex<AuditDb>>,
    /// A second connection for status and list reads, so they never wait for the writer (WAL
    /// lets them read beside it); `None` for an in-memory database, which has no second view.
    reader: Option<Arc<Mutex<AuditDb>>>,
    frontier: Arc<F>,
    config: EngineConfig,
    /// How audits record where they ran (`"embedded"` or `"distributed"`).
    mode: &'static str,
    /// Which running sites are in the frontier and which wait for a place.
    admission: Admission,
    /// Sites not yet done, per running audit.
    open: Mutex<HashMap<AuditId, HashSet<SiteId>>>,
    /// Wakes [`Coordinator::finished`] whenever an audit leaves `open`.
    changed: tokio::sync::Notify,
    /// Wakes the scheduler ([`crate::schedule::Scheduler`], which otherwise sleeps until the next
    /// schedule is due): a schedule was added or removed, or an audit ended (a scheduled run's end
    /// is settled at once). `notify_one` keeps one wake-up for a scheduler busy at that moment.
    schedule_wake: tokio::sync::Notify,
    /// Wakes the retention loop ([`retention`]) when an audit ended.
    retention_wake: tokio::sync::Notify,
    /// Ended audits the frontier still holds something of (a cancelled audit's leases out):
    /// forgotten again on every reaping tick until nothing is left.
    forgetting: Mutex<HashSet<AuditId>>,
    observer: OnceLock<Arc<dyn Observer>>,
    /// A batch read whose write failed for the database's sake (a full disk, say): written again
    /// before anything more is read, so a failed write loses nothing, whichever frontier handed
    /// the batch over.
    unwritten: Mutex<Option<Batch>>,
    /// When this process first saw each quarantined site ([`quarantine`]).
    quarantine_seen: Mutex<HashMap<SiteId, UnixMs>>,
}

/// Events read from the frontier, with the ids that acknowledge them.
type Batch = (Vec<EventId>, Vec<Event>);

pub(crate) fn view(a: &AuditSummary) -> AuditView {
    AuditView {
        id: a.id.0,
        status: a.status,
        reason: a.reason.clone(),
        created_at_ms: a.created_at.0,
        finished_at_ms: a.finished_at.map(|t| t.0),
        sites_total: a.sites,
        sites_done: a.sites_done,
        pages: a.pages,
        findings: a.findings,
        sites: Vec::new(),
        sites_waiting: 0,
        sites_next_after: None,
    }
}

impl<F: Frontier> Coordinator<F> {
    /// Opens the engine over a database and a frontier, remembering the audits still running in
    /// the database (after a restart they resume).
    ///
    /// # Errors
    /// The database cannot be read.
    pub fn new(
        db: AuditDb,
        frontier: Arc<F>,
        config: EngineConfig,
        mode: &'static str,
    ) -> Result<Coordinator<F>, EngineError> {
        let mut open = HashMap::new();
        for a in db.audits()? {
            if a.status == AuditStatus::Running {
                let pending: HashSet<SiteId> =
                    db.site_counts(a.id)?.into_iter().filter(|s| s.status != SiteStatus::Done).map(|s| s.id).collect();
                open.insert(a.id, pending);
            }
        }
        let max_active = config.max_active_sites;
        let reader = if db.path() == std::path::Path::new(":memory:") {
            None
        } else {
            Some(Arc::new(Mutex::new(AuditDb::open(db.path())?)))
        };
        Ok(Coordinator {
            db: Arc::new(Mutex::new(db)),
            reader,
            frontier,
            config,
            mode,
            open: Mutex::new(open),
            admission: Admission::new(max_active),
            changed: tokio::sync::Notify::new(),
            schedule_wake: tokio::sync::Notify::new(),
            retention_wake: tokio::sync::Notify::new(),
            forgetting: Mutex::new(HashSet::new()),
            observer: OnceLock::new(),
            unwritten: Mutex::new(None),
            quarantine_seen: Mutex::new(HashMap::new()),
        })
    }

    /// Runs `f` on the read connection in a blocking task (never waiting for the writer).
    pub(crate) async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&AuditDb) -> Result<T, DbError> + Send + 'static,
    ) -> Result<T, EngineError> {
        let db = Arc::clone(self.reader.as_ref().unwrap_or(&self.db));
        Ok(tokio::task::spawn_blocking(move || f(&lock(&db))).await??)
    }

    /// Drops what the frontier keeps of an ended audit, now or, while some of it is still in use
    /// (a cancelled audit's leases out), on the following reaping ticks.
    async fn forget(&self, audit: AuditId) {
        match self.frontier.forget(audit).await {
            Ok(true) => {
                lock_set(&self.forgetting).remove(&audit);
            }
            Ok(false) => {
                lock_set(&self.forgetting).insert(audit);
            }
            Err(e) => {
                tracing::warn!(audit = %audit, error = %e, "could not drop the ended audit's records from the frontier; trying again");
                lock_set(&self.forgetting).insert(audit);
            }
        }
    }

    /// Sets the one observer (a second call is ignored).
    pub fn observe(&self, observer: Arc<dyn Observer>) {
        let _ = self.observer.set(observer);
    }

    /// The observer, if one was set.
    #[must_use]
    pub fn observer(&self) -> Option<&Arc<dyn Observer>> {
        self.observer.get()
    }

    /// The audit database, for readers (reports, the dashboard).
    #[must_use]
    pub fn db(&self) -> &Arc<Mutex<AuditDb>> {
        &self.db
    }

    /// The frontier.
    #[must_use]
    pub fn frontier(&self) -> &Arc<F> {
        &self.frontier
    }

    /// The engine's settings, with the defaults of an audit.
    #[must_use]
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Runs `f` on the database writer in a blocking task.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut AuditDb) -> Result<T, DbError> + Send + 'static,
    ) -> Result<T, EngineError> {
        let db = Arc::clone(&self.db);
        Ok(tokio::task::spawn_blocking(move || f(&mut lock(&db))).await??)
    }

    /// Settles what a crash can leave half done, at start, and rebuilds the admission window
    /// ([`crate::admission`]): an audit whose sites were all done but which was not yet marked
    /// done (the coordinator died between acknowledging the last site's event and writing the
    /// audit) ends; of the running sites, those the frontier holds count as active and the others
    /// wait for a place (never admitted yet, or lost with an emptied Redis). Seeding is
    /// idempotent: a site already in the frontier is left as it is.
    ///
    /// # Errors
    /// The database or the frontier failed.
    pub async fn recover(&self) -> Result<(), EngineError> {
        self.admission.clear();
        let running: Vec<(AuditId, HashSet<SiteId>)> =
            lock_open(&self.open).iter().map(|(a, s)| (*a, s.clone())).collect();
        for (audit, pending) in running {
            if pending.is_empty() {
                self.end(audit, AuditStatus::Done).await?;
                tracing::info!(audit = %audit, "audit done (found finished at start)");
                continue;
            }
            let (options, sites) = {
                let db = lock(&self.db);
                (db.audit_options(audit), db.site_counts(audit)?)
            };
            // Why fail rather than resume with the defaults: the audit would go on with other
            // limits and rules than it was started with, and its report would not say so.
            let options = match options {
                Ok(o) => o,
                Err(DbError::UnreadableOptions { source, .. }) => {
                    self.fail(audit, format!("its stored options could not be read: {source}")).await?;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let config = AuditSettings { limits: options.limits, custom: options.custom };
            let pending: Vec<_> = sites.iter().filter(|s| pending.contains(&s.id)).collect();
            let ids: Vec<SiteId> = pending.iter().map(|s| s.id).collect();
            let progress = self.frontier.progress_many(&ids).await?;
            let active = progress.iter().filter(|p| p.is_some()).count();
            let waiting: Vec<_> = pending
                .iter()
                .zip(progress)
                .filter(|(_, p)| p.is_none())
                .filter_map(|(site, _)| Some((site.id, NormalizedUrl::parse(&site.start_url).ok()?)))
                .collect();
            if !waiting.is_empty() {
                tracing::info!(audit = %audit, active, waiting = waiting.len(), "running sites resumed");
            }
            self.admission.add(audit, Arc::new(config), waiting, active);
        }
        self.admit().await
    }

    /// Seeds waiting sites into the frontier while the window has room ([`crate::admission`]).
    /// Called after a submit, when sites end and on every reaping tick (so a failed seed is
    /// tried again).
    ///
    /// # Errors
    /// The frontier failed; the sites it was given wait again.
    pub async fn admit(&self) -> Result<(), EngineError> {
        let taken = self.admission.take();
        if taken.seeds.is_empty() {
            return Ok(());
        }
        match self.frontier.seed_many(taken.seeds.clone()).await {
            Ok(seeded) => {
                self.admission.seeded(&taken, &seeded);
                Ok(())
            }
            Err(e) => {
                self.admission.failed(taken);
                Err(e.into())
            }
        }
    }

    /// Checks a client's request and starts the audit it asks for.
    ///
    /// # Errors
    /// [`EngineError::BadRequest`] for bad URLs or options, [`EngineError::NoBrowserWorker`] when
    /// it needs a browser worker and none is live; store or frontier failures.
    pub async fn submit(&self, req: SubmitRequest) -> Result<AuditId, EngineError> {
        let (starts, settings) = self.check(&req)?;
        self.check_browser(&settings).await?;
        Ok(self.start_run(starts, settings, None).await?.0)
    }

    /// Records an audit of `starts` (one site each) and seeds its sites into the frontier.
    /// Returns the audit and its sites, in the order of `starts`.
    ///
    /// # Errors
    /// Store or frontier failures.
    pub async fn start(
        &self,
        starts: Vec<NormalizedUrl>,
        limits: SiteLimits,
    ) -> Result<(AuditId, Vec<(SiteId, NormalizedUrl)>), EngineError> {
        self.start_run(starts, AuditSettings { limits, custom: self.config.defaults.custom.clone() }, None).await
    }

    /// [`Coordinator::start`], for a run of a schedule when `run` is given: the audit is created,
    /// linked to the schedule and recorded as its latest run in one transaction
    /// ([`AuditDb::start_scheduled_audit`]), so a crash cannot leave a run the schedule does not
    /// know of.
    ///
    /// # Errors
    /// [`EngineError::NoSchedule`] if the schedule was removed meanwhile; store or frontier failures.
    pub async fn start_run(
        &self,
        starts: Vec<NormalizedUrl>,
        settings: AuditSettings,
        run: Option<ScheduledStart>,
    ) -> Result<(AuditId, Vec<(SiteId, NormalizedUrl)>), EngineError> {
        let identity = &self.config.identity;
        let options = StoredOptions {
            version: OPTIONS_VERSION,
            starts: starts.iter().map(ToString::to_string).collect(),
            limits: settings.limits.clone(),
            custom: settings.custom.clone(),
            user_agent: identity.user_agent.clone(),
            robots_token: identity.robots_token.clone(),
            mode: Some(self.mode.to_owned()),
        }
        .to_json();
        let (audit, sites) = self
            .write(move |db| {
                let now = UnixMs::from(std::time::SystemTime::now());
                let audit = match run {
                    None => Some(db.create_audit(&options, now)?),
                    Some(r) => db.start_scheduled_audit(r.schedule, &options, now, r.next_run)?,
                };
                let Some(audit) = audit else { return Ok((None, Vec::new())) };
                let ids = db.add_sites(audit, &starts.iter().map(NormalizedUrl::as_str).collect::<Vec<_>>())?;
                Ok((Some(audit), ids.into_iter().zip(starts).collect::<Vec<_>>()))
            })
            .await?;
        // Only a scheduled start finds nothing to link to (its schedule was removed meanwhile).
        let audit = audit.ok_or_else(|| EngineError::NoSchedule(run.map(|r| r.schedule).unwrap_or_default()))?;
        lock_open(&self.open).insert(audit, sites.iter().map(|(s, _)| *s).collect());
        self.admission.add(audit, Arc::new(settings), sites.clone(), 0);
        self.admit().await?;
        tracing::info!(audit = %audit, sites = sites.len(), mode = self.mode, "audit started");
        Ok((audit, sites))
    }

    /// Every audit, oldest first.
    ///
    /// # Errors
    /// The database failed.
    pub async fn list(&self) -> Result<Vec<AuditView>, EngineError> {
        self.read(|db| Ok(db.audits()?.iter().map(view).collect())).await
    }

    /// One audit with the progress of its first page of sites ([`SitePage::DEFAULT_LIMIT`]).
    ///
    /// # Errors
    /// [`EngineError::NotFound`], or the database or frontier failed.
    pub async fn status(&self, audit: AuditId) -> Result<AuditView, EngineError> {
        self.status_page(audit, SitePage::default()).await
    }

    /// One audit with the progress of one page of its sites: two indexed reads and one frontier
    /// round trip for the page's running sites, whatever the audit's size.
    ///
    /// # Errors
    /// [`EngineError::NotFound`], or the database or frontier failed.
    pub async fn status_page(&self, audit: AuditId, page: SitePage) -> Result<AuditView, EngineError> {
        let limit = page.limit();
        let (a, mut sites) = self
            .read(move |db| {
                let a = db.audit(audit)?;
                let sites = match &a {
                    // One more than the page holds tells whether another page follows.
                    Some(_) => db.site_page(audit, page.after.map(SiteId), limit + 1)?,
                    None => Vec::new(),
                };
                Ok((a, sites))
            })
            .await?;
        let a = a.ok_or(EngineError::NotFound(audit))?;
        let mut v = view(&a);
        v.sites_waiting = self.admission.waiting(audit) as u64;
        if sites.len() > limit {
            sites.truncate(limit);
            v.sites_next_after = sites.last().map(|s| s.id.0);
        }
        v.sites = self.site_views(&sites).await?;
        Ok(v)
    }

    /// The progress of `sites` as the API shows it: their rows, and the queued and leased counts of
    /// the running ones in one frontier round trip.
    pub(crate) async fn site_views(&self, sites: &[SiteSummary]) -> Result<Vec<SiteView>, EngineError> {
        let running: Vec<SiteId> = sites.iter().filter(|s| s.status != SiteStatus::Done).map(|s| s.id).collect();
        let mut progress: HashMap<SiteId, SiteProgress> = HashMap::with_capacity(running.len());
        for (id, p) in running.iter().zip(self.frontier.progress_many(&running).await?) {
            progress.insert(*id, p.unwrap_or_default());
        }
        Ok(sites
            .iter()
            .map(|s| {
                let p = progress.get(&s.id).copied().unwrap_or_default();
                SiteView {
                    id: s.id.0,
                    start_url: s.start_url.clone(),
                    status: s.status,
                    pages: s.pages,
                    urls: s.urls,
                    findings: s.findings,
                    queued: p.queued,
                    leased: p.leased,
                }
            })
            .collect())
    }

    /// How many of `sites` of `audit` wait for a place in the frontier.
    pub(crate) fn waiting_among(&self, audit: AuditId, sites: &HashSet<SiteId>) -> u64 {
        self.admission.waiting_among(audit, sites) as u64
    }

    /// Cancels an audit: its queues are dropped, fetches in flight finish (their results are still
    /// stored), and it ends `cancelled`.
    ///
    /// # Errors
    /// [`EngineError::NotFound`], or the database or frontier failed.
    pub async fn cancel(&self, audit: AuditId) -> Result<AuditView, EngineError> {
        let v = self.status(audit).await?;
        if v.status == AuditStatus::Running {
            self.frontier.cancel(audit).await?;
            self.end(audit, AuditStatus::Cancelled).await?;
            self.forget(audit).await;
            tracing::info!(audit = %audit, "audit cancelled");
        }
        self.status(audit).await
    }

    /// Whether `audit` has left the running set (done or cancelled).
    #[must_use]
    pub fn is_finished(&self, audit: AuditId) -> bool {
        !lock_open(&self.open).contains_key(&audit)
    }

    /// Waits until `audit` is no longer running.
    pub async fn finished(&self, audit: AuditId) {
        loop {
            let notified = self.changed.notified();
            if self.is_finished(audit) {
                return;
            }
            notified.await;
        }
    }

    fn unwritten(&self) -> std::sync::MutexGuard<'_, Option<Batch>> {
        self.unwritten.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One aggregation step: reads a batch of events, commits it, acknowledges it (an event is
    /// acknowledged only after its commit, so a crash in between replays it), and marks done the
    /// audits whose sites are all done. Returns how many events were applied.
    ///
    /// # Errors
    /// The database or the frontier failed; nothing was acknowledged that was not committed.
    pub async fn aggregate(&self) -> Result<usize, EngineError> {
        let retry = self.unwritten().take();
        let (ids, events) = match retry {
            Some(batch) => batch,
            None => {
                let batch = self.frontier.read_events(EVENT_BATCH).await?;
                if batch.is_empty() {
                    return Ok(0);
                }
                batch.into_iter().unzip()
            }
        };
        let (written, ids, events, skipped) = self.write(move |db| Ok(quarantine::apply(db, ids, events))).await?;
        for (id, site) in &skipped {
            tracing::warn!(id = %id.0, site = %site, "quarantined an events stream entry naming a site this audit database does not hold under its audit");
        }
        shoal_metrics::metrics().events_quarantined.inc_by(skipped.len() as u64);
        if let Err(e) = written {
            // Only a database failure is worth another try with the same batch.
            if matches!(e, DbError::Sql { .. }) {
                *self.unwritten() = Some((ids, events));
            }
            return Err(e.into());
        }
        // Before the acknowledgement: a failure here reads the batch again (queueing is idempotent).
        self.queue_browser_pages(&events).await?;
        self.frontier.ack_events(&ids).await?;
        count_events(&events);
        if let Some(o) = self.observer.get() {
            o.applied(&events);
        }
        let mut finished = Vec::new();
        let mut ended = 0;
        {
            let mut open = lock_open(&self.open);
            for e in &events {
                if let Event::SiteDone { audit, site } = e
                    && let Some(pending) = open.get_mut(audit)
                    && pending.remove(site)
                {
                    self.admission.ended(*audit);
                    ended += 1;
                    if pending.is_empty() {
                        finished.push(*audit);
                    }
                }
            }
        }
        for audit in finished {
            self.end(audit, AuditStatus::Done).await?;
            tracing::info!(audit = %audit, "audit done");
            self.forget(audit).await;
        }
        // The places of the sites that ended go to waiting sites; a failure here is retried on
        // the next reaping tick and costs no event.
        if ended > 0
            && let Err(e) = self.admit().await
        {
            tracing::warn!(error = %e, "seeding waiting sites failed; trying again");
        }
        Ok(events.len())
    }

    /// Applies every event the frontier still holds (after the workers stopped).
    ///
    /// # Errors
    /// As [`Coordinator::aggregate`].
    pub async fn drain(&self) -> Result<(), EngineError> {
        while self.aggregate().await? > 0 {}
        Ok(())
    }

    /// Marks a running audit ended with `status`: in the database, then out of the running set,
    /// waking [`Coordinator::finished`], the scheduler and the retention loop (which applies
    /// [`EngineConfig::retention`], if set). Also what `shoal audit` calls when interrupted, after
    /// [`Coordinator::drain`] stored what was fetched.
    ///
    /// # Errors
    /// The database failed.
    pub async fn end(&self, audit: AuditId, status: AuditStatus) -> Result<(), EngineError> {
        self.write(move |db| db.finish_audit(audit, status, UnixMs::from(std::time::SystemTime::now()))).await?;
        lock_open(&self.open).remove(&audit);
        self.admission.remove(audit);
        self.changed.notify_waiters();
        self.schedule_wake.notify_one();
        self.retention_wake.notify_one();
        Ok(())
    }

    /// What wakes the scheduler: notified when a schedule is added or removed and when an audit ends.
    pub(crate) fn schedule_wake(&self) -> &tokio::sync::Notify {
        &self.schedule_wake
    }

    /// Reclaims expired leases.
    ///
    /// # Errors
    /// The frontier failed.
    pub async fn reap(&self) -> Result<usize, EngineError> {
        let n = self.frontier.reap(UnixMs::from(std::time::SystemTime::now())).await?;
        shoal_metrics::metrics().leases_reclaimed.inc_by(n as u64);
        Ok(n)
    }

    /// Updates the gauges: running audits and sites, live browser workers, and the frontier's queued
    /// and leased tasks summed over the running sites (the first [`GAUGE_SITES`] of them).
    ///
    /// # Errors
    /// The frontier failed.
    pub async fn update_gauges(&self) -> Result<(), EngineError> {
        let sites: Vec<SiteId> = {
            let open = lock_open(&self.open);
            let m = shoal_metrics::metrics();
            m.audits_running.set(i64::try_from(open.len()).unwrap_or(i64::MAX));
            let all: usize = open.values().map(HashSet::len).sum();
            m.sites_running.set(i64::try_from(all).unwrap_or(i64::MAX));
            open.values().flat_map(|s| s.iter().copied()).take(GAUGE_SITES).collect()
        };
        let (mut queued, mut leased) = (0u64, 0u64);
        let progress = self.frontier.progress_many(&sites).await?;
        for (site, p) in sites.into_iter().zip(progress) {
            if let Some(p) = p {
                queued += p.queued;
                leased += p.leased;
                if let Some(o) = self.observer.get() {
                    o.queue(site, p.queued + p.leased);
                }
            }
        }
        let browsers = self.frontier.browser_workers(UnixMs::from(std::time::SystemTime::now())).await?;
        let m = shoal_metrics::metrics();
        m.queue_depth.set(i64::try_from(queued).unwrap_or(i64::MAX));
        m.leased.set(i64::try_from(leased).unwrap_or(i64::MAX));
        m.browser_workers.set(i64::try_from(browsers).unwrap_or(i64::MAX));
        Ok(())
    }

    /// Runs the engine's loops (aggregation; lease reaping and gauges; retention when set) until
    /// `shutdown`. Failures
    /// are logged and retried: a database or Redis outage pauses the work, it does not end it.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut tasks = JoinSet::new();
        let me = Arc::clone(&self);
        let stop = shutdown.clone();
        tasks.spawn(async move { me.aggregate_loop(stop).await });
        let me = Arc::clone(&self);
        let stop = shutdown.clone();
        tasks.spawn(async move { me.reap_loop(stop).await });
        if !self.config.retention.is_off() {
            let me = Arc::clone(&self);
            let stop = shutdown.clone();
            tasks.spawn(async move { me.retention_loop(stop).await });
        }
        while let Some(r) = tasks.join_next().await {
            if let Err(e) = r {
                tracing::error!(error = %e, "a coordinator loop failed");
                shutdown.cancel();
            }
        }
        let m = shoal_metrics::metrics();
        m.audits_running.set(0);
        m.sites_running.set(0);
    }

    async fn aggregate_loop(&self, stop: CancellationToken) {
        loop {
            let pause = match self.aggregate().await {
                Ok(0) => AGGREGATE_IDLE,
                Ok(_) if stop.is_cancelled() => return,
                Ok(n) if n >= EVENT_BATCH => continue,
                Ok(_) => AGGREGATE_GATHER,
                Err(EngineError::Frontier(FrontierError::Lost(what))) => {
                    // The frontier's store came back empty: seed the audits still running again
                    // from the database (pages already stored stay; their sites are crawled anew,
                    // and applying what comes back twice changes nothing).
                    tracing::warn!(missing = what, "the frontier lost its data; seeding the running audits again");
                    match self.recover().await {
                        Ok(()) => continue,
                        Err(e) => {
                            tracing::error!(error = %e, "seeding the running audits again failed; retrying in 1 s");
                            AGGREGATE_RETRY
                        }
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "aggregation failed; retrying in 1 s");
                    AGGREGATE_RETRY
                }
            };
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = stop.cancelled() => return,
            }
        }
    }

    async fn reap_loop(&self, stop: CancellationToken) {
        let mut tick = tokio::time::interval(REAP_EVERY);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    match self.reap().await {
                        Ok(0) => {}
                        Ok(n) => tracing::warn!(leases = n, "reclaimed expired leases"),
                        Err(e) => tracing::error!(error = %e, "reaping leases failed"),
                    }
                    if let Err(e) = self.update_gauges().await {
                        tracing::warn!(error = %e, "updating gauges failed");
                    }
                    if let Err(e) = self.check_quarantine().await {
                        tracing::warn!(error = %e, "reading the frontier's quarantine failed; trying again");
                    }
                    if let Err(e) = self.admit().await {
                        tracing::warn!(error = %e, "seeding waiting sites failed; trying again");
                    }
                    let pending: Vec<AuditId> = lock_set(&self.forgetting).iter().copied().collect();
                    for audit in pending {
                        self.forget(audit).await;
                    }
                }
                () = stop.cancelled() => return,
            }
        }
    }
}

/// Counts applied events into the metrics.
fn count_events(events: &[Event]) {
    let m = shoal_metrics::metrics();
    for e in events {
        match e {
            Event::Page(_) => {
                m.pages_stored.inc();
            }
            Event::Finding(f) => {
                m.findings.get_or_create(&shoal_metrics::SeverityLabels { severity: f.severity().as_str() }).inc();
                if f.code == shoal_shared::finding::Code::SlowedDown {
                    // The frontier changed a host's pace from how it answered (issue 17).
                    m.pace_adjustments.inc();
                    tracing::info!(audit = %f.audit, site = %f.site, host = %f.url, detail = %f.detail, "pace adjusted");
                }
            }
            Event::SiteDone { .. } => {
                m.sites_done.inc();
            }
            Event::Browser(_) | Event::Render(_) | Event::CrawlDone { .. } => {}
        }
    }
}

fn lock_set(m: &Mutex<HashSet<AuditId>>) -> std::sync::MutexGuard<'_, HashSet<AuditId>> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn lock_open(
    m: &Mutex<HashMap<AuditId, HashSet<SiteId>>>,
) -> std::sync::MutexGuard<'_, HashMap<AuditId, HashSet<SiteId>>> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
