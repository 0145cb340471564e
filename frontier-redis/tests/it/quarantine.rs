//! A bad value in Redis is quarantined, never a wedge (issue 36): garbage in a host's hash, a
//! site's hash, a lease or the events stream costs the audit it belongs to, and every other
//! audit's claims, completions, reaping and events go on. Each test writes the garbage the way a
//! co-tenant with write access to the deployment's keys could, and fails without the quarantine
//! (the step errors for every caller, or the read fails).

use redis::AsyncCommands;
use shoal_frontier_redis::RedisFrontier;
use shoal_frontier_redis::keys::EVENTS_GROUP;
use shoal_shared::finding::{Code, Finding};
use shoal_shared::frontier::{Claim, Completion, Frontier, FrontierSettings, RobotsOutcome};
use shoal_shared::ids::{AuditId, SiteId, WorkerId};
use shoal_shared::record::Event;
use shoal_shared::time::UnixMs;
use shoal_shared::url::{HostKey, NormalizedUrl};
use shoal_tests::conformance::{resolution, seed};
use shoal_tests::redis::RedisServer;
use std::time::Duration;

const CONSUMER: &str = "coordinator";

fn now() -> UnixMs {
    UnixMs::from(std::time::SystemTime::now())
}

fn host(name: &str) -> HostKey {
    NormalizedUrl::parse(&format!("http://{name}/")).expect("url").host_key()
}

async fn frontier(server: &RedisServer, ns: &str) -> RedisFrontier {
    let settings = FrontierSettings { lease_ttl_ms: 500, ..FrontierSettings::default() };
    RedisFrontier::connect(&server.url(), ns, settings, CONSUMER).await.expect("connects")
}

/// Claims and completes (robots.txt allows all, pages link nowhere) until nothing is left: every
/// claim must answer. Returns the sites whose leases were granted.
async fn crawl(f: &RedisFrontier) -> Vec<SiteId> {
    let w = WorkerId("w".into());
    let mut leased = Vec::new();
    for _ in 0..200 {
        let t = now();
        match f.claim(&w, t).await.expect("every claim answers") {
            Claim::Leased(l) => {
                leased.push(l.task.site);
                let robots = l.task.kind == shoal_shared::task::TaskKind::Robots;
                let c = Completion {
                    resolved: resolution(&l, None),
                    robots: robots.then_some(RobotsOutcome::AllowAll),
                    ..Completion::default()
                };
                f.complete(&l, c, t).await.expect("every completion answers");
            }
            Claim::Wait(at) => {
                tokio::time::sleep(at.since(t).clamp(Duration::from_millis(1), Duration::from_millis(50))).await
            }
            Claim::Idle => return leased,
        }
    }
    panic!("the crawl did not end in 200 claims");
}

/// Every event the frontier holds, acknowledged.
async fn drain(f: &RedisFrontier) -> Vec<Event> {
    let mut all = Vec::new();
    for _ in 0..100 {
        let batch = f.read_events(100).await.expect("reading events works");
        if batch.is_empty() {
            return all;
        }
        let ids: Vec<_> = batch.iter().map(|(id, _)| id.clone()).collect();
        f.ack_events(&ids).await.expect("ack");
        all.extend(batch.into_iter().map(|(_, e)| e));
    }
    panic!("more than 100 batches of events");
}

fn site_done(events: &[Event], site: u64) -> bool {
    events.iter().any(|e| matches!(e, Event::SiteDone { site: s, .. } if s.0 == site))
}

#[tokio::test]
async fn garbage_in_a_host_hash_quarantines_its_site_and_every_other_claim_goes_on() {
    let server = RedisServer::start().expect("redis-server starts");
    let f = frontier(&server, "qhost").await;
    // The victim's site is seeded first, so its lanes come first in `ready`.
    f.seed(seed(2, 2, "victim.test", 4, 0, 10)).await.expect("seed");
    f.seed(seed(1, 1, "bystander.test", 4, 0, 10)).await.expect("seed");
    let mut c = f.connection();
    let victim = f.keys().host(&host("victim.test"));
    let _: () = c.hset(&victim, "inf", "garbage").await.expect("HSET");

    let leased = crawl(&f).await;
    assert!(!leased.contains(&SiteId(2)), "the victim's lane was leased: {leased:?}");
    let events = drain(&f).await;
    assert!(site_done(&events, 1), "the bystander's site ended: {events:?}");

    let q = f.quarantine(100).await.expect("reads the quarantine");
    assert_eq!(q.sites.iter().map(|s| s.site).collect::<Vec<_>>(), vec![SiteId(2)], "{q:?}");
    let reason = &q.sites[0].reason;
    assert!(reason.contains("host victim.test: inf = \"garbage\""), "{reason}");
    assert!(q.sites[0].since.0 > 0);
    // The host's pace was reset for whoever uses it next; its clock waits a slow-mode gap.
    let inf: Option<String> = c.hget(&victim, "inf").await.expect("HGET");
    assert_eq!(inf, None, "the unreadable field is gone");
    let progress = f.progress_many(&[SiteId(1), SiteId(2)]).await.expect("progress reads");
    assert!(progress[0].is_some_and(|p| p.done), "{progress:?}");
    // Forgetting the victim's audit drops the site, its lanes and its record.
    assert!(f.forget(AuditId(2)).await.expect("forget"), "nothing of the audit is left");
    assert!(f.quarantine(100).await.expect("reads").sites.is_empty());
    let lane: bool = c.exists(f.keys().lane(SiteId(2), &host("victim.test"))).await.expect("EXISTS");
    assert!(!lane, "the quarantined site's lanes are dropped");
}

#[tokio::test]
async fn a_counter_of_a_site_that_is_no_number_fails_no_read_and_no_other_site() {
    let server = RedisServer::start().expect("redis-server starts");
    let f = frontier(&server, "qsite").await;
    f.seed(seed(2, 2, "victim.test", 4, 0, 10)).await.expect("seed");
    f.seed(seed(1, 1, "bystander.test", 4, 0, 10)).await.expect("seed");
    let mut c = f.connection();
    let _: () = c.hset(f.keys().site(SiteId(2)), "queued", "x1").await.expect("HSET");

    // The coordinator's reads at start and for its gauges: the site reads as nothing, and is
    // recorded as quarantined.
    let progress = f.progress_many(&[SiteId(1), SiteId(2)]).await.expect("progress reads");
    assert!(progress.iter().all(Option::is_some), "{progress:?}");
    let q = f.quarantine(100).await.expect("reads the quarantine");
    assert_eq!(q.sites.len(), 1, "{q:?}");
    assert!(q.sites[0].reason.contains("queued = \"x1\""), "{q:?}");

    crawl(&f).await;
    assert!(site_done(&drain(&f).await, 1), "the bystander's site ended");
}

#[tokio::test]
async fn garbage_in_a_host_met_by_a_completion_or_the_reaper_costs_only_its_site() {
    let server = RedisServer::start().expect("redis-server starts");
    let f = frontier(&server, "qlease").await;
    f.seed(seed(1, 1, "bystander.test", 4, 0, 10)).await.expect("seed");
    f.seed(seed(2, 2, "victim.test", 4, 0, 10)).await.expect("seed");
    let w = WorkerId("w".into());
    // Lease everything there is (the robots.txt tasks of both sites' two lanes).
    let t = now();
    let mut leases = Vec::new();
    for _ in 0..4 {
        match f.claim(&w, t).await.expect("claim") {
            Claim::Leased(l) => leases.push(*l),
            other => panic!("expected a lease, got {other:?}"),
        }
    }
    let mut c = f.connection();
    let victim = f.keys().host(&host("victim.test"));
    let _: () = c.hset(&victim, "maxe", "{}").await.expect("HSET");
    // A completion of the victim's lease: answered (stale), the site quarantined.
    let mine = leases.iter().find(|l| l.host == host("victim.test")).expect("a lease on the victim's host");
    f.complete(mine, Completion { resolved: resolution(mine, None), ..Completion::default() }, t)
        .await
        .expect("the completion answers");
    assert_eq!(f.quarantine(100).await.expect("reads").sites.len(), 1);
    // Every lease expires, the victim's too (its completion did not get to release it). The host
    // is garbage again when the reaper meets it: the reaper answers, and gives back every lease.
    let _: () = c.hset(&victim, "maxe", "[]").await.expect("HSET");
    let later = UnixMs(t.0 + 1_000);
    let reclaimed = f.reap(later).await.expect("reaping works");
    assert_eq!(reclaimed, 4, "every expired lease was looked at");
    let left: usize = c.zcard(f.keys().prefix().to_owned() + ":leases").await.expect("ZCARD");
    assert_eq!(left, 0, "no lease is left to be reaped again");
    crawl(&f).await;
    assert!(site_done(&drain(&f).await, 1), "the bystander's site ended");
}

/// Appends a raw entry to the events stream.
async fn xadd(f: &RedisFrontier, fields: &[(&str, &[u8])]) -> String {
    let mut c = f.connection();
    let mut cmd = redis::cmd("XADD");
    cmd.arg(f.keys().events()).arg("*");
    for (k, v) in fields {
        cmd.arg(*k).arg(*v);
    }
    cmd.query_async(&mut c).await.expect("XADD")
}

async fn pending(f: &RedisFrontier) -> u64 {
    let mut c = f.connection();
    let summary: redis::Value =
        redis::cmd("XPENDING").arg(f.keys().events()).arg(EVENTS_GROUP).query_async(&mut c).await.expect("XPENDING");
    match summary {
        redis::Value::Array(v) => v.first().and_then(|n| redis::from_redis_value::<u64>(n.clone()).ok()).unwrap_or(0),
        other => panic!("XPENDING answered {other:?}"),
    }
}

#[tokio::test]
async fn an_unreadable_stream_entry_is_skipped_and_the_rest_of_its_batch_delivered() {
    let server = RedisServer::start().expect("redis-server starts");
    let f = frontier(&server, "qstream").await;
    f.seed(seed(1, 1, "bystander.test", 4, 0, 10)).await.expect("seed");
    f.seed(seed(2, 2, "victim.test", 4, 0, 10)).await.expect("seed");
    let w = WorkerId("w".into());
    // Events of both sites, with garbage between them: an entry that is nothing Shoal writes, one
    // whose only event does not decode, and one whose packed events do not add up.
    let t = now();
    for _ in 0..2 {
        if let Claim::Leased(l) = f.claim(&w, t).await.expect("claim") {
            let c = Completion {
                resolved: resolution(&l, None),
                robots: Some(RobotsOutcome::AllowAll),
                ..Completion::default()
            };
            f.complete(&l, c, t).await.expect("complete");
        }
    }
    xadd(&f, &[("x", b"what is this")]).await;
    xadd(&f, &[("e", b"\xc1 not rmp")]).await;
    xadd(&f, &[("E", &[9, 0, 0, 0, 1])]).await;
    // A well-formed event beside a bad one: the good one is delivered, the site gets the finding.
    let kept = Finding::new(AuditId(2), SiteId(2), Code::TitleMissing, "http://victim.test/x", "kept");
    let good = rmp_serde::to_vec_named(&Event::Finding(kept.clone())).expect("encodes");
    let bad_id = xadd(&f, &[("e", &good), ("e", b"\xc1")]).await;
    crawl(&f).await;

    let events = drain(&f).await;
    assert!(site_done(&events, 1), "the bystander's events came through: {events:?}");
    assert!(events.contains(&Event::Finding(kept)), "the readable part of a bad entry came through: {events:?}");
    let notes: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Finding(f) if f.code == Code::ResultsIncomplete => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(notes.len(), 1, "one finding, for the entry that names its site: {notes:?}");
    assert_eq!((notes[0].audit, notes[0].site, notes[0].url.as_str()), (AuditId(2), SiteId(2), "http://victim.test/"));
    assert!(notes[0].detail.contains(&bad_id), "{}", notes[0].detail);
    assert_eq!(f.quarantine(10).await.expect("reads").entries, 4, "each bad entry is counted");
    assert_eq!(pending(&f).await, 0, "nothing stays pending");

    // A coordinator started again reads nothing old: the bad entries are not retried.
    let again = frontier(&server, "qstream").await;
    assert!(again.read_events(100).await.expect("reads").is_empty());
    assert_eq!(pending(&again).await, 0);
}

#[tokio::test]
async fn garbage_in_counters_of_the_whole_deployment_is_reset_and_blamed_on_no_audit() {
    let server = RedisServer::start().expect("redis-server starts");
    let f = frontier(&server, "qshared").await;
    f.seed(seed(1, 1, "one.test", 4, 0, 10)).await.expect("seed");
    f.seed(seed(2, 2, "two.test", 4, 0, 10)).await.expect("seed");
    let mut c = f.connection();
    let p = f.keys().prefix().to_owned();
    let ip = shoal_tests::conformance::test_ip(&host("one.test"));
    let _: () = c.set(format!("{p}:seq"), "x").await.expect("SET");
    let _: () = c.set(format!("{p}:leaseid"), "y").await.expect("SET");
    let _: () = c.set(format!("{p}:ipf:{ip}"), "z").await.expect("SET");
    let _: () = c.hset(format!("{p}:ipg:{ip}"), "ll", "?").await.expect("HSET");
    let _: () = c.hset(format!("{p}:wl"), "w", "many").await.expect("HSET");
    let _: () = c.set(format!("{p}:hungry"), "not a hash").await.expect("SET");

    crawl(&f).await;
    let events = drain(&f).await;
    assert!(site_done(&events, 1) && site_done(&events, 2), "both sites ended: {events:?}");
    assert!(f.quarantine(100).await.expect("reads").sites.is_empty(), "no audit was blamed");
    let leaseid: u64 = c.get(format!("{p}:leaseid")).await.expect("GET");
    assert!(leaseid > 1_000_000_000_000, "lease ids restarted above any given out: {leaseid}");
}
