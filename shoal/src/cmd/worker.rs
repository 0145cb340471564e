//! `shoal worker`: flags into a [`RedisWorker`], plus this process's metrics endpoint.

use crate::cli::WorkerArgs;
use crate::{Exit, Failure};
use shoal_worker::service::{RedisWorker, run_redis_worker};
use tokio_util::sync::CancellationToken;

/// Runs a worker until `shutdown`, then drains its fetches in flight.
///
/// # Errors
/// Bad settings (3), Redis or the fetcher (1).
pub async fn run(args: &WorkerArgs, shutdown: CancellationToken) -> Result<Exit, Failure> {
    let config = shoal_coordinator::CrawlConfig::try_from(&args.crawl)?;
    let id = args.id.clone().unwrap_or_else(|| {
        let host =
            std::fs::read_to_string("/etc/hostname").map(|s| s.trim().to_owned()).unwrap_or_else(|_| "worker".into());
        format!("{host}-{}", std::process::id())
    });
    let worker = RedisWorker {
        redis: args.redis.redis.clone(),
        namespace: args.redis.namespace.clone(),
        id,
        concurrency: args.concurrency,
        fetch: config.fetch,
        crawl: config.crawl,
        frontier: config.frontier,
        browser: args.browser,
    };
    let metrics = super::MetricsEndpoint::start(args.metrics_listen, shutdown.child_token());
    let result = run_redis_worker(worker, shutdown).await;
    metrics.stop().await;
    result.map_err(Failure::internal)?;
    Ok(Exit::Ok)
}
