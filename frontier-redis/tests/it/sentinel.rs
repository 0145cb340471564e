//! A frontier on a Sentinel-watched master (issue 40): it follows the promoted replica by itself
//! when the master dies, and the failover fence holds every grant until the leases given before
//! the failover are over, then every host a full gap past the fence (lua/fence.lua). Times are the
//! claims' own arguments, so the 20 s hold is checked without waiting for it.

use shoal_frontier_redis::RedisFrontier;
use shoal_shared::frontier::{Claim, Completion, FAILOVER_HOLD, Frontier, RobotsOutcome};
use shoal_shared::ids::WorkerId;
use shoal_shared::task::TaskKind;
use shoal_shared::time::UnixMs;
use shoal_tests::conformance::{page, resolution, seed};
use shoal_tests::sentinel::SentinelGroup;
use std::time::Duration;

fn now() -> UnixMs {
    UnixMs::from(std::time::SystemTime::now())
}

/// A line for `--nocapture`: how long the failover took.
#[expect(clippy::print_stderr, reason = "the failover's timings, shown with --nocapture")]
fn note(msg: &str) {
    eprintln!("{msg}");
}

const HOLD_MS: u64 = FAILOVER_HOLD.as_millis() as u64;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_is_followed_and_no_grant_comes_before_the_fence_lets_it() {
    let mut group = SentinelGroup::start().expect("a master, a replica and three Sentinels start");
    let f = RedisFrontier::connect(&group.url(), "fo", Default::default(), "w").await.expect("connects via Sentinels");
    assert_eq!(f.connection().masters_followed(), 1);
    // a.test: 2 in flight at 100 ms; b.test: one at a time, 30 s apart (longer than the hold).
    f.seed(seed(1, 1, "a.test", 2, 100, 10)).await.expect("seed a");
    f.seed(seed(1, 2, "b.test", 1, 30_000, 10)).await.expect("seed b");
    let w = WorkerId("w".into());
    // The crawl runs by a clock a minute behind, so that b.test's own clock lets its next page go
    // about when the master dies: robots.txt at t0, its start page 30 s later, which finds
    // /next, due 30 s after that. a.test's start page is leased and its request under way.
    let t0 = UnixMs(now().0 - 60_000);
    let mut at = t0;
    let mut b_start = None;
    for _ in 0..40 {
        match f.claim(&w, at).await.expect("claim") {
            Claim::Leased(l) if l.task.kind == TaskKind::Robots => {
                let robots = Some(RobotsOutcome::AllowAll);
                let c = Completion { resolved: resolution(&l, None), robots, ..Completion::default() };
                f.complete(&l, c, at).await.expect("complete robots.txt");
            }
            Claim::Leased(l) if l.task.url.as_str() == "http://b.test/" => {
                let discovered = vec![page(1, 2, "http://b.test/next", 1)];
                let c = Completion { resolved: resolution(&l, None), discovered, ..Completion::default() };
                f.complete(&l, c, at).await.expect("complete b.test's start page");
                b_start = Some(at);
                break;
            }
            Claim::Leased(_) => {}
            Claim::Wait(next) => at = next,
            Claim::Idle => break,
        }
    }
    let b_start = b_start.expect("b.test's start page was crawled");
    // What came before is on the replica (asynchronous replication could lose the last writes:
    // that case is the fleet test's, tests/it/distributed.rs).
    let replicas: u64 = redis::cmd("WAIT").arg(1).arg(5_000).query_async(&mut f.connection()).await.expect("WAIT");
    assert_eq!(replicas, 1);

    let killed = now();
    group.kill_master();
    let took = group.wait_promoted(Duration::from_secs(30)).expect("the Sentinels promote the replica");
    note(&format!("the replica was master {took:?} after the kill"));
    // Until this process finds the new master a claim fails, as with a restarting Redis; then the
    // fence answers: nothing before the hold is over.
    let mut answer = None;
    for _ in 0..100 {
        match f.claim(&w, now()).await {
            Ok(c) => {
                answer = Some(c);
                break;
            }
            Err(e) => {
                note(&format!("claim while following: {e}"));
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    let followed = now();
    let Some(Claim::Wait(until)) = answer else { panic!("the fence holds the first claim: {answer:?}") };
    assert!(until.0 >= killed.0 + HOLD_MS, "held until {until:?}, killed at {killed:?}");
    assert!(until.0 <= followed.0 + HOLD_MS, "held until {until:?}, followed at {followed:?}");
    assert_eq!(f.connection().masters_followed(), 2, "the frontier follows the promoted replica");
    note(&format!("followed the new master {:?} after the kill", Duration::from_millis(followed.0 - killed.0)));

    // The fence was raised at until - HOLD. The crawl goes on by the claims' clock (a lease that
    // expired by it is reaped, as the coordinator's ticks do) until nothing is left: no lease before
    // the hold's end, and none to site 2's hosts (30 s gap) before a full gap past the fence, though
    // their own clocks let them go about 2 s before the fence was raised.
    let fenced = until.0 - HOLD_MS;
    assert!(b_start.0 + 30_000 < fenced + 29_999, "b.test's own clock is what holds it back");
    let mut at = until;
    let mut after: Vec<(String, String, u64)> = Vec::new();
    for _ in 0..60 {
        f.reap(at).await.expect("reap");
        match f.claim(&w, at).await.expect("claim after the failover") {
            Claim::Leased(l) => {
                after.push((l.host.as_str().to_owned(), l.task.url.as_str().to_owned(), at.0));
                let robots = (l.task.kind == TaskKind::Robots).then_some(RobotsOutcome::AllowAll);
                let c = Completion { resolved: resolution(&l, None), robots, ..Completion::default() };
                f.complete(&l, c, at).await.expect("complete");
            }
            Claim::Wait(next) => at = next,
            Claim::Idle => at = UnixMs(at.0 + 11_000),
        }
        if after.iter().any(|(_, u, _)| u == "http://b.test/next") {
            break;
        }
    }
    for (host, url, started) in &after {
        assert!(*started >= until.0, "{url} leased at {started}, before the hold's end {until:?}");
        if host.ends_with("b.test") {
            assert!(*started >= fenced + 30_000, "{url} leased {} ms after the fence", started - fenced);
        }
    }
    assert!(after.iter().any(|(_, u, _)| u == "http://b.test/next"), "b.test's next page is crawled: {after:?}");
}
