//! Recurring audits: schedules kept in the audit database, started by [`Scheduler`], and told
//! about when they end ([`notify`]).
//!
//! - [`add`], [`list`], [`get`] and [`remove`] are what the API (`/v1/schedules`) calls: a schedule is
//!   checked like a submit (start URLs, options) plus its `when` ([`when::When::parse`]) against
//!   the coordinator's minimum interval ([`when::When::check_min`], the operator's
//!   `schedule_min_interval`), then stored.
//! - [`Scheduler::run`] runs until shutdown, on the task set of `shoal coordinator`. It sleeps until
//!   the earliest schedule is due (one index lookup, [`AuditDb::next_schedule_due`]), or until it
//!   is woken: a schedule was added or removed, an audit ended, or shutdown. Each wake-up
//!   ([`Scheduler::pass`]) reads only the schedules due by then and those whose run ended
//!   unsettled (both by index), never all of them, and applies [`when::step`] to each: start a
//!   run, skip a slot (the previous run still runs), or settle a run that ended (log line,
//!   webhook, next run time). The state is the database's, so a restarted coordinator carries on
//!   where it stopped: a run still running is waited for, missed slots start one run, an end not
//!   yet handled is handled once.
//! - Why no run ever starts twice at once: a run starts only from [`LastRun::Settled`], and the
//!   transaction that creates the audit also records it as the schedule's unsettled latest run
//!   ([`shoal_store::AuditDb::start_scheduled_audit`]); one scheduler runs per coordinator.

pub mod notify;
pub mod when;

use crate::engine::{Coordinator, EngineError, ScheduledStart};
use notify::{Changes, RunSummary, ScheduleRef, Severities, Webhook};
use shoal_shared::frontier::Frontier;
use shoal_shared::ids::{AuditId, ScheduleId};
use shoal_shared::time::UnixMs;
use shoal_shared::wire::{AuditOptions, ScheduleRequest, ScheduleView, SubmitRequest};
use shoal_store::{AuditDb, AuditStatus, DbError, NewSchedule, ScheduleRow};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use when::{DEFAULT_TIME_ZONE, LastRun, Step, When};

/// How long the scheduler sleeps at most. Why wake without a reason: the due times are wall-clock
/// times and the sleep is not, so a clock set forward (or a suspended machine) delays a run by at
/// most this much.
pub const MAX_SLEEP: Duration = Duration::from_secs(60);
/// How long the scheduler waits after a failed step (database busy, Redis down) before trying
/// again; schedules due meanwhile start that much late.
pub const RETRY: Duration = Duration::from_secs(1);
/// Schedules one wake-up reads at most of each kind (due; run ended); more are read right after.
pub const BATCH: usize = 256;
/// Schedules one coordinator keeps at most (the API and the dashboard list them all).
pub const MAX_SCHEDULES: u64 = 10_000;
/// Characters of a schedule's name at most.
pub const MAX_NAME: usize = 200;
/// Webhook deliveries in flight at most; a run's end beyond that is logged, not posted.
pub const MAX_PENDING_DELIVERIES: usize = 64;
/// How long shutdown waits for webhook deliveries in flight (they stop at their next await).
pub const DRAIN_DEADLINE: Duration = Duration::from_secs(2);

fn bad(e: impl std::fmt::Display) -> EngineError {
    EngineError::BadRequest(e.to_string())
}

fn view(row: &ScheduleRow, urls: Vec<String>) -> ScheduleView {
    ScheduleView {
        id: row.id.0,
        name: row.name.clone(),
        sites: row.sites,
        options: serde_json::from_str(&row.options_json).unwrap_or_default(),
        when: row.spec.clone(),
        time_zone: row.time_zone.clone(),
        created_at_ms: row.created_at.0,
        next_run_ms: (row.next_run.0 != u64::MAX).then_some(row.next_run.0),
        last_audit: row.last_audit.map(|a| a.0),
        last_status: row.last_status,
        last_started_ms: row.last_started.map(|t| t.0),
        urls,
    }
}

/// Checks a request to add a schedule (name, start URLs and options as a submit, `when` and time
/// zone) and stores it; its first run is due at [`When::first_run`] of `now`.
///
/// # Errors
/// [`EngineError::BadRequest`] saying what is wrong; store failures.
pub async fn add<F: Frontier>(
    engine: &Coordinator<F>,
    req: ScheduleRequest,
    now: UnixMs,
) -> Result<ScheduleView, EngineError> {
    let name = req.name.trim().to_owned();
    if name.is_empty() || name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(bad(format!("name: give 1 to {MAX_NAME} characters, no control characters")));
    }
    let time_zone = req.time_zone.as_deref().map_or(DEFAULT_TIME_ZONE, str::trim).to_owned();
    let spec = req.when.trim().to_owned();
    let when = When::parse(&spec, &time_zone).map_err(bad)?;
    when.check_min(&spec, engine.config().schedule_min_interval, now).map_err(bad)?;
    let options_json = serde_json::to_string(&req.options).map_err(bad)?;
    let (urls, _) = engine.check(&SubmitRequest { urls: req.urls, options: req.options })?;
    let new = NewSchedule { name, urls: urls.iter().map(ToString::to_string).collect(), options_json, spec, time_zone };
    let next = when.first_run(now);
    let added = engine
        .write(move |db| {
            if db.schedule_count()? >= MAX_SCHEDULES {
                return Ok(None);
            }
            let id = db.add_schedule(&new, now, next)?;
            Ok(db.schedule(id)?.map(|row| view(&row, Vec::new())))
        })
        .await?;
    let v = added.ok_or_else(|| bad(format!("at most {MAX_SCHEDULES} schedules; remove one first")))?;
    engine.schedule_wake().notify_one();
    tracing::info!(schedule = v.id, name = %v.name, when = %v.when, time_zone = %v.time_zone, sites = v.sites, "schedule added");
    Ok(v)
}

/// Every schedule, oldest first.
///
/// # Errors
/// Store failures.
pub async fn list<F: Frontier>(engine: &Coordinator<F>) -> Result<Vec<ScheduleView>, EngineError> {
    engine.read(|db| Ok(db.schedules()?.iter().map(|r| view(r, Vec::new())).collect())).await
}

/// One schedule with its start URLs.
///
/// # Errors
/// [`EngineError::NoSchedule`]; store failures.
pub async fn get<F: Frontier>(engine: &Coordinator<F>, id: ScheduleId) -> Result<ScheduleView, EngineError> {
    let found = engine
        .read(move |db| {
            let Some(row) = db.schedule(id)? else { return Ok(None) };
            Ok(Some(view(&row, db.schedule_urls(id)?.unwrap_or_default())))
        })
        .await?;
    found.ok_or(EngineError::NoSchedule(id))
}

/// Removes a schedule. Its runs stay (a run still running finishes, without a notification).
///
/// # Errors
/// [`EngineError::NoSchedule`]; store failures.
pub async fn remove<F: Frontier>(engine: &Coordinator<F>, id: ScheduleId) -> Result<(), EngineError> {
    if engine.write(move |db| db.remove_schedule(id)).await? {
        engine.schedule_wake().notify_one();
        tracing::info!(schedule = %id, "schedule removed");
        Ok(())
    } else {
        Err(EngineError::NoSchedule(id))
    }
}

/// What a scheduled run's end says: the audit's totals and the changes since the schedule's
/// previous run (the comparison rules of [`shoal_store::compare`], which the report uses too).
///
/// Reads through a second connection to the database file for the comparison, so `db` must be on
/// disk.
///
/// # Errors
/// Read failures; [`DbError::UnknownAudit`] if the audit is gone.
pub fn run_summary(db: &AuditDb, schedule: &ScheduleRef, audit: AuditId) -> Result<RunSummary, DbError> {
    let a = db.audit(audit)?.ok_or_else(|| DbError::UnknownAudit { path: db.path().to_owned(), audit })?;
    let sev = db.audit_severities(audit)?;
    let changes = match db.scheduled_run(audit)?.and_then(|r| r.previous) {
        None => Changes::default(),
        Some(previous) => {
            let comparison = shoal_store::compare::compare(db, previous, audit)?;
            let c = comparison.totals();
            let reader = shoal_store::cursor::Reader::open(db)?;
            let urls = shoal_store::url_changes::count_pairs(&reader, &comparison.pairs.both)?;
            Changes {
                previous_audit: Some(previous.0),
                new: c.new,
                fixed: c.fixed,
                still_open: c.remaining,
                urls_added: urls.added,
                urls_removed: urls.removed,
                urls_changed: urls.changed,
            }
        }
    };
    Ok(RunSummary {
        event: notify::RUN_FINISHED,
        schedule: schedule.clone(),
        audit: audit.0,
        status: a.status,
        started_at: notify::time_text(a.created_at),
        finished_at: a.finished_at.map(notify::time_text),
        sites: a.sites,
        pages: a.pages,
        findings: a.findings,
        by_severity: Severities { error: sev.errors, warning: sev.warnings, notice: sev.notices },
        changes,
        report: RunSummary::report_path(audit.0),
    })
}

/// What one wake-up of the scheduler did ([`Scheduler::pass`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pass {
    /// The steps taken, by schedule.
    pub steps: Vec<(ScheduleId, Step)>,
    /// Schedule rows read: the due ones and those whose run ended unsettled, never the others.
    pub rows_read: usize,
    /// Steps that failed (tried again after [`RETRY`]).
    pub failed: usize,
    /// A read was full ([`BATCH`]): more may be due, read again at once.
    pub more: bool,
}

/// Starts the schedules' runs and settles their ends, over one engine.
#[derive(Debug)]
pub struct Scheduler<F> {
    engine: Arc<Coordinator<F>>,
    webhook: Option<Arc<Webhook>>,
}

impl<F: Frontier> Scheduler<F> {
    /// A scheduler over `engine`, posting to `webhook` when one is given.
    #[must_use]
    pub fn new(engine: Arc<Coordinator<F>>, webhook: Option<Webhook>) -> Scheduler<F> {
        Scheduler { engine, webhook: webhook.map(Arc::new) }
    }

    /// Runs until `shutdown`: a [`Scheduler::pass`], then sleeps until the next schedule is due
    /// (at most [`MAX_SLEEP`]; [`RETRY`] after a failure) or until woken (a schedule added or
    /// removed, an audit ended), and again. At shutdown, lets webhook deliveries in flight stop
    /// (at most [`DRAIN_DEADLINE`]).
    pub async fn run(self, shutdown: CancellationToken) {
        let mut deliveries = JoinSet::new();
        loop {
            while let Some(done) = deliveries.try_join_next() {
                if let Err(e) = done {
                    tracing::error!(error = %e, "a webhook delivery task failed");
                }
            }
            let pass = self.pass(UnixMs::from(std::time::SystemTime::now()), &mut deliveries, &shutdown).await;
            let sleep = match pass {
                Ok(p) if p.failed > 0 => RETRY,
                Ok(p) if p.more => Duration::ZERO,
                Ok(_) => match self.next_due().await {
                    Ok(next) => {
                        let now = UnixMs::from(std::time::SystemTime::now());
                        next.map_or(MAX_SLEEP, |t| t.since(now).min(MAX_SLEEP))
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "cannot read when the next schedule is due; trying again in 1 s");
                        RETRY
                    }
                },
                Err(e) => {
                    tracing::error!(error = %e, "reading the due schedules failed; trying again in 1 s");
                    RETRY
                }
            };
            tokio::select! {
                () = tokio::time::sleep(sleep) => {}
                () = self.engine.schedule_wake().notified() => {}
                () = shutdown.cancelled() => break,
            }
        }
        let drained = tokio::time::timeout(DRAIN_DEADLINE, async { while deliveries.join_next().await.is_some() {} });
        if drained.await.is_err() {
            tracing::warn!("webhook deliveries still running at shutdown were stopped");
        }
    }

    /// When the earliest schedule is due (`None` without schedules).
    ///
    /// # Errors
    /// The database cannot be read.
    pub async fn next_due(&self) -> Result<Option<UnixMs>, EngineError> {
        self.engine.read(|db| db.next_schedule_due()).await
    }

    /// One wake-up at time `now`: reads the schedules due by `now` and those whose latest run
    /// ended unsettled (at most [`BATCH`] of each, by index), and does what [`when::step`] says for
    /// each. A schedule that fails is logged and the others go on.
    ///
    /// # Errors
    /// The schedules cannot be read.
    pub async fn pass(
        &self,
        now: UnixMs,
        deliveries: &mut JoinSet<()>,
        stop: &CancellationToken,
    ) -> Result<Pass, EngineError> {
        let (ended, due) =
            self.engine.read(move |db| Ok((db.ended_schedule_runs(BATCH)?, db.due_schedules(now, BATCH)?))).await?;
        let min = self.engine.config().schedule_min_interval;
        let mut pass = Pass {
            rows_read: ended.len() + due.len(),
            more: ended.len() >= BATCH || due.len() >= BATCH,
            ..Pass::default()
        };
        let mut seen = std::collections::HashSet::new();
        for row in ended.into_iter().chain(due) {
            if !seen.insert(row.id) {
                continue; // due and ended both: one step settles it
            }
            let when = match When::parse(&row.spec, &row.time_zone) {
                Ok(w) => w,
                Err(e) => {
                    tracing::warn!(schedule = %row.id, error = %e, "schedule cannot be evaluated here; skipped");
                    pass.failed += 1;
                    continue;
                }
            };
            let last = match (row.last_audit, row.last_status, row.settled) {
                (None, _, _) | (Some(_), _, true) => LastRun::Settled,
                (Some(_), Some(AuditStatus::Running), false) => LastRun::Running,
                (Some(_), _, false) => LastRun::Ended { started: row.last_started.unwrap_or(now) },
            };
            let step = when::step(&when, row.next_run, last, now, min);
            let done = match step {
                Step::Wait => Ok(()),
                Step::Skip { next_run } => self.skip(&row, next_run).await,
                Step::Start { next_run } => self.start(&row, next_run).await,
                Step::Settle { next_run } => self.settle(&row, next_run, deliveries, stop).await,
            };
            match done {
                Ok(()) => pass.steps.push((row.id, step)),
                Err(e) => {
                    pass.failed += 1;
                    tracing::error!(schedule = %row.id, error = %e, ?step, "scheduled step failed; trying again");
                }
            }
        }
        Ok(pass)
    }

    async fn skip(&self, row: &ScheduleRow, next_run: UnixMs) -> Result<(), EngineError> {
        tracing::warn!(
            schedule = %row.id, name = %row.name, running = ?row.last_audit.map(|a| a.0), next_run = %next_run.to_rfc3339(),
            "slot skipped: the previous run is still running"
        );
        let id = row.id;
        self.engine.write(move |db| db.set_next_run(id, next_run)).await
    }

    async fn start(&self, row: &ScheduleRow, next_run: UnixMs) -> Result<(), EngineError> {
        let id = row.id;
        let urls = self.engine.write(move |db| db.schedule_urls(id)).await?.ok_or(EngineError::NoSchedule(id))?;
        let options: AuditOptions = serde_json::from_str(&row.options_json).unwrap_or_default();
        let (starts, settings) = match self.engine.check(&SubmitRequest { urls, options }) {
            Ok(checked) => checked,
            Err(e @ EngineError::BadRequest(_)) => {
                // The coordinator's defaults changed since the schedule was added: skip the slot.
                tracing::warn!(schedule = %id, name = %row.name, error = %e, "scheduled run refused; slot skipped");
                return self.engine.write(move |db| db.set_next_run(id, next_run)).await;
            }
            Err(e) => return Err(e),
        };
        match self.engine.check_browser(&settings).await {
            Ok(()) => {}
            Err(e @ EngineError::NoBrowserWorker { .. }) => {
                // No browser worker is live now: this slot is skipped as a refused run is, and
                // the next one is tried again (the run would otherwise wait forever).
                tracing::warn!(schedule = %id, name = %row.name, error = %e, "scheduled run refused; slot skipped");
                return self.engine.write(move |db| db.set_next_run(id, next_run)).await;
            }
            Err(e) => return Err(e),
        }
        let (audit, sites) =
            self.engine.start_run(starts, settings, Some(ScheduledStart { schedule: id, next_run })).await?;
        tracing::info!(
            schedule = %id, name = %row.name, audit = %audit, sites = sites.len(), next_run = %next_run.to_rfc3339(),
            "scheduled run started"
        );
        Ok(())
    }

    async fn settle(
        &self,
        row: &ScheduleRow,
        next_run: UnixMs,
        deliveries: &mut JoinSet<()>,
        stop: &CancellationToken,
    ) -> Result<(), EngineError> {
        let (id, Some(audit)) = (row.id, row.last_audit) else { return Ok(()) };
        let schedule = ScheduleRef { id: id.0, name: row.name.clone() };
        let path = crate::aggregate::lock(self.engine.db()).path().to_owned();
        // On a connection of its own: the comparison reads every finding of the run and the one
        // before, and must not hold the writer that aggregation needs.
        let summary = tokio::task::spawn_blocking(move || run_summary(&AuditDb::open(&path)?, &schedule, audit))
            .await
            .map_err(EngineError::Writer)??;
        summary.log();
        if !self.engine.write(move |db| db.settle_schedule(id, audit, next_run)).await? {
            return Ok(()); // removed, or a later run recorded meanwhile
        }
        let Some(webhook) = &self.webhook else { return Ok(()) };
        if deliveries.len() >= MAX_PENDING_DELIVERIES {
            tracing::warn!(schedule = %id, audit = %audit, "too many webhook deliveries in flight; this run's is dropped");
            return Ok(());
        }
        let (webhook, stop) = (Arc::clone(webhook), stop.clone());
        deliveries.spawn(async move {
            match webhook.deliver(&summary, &stop).await {
                notify::Delivery::Delivered { status, attempts } => {
                    tracing::info!(
                        schedule = summary.schedule.id,
                        audit = summary.audit,
                        status,
                        attempts,
                        "webhook delivered"
                    );
                }
                notify::Delivery::Failed { reason, attempts } => tracing::warn!(
                    schedule = summary.schedule.id, audit = summary.audit, attempts, reason = %reason,
                    url = %webhook.url(), "webhook delivery failed"
                ),
                notify::Delivery::Stopped => {
                    tracing::warn!(
                        schedule = summary.schedule.id,
                        audit = summary.audit,
                        "webhook delivery stopped by shutdown"
                    );
                }
            }
        });
        Ok(())
    }
}
