//! `shoal worker`: one worker process on the Redis frontier, from connecting to draining: flags
//! into a [`RedisWorker`], then connect, take the coordinator's deployment-wide settings, build
//! the fetcher and crawler, run the loops (`shoal_worker::run`), drain; plus this process's
//! metrics endpoint. Here, in the binary, because it wires the worker to the Redis back end: the
//! worker crate knows only the `Frontier` trait.

use crate::cli::WorkerArgs;
use crate::{Exit, Failure};
use shoal_frontier_redis::{RedisFrontier, RedisTarget};
use shoal_shared::frontier::{FrontierError, FrontierSettings};
use shoal_shared::ids::WorkerId;
use shoal_worker::config::WorkerConfig;
use shoal_worker::crawl::Crawler;
use shoal_worker::fetch::{Fetcher, FetcherError};
use shoal_worker::run::{WorkerSettings, run_with_browser};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Everything a Redis worker needs, validated.
#[derive(Debug, Clone)]
pub struct RedisWorker {
    /// The Redis server (a password in its URL is used, and redacted in messages; `--redis-ca`).
    pub redis: RedisTarget,
    /// Frontier namespace (one per deployment).
    pub namespace: String,
    /// This worker's name, in leases and logs.
    pub id: String,
    /// Fetches in flight at most.
    pub concurrency: usize,
    /// Fetcher and crawler settings.
    pub config: WorkerConfig,
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

/// Runs a worker until `shutdown`, then drains its fetches in flight (see [`shoal_worker::run::run`]).
///
/// # Errors
/// Redis cannot be reached or fails, or the fetcher cannot be built.
pub async fn run_redis_worker(w: RedisWorker, shutdown: CancellationToken) -> Result<(), WorkerError> {
    let redis_err = |source| WorkerError::Redis { url: w.redis.redacted(), source };
    let mut frontier = RedisFrontier::connect_to(&w.redis, &w.namespace, w.frontier, &w.id).await.map_err(redis_err)?;
    if !frontier.load_settings().await.map_err(redis_err)? {
        tracing::warn!("no coordinator settings in Redis yet; using this worker's own per-IP cap and lease time");
    }
    if !w.config.crawl.latency_guard {
        // Its answers carry no samples, which the slow start opens on: it claims at full limits.
        frontier.without_slow_start();
    }
    let lease_ttl = frontier.settings().lease_ttl();
    let fetcher = Fetcher::new(w.config.fetch.clone())?;
    let mut crawler = Crawler::new(Arc::new(frontier), fetcher, w.config.crawl.clone());
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

/// Runs a worker until `shutdown`, then drains its fetches in flight.
///
/// # Errors
/// Bad settings (3), Redis or the fetcher (1).
pub async fn run(args: &WorkerArgs, shutdown: CancellationToken) -> Result<Exit, Failure> {
    let config = crate::cli::CrawlConfig::try_from(&args.crawl)?;
    let id = args.id.clone().unwrap_or_else(|| {
        let host =
            std::fs::read_to_string("/etc/hostname").map(|s| s.trim().to_owned()).unwrap_or_else(|_| "worker".into());
        format!("{host}-{}", std::process::id())
    });
    let worker = RedisWorker {
        redis: args.redis.target()?,
        namespace: args.redis.namespace.clone(),
        id,
        concurrency: args.concurrency,
        config: config.worker,
        frontier: config.engine.frontier,
        browser: args.browser,
    };
    let metrics = super::MetricsEndpoint::start(args.metrics_listen, shutdown.child_token());
    let result = run_redis_worker(worker, shutdown).await;
    metrics.stop().await;
    result.map_err(Failure::internal)?;
    Ok(Exit::Ok)
}
