//! `shoal coordinator`: the engine on the Redis frontier behind the HTTP server, until stopped.

use crate::cli::CoordinatorArgs;
use crate::{Exit, Failure};
use anyhow::Context;
use shoal_coordinator::Coordinator;
use shoal_coordinator::schedule::Scheduler;
use shoal_coordinator::schedule::notify::Webhook;
use shoal_frontier_redis::RedisFrontier;
use shoal_store::AuditDb;
use std::sync::Arc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Runs the coordinator until `shutdown`: API and dashboard, aggregation, lease reaping, and the
/// scheduler of recurring audits (with its webhook when `--notify-url` is set).
///
/// # Errors
/// Bad settings (3), the audit database (4), Redis or the listener (1).
pub async fn run(args: &CoordinatorArgs, shutdown: CancellationToken) -> Result<Exit, Failure> {
    let mut engine = crate::cli::CrawlConfig::try_from(&args.crawl)?.engine;
    engine.schedule_min_interval = args.schedule_min_interval;
    engine.retention = args.retain.retention()?;
    // Refuse to start with a token too short to keep the API and the dashboard closed.
    crate::cli::check_token(&args.token)?;
    let branding = crate::cmd::report::load_branding(&args.branding)?;
    let webhook = match args.notify()? {
        Some(settings) => Some(Webhook::new(settings).context("building the webhook's HTTP client")?),
        None => None,
    };
    let db = AuditDb::open(&args.db)?;
    let target = args.redis.target()?;
    let frontier = RedisFrontier::connect_to(&target, &args.redis.namespace, engine.frontier, "coordinator")
        .await
        .with_context(|| format!("connecting to Redis at {}", target.redacted()))?;
    frontier.publish_settings().await?;
    let engine = Arc::new(Coordinator::new(db, Arc::new(frontier), engine, "distributed")?);
    engine.recover().await?;
    let listener =
        tokio::net::TcpListener::bind(args.listen).await.with_context(|| format!("listening on {}", args.listen))?;
    tracing::info!(
        listen = %listener.local_addr().unwrap_or(args.listen), db = %args.db.display(),
        schedule_min_interval = %shoal_coordinator::schedule::when::format_span(args.schedule_min_interval),
        retain_audits = args.retain.retain_audits, retain_days = args.retain.retain_days,
        "coordinator started"
    );
    let mut tasks = JoinSet::new();
    tasks.spawn(shoal_server::serve(listener, Arc::clone(&engine), args.token.clone(), branding, shutdown.clone()));
    {
        let engine = Arc::clone(&engine);
        let stop = shutdown.clone();
        tasks.spawn(async move {
            engine.run(stop).await;
            Ok(())
        });
    }
    {
        if let Some(w) = &webhook {
            tracing::info!(url = %w.url(), "scheduled runs are notified by webhook");
        }
        let scheduler = Scheduler::new(Arc::clone(&engine), webhook);
        let stop = shutdown.clone();
        tasks.spawn(async move {
            scheduler.run(stop).await;
            Ok(())
        });
    }
    let mut result = Ok(Exit::Ok);
    while let Some(r) = tasks.join_next().await {
        let failed = match r {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => Failure::internal(anyhow::Error::new(e).context("HTTP API")),
            Err(e) => Failure::internal(anyhow::anyhow!("coordinator task failed: {e}")),
        };
        shutdown.cancel();
        result = Err(failed);
    }
    tracing::info!("coordinator stopped");
    result
}
