//! The browser workers' key (`…:bworkers`) ends with the workers: users run a fleet for months,
//! and a key that kept every worker that ever started would grow forever.

use shoal_frontier_redis::RedisFrontier;
use shoal_frontier_redis::keys::Keys;
use shoal_shared::frontier::{Frontier, FrontierSettings};
use shoal_shared::ids::WorkerId;
use shoal_shared::time::UnixMs;
use shoal_tests::redis::RedisServer;

#[tokio::test]
async fn the_browser_workers_key_ends_with_the_workers() {
    let server = RedisServer::start().expect("redis-server starts");
    let settings = FrontierSettings::default();
    let f = RedisFrontier::connect(&server.url(), "bw", settings, "test").await.expect("connects");
    let key = Keys::new("bw").browser_workers();
    let mut c = f.connection();
    let exists = |mut c: shoal_frontier_redis::Conn, key: String| async move {
        let n: u32 = redis::cmd("EXISTS").arg(&key).query_async(&mut c).await.expect("exists");
        n == 1
    };
    let ttl = u64::try_from(settings.browser_worker_ttl().as_millis()).expect("fits");
    // Announcements at the real time, as workers make them: the key's own expiry is Redis's.
    let now = UnixMs::from(std::time::SystemTime::now());
    let (a, b) = (WorkerId("a".into()), WorkerId("b".into()));
    f.announce_browser_worker(&a, now).await.expect("announce");
    let pttl: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut c).await.expect("pttl");
    assert!(pttl > 0 && pttl <= i64::try_from(ttl).expect("fits"), "the key expires with the announcement: {pttl}");
    f.withdraw_browser_worker(&a).await.expect("withdraw");
    assert!(!exists(f.connection(), key.clone()).await, "the last worker's withdrawal ends the key");

    f.announce_browser_worker(&b, now).await.expect("announce");
    assert_eq!(f.browser_workers(now).await.expect("count"), 1);
    assert_eq!(f.browser_workers(now.plus(settings.browser_worker_ttl())).await.expect("count"), 0);
    assert!(!exists(f.connection(), key).await, "a read drops the expired workers, and the empty key with them");
}
