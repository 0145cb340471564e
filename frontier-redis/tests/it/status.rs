//! Progress reads (an audit's status) on their own connection: the frontier's connection answers
//! in order, and a read sent behind a pipeline of seeds or a large event read waited for all of it.

use shoal_frontier_redis::RedisFrontier;
use shoal_shared::frontier::Frontier;
use shoal_shared::ids::SiteId;
use shoal_tests::conformance::seed;
use shoal_tests::redis::RedisServer;
use std::time::Duration;

#[tokio::test]
async fn progress_reads_do_not_wait_behind_the_frontiers_work() {
    let server = RedisServer::start().expect("redis-server starts");
    let f = RedisFrontier::connect(&server.url(), "status", Default::default(), "coordinator").await.expect("connects");
    f.seed(seed(1, 1, "a.test", 2, 0, 10)).await.expect("seed");
    // The frontier's own connection, held by a command that answers only after 5 s: every reply
    // sent behind it on that connection waits as long.
    let mut shared = f.connection();
    let mut held = tokio::task::JoinSet::new();
    held.spawn(async move {
        let _: Option<(String, String)> =
            redis::cmd("BLPOP").arg("nothing-comes").arg(5).query_async(&mut shared).await.expect("blpop");
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let many = f.progress_many(&[SiteId(1), SiteId(2)]).await.expect("progress");
    let one = f.progress(SiteId(1)).await.expect("progress");
    assert!(held.try_join_next().is_none(), "the progress reads waited for the frontier's connection");
    assert!(many[0].is_some_and(|p| p.queued > 0) && many[1].is_none(), "{many:?}");
    assert_eq!(one, many[0]);
    held.abort_all();
}
