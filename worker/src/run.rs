//! The worker loop: claim, fetch, complete, with bounded concurrency, leases that heartbeat, and a
//! clean shutdown.
//!
//! A lease lasts a short time ([`shoal_shared::frontier::DEFAULT_LEASE_TTL`]) and the worker renews
//! the ones it holds every third of it, so a dead worker's URLs go to another worker quickly
//! while a slow fetch keeps its own. Whatever happens while processing one URL costs neither the
//! worker nor the audit: a panic is caught and the URL given up with a finding; processing that
//! takes longer than [`MAX_PROCESSING`] is dropped and its lease left to expire (counted against
//! the URL, which is given up after its third expiry).

use crate::crawl::{Crawler, abandoned};
use futures_util::FutureExt;
use shoal_shared::frontier::{Claim, Completion, Frontier, FrontierError, Lease};
use shoal_shared::ids::{LeaseId, WorkerId};
use shoal_shared::time::UnixMs;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How long a worker with nothing claimable waits before asking again, at most. Short enough that a
/// freed slot is used promptly, long enough not to spin.
pub const IDLE_WAIT: Duration = Duration::from_millis(50);
/// How long a worker sleeps at most on a `Wait`, so it notices new work seeded meanwhile.
pub const MAX_WAIT: Duration = Duration::from_secs(1);
/// How long shutdown waits for fetches in flight before abandoning them (their leases expire).
pub const DRAIN_DEADLINE: Duration = Duration::from_secs(20);
/// The longest one lease may be processed: far more than any legitimate task takes (a request
/// gives up after 15 s; a robots.txt lease adds one TLS handshake). Past it the task is dropped
/// and its lease is no longer renewed, so it expires and counts against the URL.
pub const MAX_PROCESSING: Duration = Duration::from_secs(120);

/// A worker's own settings.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// Its name, in leases and logs.
    pub id: WorkerId,
    /// Fetches in flight at most.
    pub concurrency: usize,
    /// The frontier's lease time: leases are renewed every third of it.
    pub lease_ttl: Duration,
    /// How long one lease may be processed ([`MAX_PROCESSING`] unless a test needs less).
    pub max_processing: Duration,
    /// Claim browser tasks only ([`Frontier::claim_browser`]): the loop of a worker started with
    /// `--browser`, beside its ordinary one. Its crawler must have a browser.
    pub browser: bool,
}

impl WorkerSettings {
    /// A worker named `id` with `concurrency` fetches in flight on a frontier whose leases last
    /// `lease_ttl`.
    #[must_use]
    pub fn new(id: WorkerId, concurrency: usize, lease_ttl: Duration) -> WorkerSettings {
        WorkerSettings { id, concurrency, lease_ttl, max_processing: MAX_PROCESSING, browser: false }
    }
}

/// One lease this worker is processing, as the heartbeat sees it.
#[derive(Debug, Clone, Copy)]
struct HeldLease {
    /// Its current deadline.
    deadline: UnixMs,
    /// When its processing began (for the processing limit).
    since: Instant,
    /// Its completion has been sent: a renewal that finds it gone is no loss.
    completing: bool,
}

/// The leases this worker is processing, for the heartbeat.
#[derive(Debug, Default)]
struct Held(Mutex<HashMap<LeaseId, HeldLease>>);

impl Held {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<LeaseId, HeldLease>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn deadline(&self, id: LeaseId, fallback: UnixMs) -> UnixMs {
        self.lock().get(&id).map_or(fallback, |h| h.deadline)
    }

    /// Whether the lease is still held (the heartbeat drops one that was reclaimed).
    fn holds(&self, id: LeaseId) -> bool {
        self.lock().contains_key(&id)
    }

    /// A further task of the lease begins: the processing limit counts from now.
    fn restart(&self, id: LeaseId) {
        if let Some(h) = self.lock().get_mut(&id) {
            h.since = Instant::now();
        }
    }

    fn completing(&self, id: LeaseId) {
        if let Some(h) = self.lock().get_mut(&id) {
            h.completing = true;
        }
    }
}

/// Runs the claim/fetch/complete loop until `shutdown` is cancelled, then drains: fetches in flight
/// get [`DRAIN_DEADLINE`] to finish and complete; whatever is left is abandoned and its leases expire.
pub async fn run<F: Frontier>(
    crawler: Arc<Crawler<F>>,
    settings: WorkerSettings,
    shutdown: CancellationToken,
) -> Result<(), FrontierError> {
    let permits = Arc::new(Semaphore::new(settings.concurrency.max(1)));
    let mut fetches: JoinSet<()> = JoinSet::new();
    let frontier = Arc::clone(crawler.frontier());
    let held = Arc::new(Held::default());
    // The heartbeat outlives the claim loop: it renews leases through the drain too.
    let mut heartbeat = JoinSet::new();
    let beat_stop = CancellationToken::new();
    heartbeat.spawn(heartbeat_loop(
        Arc::clone(&crawler),
        Arc::clone(&held),
        settings.id.clone(),
        (settings.lease_ttl, settings.max_processing),
        settings.browser,
        beat_stop.clone(),
    ));
    // A completion frees a slot and may queue new URLs: wake the claim loop instead of letting it
    // sleep out its wait.
    let completed = Arc::new(Notify::new());
    loop {
        while fetches.try_join_next().is_some() {}
        let permit = tokio::select! {
            p = Arc::clone(&permits).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = shutdown.cancelled() => break,
        };
        let now = UnixMs::from(std::time::SystemTime::now());
        let claimed = if settings.browser {
            frontier.claim_browser(&settings.id, now).await
        } else {
            frontier.claim(&settings.id, now).await
        };
        let claim = match claimed {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(worker = %settings.id, error = %e, "claim failed; retrying in 1 s");
                drop(permit);
                if sleep_or_cancel(Duration::from_secs(1), &shutdown).await {
                    break;
                }
                continue;
            }
        };
        let wait = match claim {
            Claim::Leased(lease) => {
                let crawler = Arc::clone(&crawler);
                let completed = Arc::clone(&completed);
                let held = Arc::clone(&held);
                let limit = settings.max_processing;
                // Over a network, each completion claims this task's next lease in the same round
                // trip; the task keeps its permit while it gets one.
                let chain = (F::REMOTE && !settings.browser).then(|| (settings.id.clone(), shutdown.clone()));
                held.lock()
                    .insert(lease.id, HeldLease { deadline: lease.deadline, since: Instant::now(), completing: false });
                fetches.spawn(async move {
                    let mut lease = *lease;
                    let wake = loop {
                        let next = tracing::Instrument::instrument(
                            process_one(&crawler, &lease, &held, limit, chain.as_ref()),
                            lease_span(&lease),
                        )
                        .await;
                        held.lock().remove(&lease.id);
                        match next {
                            Some(Claim::Leased(l)) => {
                                held.lock().insert(
                                    l.id,
                                    HeldLease { deadline: l.deadline, since: Instant::now(), completing: false },
                                );
                                lease = *l;
                            }
                            // Nothing claimable anywhere: the claim loop's own short idle wait
                            // finds what comes later.
                            Some(Claim::Idle) => break false,
                            // A slot may be due before the claim loop's wait ends.
                            Some(Claim::Wait(_)) | None => break true,
                        }
                    };
                    drop(permit);
                    if wake {
                        completed.notify_one();
                    }
                });
                continue;
            }
            Claim::Wait(until) => until.since(now).min(MAX_WAIT),
            Claim::Idle => IDLE_WAIT,
        };
        drop(permit);
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = completed.notified() => {}
            () = shutdown.cancelled() => break,
        }
    }
    let drained = tokio::time::timeout(DRAIN_DEADLINE, async {
        while let Some(r) = fetches.join_next().await {
            if let Err(e) = r
                && e.is_panic()
            {
                tracing::error!(error = %e, "a fetch task panicked outside its guard");
            }
        }
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            left = fetches.len(),
            "shutdown deadline passed; abandoning fetches in flight (their leases will expire)"
        );
        fetches.abort_all();
        while fetches.join_next().await.is_some() {}
    }
    beat_stop.cancel();
    while heartbeat.join_next().await.is_some() {}
    if settings.browser {
        // A clean shutdown is counted out at once, not when the announcement expires: the
        // coordinator then refuses what no other browser worker would take.
        let withdrawn = frontier.withdraw_browser_worker(&settings.id).await;
        if let Err(e) = withdrawn {
            tracing::warn!(worker = %settings.id, error = %e, "withdrawing the browser worker failed; it expires");
        }
        crawler.shutdown_browser().await;
    }
    Ok(())
}

/// The span of one lease's processing: what its log lines are about.
fn lease_span(lease: &Lease) -> tracing::Span {
    tracing::info_span!(
        "lease",
        audit = %lease.task.audit,
        site = %lease.task.site,
        host = %lease.host,
        kind = lease.task.kind.as_str()
    )
}

/// Processes one lease and completes it. A panic is caught here and the URL given up; processing
/// past `limit` is dropped without a completion (the lease expires and is counted). With `chain`
/// (this worker's name and its shutdown) and no shutdown begun, the completion claims the
/// worker's next task in the same step, returned here.
///
/// A lease with further tasks ([`Lease::more`]) has them processed one after another, each only
/// after the one before has ended, and completes them all in one step. The batch stops early, and
/// the tasks not started go back to the queue, when an answer slows the host (a 429, a hold, a
/// quota; this lease's own, or another's as the frontier now says), when shutdown begins, when the
/// lease was reclaimed, is about to expire or has run [`FURTHER_WITHIN`], or when a task's
/// processing passes `limit` (that task is given up with a finding; the ones before it are kept).
async fn process_one<F: Frontier>(
    crawler: &Crawler<F>,
    lease: &Lease,
    held: &Held,
    limit: Duration,
    chain: Option<&(WorkerId, CancellationToken)>,
) -> Option<Claim> {
    let m = shoal_metrics::metrics();
    m.in_flight.inc();
    let Some(mut completion) = process_guarded(crawler, lease, limit).await else {
        tracing::error!(url = %lease.task.url, limit_s = limit.as_secs_f64(), "processing took too long; dropped, its lease will expire");
        held.lock().remove(&lease.id);
        m.in_flight.dec();
        return None;
    };
    if let Ok(all) = &mut completion {
        process_further(crawler, lease, held, limit, chain.map(|(_, s)| s), all).await;
    }
    let worker = chain.and_then(|(id, shutdown)| (!shutdown.is_cancelled()).then_some(id));
    let done = match completion {
        Ok(c) => {
            held.completing(lease.id);
            complete_with_retries(crawler.frontier().as_ref(), lease, c, held, worker).await
        }
        Err(e) => Err(e),
    };
    m.in_flight.dec();
    match done {
        Err(e) => {
            tracing::error!(url = %lease.task.url, error = %e, "could not complete lease; it will expire and be retried");
            None
        }
        Ok(next) => {
            m.leases_completed.inc();
            next
        }
    }
}

/// Processes the lease's further tasks ([`Lease::more`]) one after another into `all`, the
/// completion of its first, until one of them or the frontier says the host was slowed, shutdown
/// begins, the lease has run [`FURTHER_WITHIN`], or it was lost or is about to run out (see
/// [`process_one`]).
async fn process_further<F: Frontier>(
    crawler: &Crawler<F>,
    lease: &Lease,
    held: &Held,
    limit: Duration,
    shutdown: Option<&CancellationToken>,
    all: &mut Completion,
) {
    for i in 0..lease.more.len() {
        let now = UnixMs::from(std::time::SystemTime::now());
        let ending = held.deadline(lease.id, lease.deadline) < now.plus(FURTHER_MARGIN);
        let long = now.0.saturating_sub(lease.started_at.0) >= FURTHER_WITHIN.as_millis() as u64;
        if all.slows_the_host()
            || ending
            || long
            || !held.holds(lease.id)
            || shutdown.is_some_and(CancellationToken::is_cancelled)
        {
            return;
        }
        // Another lease's answer may have slowed the host or its IP since this one was granted.
        match crawler.frontier().further_may_start(lease, now).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(host = %lease.host, error = %e, "could not check the host's pace; the lease's other tasks go back");
                return;
            }
        }
        let Some(further) = lease.follow_up(i, now) else { return };
        held.restart(lease.id);
        let next =
            tracing::Instrument::instrument(process_guarded(crawler, &further, limit), lease_span(&further)).await;
        all.absorb(match next {
            Some(Ok(c)) => c,
            Some(Err(e)) => {
                tracing::error!(url = %further.task.url, error = %e, "processing a further task of a lease failed; the rest go back");
                return;
            }
            None => {
                tracing::error!(url = %further.task.url, limit_s = limit.as_secs_f64(), "processing took too long; giving it up");
                abandoned(&further, &format!("Shoal took longer than {} s to process it", limit.as_secs()))
            }
        });
    }
}

/// A further task of a lease is started only if the lease has at least this long left (the
/// heartbeat renews it; a lease that stopped being renewed is not used for more requests).
const FURTHER_MARGIN: Duration = Duration::from_secs(2);
/// A further task of a lease is started only this long after the lease began, at most: the
/// pages' links and records reach the frontier with the lease's completion, so a batch on a slow
/// host ends after a few answers and what it found can go to the host's other slots. Batches are
/// for cheap pages, where Redis' work per lease would cost more than the requests themselves.
const FURTHER_WITHIN: Duration = Duration::from_secs(2);

/// Runs `crawler.process(lease)` with a panic caught (the URL given up with a finding) and at most
/// `limit` long (`None` past it).
async fn process_guarded<F: Frontier>(
    crawler: &Crawler<F>,
    lease: &Lease,
    limit: Duration,
) -> Option<Result<Completion, FrontierError>> {
    let guarded = AssertUnwindSafe(crawler.process(lease)).catch_unwind();
    match tokio::time::timeout(limit, guarded).await {
        Err(_) => None,
        Ok(Err(panic)) => {
            let why = panic_message(panic.as_ref());
            tracing::error!(url = %lease.task.url, panic = %why, "processing a URL panicked; giving it up");
            Some(Ok(abandoned(lease, &format!("Shoal failed while processing it ({why})"))))
        }
        Ok(Ok(r)) => Some(r),
    }
}

/// A panic's message, as far as it is text.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// Renews the held leases every third of the lease time until `stop`. A lease processed longer
/// than the processing limit (a task stuck where no timeout reaches it) is no longer renewed, so
/// it expires and goes to another worker, counted against its URL. The browser loop's heartbeat
/// (`browser`) also renews the worker's announcement ([`Frontier::announce_browser_worker`]) at
/// every beat, leases or not: an idle browser worker is what lets an audit with browser pages in.
async fn heartbeat_loop<F: Frontier>(
    crawler: Arc<Crawler<F>>,
    held: Arc<Held>,
    worker: WorkerId,
    (ttl, limit): (Duration, Duration),
    browser: bool,
    stop: CancellationToken,
) {
    let every = (ttl / 3).max(Duration::from_millis(100));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.cancelled() => return,
        }
        crawler.housekeeping();
        let frontier = crawler.frontier();
        if browser {
            let now = UnixMs::from(std::time::SystemTime::now());
            if let Err(e) = frontier.announce_browser_worker(&worker, now).await {
                tracing::warn!(worker = %worker, error = %e, "announcing the browser worker failed; trying again at the next beat");
            }
        }
        let ids: Vec<LeaseId> =
            held.lock().iter().filter(|(_, h)| h.since.elapsed() < limit).map(|(id, _)| *id).collect();
        if ids.is_empty() {
            continue;
        }
        let now = UnixMs::from(std::time::SystemTime::now());
        match frontier.renew(&worker, &ids, now).await {
            Ok(r) => {
                let mut h = held.lock();
                for id in &ids {
                    if let Some(entry) = h.get_mut(id) {
                        entry.deadline = r.deadline;
                    }
                }
                for id in &r.lost {
                    // Completed between the list above and the renewal: not lost, just done.
                    if h.get(id).is_some_and(|e| !e.completing) {
                        tracing::warn!(lease = %id, "a lease was reclaimed while its fetch ran; its completion will be ignored");
                        h.remove(id);
                    }
                }
                let renewed = ids.len().saturating_sub(r.lost.len());
                shoal_metrics::metrics().leases_renewed.inc_by(renewed as u64);
            }
            Err(e) => tracing::warn!(error = %e, "renewing leases failed; trying again at the next beat"),
        }
    }
}

/// Delays between attempts to complete a lease while the frontier's store is unreachable (a Redis
/// restart): the fetch is not thrown away unless the lease would have expired anyway.
const COMPLETE_RETRY: [Duration; 5] = [
    Duration::from_millis(200),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];

/// Completes `lease`, and with `worker` claims that worker's next task in the same step
/// (returned). Retries while the store is unreachable, without the claim.
async fn complete_with_retries<F: Frontier>(
    frontier: &F,
    lease: &Lease,
    completion: Completion,
    held: &Held,
    worker: Option<&WorkerId>,
) -> Result<Option<Claim>, FrontierError> {
    let now = || UnixMs::from(std::time::SystemTime::now());
    if !F::REMOTE {
        return frontier.complete(lease, completion, now()).await.map(|_| None);
    }
    let mut delays = COMPLETE_RETRY.iter();
    if let Some(worker) = worker {
        match frontier.complete_and_claim(lease, &completion, worker, now()).await {
            Ok((_, next)) => return Ok(Some(next)),
            Err(e) => {
                // Applied or not, completing again is harmless; a lease granted in a lost answer
                // expires and counts against its URL.
                tracing::warn!(url = %lease.task.url, error = %e, "completing a lease failed; retrying");
                match delays.next() {
                    Some(d) if now().plus(*d) < held.deadline(lease.id, lease.deadline) => tokio::time::sleep(*d).await,
                    _ => return Err(e),
                }
            }
        }
    }
    loop {
        match frontier.complete_kept(lease, &completion, now()).await {
            Ok(_) => return Ok(None),
            Err(e) => match delays.next() {
                Some(d) if now().plus(*d) < held.deadline(lease.id, lease.deadline) => {
                    tracing::warn!(url = %lease.task.url, error = %e, "completing a lease failed; retrying");
                    tokio::time::sleep(*d).await;
                }
                _ => return Err(e),
            },
        }
    }
}

/// Sleeps for `d`; true if shutdown came first.
async fn sleep_or_cancel(d: Duration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        () = tokio::time::sleep(d) => false,
        () = shutdown.cancelled() => true,
    }
}

/// Runs the worker loop, and beside it (with `browser`) the loop that claims only browser tasks,
/// one at a time, under the same worker name; both stop on `shutdown` (the browser loop shuts
/// Chromium down).
///
/// # Errors
/// The frontier failed in either loop.
pub async fn run_with_browser<F: Frontier>(
    crawler: Arc<Crawler<F>>,
    settings: WorkerSettings,
    browser: bool,
    shutdown: CancellationToken,
) -> Result<(), FrontierError> {
    let mut loops = tokio::task::JoinSet::new();
    if browser {
        let b = WorkerSettings { concurrency: 1, browser: true, ..settings.clone() };
        loops.spawn(run(Arc::clone(&crawler), b, shutdown.clone()));
    }
    loops.spawn(run(crawler, settings, shutdown));
    let mut result = Ok(());
    while let Some(r) = loops.join_next().await {
        match r {
            Ok(Err(e)) => result = Err(e),
            Err(e) => tracing::error!(error = %e, "a worker loop failed"),
            Ok(Ok(())) => {}
        }
    }
    result
}
