//! The events stream across a lost reply: Redis may deliver a batch (move it to the coordinator's
//! pending list, persist that) and then lose the connection before the reply arrives. CI saw the
//! result once (`redis_restarted_mid_audit_with_aof_loses_nothing`): four pages crawled, published
//! and never stored, because the coordinator went on reading only new entries.

use redis::Value;
use shoal_frontier_redis::RedisFrontier;
use shoal_frontier_redis::keys::EVENTS_GROUP;
use shoal_shared::frontier::{Claim, Completion, Frontier, RobotsOutcome};
use shoal_shared::ids::WorkerId;
use shoal_shared::record::Event;
use shoal_shared::time::UnixMs;
use shoal_tests::conformance::{resolution, seed};
use shoal_tests::redis::RedisServer;
use std::time::Duration;

const CONSUMER: &str = "coordinator";

/// Crawls the seeded site to its end: robots.txt allows all, no page links anywhere.
async fn crawl_to_the_end(f: &RedisFrontier) {
    let w = WorkerId("w".into());
    for _ in 0..50 {
        let t = UnixMs::from(std::time::SystemTime::now());
        match f.claim(&w, t).await.expect("claim") {
            Claim::Leased(l) => {
                let robots = l.task.kind == shoal_shared::task::TaskKind::Robots;
                let c = Completion {
                    resolved: resolution(&l, None),
                    robots: robots.then_some(RobotsOutcome::AllowAll),
                    ..Completion::default()
                };
                f.complete(&l, c, t).await.expect("complete");
            }
            Claim::Wait(at) => tokio::time::sleep(at.since(t).max(Duration::from_millis(1))).await,
            Claim::Idle => return,
        }
    }
    panic!("the crawl did not end in 50 claims");
}

#[tokio::test]
async fn events_delivered_before_a_lost_reply_are_read_again() {
    let mut server = RedisServer::start_persistent().expect("redis-server starts");
    let f = RedisFrontier::connect(&server.url(), "lost", Default::default(), CONSUMER).await.expect("connects");
    assert!(f.read_events(100).await.expect("read").is_empty(), "a fresh stream is empty");
    f.seed(seed(1, 1, "a.test", 4, 0, 10)).await.expect("seed");
    crawl_to_the_end(&f).await;

    // Redis delivers the batch to the coordinator's consumer (and writes that to its AOF), and the
    // reply never reaches the coordinator: the server dies first.
    let mut raw = f.connection();
    let delivered: Value = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg(EVENTS_GROUP)
        .arg(CONSUMER)
        .arg("COUNT")
        .arg(100)
        .arg("STREAMS")
        .arg(f.keys().events())
        .arg(">")
        .query_async(&mut raw)
        .await
        .expect("XREADGROUP");
    assert!(matches!(&delivered, Value::Array(a) if !a.is_empty()), "the crawl published events: {delivered:?}");
    server.restart().expect("redis-server restarts on its AOF");

    let mut events = Vec::new();
    let mut errors = 0;
    for _ in 0..20 {
        match f.read_events(100).await {
            Ok(batch) if batch.is_empty() && !events.is_empty() => break,
            Ok(batch) => {
                let ids: Vec<_> = batch.iter().map(|(id, _)| id.clone()).collect();
                f.ack_events(&ids).await.expect("ack");
                events.extend(batch.into_iter().map(|(_, e)| e));
            }
            Err(_) => errors += 1,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let done = events.iter().filter(|e| matches!(e, Event::SiteDone { .. })).count();
    assert_eq!(done, 1, "the delivered batch is read again after {errors} failed read(s): {events:?}");
}
