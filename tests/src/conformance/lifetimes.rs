//! What the frontier learns lives as long as it should (issue 11, SPEC §8): slow mode and combined
//! limits only among live audits, addresses looked up again, robots.txt at most a day old, leases
//! that are renewed, expired leases counted, and nothing of an ended audit kept.

use super::{T0, complete, lease, ms, no_lease, page, resolution, seed, worker};
use shoal_shared::frontier::{Claim, Completion, Frontier, Lease, Resolution, RobotsOutcome, audit_cache_key};
use shoal_shared::ids::{AuditId, SiteId, WorkerId};
use shoal_shared::task::TaskKind;
use shoal_shared::time::UnixMs;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

const HOUR: u64 = 3_600_000;

fn ip(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(198, 51, 100, n))
}

/// Completes every robots.txt lease the frontier hands out from `now` on (following waits), with
/// the address lookups they ask for, until `lanes` lanes are open; returns the time reached.
async fn open_lanes<F: Frontier>(f: &F, mut now: UnixMs, lanes: usize) -> UnixMs {
    let mut opened = 0;
    for _ in 0..100 {
        if opened == lanes {
            return now;
        }
        match f.claim(&worker(), now).await.expect("claim") {
            Claim::Leased(l) => {
                assert_eq!(l.task.kind, TaskKind::Robots, "robots.txt first: {l:?}");
                let c = Completion {
                    resolved: resolution(&l, None),
                    robots: Some(RobotsOutcome::AllowAll),
                    ..Completion::default()
                };
                complete(f, &l, c, now).await;
                opened += 1;
            }
            Claim::Wait(t) => now = t,
            Claim::Idle => panic!("idle with {} of {lanes} lanes still to open", opened),
        }
    }
    panic!("lanes did not open in 100 claims");
}

/// Two start pages leased at `now`, as (audit 1's, audit 2's).
async fn both_start_pages<F: Frontier>(f: &F, now: UnixMs) -> (Lease, Lease) {
    let a = lease(f, now).await;
    let b = lease(f, now).await;
    if a.task.audit == AuditId(1) { (a, b) } else { (b, a) }
}

/// A 429 slows the host only while the audit that saw it is live; the other audit then runs at its
/// own pace again.
pub async fn slow_mode_lives_with_its_audit<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 0, 10)).await.expect("seed");
    f.seed(seed(2, 2, "a.test", 4, 0, 10)).await.expect("seed");
    let t = open_lanes(&f, T0, 4).await;
    let (p1, p2) = both_start_pages(&f, t).await;
    complete(&f, &p1, Completion { rate_limited: true, ..Completion::default() }, t.plus(ms(10))).await;
    let discovered = (1..9).map(|i| page(2, 2, &format!("http://a.test/{i}"), 1)).collect();
    complete(&f, &p2, Completion { discovered, ..Completion::default() }, t.plus(ms(10))).await;
    // Audit 1's site is done, but audit 1 is live: slow mode holds for audit 2 too.
    assert_eq!(no_lease(&f, t.plus(ms(3009))).await, Claim::Wait(t.plus(ms(3010))), "3 s after the 429");
    let s = lease(&f, t.plus(ms(3010))).await;
    assert_eq!(no_lease(&f, t.plus(ms(9000))).await, Claim::Idle, "slow mode: one in flight");
    complete(&f, &s, Completion::default(), t.plus(ms(3020))).await;
    assert!(f.forget(AuditId(1)).await.expect("forget"), "audit 1 ended: nothing of it is left");
    // Audit 2 alone: 4 in flight, no gap, once the slow gap already promised has passed.
    let after = t.plus(ms(6010));
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(lease(&f, after).await);
    }
    assert_eq!(no_lease(&f, after).await, Claim::Idle, "four in flight, audit 2's own cap");
    assert!(held.iter().all(|l| l.task.audit == AuditId(2)));
}

/// Two audits of one host get the stricter pace only while both are live.
pub async fn combined_limits_end_with_the_audit<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 500, 10)).await.expect("seed");
    f.seed(seed(2, 2, "a.test", 4, 100, 10)).await.expect("seed");
    let mut t = T0;
    let mut starts = Vec::new();
    let mut pages = 0;
    for _ in 0..60 {
        match f.claim(&worker(), t).await.expect("claim") {
            Claim::Leased(l) => {
                if l.host.as_str() == "a.test" {
                    starts.push(t);
                }
                let mut c = Completion::default();
                if l.task.kind == TaskKind::Robots {
                    c.resolved = resolution(&l, None);
                    c.robots = Some(RobotsOutcome::AllowAll);
                } else {
                    pages += 1;
                    if l.task.audit == AuditId(2) && l.task.depth == 0 {
                        c.discovered = (1..4).map(|i| page(2, 2, &format!("http://a.test/{i}"), 1)).collect();
                    }
                }
                complete(&f, &l, c, t).await;
            }
            Claim::Wait(w) => t = w,
            Claim::Idle => break,
        }
    }
    assert_eq!(pages, 5, "two start pages and audit 2's three pages");
    let gaps: Vec<u64> = starts.windows(2).map(|w| w[1].0 - w[0].0).collect();
    // While audit 1's site runs, the host keeps the stricter 500 ms; once it is done (its lanes
    // gone), audit 2's own 100 ms applies (after the 500 ms already promised).
    assert_eq!(gaps.first(), Some(&500), "both live: the stricter gap {gaps:?}");
    assert_eq!(gaps.last(), Some(&100), "audit 1 ended: audit 2's own gap {gaps:?}");
    assert!(gaps.iter().all(|g| *g == 500 || *g == 100), "{gaps:?}");
}

/// The address is looked up again when its TTL (clamped to 1 min .. 1 h) runs out and when a new
/// audit starts using the host; one lookup at a time, and the per-IP count follows the answer.
pub async fn addresses_are_looked_up_again<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 0, 10)).await.expect("seed");
    for _ in 0..2 {
        let r = lease(&f, T0).await;
        assert!(r.resolve && r.ip.is_none(), "first lease of a host: look it up, no address yet: {r:?}");
        let ttl_ms = if r.host.as_str() == "a.test" { 300_000 } else { HOUR };
        let c = Completion {
            resolved: Some(Resolution::Address { ip: ip(1), ttl_ms }),
            robots: Some(RobotsOutcome::AllowAll),
            ..Completion::default()
        };
        complete(&f, &r, c, T0).await;
    }
    let p = lease(&f, T0).await;
    assert!(!p.resolve && p.ip == Some(ip(1)), "{p:?}");
    let discovered = (1..9).map(|i| page(1, 1, &format!("http://a.test/{i}"), 1)).collect();
    complete(&f, &p, Completion { discovered, ..Completion::default() }, T0).await;
    let q = lease(&f, T0.plus(ms(299_999))).await;
    assert!(!q.resolve, "inside the TTL");
    complete(&f, &q, Completion::default(), T0.plus(ms(299_999))).await;
    let at = T0.plus(ms(300_000));
    let r = lease(&f, at).await;
    assert!(r.resolve && r.ip == Some(ip(1)), "the TTL ran out: look again (old address counted): {r:?}");
    assert!(!matches!(f.claim(&worker(), at).await.expect("claim"), Claim::Leased(_)), "one lookup at a time");
    // The server moved: nothing fetched under this lease, the task goes back unchanged.
    let moved = Completion {
        resolved: Some(Resolution::Address { ip: ip(2), ttl_ms: 1_000 }),
        requeue: Some(r.task.clone()),
        ..Completion::default()
    };
    complete(&f, &r, moved, at).await;
    let s = lease(&f, at).await;
    assert!(!s.resolve && s.ip == Some(ip(2)), "the per-IP count follows the new address: {s:?}");
    complete(&f, &s, Completion::default(), at).await;
    // A TTL of 1 s counts as a minute.
    let t = lease(&f, at.plus(ms(59_999))).await;
    assert!(!t.resolve, "a 1 s TTL is used for a minute");
    complete(&f, &t, Completion::default(), at.plus(ms(59_999))).await;
    let u = lease(&f, at.plus(ms(60_000))).await;
    assert!(u.resolve, "and looked up again after it");
    // A failed lookup keeps the known address for another minute.
    complete(&f, &u, Completion { resolved: Some(Resolution::Failed), ..Completion::default() }, at.plus(ms(60_000)))
        .await;
    let v = lease(&f, at.plus(ms(60_001))).await;
    assert!(!v.resolve && v.ip == Some(ip(2)), "{v:?}");
    complete(&f, &v, Completion::default(), at.plus(ms(60_001))).await;
    // Another audit starts using the host: its next lease looks the address up again.
    f.seed(seed(2, 2, "a.test", 4, 0, 10)).await.expect("seed");
    let w = lease(&f, at.plus(ms(60_002))).await;
    assert!(w.resolve, "a new audit of the host: fresh lookup first: {w:?}");
}

/// A DNS TTL of a day is used for an hour at most.
pub async fn long_ttls_count_as_an_hour<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 0, 10)).await.expect("seed");
    for _ in 0..2 {
        let r = lease(&f, T0).await;
        let c = Completion {
            resolved: Some(Resolution::Address { ip: ip(3), ttl_ms: 24 * HOUR }),
            robots: Some(RobotsOutcome::AllowAll),
            ..Completion::default()
        };
        complete(&f, &r, c, T0).await;
    }
    let p = lease(&f, T0).await;
    let discovered = (1..4).map(|i| page(1, 1, &format!("http://a.test/{i}"), 1)).collect();
    complete(&f, &p, Completion { discovered, ..Completion::default() }, T0).await;
    let before = T0.plus(ms(HOUR - 1));
    let q = lease(&f, before).await;
    assert!(!q.resolve, "inside the hour");
    complete(&f, &q, Completion::default(), before).await;
    let r = lease(&f, T0.plus(ms(HOUR))).await;
    assert!(r.resolve, "an hour after the lookup, not a day");
}

/// robots.txt rules are used for a day at most after they were fetched: then the lane's robots.txt
/// comes again before anything else of it.
pub async fn robots_txt_is_fetched_again_after_a_day<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 0, 10)).await.expect("seed");
    let t = open_lanes(&f, T0, 2).await;
    let p = lease(&f, t).await;
    assert_eq!(p.robots_at, t, "the lease says when its lane's rules were fetched");
    let day = Duration::from_secs(24 * 3600);
    let discovered = (1..4).map(|i| page(1, 1, &format!("http://a.test/{i}"), 1)).collect();
    complete(&f, &p, Completion { discovered, ..Completion::default() }, t).await;
    let q = lease(&f, t.plus(day)).await;
    assert_eq!(
        (q.task.kind, q.task.url.as_str()),
        (TaskKind::Robots, "http://a.test/robots.txt"),
        "a day later, robots.txt again before any page"
    );
    let at = t.plus(day);
    assert!(!matches!(f.claim(&worker(), at).await.expect("claim"), Claim::Leased(l) if l.host.as_str() == "a.test"));
    // A copy shared by another site: its own fetch time counts.
    let earlier = UnixMs(at.0 - HOUR);
    let c =
        Completion { robots: Some(RobotsOutcome::AllowAll), robots_fetched_at: Some(earlier), ..Completion::default() };
    complete(&f, &q, c, at).await;
    let r = lease(&f, at).await;
    assert_eq!((r.task.kind, r.robots_at), (TaskKind::Page, earlier), "{r:?}");
    complete(&f, &r, Completion::default(), at).await;
    let s = lease(&f, earlier.plus(day)).await;
    assert_eq!(s.task.kind, TaskKind::Robots, "a day after the copy was fetched");
}

/// Leases are renewed by their worker while the fetch runs; a reclaimed lease cannot be revived.
pub async fn leases_are_renewed<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 1, 0, 10)).await.expect("seed");
    let t = open_lanes(&f, T0, 2).await;
    let p = lease(&f, t).await;
    let ttl = p.deadline.since(p.started_at);
    let half = p.started_at.plus(ttl / 2);
    let r = f.renew(&worker(), &[p.id], half).await.expect("renew");
    assert!(r.lost.is_empty() && r.deadline == half.plus(ttl), "{r:?}");
    assert_eq!(f.reap(p.deadline.plus(ms(1))).await.expect("reap"), 0, "renewed: not reclaimed");
    let thief = WorkerId("w2".into());
    let other = f.renew(&thief, &[p.id], p.deadline.plus(ms(2))).await.expect("renew");
    assert_eq!(other.lost, vec![p.id], "only the lease's own worker renews it");
    assert_eq!(f.reap(r.deadline).await.expect("reap"), 1, "not renewed again: reclaimed at its new deadline");
    let late = f.renew(&worker(), &[p.id], r.deadline.plus(ms(1))).await.expect("renew");
    assert_eq!(late.lost, vec![p.id], "a reclaimed lease is lost, not revived");
}

/// Every expired lease of a task is counted on its next lease, so a worker can give it up.
pub async fn expired_leases_are_counted<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 1, 0, 10)).await.expect("seed");
    let mut t = open_lanes(&f, T0, 2).await;
    let first = lease(&f, t).await;
    assert_eq!(first.expired, 0);
    let mut l = first.clone();
    for n in 1..=3u8 {
        t = l.deadline;
        assert_eq!(f.reap(t).await.expect("reap"), 1);
        l = lease(&f, t).await;
        assert_eq!((l.task.url.as_str(), l.expired), (first.task.url.as_str(), n), "expiry {n} counted");
    }
    complete(&f, &l, Completion::default(), t).await;
    assert!(f.progress(SiteId(1)).await.expect("progress").expect("site").done, "given up: the site ends");
}

/// An ended audit leaves nothing: a cancelled one once its last lease is in; its sites are gone.
pub async fn ended_audits_are_forgotten<F: Frontier>(f: F) {
    f.seed(seed(7, 70, "a.test", 4, 0, 10)).await.expect("seed");
    f.seed(seed(8, 80, "b.test", 4, 0, 10)).await.expect("seed");
    let t = open_lanes(&f, T0, 4).await;
    let p = lease(&f, t).await;
    let audit = p.task.audit;
    f.cancel(audit).await.expect("cancel");
    // The audit's own cache entries (a robots.txt copy kept 24 h, its lock) end with it; another
    // audit's and the frontier-wide ones stay.
    let day = Duration::from_secs(86_400);
    let other_audit = if audit == AuditId(7) { AuditId(8) } else { AuditId(7) };
    let own = audit_cache_key(audit, "r:http://a.test");
    let theirs = audit_cache_key(other_audit, "r:http://a.test");
    f.cache_put(&own, vec![1], t, day).await.expect("put");
    assert!(f.cache_add(&format!("{own}#asking"), vec![1], t, day).await.expect("add"));
    f.cache_put(&theirs, vec![2], t, day).await.expect("put");
    f.cache_put("r:http://a.test", vec![3], t, day).await.expect("put");
    assert!(!f.forget(audit).await.expect("forget"), "a lease is still out: its site is kept");
    complete(&f, &p, Completion::default(), t).await;
    assert!(f.forget(audit).await.expect("forget"), "now nothing is left");
    assert_eq!(f.cache_get(&own, t).await.expect("get"), None, "the audit's robots.txt copy is gone");
    assert_eq!(f.cache_get(&format!("{own}#asking"), t).await.expect("get"), None);
    assert_eq!(f.cache_get(&theirs, t).await.expect("get"), Some(vec![2]), "another audit's stays");
    assert_eq!(f.cache_get("r:http://a.test", t).await.expect("get"), Some(vec![3]), "frontier-wide stays");
    let site = p.task.site;
    let other = if site == SiteId(70) { SiteId(80) } else { SiteId(70) };
    let many = f.progress_many(&[site, other, SiteId(999)]).await.expect("progress");
    assert_eq!(many.len(), 3);
    assert!(many[0].is_none() && many[1].is_some() && many[2].is_none(), "{many:?}");
}

/// A host whose name does not resolve (issue 40): a lease whose lookup failed, with no address
/// known, reached nobody, so the gap it took is given back and the host's next link check starts
/// at once instead of a gap later; a host with an address keeps its gap.
pub async fn an_unresolvable_host_gives_its_gap_back<F: Frontier>(f: F) {
    use shoal_shared::task::{FoundVia, Task};
    f.seed(seed(1, 1, "a.test", 4, 1_000, 10)).await.expect("seed");
    super::pass_robots(&f, T0, 2, None).await;
    let t = T0.plus(ms(1_000));
    let p = lease(&f, t).await;
    let check = |i: u32| {
        let u = super::url(&format!("http://gone.test/{i}"));
        Task::new(AuditId(1), SiteId(1), u, TaskKind::External, 1, FoundVia::Link { from: p.task.url.clone() })
    };
    let c = Completion { discovered: (0..3).map(check).collect(), ..Completion::default() };
    complete(&f, &p, c, t).await;
    let failed = Completion { resolved: Some(Resolution::Failed), ..Completion::default() };
    let r = lease(&f, t).await;
    assert_eq!((r.task.kind, r.host.as_str()), (TaskKind::Robots, "gone.test"), "{r:?}");
    assert!(r.resolve && r.ip.is_none(), "{r:?}");
    complete(&f, &r, Completion { robots: Some(RobotsOutcome::AllowAll), ..failed.clone() }, t).await;
    for i in 0..3 {
        // `lease` fails on a Wait: each check starts at the same instant as the one before.
        let x = lease(&f, t).await;
        assert_eq!((x.task.kind, x.host.as_str()), (TaskKind::External, "gone.test"), "check {i}: {x:?}");
        assert!(x.resolve && x.ip.is_none(), "still no address: {x:?}");
        complete(&f, &x, failed.clone(), t).await;
    }
    let progress = f.progress(SiteId(1)).await.expect("progress").expect("site");
    assert!(progress.done, "{progress:?}");
    // The resolved host's gap holds as before.
    f.seed(seed(2, 2, "b.test", 4, 1_000, 10)).await.expect("seed");
    super::pass_robots(&f, t, 2, None).await;
    assert!(matches!(no_lease(&f, t).await, Claim::Wait(w) if w == t.plus(ms(1_000))), "b.test keeps its gap");
}

/// Issue 43: a lease under which nothing was sent to the host (an answer from the cache, a copied
/// robots.txt) gives back the gap its claim took, unless another start was given since: a host
/// with a Crawl-delay waits only between the requests it gets.
pub async fn a_lease_that_sent_nothing_gives_its_gap_back<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 1_000, 10)).await.expect("seed");
    super::pass_robots(&f, T0, 2, None).await;
    let t = T0.plus(ms(1_000));
    let p = lease(&f, t).await;
    let discovered = (1..6).map(|i| page(1, 1, &format!("http://a.test/{i}"), 1)).collect();
    complete(&f, &p, Completion { discovered, ..Completion::default() }, t).await;
    let nothing = Completion { sent_nothing: true, ..Completion::default() };
    let t = t.plus(ms(1_000));
    let x = lease(&f, t).await;
    complete(&f, &x, nothing.clone(), t.plus(ms(10))).await;
    // `lease` fails on a Wait: the next request may start at once, as if `x` had not been.
    let y = lease(&f, t.plus(ms(10))).await;
    complete(&f, &y, Completion::default(), t.plus(ms(20))).await;
    assert_eq!(no_lease(&f, t.plus(ms(20))).await, Claim::Wait(t.plus(ms(1_010))), "a request keeps its gap");
    // Given back only while no start was given since: `z` started after `w`, which sent nothing.
    let w = lease(&f, t.plus(ms(1_010))).await;
    let z = lease(&f, t.plus(ms(2_010))).await;
    complete(&f, &w, nothing, t.plus(ms(2_020))).await;
    assert_eq!(no_lease(&f, t.plus(ms(2_020))).await, Claim::Wait(t.plus(ms(3_010))), "z's gap holds");
    complete(&f, &z, Completion::default(), t.plus(ms(2_030))).await;
}
