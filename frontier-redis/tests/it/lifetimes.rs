//! What Redis holds after audits end (issue 11): only the deployment's own keys and entries that
//! expire by themselves; nothing per audit, site, lane or lease, and no host that no live audit
//! uses without an expiry.

use redis::AsyncCommands;
use shoal_frontier_redis::RedisFrontier;
use shoal_shared::frontier::{Claim, Completion, Frontier, RobotsOutcome};
use shoal_shared::ids::{AuditId, WorkerId};
use shoal_shared::pace::HOST_LINGER;
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_shared::url::NormalizedUrl;
use shoal_tests::conformance::{page, resolution, seed};
use shoal_tests::redis::RedisServer;
use std::time::Duration;

fn now() -> UnixMs {
    UnixMs::from(std::time::SystemTime::now())
}

/// Crawls every queued task of the frontier: robots.txt allows all, each start page links to two
/// pages and to another site; `429_host`'s first page answers 429; one lease is left to expire.
async fn crawl_all(f: &RedisFrontier, slow_host: &str) {
    let w = WorkerId("w".into());
    let mut expired_one = false;
    for _ in 0..400 {
        let t = now();
        match f.claim(&w, t).await.expect("claim") {
            Claim::Leased(l) => {
                if !expired_one && l.task.kind == TaskKind::Page && l.task.depth == 1 {
                    // Never completed: reaped below, counted, and leased again.
                    expired_one = true;
                    let n = f.reap(l.deadline).await.expect("reap");
                    assert_eq!(n, 1);
                    continue;
                }
                let mut c = Completion { resolved: resolution(&l, None), ..Completion::default() };
                match l.task.kind {
                    TaskKind::Robots => c.robots = Some(RobotsOutcome::AllowAll),
                    TaskKind::Page if l.task.depth == 0 => {
                        let (a, s) = (l.task.audit.0, l.task.site.0);
                        let host = l.host.as_str().to_owned();
                        c.discovered = vec![
                            page(a, s, &format!("http://{host}/one"), 1),
                            page(a, s, &format!("http://{host}/two"), 1),
                            Task::new(
                                l.task.audit,
                                l.task.site,
                                NormalizedUrl::parse("http://elsewhere.test/x").expect("url"),
                                TaskKind::External,
                                1,
                                FoundVia::Link { from: l.task.url.clone() },
                            ),
                        ];
                        if l.host.as_str() == slow_host {
                            c.rate_limited = true;
                        }
                    }
                    _ => {}
                }
                f.complete(&l, c, t).await.expect("complete");
            }
            Claim::Wait(at) => tokio::time::sleep(at.since(t).max(Duration::from_millis(1))).await,
            Claim::Idle => return,
        }
    }
    panic!("the crawl did not end in 400 claims");
}

#[tokio::test]
async fn nothing_of_ended_audits_stays_in_redis() {
    let server = RedisServer::start().expect("redis-server starts");
    let f = RedisFrontier::connect(&server.url(), "life", Default::default(), "coordinator").await.expect("connects");
    f.publish_settings().await.expect("settings");
    let mut c = f.connection();
    let pattern = f.keys().pattern();
    let before: Vec<String> = c.keys(&pattern).await.expect("keys");
    for round in 0..2u64 {
        let audit = 10 + round;
        for (i, host) in ["a.test", "b.test", "c.test"].iter().enumerate() {
            let mut s = seed(audit, audit * 10 + i as u64, host, 4, 0, 10);
            s.initial[0].audit = AuditId(audit);
            f.seed(s).await.expect("seed");
        }
        crawl_all(&f, if round == 0 { "b.test" } else { "" }).await;
        // Drain the events, as the coordinator does.
        loop {
            let batch = f.read_events(500).await.expect("read");
            if batch.is_empty() {
                break;
            }
            let ids: Vec<_> = batch.into_iter().map(|(id, _)| id).collect();
            f.ack_events(&ids).await.expect("ack");
        }
        assert!(f.forget(AuditId(audit)).await.expect("forget"), "audit {audit} is gone");
    }
    let after: Vec<String> = c.keys(&pattern).await.expect("keys");
    let p = f.keys().prefix().to_owned();
    let fixed = [
        format!("{p}:events"),
        format!("{p}:settings"),
        format!("{p}:leaseid"),
        format!("{p}:seq"),
        format!("{p}:epoch"),
    ];
    let mut lingering = Vec::new();
    for k in &after {
        if before.contains(k) || fixed.contains(k) {
            continue;
        }
        let ttl: i64 = redis::cmd("PTTL").arg(k).query_async(&mut c).await.expect("pttl");
        let linger = i64::try_from(HOST_LINGER.as_millis()).expect("fits") + 5_000;
        let shared_cache = k.starts_with(&format!("{p}:cache:"));
        // A host's clock, and a server IP's latency guard, end HOST_LINGER after their last use.
        let idle_host =
            (k.starts_with(&format!("{p}:host:")) || k.starts_with(&format!("{p}:ipg:"))) && ttl > 0 && ttl <= linger;
        // Which workers found nothing lately is the fleet's, not an audit's: gone 10 s after the last claim.
        let forget = i64::try_from(shoal_frontier_redis::keys::HUNGRY_FORGET.as_millis()).expect("fits");
        let hungry = *k == format!("{p}:hungry") && ttl > 0 && ttl <= forget;
        assert!(shared_cache && ttl > 0 || idle_host || hungry, "{k} outlives the audits that used it (PTTL {ttl} ms)");
        if idle_host {
            lingering.push(k.clone());
        }
    }
    assert!(!lingering.is_empty(), "the hosts keep their clock for a minute: {after:?}");
    let stream_len: u64 = c.xlen(format!("{p}:events")).await.expect("xlen");
    assert_eq!(stream_len, 0, "acknowledged events are deleted");
}

/// `FCALL` calls Redis has answered so far (`INFO commandstats`).
async fn fcalls(c: &mut shoal_frontier_redis::Conn) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(c).await.expect("info");
    let line = info.lines().find(|l| l.starts_with("cmdstat_fcall:")).expect("fcall counted");
    let calls = line.split(['=', ',']).nth(1).expect("calls=");
    calls.parse().expect("a count")
}

/// Cancelling an audit of more sites than one script call handles (a set this large is no longer
/// a compact one that SSCAN returns whole) takes several calls, none holding Redis for the whole
/// audit, and still ends every site of it and no other audit's.
#[tokio::test]
async fn a_large_audit_is_cancelled_in_steps() {
    const SITES: u64 = 1_200;
    let server = RedisServer::start().expect("redis-server starts");
    let f = RedisFrontier::connect(&server.url(), "cancel", Default::default(), "coordinator").await.expect("connects");
    f.publish_settings().await.expect("settings");
    let seeds = (0..SITES).map(|i| seed(5, 1_000 + i, &format!("s{i}.test"), 2, 0, 10)).collect();
    assert_eq!(f.seed_many(seeds).await.expect("seed").len(), SITES as usize);
    f.seed(seed(6, 9, "other.test", 2, 0, 10)).await.expect("seed");
    let mut c = f.connection();
    let before = fcalls(&mut c).await;
    f.cancel(AuditId(5)).await.expect("cancel");
    let calls = fcalls(&mut c).await - before;
    assert!(calls > 1, "{SITES} sites cancelled in {calls} call(s)");
    let sites: Vec<_> = (0..SITES).map(|i| shoal_shared::ids::SiteId(1_000 + i)).collect();
    let progress = f.progress_many(&sites).await.expect("progress");
    let running = progress.iter().filter(|p| !p.as_ref().is_some_and(|p| p.done && p.queued == 0)).count();
    assert_eq!(running, 0, "every site of the cancelled audit ended with nothing queued");
    let other = f.progress(shoal_shared::ids::SiteId(9)).await.expect("progress").expect("site");
    assert!(!other.done && other.queued > 0, "another audit keeps its queue: {other:?}");
    let w = WorkerId("w".into());
    for _ in 0..3 {
        if let Claim::Leased(l) = f.claim(&w, now()).await.expect("claim") {
            assert_eq!(l.task.audit, AuditId(6), "only the other audit's tasks are leased");
        }
    }
}
