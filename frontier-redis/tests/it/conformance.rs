//! The frontier conformance suite on the Redis back end, against a real private redis-server.

use shoal_frontier_redis::RedisFrontier;
use shoal_shared::frontier::FrontierSettings;
use shoal_tests::conformance;
use shoal_tests::redis::RedisServer;
use std::sync::atomic::{AtomicU32, Ordering};

#[tokio::test]
async fn redis_frontier_passes_conformance() {
    let server = RedisServer::start().expect("redis-server starts");
    let url = server.url();
    let n = AtomicU32::new(0);
    conformance::run_all(|| {
        let url = url.clone();
        let ns = format!("conf{}", n.fetch_add(1, Ordering::Relaxed));
        async move {
            RedisFrontier::connect(
                &url,
                &ns,
                FrontierSettings { lease_batch: 1, slow_start: false, ..FrontierSettings::default() },
                "test",
            )
            .await
            .expect("connects to the private redis-server")
        }
    })
    .await;
}

/// Leases of several tasks (`lease_batch` 4): what hosts and sites see stays what single leases give.
#[tokio::test]
async fn redis_frontier_batches_leases() {
    let server = RedisServer::start().expect("redis-server starts");
    let url = server.url();
    let n = AtomicU32::new(0);
    conformance::run_batched(
        || {
            let url = url.clone();
            let ns = format!("batch{}", n.fetch_add(1, Ordering::Relaxed));
            async move {
                let settings = FrontierSettings { lease_batch: 4, slow_start: false, ..FrontierSettings::default() };
                RedisFrontier::connect(&url, &ns, settings, "test").await.expect("connects to the private redis-server")
            }
        },
        true,
    )
    .await;
}

/// Issue 41: new hosts and server IPs start at one request in flight (claims with the slow start).
#[tokio::test]
async fn redis_frontier_starts_hosts_and_ips_slowly() {
    let server = RedisServer::start().expect("redis-server starts");
    let url = server.url();
    let n = AtomicU32::new(0);
    conformance::run_slow_start(|| {
        let url = url.clone();
        let ns = format!("slow{}", n.fetch_add(1, Ordering::Relaxed));
        async move {
            let settings = FrontierSettings { lease_batch: 1, ..FrontierSettings::default() };
            RedisFrontier::connect(&url, &ns, settings, "test").await.expect("connects to the private redis-server")
        }
    })
    .await;
}
