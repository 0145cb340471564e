//! The conformance suite every frontier back end must pass.
//!
//! Each check takes a fresh, empty frontier (built by the caller's factory) and a base time, and
//! panics with a message on the first violation. Back ends run [`run_all`] from their tests; the
//! embedded one in this crate, the Redis one against a real `redis-server`.

use shoal_shared::finding::Code;
use shoal_shared::frontier::{
    Claim, Completed, Completion, Frontier, FrontierError, LaneRobots, Lease, Resolution, RobotsOutcome, SiteSeed,
};
use shoal_shared::ids::{AuditId, SiteId, WorkerId};
use shoal_shared::pace::PaceLimits;
use shoal_shared::record::Event;
use shoal_shared::task::{FoundVia, SiteLimits, Task, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_shared::url::{HostKey, NormalizedUrl};
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

mod batch;
mod beyond_http;
mod browser;
mod lifetimes;
mod signals;
mod slow_start;

pub use batch::*;
pub use beyond_http::*;
pub use browser::*;
pub use lifetimes::*;
pub use signals::*;
pub use slow_start::*;

const T0: UnixMs = UnixMs(1_700_000_000_000);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn url(s: &str) -> NormalizedUrl {
    NormalizedUrl::parse(s).expect("test URL is valid")
}

fn worker() -> WorkerId {
    WorkerId("w1".into())
}

/// A seed for `http://{host}/` with the given pace and page budget.
#[must_use]
pub fn seed(audit: u64, site: u64, host: &str, in_flight: u32, gap_ms: u64, max_pages: u32) -> SiteSeed {
    let start = url(&format!("http://{host}/"));
    let limits = SiteLimits {
        max_pages,
        pace: PaceLimits::new(in_flight, ms(gap_ms)).expect("valid pace"),
        ..SiteLimits::default()
    };
    let task = Task::new(AuditId(audit), SiteId(site), start.clone(), TaskKind::Page, 0, FoundVia::Start);
    SiteSeed {
        audit: AuditId(audit),
        site: SiteId(site),
        start,
        limits,
        initial: vec![task],
        custom: Default::default(),
    }
}

/// A page task discovered on `from`.
#[must_use]
pub fn page(audit: u64, site: u64, u: &str, depth: u16) -> Task {
    Task::new(
        AuditId(audit),
        SiteId(site),
        url(u),
        TaskKind::Page,
        depth,
        FoundVia::Link { from: url("http://unused.test/") },
    )
}

async fn lease<F: Frontier>(f: &F, now: UnixMs) -> Lease {
    match f.claim(&worker(), now).await.expect("claim works") {
        Claim::Leased(l) => *l,
        other => panic!("expected a lease at {now}, got {other:?}"),
    }
}

async fn no_lease<F: Frontier>(f: &F, now: UnixMs) -> Claim {
    let c = f.claim(&worker(), now).await.expect("claim works");
    assert!(!matches!(c, Claim::Leased(_)), "expected no lease at {now}, got {c:?}");
    c
}

async fn complete<F: Frontier>(f: &F, l: &Lease, c: Completion, now: UnixMs) -> Completed {
    f.complete(l, c, now).await.expect("complete works")
}

/// A test address of `host`: one per host (192.0.2.0/24 is for documentation), so that unrelated
/// hosts do not share a per-IP cap.
#[must_use]
pub fn test_ip(host: &HostKey) -> IpAddr {
    let h = host.as_str().bytes().fold(7u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)));
    IpAddr::V4(Ipv4Addr::new(192, 0, 2, u8::try_from(h % 250).unwrap_or(0) + 1))
}

/// The answer to a lease's fresh address lookup, if it asked for one: `ip`, or the host's test
/// address, with a one-hour TTL.
#[must_use]
pub fn resolution(l: &Lease, ip: Option<IpAddr>) -> Option<Resolution> {
    l.resolve.then(|| Resolution::Address { ip: ip.unwrap_or_else(|| test_ip(&l.host)), ttl_ms: 3_600_000 })
}

/// robots.txt read (allow all), with the address lookup the lease asked for.
fn robots_ok(l: &Lease, ip: Option<IpAddr>) -> Completion {
    Completion { resolved: resolution(l, ip), robots: Some(RobotsOutcome::AllowAll), ..Completion::default() }
}

/// Finishes the robots.txt leases of every lane of a fresh seed (start host and twin).
async fn pass_robots<F: Frontier>(f: &F, now: UnixMs, lanes: usize, ip: Option<IpAddr>) {
    for _ in 0..lanes {
        let l = lease(f, now).await;
        assert_eq!(l.task.kind, TaskKind::Robots, "robots.txt comes first");
        assert!(l.resolve, "the first lease of a host looks its address up");
        complete(f, &l, robots_ok(&l, ip), now).await;
    }
}

async fn drain_events<F: Frontier>(f: &F) -> Vec<Event> {
    let mut all = Vec::new();
    loop {
        let batch = f.read_events(100).await.expect("read events");
        if batch.is_empty() {
            return all;
        }
        let ids: Vec<_> = batch.iter().map(|(id, _)| id.clone()).collect();
        f.ack_events(&ids).await.expect("ack");
        all.extend(batch.into_iter().map(|(_, e)| e));
    }
}

/// robots.txt is the first request to each host, and nothing else of the host is leased while it is
/// in flight.
pub async fn robots_first<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 0, 10)).await.expect("seed");
    let r1 = lease(&f, T0).await;
    assert_eq!(r1.task.kind, TaskKind::Robots);
    let r2 = lease(&f, T0).await;
    assert_eq!(r2.task.kind, TaskKind::Robots, "the twin's robots.txt, not the start page");
    assert_ne!(r1.host, r2.host);
    no_lease(&f, T0).await;
    let start_lane = if r1.host.as_str() == "a.test" { &r1 } else { &r2 };
    complete(&f, start_lane, robots_ok(start_lane, None), T0).await;
    let p = lease(&f, T0).await;
    assert_eq!(p.task.kind, TaskKind::Page);
    assert_eq!(p.task.url.as_str(), "http://a.test/");
}

/// Completing and claiming in one step is a completion followed by a claim: the slot it frees goes
/// to the next task at once, the gap still holds (the claim says when to ask again), and a stale
/// completion changes nothing but still claims.
pub async fn complete_and_claim_in_one_step<F: Frontier>(f: F) {
    let both = |l: &Lease, c: Completion, at: UnixMs| {
        let (f, l, w) = (&f, l.clone(), worker());
        async move { f.complete_and_claim(&l, &c, &w, at).await.expect("complete and claim work") }
    };
    f.seed(seed(1, 1, "a.test", 1, 300, 10)).await.expect("seed");
    let (r1, r2) = (lease(&f, T0).await, lease(&f, T0).await);
    let (start, twin) = if r1.host.as_str() == "a.test" { (r1, r2) } else { (r2, r1) };
    complete(&f, &twin, robots_ok(&twin, None), T0).await;
    // robots.txt started at T0: the start page waits for the gap.
    let (done, next) = both(&start, robots_ok(&start, None), T0.plus(ms(100))).await;
    assert_eq!(done, Completed::Applied { enqueued: 0 });
    assert_eq!(next, Claim::Wait(T0.plus(ms(300))), "the claim in the same step keeps the gap");
    let p = lease(&f, T0.plus(ms(300))).await;
    assert_eq!(p.task.url.as_str(), "http://a.test/");
    let discovered = (1..3).map(|i| page(1, 1, &format!("http://a.test/{i}"), 1)).collect();
    let (done, next) = both(&p, Completion { discovered, ..Completion::default() }, T0.plus(ms(700))).await;
    assert_eq!(done, Completed::Applied { enqueued: 2 });
    let Claim::Leased(a) = next else { panic!("the freed slot goes to the next page at once, got {next:?}") };
    assert_eq!(a.task.kind, TaskKind::Page);
    assert_eq!(a.started_at, T0.plus(ms(700)));
    // One in flight is the cap: with `a` out, nothing else of the host may start.
    assert_eq!(no_lease(&f, T0.plus(ms(5000))).await, Claim::Idle);
    let (_, next) = both(&a, Completion::default(), T0.plus(ms(5000))).await;
    let Claim::Leased(b) = next else { panic!("the last page, got {next:?}") };
    assert_ne!(a.task.url, b.task.url);
    let (done, next) = both(&b, Completion::default(), T0.plus(ms(6000))).await;
    assert_eq!((done, next), (Completed::Applied { enqueued: 0 }, Claim::Idle), "nothing left to claim");
    let (done, next) = both(&b, Completion::default(), T0.plus(ms(7000))).await;
    assert_eq!((done, next), (Completed::Stale, Claim::Idle), "a second completion changes nothing");
    let events = drain_events(&f).await;
    let pages = events.iter().filter(|e| matches!(e, Event::Page(_))).count();
    assert_eq!(pages, 0, "no records were sent, none appear");
    assert!(
        events.iter().any(|e| matches!(e, Event::SiteDone { .. })),
        "the site ends after its last completion: {events:?}"
    );
}

/// The gap between starts and the in-flight cap hold to the millisecond.
pub async fn gap_and_in_flight<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 2, 300, 100)).await.expect("seed");
    pass_robots(&f, T0, 2, None).await;
    // robots.txt started at T0 for a.test: the gap counts from it.
    let first = no_lease(&f, T0.plus(ms(299))).await;
    assert_eq!(first, Claim::Wait(T0.plus(ms(300))), "waits exactly until the gap is over");
    let p0 = lease(&f, T0.plus(ms(300))).await;
    let discovered = (1..6).map(|i| page(1, 1, &format!("http://a.test/{i}"), 1)).collect();
    let c = Completion { discovered, ..Completion::default() };
    assert_eq!(complete(&f, &p0, c, T0.plus(ms(300))).await, Completed::Applied { enqueued: 5 });
    let a = lease(&f, T0.plus(ms(600))).await;
    assert_eq!(no_lease(&f, T0.plus(ms(899))).await, Claim::Wait(T0.plus(ms(900))));
    let b = lease(&f, T0.plus(ms(900))).await;
    let blocked = no_lease(&f, T0.plus(ms(5000))).await;
    assert_eq!(blocked, Claim::Idle, "two in flight is the cap: only a completion frees a slot");
    complete(&f, &a, Completion::default(), T0.plus(ms(5000))).await;
    let _c = lease(&f, T0.plus(ms(5000))).await;
    complete(&f, &b, Completion::default(), T0.plus(ms(5001))).await;
    assert_eq!(no_lease(&f, T0.plus(ms(5001))).await, Claim::Wait(T0.plus(ms(5300))));
}

/// One server IP carries many hosts: its cap holds across them.
pub async fn per_ip_cap<F: Frontier>(f: F) {
    let ip = Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7)));
    for (site, host) in [(1, "a.test"), (2, "b.test"), (3, "c.test")] {
        f.seed(seed(1, site, host, 4, 0, 10)).await.expect("seed");
    }
    pass_robots(&f, T0, 6, ip).await;
    // Three hosts, 4 in flight allowed each, but the IP cap (default 8) is what binds once more
    // pages exist. Give each host 4 pages.
    let mut leases = Vec::new();
    for _ in 0..3 {
        leases.push(lease(&f, T0).await);
    }
    for l in &leases {
        let h = l.host.as_str();
        let site = l.task.site.0;
        let discovered = (1..5).map(|i| page(1, site, &format!("http://{h}/{i}"), 1)).collect();
        complete(&f, l, Completion { discovered, ..Completion::default() }, T0).await;
    }
    let mut held = Vec::new();
    while let Claim::Leased(l) = f.claim(&worker(), T0).await.expect("claim") {
        held.push(*l);
        assert!(held.len() <= 8, "more than 8 in flight to one IP");
    }
    assert_eq!(held.len(), 8, "the IP cap of 8 binds before the hosts' 3x4");
    complete(&f, &held[0], Completion::default(), T0).await;
    lease(&f, T0).await;
}

/// Sites on one server take turns: a freed slot of the IP goes to a site with nothing in flight
/// before a second request of a site already being fetched, so while more sites wait than the IP
/// has slots, no site has two requests (and two connections) open at once. Twelve sites allowed
/// 4 in flight each share an IP capped at 8; each completion finds three new pages of its site.
/// Every other completion claims in the same step, as a worker does.
pub async fn sites_on_one_ip_take_turns<F: Frontier>(f: F) {
    let ip = Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9)));
    let sites: Vec<(u64, String)> = (1..=12).map(|i| (i, format!("s{i}.test"))).collect();
    for (site, host) in &sites {
        f.seed(seed(1, *site, host, 4, 0, 100)).await.expect("seed");
    }
    pass_robots(&f, T0, 24, ip).await;
    let mut held: std::collections::VecDeque<Lease> = std::collections::VecDeque::new();
    let mut found = 0;
    for step in 0..300 {
        while let Claim::Leased(l) = f.claim(&worker(), T0).await.expect("claim") {
            held.push_back(*l);
        }
        assert_eq!(held.len(), 8, "step {step}: the IP's 8 slots are in use (every site has pages queued)");
        let mut per_host: HashMap<&str, usize> = HashMap::new();
        for l in &held {
            *per_host.entry(l.host.as_str()).or_default() += 1;
        }
        let most = per_host.values().max().copied().unwrap_or(0);
        assert_eq!(most, 1, "step {step}: a site had {most} requests in flight while others waited: {per_host:?}");
        let done = held.pop_front().expect("a lease in flight");
        let site = done.task.site.0;
        let h = done.host.as_str();
        let discovered = (0..3)
            .map(|_| {
                found += 1;
                page(1, site, &format!("http://{h}/p{found}"), 1)
            })
            .collect();
        let c = Completion { discovered, ..Completion::default() };
        if step % 2 == 0 {
            complete(&f, &done, c, T0).await;
        } else {
            let (applied, next) = f.complete_and_claim(&done, &c, &worker(), T0).await.expect("complete and claim");
            assert_eq!(applied, Completed::Applied { enqueued: 3 }, "step {step}");
            let Claim::Leased(l) = next else { panic!("step {step}: the freed slot is claimed at once, got {next:?}") };
            held.push_back(*l);
        }
    }
}

/// A lane woken for a free slot of its IP and then dropped unclaimed (its audit cancelled) passes
/// its turn on: the lanes still waiting for the IP are not left parked behind a free slot. Eight
/// sites fill an IP capped at 8, a site of another audit and one more site wait; a completion with
/// new pages wakes the first waiting one, which is then cancelled before anyone claims.
pub async fn a_dropped_lane_passes_its_turn_on<F: Frontier>(f: F) {
    let ip = Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 11)));
    for site in (10..=17).chain([3]) {
        f.seed(seed(1, site, &format!("s{site}.test"), 4, 0, 100)).await.expect("seed");
    }
    f.seed(seed(2, 2, "t.test", 4, 0, 100)).await.expect("seed");
    pass_robots(&f, T0, 20, ip).await;
    let mut held = Vec::new();
    while let Claim::Leased(l) = f.claim(&worker(), T0).await.expect("claim") {
        held.push(*l);
    }
    assert_eq!(held.len(), 8, "the IP's 8 slots are in use");
    let done = held.pop().expect("a lease");
    let (site, h) = (done.task.site.0, done.host.as_str().to_owned());
    let discovered = (1..4).map(|i| page(1, site, &format!("http://{h}/n{i}"), 1)).collect();
    complete(&f, &done, Completion { discovered, ..Completion::default() }, T0).await;
    f.cancel(AuditId(2)).await.expect("cancel");
    let next = lease(&f, T0).await;
    assert_ne!(next.task.audit, AuditId(2), "the cancelled audit gets nothing");
}

/// A 429 puts the host in slow mode; a retry waits for its not-before time.
pub async fn slow_mode_and_retry<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 0, 10)).await.expect("seed");
    pass_robots(&f, T0, 2, None).await;
    let p = lease(&f, T0).await;
    let retry_at = T0.plus(ms(2000));
    let mut again = p.task.clone();
    again.retries += 1;
    again.not_before = retry_at;
    let c = Completion {
        rate_limited: true,
        requeue: Some(again),
        discovered: vec![page(1, 1, "http://a.test/x", 1)],
        ..Completion::default()
    };
    complete(&f, &p, c, T0.plus(ms(10))).await;
    // Slow mode: 3 s from the 429 before anything; then one at a time.
    assert_eq!(no_lease(&f, T0.plus(ms(2999))).await, Claim::Wait(T0.plus(ms(3010))));
    let next = lease(&f, T0.plus(ms(3010))).await;
    assert_eq!(no_lease(&f, T0.plus(ms(9000))).await, Claim::Idle, "slow mode: 1 in flight");
    complete(&f, &next, Completion::default(), T0.plus(ms(3020))).await;
    assert_eq!(no_lease(&f, T0.plus(ms(3020))).await, Claim::Wait(T0.plus(ms(6010))), "slow mode: 3 s gap");
    let again = lease(&f, T0.plus(ms(6010))).await;
    assert_eq!(again.task.retries + next.task.retries, 1, "the retried task carries its retry count");
}

/// Discovered URLs are deduplicated per audit and held to the page and depth budgets.
pub async fn dedup_and_budgets<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 0, 3)).await.expect("seed");
    pass_robots(&f, T0, 2, None).await;
    let p = lease(&f, T0).await;
    let mut discovered = vec![
        page(1, 1, "http://a.test/", 1),
        page(1, 1, "http://a.test/a", 1),
        page(1, 1, "http://a.test/a", 1),
        page(1, 1, "http://www.a.test/b", 1),
        page(1, 1, "http://a.test/deep", 6),
        page(1, 1, "http://a.test/c", 1),
    ];
    discovered.push(page(1, 1, "http://other.test/", 1));
    let c = Completion { discovered, ..Completion::default() };
    assert_eq!(complete(&f, &p, c, T0).await, Completed::Applied { enqueued: 2 }, "start seen, dup, budget 3");
    let events = drain_events(&f).await;
    let codes: Vec<Code> = events
        .iter()
        .filter_map(|e| match e {
            Event::Finding(f) => Some(f.code),
            _ => None,
        })
        .collect();
    assert!(codes.contains(&Code::DepthLimitReached), "{codes:?}");
    assert!(codes.contains(&Code::PageLimitReached), "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == Code::PageLimitReached).count(), 1, "reported once");
}

/// A lease past its deadline is reclaimed; completing it afterwards changes nothing.
pub async fn lease_expiry<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 1, 0, 10)).await.expect("seed");
    pass_robots(&f, T0, 2, None).await;
    let p = lease(&f, T0).await;
    assert_eq!(no_lease(&f, T0).await, Claim::Idle);
    assert_eq!(f.reap(p.deadline.plus(ms(0)).plus(ms(1))).await.expect("reap"), 1);
    let later = p.deadline.plus(ms(2));
    let again = lease(&f, later).await;
    assert_eq!(again.task.url, p.task.url, "the URL returned to the queue");
    assert_eq!(complete(&f, &p, Completion::default(), later).await, Completed::Stale);
    assert_eq!(no_lease(&f, later).await, Claim::Idle, "the stale completion freed no slot");
    assert!(matches!(complete(&f, &again, Completion::default(), later).await, Completed::Applied { .. }));
    assert_eq!(complete(&f, &again, Completion::default(), later).await, Completed::Stale, "twice is harmless");
}

/// A site is done exactly once, when nothing is queued or leased; events are delivered until acked.
pub async fn completion_and_events<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 0, 10)).await.expect("seed");
    pass_robots(&f, T0, 2, None).await;
    let p = lease(&f, T0).await;
    let rec = shoal_shared::record::PageRecord::for_task(
        AuditId(1),
        SiteId(1),
        p.task.url.as_str(),
        p.task.kind,
        0,
        &p.task.found_via,
    );
    let finding = |code| {
        Event::Finding(shoal_shared::finding::Finding::new(AuditId(1), SiteId(1), code, p.task.url.as_str(), ""))
    };
    let events = vec![Event::Page(Box::new(rec)), finding(Code::TitleMissing), finding(Code::H1Missing)];
    let c = Completion { events, ..Completion::default() };
    complete(&f, &p, c, T0).await;
    let progress = f.progress(SiteId(1)).await.expect("progress").expect("site exists");
    assert!(progress.done, "{progress:?}");
    let events = drain_events(&f).await;
    let pages = events.iter().filter(|e| matches!(e, Event::Page(_))).count();
    let findings = events.iter().filter(|e| matches!(e, Event::Finding(_))).count();
    let done = events.iter().filter(|e| matches!(e, Event::SiteDone { .. })).count();
    assert_eq!((pages, findings, done), (1, 2, 1), "every event of a completion is delivered: {events:?}");
    assert!(drain_events(&f).await.is_empty(), "acked events are not delivered again");
    f.forget(AuditId(1)).await.expect("forget");
    assert_eq!(f.progress(SiteId(1)).await.expect("progress"), None, "a forgotten audit's sites are gone");
    assert_eq!(f.site_info(SiteId(1)).await.expect("site info"), None);
}

/// robots.txt unreachable: the lane closes and nothing else of it is leased; a twin that does not
/// resolve is simply left out.
pub async fn robots_off_limits<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 0, 10)).await.expect("seed");
    for _ in 0..2 {
        let r = lease(&f, T0).await;
        let outcome = if r.host.as_str() == "a.test" { RobotsOutcome::OffLimits } else { RobotsOutcome::NotPartOfSite };
        complete(&f, &r, Completion { robots: Some(outcome), ..Completion::default() }, T0).await;
    }
    assert_eq!(no_lease(&f, T0.plus(ms(10_000))).await, Claim::Idle);
    let progress = f.progress(SiteId(1)).await.expect("progress").expect("site");
    assert!(progress.done, "{progress:?}");
    let robots = f.robots(SiteId(1), &HostKey::from_raw("a.test")).await.expect("robots").map(|r| r.robots);
    assert!(matches!(robots, None | Some(LaneRobots::Known(RobotsOutcome::OffLimits))), "{robots:?}");
}

/// Two audits of one host: one pace, the stricter, across both.
pub async fn shared_host_one_pace<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 500, 10)).await.expect("seed");
    f.seed(seed(2, 2, "a.test", 4, 200, 10)).await.expect("seed");
    let mut starts = Vec::new();
    let mut now = T0;
    for _ in 0..4 {
        match f.claim(&worker(), now).await.expect("claim") {
            Claim::Leased(l) => {
                starts.push((now, l.host.clone()));
                complete(&f, &l, robots_ok(&l, None), now).await;
            }
            Claim::Wait(t) => now = t,
            Claim::Idle => panic!("idle with work queued"),
        }
    }
    let mut last_a: Option<UnixMs> = None;
    let mut t = now;
    for _ in 0..20 {
        match f.claim(&worker(), t).await.expect("claim") {
            Claim::Leased(l) => {
                if l.host.as_str() == "a.test" {
                    if let Some(prev) = last_a {
                        assert!(t.since(prev) >= ms(500), "two audits shortened the gap: {prev} then {t}");
                    }
                    last_a = Some(t);
                }
                complete(&f, &l, Completion::default(), t).await;
            }
            Claim::Wait(w) => t = w,
            Claim::Idle => break,
        }
    }
    assert!(last_a.is_some(), "both start pages were fetched");
}

/// Cancelling an audit drops its queue and finishes its sites.
pub async fn cancel_drops_queue<F: Frontier>(f: F) {
    f.seed(seed(7, 70, "a.test", 4, 0, 10)).await.expect("seed");
    f.cancel(AuditId(7)).await.expect("cancel");
    assert_eq!(no_lease(&f, T0).await, Claim::Idle);
    let progress = f.progress(SiteId(70)).await.expect("progress").expect("site");
    assert!(progress.done && progress.queued == 0, "{progress:?}");
}

/// A link to another site opens a lane for that host on demand: its robots.txt first, then the
/// check, counted against the resource budget.
pub async fn external_lane_opens_on_demand<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 0, 10)).await.expect("seed");
    pass_robots(&f, T0, 2, None).await;
    let p = lease(&f, T0).await;
    let ext = Task::new(
        AuditId(1),
        SiteId(1),
        url("http://ext.test/x"),
        TaskKind::External,
        1,
        FoundVia::Link { from: p.task.url.clone() },
    );
    let c = Completion { discovered: vec![ext.clone(), ext], ..Completion::default() };
    assert_eq!(complete(&f, &p, c, T0).await, Completed::Applied { enqueued: 1 });
    let r = lease(&f, T0).await;
    assert_eq!((r.task.kind, r.host.as_str()), (TaskKind::Robots, "ext.test"), "robots.txt of the other host first");
    assert_eq!(no_lease(&f, T0).await, Claim::Idle, "nothing of ext.test before its robots.txt");
    complete(&f, &r, robots_ok(&r, None), T0).await;
    let x = lease(&f, T0).await;
    assert_eq!((x.task.kind, x.task.url.as_str()), (TaskKind::External, "http://ext.test/x"));
    complete(&f, &x, Completion::default(), T0).await;
    let progress = f.progress(SiteId(1)).await.expect("progress").expect("site");
    assert!(progress.done, "the site waits for its external checks, then is done: {progress:?}");
}

/// How a URL was first seen never decides alone: a URL checked as a resource and later linked as a
/// page is crawled as a page too; a resource check of a URL already queued as a page is left out.
pub async fn pages_win_over_resource_checks<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 0, 10)).await.expect("seed");
    pass_robots(&f, T0, 2, None).await;
    let p = lease(&f, T0).await;
    let as_kind = |u: &str, kind| {
        let mut t = page(1, 1, u, 1);
        t.kind = kind;
        t
    };
    let discovered = vec![
        as_kind("http://a.test/seen-as-image", TaskKind::Resource { stylesheet: false }),
        as_kind("http://a.test/seen-as-image", TaskKind::Page),
        as_kind("http://a.test/page-first", TaskKind::Page),
        as_kind("http://a.test/page-first", TaskKind::Resource { stylesheet: false }),
        as_kind("http://a.test/seen-as-image", TaskKind::Resource { stylesheet: false }),
    ];
    let c = Completion { discovered, ..Completion::default() };
    assert_eq!(complete(&f, &p, c, T0).await, Completed::Applied { enqueued: 3 }, "image+page, page; no repeats");
    let mut got = Vec::new();
    while let Claim::Leased(l) = f.claim(&worker(), T0).await.expect("claim") {
        got.push((l.task.url.as_url().path().to_owned(), l.task.kind));
        complete(&f, &l, Completion::default(), T0).await;
    }
    got.sort_by_key(|(p, k)| (p.clone(), *k == TaskKind::Page));
    assert_eq!(
        got,
        vec![
            ("/page-first".to_owned(), TaskKind::Page),
            ("/seen-as-image".to_owned(), TaskKind::Resource { stylesheet: false }),
            ("/seen-as-image".to_owned(), TaskKind::Page),
        ]
    );
}

/// Sitemaps have a budget per site: files, bytes, and none once the page budget is spent; going
/// over it is reported once.
pub async fn sitemap_budget<F: Frontier>(f: F) {
    let mut s = seed(1, 1, "a.test", 4, 0, 3);
    s.limits.max_sitemaps = 2;
    s.limits.max_sitemap_bytes = 1_000;
    f.seed(s).await.expect("seed");
    pass_robots(&f, T0, 2, None).await;
    let sitemap = |n: u32| {
        let mut t = page(1, 1, &format!("http://a.test/s{n}.xml"), 0);
        t.kind = TaskKind::Sitemap { index_depth: 0 };
        t
    };
    let p = lease(&f, T0).await;
    let c = Completion { discovered: vec![sitemap(1), sitemap(2), sitemap(3)], ..Completion::default() };
    assert_eq!(complete(&f, &p, c, T0).await, Completed::Applied { enqueued: 2 }, "two files");
    let s1 = lease(&f, T0).await;
    let c = Completion { sitemap_bytes: 1_000, discovered: vec![sitemap(4)], ..Completion::default() };
    assert_eq!(complete(&f, &s1, c, T0).await, Completed::Applied { enqueued: 0 }, "the bytes are spent");
    let limit: Vec<Event> = drain_events(&f)
        .await
        .into_iter()
        .filter(|e| matches!(e, Event::Finding(x) if x.code == Code::SitemapLimitReached))
        .collect();
    assert_eq!(limit.len(), 1, "reported once: {limit:?}");
    let s2 = lease(&f, T0).await;
    assert_eq!(s2.task.url.as_str(), "http://a.test/s2.xml");
    complete(&f, &s2, Completion::default(), T0).await;
    assert!(f.progress(SiteId(1)).await.expect("progress").expect("site").done);

    let mut s = seed(2, 2, "b.test", 4, 0, 2);
    s.limits.max_sitemaps = 10;
    f.seed(s).await.expect("seed");
    pass_robots(&f, T0, 2, None).await;
    let q = lease(&f, T0).await;
    let pages = vec![page(2, 2, "http://b.test/x", 1)];
    assert_eq!(
        complete(&f, &q, Completion { discovered: pages, ..Completion::default() }, T0).await,
        Completed::Applied { enqueued: 1 }
    );
    let mut sm = page(2, 2, "http://b.test/s.xml", 0);
    sm.kind = TaskKind::Sitemap { index_depth: 0 };
    let x = lease(&f, T0).await;
    let c = Completion { discovered: vec![sm], ..Completion::default() };
    assert_eq!(complete(&f, &x, c, T0).await, Completed::Applied { enqueued: 0 }, "the page budget is spent");
}

/// The shared result cache returns what was stored and nothing for unknown keys.
pub async fn result_cache_round_trip<F: Frontier>(f: F) {
    assert_eq!(f.cache_get("x:http://e.test/", T0).await.expect("get"), None);
    f.cache_put("x:http://e.test/", b"value".to_vec(), T0, Duration::from_secs(600)).await.expect("put");
    assert_eq!(f.cache_get("x:http://e.test/", T0).await.expect("get").as_deref(), Some(&b"value"[..]));
    assert!(f.cache_add("lock", vec![1], T0, Duration::from_secs(60)).await.expect("add"), "first add wins");
    assert!(!f.cache_add("lock", vec![2], T0, Duration::from_secs(60)).await.expect("add"), "second add loses");
    assert_eq!(f.cache_get("lock", T0).await.expect("get"), Some(vec![1]));
}

/// Seeding many sites at once is seeding each: every site's lanes start with robots.txt, and a
/// second call (a retried submit, recovery) seeds nothing again; seed and seed_many agree.
pub async fn seed_many_seeds_each_once<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 0, 10)).await.expect("seed");
    let seeds: Vec<SiteSeed> =
        (1..=3).map(|i| seed(1, i, &format!("{}.test", ['a', 'b', 'c'][i as usize - 1]), 4, 0, 10)).collect();
    let seeded = f.seed_many(seeds.clone()).await.expect("seed_many");
    assert_eq!(seeded, vec![SiteId(2), SiteId(3)], "site 1 was seeded already");
    assert_eq!(f.seed_many(seeds).await.expect("seed_many again"), Vec::<SiteId>::new());
    assert!(matches!(f.seed(seed(1, 3, "c.test", 4, 0, 10)).await, Err(FrontierError::AlreadySeeded(SiteId(3)))));
    let mut robots = 0;
    for _ in 0..6 {
        let l = lease(&f, T0).await;
        assert_eq!(l.task.kind, TaskKind::Robots, "{l:?}");
        robots += 1;
    }
    assert_eq!(robots, 6, "start host and twin of each of three sites");
    no_lease(&f, T0).await;
    for site in 1..=3 {
        assert!(f.progress(SiteId(site)).await.expect("progress").is_some(), "site {site}");
    }
}

/// A site's info carries its audit's extraction and search rules and, in its limits, its scope
/// rules and content thresholds to the workers as they were seeded (issue 37), neither dropping the
/// other: in the embedded frontier's memory, through Redis's `info` blob.
pub async fn site_info_carries_the_audits_rules<F: Frontier>(f: F) {
    let rules = shoal_shared::custom::CustomRules::parse(&["price=css:.price@content"], &["oos=!regex:(?i)in stock"])
        .expect("valid rules");
    let scope = shoal_shared::scope_rules::ScopeRules::new(
        &["^http://a\\.test/(en|de)/".to_owned()],
        &["/cart".to_owned()],
        &["utm_*".to_owned()],
    )
    .expect("valid scope rules");
    let mut with_rules = seed(1, 1, "a.test", 4, 0, 10);
    with_rules.custom = rules.clone();
    with_rules.limits.scope = scope.clone();
    with_rules.limits.content.thin_page_words = 50;
    let limits = with_rules.limits.clone();
    f.seed(with_rules).await.expect("seed");
    f.seed(seed(1, 2, "b.test", 4, 0, 10)).await.expect("seed");
    let info = f.site_info(SiteId(1)).await.expect("site info").expect("a seeded site");
    assert_eq!(info.custom, rules);
    assert_eq!(info.limits.scope, scope, "the scope rules travel beside the extraction rules");
    assert_eq!(info.limits, limits);
    let plain = f.site_info(SiteId(2)).await.expect("site info").expect("a seeded site");
    assert!(plain.custom.is_empty(), "{plain:?}");
    assert!(plain.limits.scope.is_empty(), "{plain:?}");
}

/// Runs every check, each on a fresh frontier from `make`.
pub async fn run_all<F, Fut, M>(mut make: M)
where
    F: Frontier,
    Fut: Future<Output = F>,
    M: FnMut() -> Fut,
{
    robots_first(make().await).await;
    complete_and_claim_in_one_step(make().await).await;
    sites_on_one_ip_take_turns(make().await).await;
    a_dropped_lane_passes_its_turn_on(make().await).await;
    seed_many_seeds_each_once(make().await).await;
    site_info_carries_the_audits_rules(make().await).await;
    gap_and_in_flight(make().await).await;
    per_ip_cap(make().await).await;
    slow_mode_and_retry(make().await).await;
    dedup_and_budgets(make().await).await;
    lease_expiry(make().await).await;
    completion_and_events(make().await).await;
    robots_off_limits(make().await).await;
    shared_host_one_pace(make().await).await;
    cancel_drops_queue(make().await).await;
    external_lane_opens_on_demand(make().await).await;
    result_cache_round_trip(make().await).await;
    pages_win_over_resource_checks(make().await).await;
    sitemap_budget(make().await).await;
    slow_mode_lives_with_its_audit(make().await).await;
    combined_limits_end_with_the_audit(make().await).await;
    addresses_are_looked_up_again(make().await).await;
    an_unresolvable_host_gives_its_gap_back(make().await).await;
    a_lease_that_sent_nothing_gives_its_gap_back(make().await).await;
    long_ttls_count_as_an_hour(make().await).await;
    robots_txt_is_fetched_again_after_a_day(make().await).await;
    leases_are_renewed(make().await).await;
    expired_leases_are_counted(make().await).await;
    ended_audits_are_forgotten(make().await).await;
    checks_beyond_http_open_their_own_lanes(make().await).await;
    server_signals_pace_the_host(make().await).await;
    the_ip_guard_paces_every_host_at_the_address(make().await).await;
    a_slow_site_beside_a_fast_one_is_not_a_slow_server(make().await).await;
    browser_tasks_after_the_crawl(make().await).await;
    browser_phase_ends_on_cancel_or_nothing_to_open(make().await).await;
    render_rounds_publish_the_crawls_end_again(make().await).await;
    browser_workers_are_counted_while_announced(make().await).await;
}
