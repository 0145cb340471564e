//! The worker loop: claim, fetch, complete, with bounded concurrency and a clean shutdown.

use crate::crawl::Crawler;
use shoal_shared::frontier::{Claim, Frontier, FrontierError};
use shoal_shared::ids::WorkerId;
use shoal_shared::time::UnixMs;
use std::sync::Arc;
use std::time::Duration;
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

/// A worker's own settings.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// Its name, in leases and logs.
    pub id: WorkerId,
    /// Fetches in flight at most.
    pub concurrency: usize,
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
        let claim = match frontier.claim(&settings.id, now).await {
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
                let worker = settings.id.clone();
                let completed = Arc::clone(&completed);
                let span = tracing::info_span!(
                    "lease",
                    audit = %lease.task.audit,
                    site = %lease.task.site,
                    host = %lease.host,
                    kind = lease.task.kind.as_str()
                );
                fetches.spawn(tracing::Instrument::instrument(async move {
                    let lease = *lease;
                    let m = shoal_metrics::metrics();
                    m.in_flight.inc();
                    let outcome = crawler.process(&lease).await;
                    let done = match outcome {
                        Ok(c) => complete_with_retries(crawler.frontier().as_ref(), &lease, c).await,
                        Err(e) => Err(e),
                    };
                    m.in_flight.dec();
                    if done.is_ok() {
                        m.leases_completed.inc();
                    }
                    if let Err(e) = done {
                        tracing::error!(worker = %worker, url = %lease.task.url, error = %e, "could not complete lease; it will expire and be retried");
                    }
                    drop(permit);
                    completed.notify_one();
                }, span));
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
                tracing::error!(error = %e, "a fetch task panicked");
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
    }
    Ok(())
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

async fn complete_with_retries<F: Frontier>(
    frontier: &F,
    lease: &shoal_shared::frontier::Lease,
    completion: shoal_shared::frontier::Completion,
) -> Result<(), FrontierError> {
    let mut delays = COMPLETE_RETRY.iter();
    loop {
        match frontier.complete(lease, completion.clone(), UnixMs::from(std::time::SystemTime::now())).await {
            Ok(_) => return Ok(()),
            Err(e) => match delays.next() {
                Some(d) if UnixMs::from(std::time::SystemTime::now()).plus(*d) < lease.deadline => {
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
