//! `shoal worker`: one worker process on the Redis frontier, from connecting to draining.
//!
//! The binary only turns flags into [`RedisWorker`]; what a worker process does (connect, take the
//! coordinator's deployment-wide settings, build the fetcher and crawler, run the loop, drain) is
//! here, beside the loop it runs.

use crate::crawl::{CrawlSettings, Crawler};
use crate::fetch::{FetchSettings, Fetcher, FetcherError};
use crate::run::{WorkerSettings, run};
use shoal_frontier_redis::{RedisFrontier, redact};
use shoal_shared::frontier::{FrontierError, FrontierSettings};
use shoal_shared::ids::WorkerId;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Everything a Redis worker needs, validated.
#[derive(Debug, Clone)]
pub struct RedisWorker {
    /// Redis URL (a password in it is used, and redacted in messages).
    pub redis: String,
    /// Frontier namespace (one per deployment).
    pub namespace: String,
    /// This worker's name, in leases and logs.
    pub id: String,
    /// Fetches in flight at most.
    pub concurrency: usize,
    /// Fetcher settings.
    pub fetch: FetchSettings,
    /// Extraction and robots settings.
    pub crawl: CrawlSettings,
    /// The per-IP cap and lease time to use until the coordinator's are read from Redis.
    pub frontier: FrontierSettings,
    /// Also run browser tasks (`--browser`): a second claim loop, one page at a time, that only
    /// takes them.
    pub browser: bool,
}

/// Why a worker could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// Redis could not be reached or failed.
    #[error("Redis at {url}: {source}")]
    Redis {
        /// The Redis URL, password redacted.
        url: String,
        /// The cause.
        #[source]
        source: FrontierError,
    },
    /// The HTTP fetcher could not be built (DNS configuration, TLS roots).
    #[error("cannot start the fetcher: {0}")]
    Fetcher(#[from] FetcherError),
}

/// Runs a worker until `shutdown`, then drains its fetches in flight (see [`run`]).
///
/// # Errors
/// Redis cannot be reached or fails, or the fetcher cannot be built.
pub async fn run_redis_worker(w: RedisWorker, shutdown: CancellationToken) -> Result<(), WorkerError> {
    let redis_err = |source| WorkerError::Redis { url: redact(&w.redis), source };
    let mut frontier = RedisFrontier::connect(&w.redis, &w.namespace, w.frontier, &w.id).await.map_err(redis_err)?;
    if !frontier.load_settings().await.map_err(redis_err)? {
        tracing::warn!("no coordinator settings in Redis yet; using this worker's own per-IP cap and lease time");
    }
    let lease_ttl = frontier.settings().lease_ttl();
    let fetcher = Fetcher::new(w.fetch.clone())?;
    let mut crawler = Crawler::new(Arc::new(frontier), fetcher, w.crawl.clone());
    if w.browser {
        crawler = crawler.with_browser();
    }
    let crawler = Arc::new(crawler);
    tracing::info!(worker = %w.id, concurrency = w.concurrency, browser = w.browser, "worker started");
    let settings = WorkerSettings::new(WorkerId(w.id.clone()), w.concurrency.max(1), lease_ttl);
    run_with_browser(crawler, settings, w.browser, shutdown).await.map_err(redis_err)?;
    tracing::info!("worker stopped");
    Ok(())
}

/// Runs the worker loop, and beside it (with `browser`) the loop that claims only browser tasks,
/// one at a time, under the same worker name; both stop on `shutdown` (the browser loop shuts
/// Chromium down).
///
/// # Errors
/// The frontier failed in either loop.
pub async fn run_with_browser<F: shoal_shared::frontier::Frontier>(
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
