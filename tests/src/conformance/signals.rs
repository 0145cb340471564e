//! Issue 17: what an answer tells about its server ([`ServerSignals`]) paces its host the same on
//! every back end: the latency guard's step (half in flight, double gap), a stated quota's gap, a
//! hold until Retry-After, and a `slowed_down` note for the site's report.

use super::{T0, complete, drain_events, lease, ms, no_lease, page, pass_robots, seed};
use shoal_shared::finding::Code;
use shoal_shared::frontier::{Claim, Completion, Frontier};
use shoal_shared::latency::ServerSignals;
use shoal_shared::record::Event;
use std::net::{IpAddr, Ipv4Addr};

fn signals(s: ServerSignals) -> Completion {
    Completion { signals: s, ..Completion::default() }
}

fn sample(response_ms: u32) -> Completion {
    signals(ServerSignals { response_ms: Some(response_ms), ..ServerSignals::default() })
}

/// The `slowed_down` notes published so far, each as "URL detail".
async fn slowed_down<F: Frontier>(f: &F) -> Vec<String> {
    drain_events(f)
        .await
        .into_iter()
        .filter_map(|e| match e {
            Event::Finding(x) if x.code == Code::SlowedDown => Some(format!("{} {}", x.url, x.detail)),
            _ => None,
        })
        .collect()
}

/// Slow answers step the host's pace down; a quota's gap and a hold apply on top, to the
/// millisecond, and each change is noted once for the report.
pub async fn server_signals_pace_the_host<F: Frontier>(f: F) {
    f.seed(seed(1, 1, "a.test", 4, 100, 100)).await.expect("seed");
    pass_robots(&f, T0, 2, None).await;
    let mut t = T0.plus(ms(1_000));
    let p0 = lease(&f, t).await;
    let discovered = (1..40).map(|i| page(1, 1, &format!("http://a.test/{i}"), 1)).collect();
    complete(&f, &p0, Completion { discovered, ..Completion::default() }, t).await;
    for s in [100, 100, 100, 100, 100, 2_000, 2_000, 2_000] {
        t = t.plus(ms(1_000));
        let l = lease(&f, t).await;
        complete(&f, &l, sample(s), t).await;
    }
    // One step: 2 in flight instead of 4, 500 ms apart (the 100 ms gap doubled from the 250 ms floor).
    t = t.plus(ms(1_000));
    let a = lease(&f, t).await;
    assert_eq!(no_lease(&f, t.plus(ms(499))).await, Claim::Wait(t.plus(ms(500))), "the doubled gap");
    let b = lease(&f, t.plus(ms(500))).await;
    assert_eq!(no_lease(&f, t.plus(ms(5_000))).await, Claim::Idle, "half in flight: 2");
    // A quota of one request per 2 s, doubled by the guard: 4 s from the last start.
    let quota = ServerSignals { quota_gap_ms: Some(2_000), ..ServerSignals::default() };
    complete(&f, &a, signals(quota), t.plus(ms(5_000))).await;
    let c = lease(&f, t.plus(ms(5_000))).await;
    complete(&f, &c, Completion::default(), t.plus(ms(5_000))).await;
    assert_eq!(no_lease(&f, t.plus(ms(8_999))).await, Claim::Wait(t.plus(ms(9_000))), "the quota's gap");
    // A 503 with Retry-After: nothing at all before it.
    let hold = ServerSignals { hold_until: Some(t.plus(ms(20_000))), ..ServerSignals::default() };
    complete(&f, &b, signals(hold), t.plus(ms(5_000))).await;
    assert_eq!(no_lease(&f, t.plus(ms(10_000))).await, Claim::Wait(t.plus(ms(20_000))), "held until Retry-After");
    lease(&f, t.plus(ms(20_000))).await;
    let notes = slowed_down(&f).await;
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].starts_with("http://a.test/ we slowed down at "), "{notes:?}");
    assert!(notes[0].contains("because responses took 2.0 s instead of 0.1 s"), "{notes:?}");
    assert!(notes[1].contains("stated a request quota"), "{notes:?}");
}

/// Two sites whose hosts are at `ip`, 16 in flight each, no gap: robots.txt read, start pages
/// answered with 39 pages each queued. Returns the time of the start pages.
async fn two_sites_at_one_ip<F: Frontier>(f: &F, ip: IpAddr, hosts: [&str; 2]) -> shoal_shared::time::UnixMs {
    f.seed(seed(1, 1, hosts[0], 16, 0, 100)).await.expect("seed");
    f.seed(seed(1, 2, hosts[1], 16, 0, 100)).await.expect("seed");
    pass_robots(f, T0, 4, Some(ip)).await; // two lanes per site: its host and the www twin
    let t = T0.plus(ms(1_000));
    let starts = [lease(f, t).await, lease(f, t).await];
    for l in &starts {
        let (h, site) = (l.host.as_str(), l.task.site.0);
        let discovered = (1..40).map(|i| page(1, site, &format!("http://{h}/{i}"), 1)).collect();
        complete(f, l, Completion { discovered, ..Completion::default() }, t).await;
    }
    t
}

/// The latency guard of a server IP (issue 17): two hosts at one address whose answers slow down
/// together. The IP's cap halves (8 -> 4 requests in flight across both hosts, though each host
/// allows 16), its requests are spaced 0.5 s apart whichever host they go to, the state outlives
/// the IP's last request in flight, and the change is noted naming the server.
pub async fn the_ip_guard_paces_every_host_at_the_address<F: Frontier>(f: F) {
    let ip = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9));
    let mut t = two_sites_at_one_ip(&f, ip, ["a.test", "b.test"]).await;
    for s in [100, 100, 100, 100, 100, 2_000, 2_000, 2_000] {
        t = t.plus(ms(1_000));
        let l = lease(&f, t).await;
        assert_eq!(l.ip, Some(ip));
        complete(&f, &l, sample(s), t).await;
    }
    // Level 1 on the IP: 4 in flight at most, 0.5 s apart, across both hosts.
    t = t.plus(ms(1_000));
    let mut held = vec![lease(&f, t).await];
    assert_eq!(no_lease(&f, t.plus(ms(499))).await, Claim::Wait(t.plus(ms(500))), "the IP's gap");
    for i in 1..4 {
        held.push(lease(&f, t.plus(ms(500 * i))).await);
    }
    no_lease(&f, t.plus(ms(10_000))).await;
    let hosts: std::collections::HashSet<_> = held.iter().map(|l| l.host.clone()).collect();
    assert_eq!(hosts.len(), 2, "both hosts share the IP's four slots: {hosts:?}");
    // Nothing in flight any more: the IP's guard still holds its level.
    t = t.plus(ms(10_000));
    for l in &held {
        complete(&f, l, Completion::default(), t).await;
    }
    f.reap(t).await.expect("reap");
    lease(&f, t).await;
    assert_eq!(no_lease(&f, t.plus(ms(1))).await, Claim::Wait(t.plus(ms(500))), "the level outlived in-flight zero");
    let notes: Vec<String> = slowed_down(&f).await.into_iter().filter(|n| n.contains("server 192.0.2.9")).collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("took 2.0 s instead of 0.1 s"), "{notes:?}");
    assert!(notes[0].contains("requests in flight to that server divided by 2, at least 0.5 s apart"), "{notes:?}");
}

/// A slow site beside a fast one at one address is not a slow server: the IP's guard slows down
/// only for slow answers of two hosts, so the slow site's usual answers (its own guard judges them
/// against its own baseline) do not step it, whichever host the leases go to.
pub async fn a_slow_site_beside_a_fast_one_is_not_a_slow_server<F: Frontier>(f: F) {
    let ip = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 10));
    let mut t = two_sites_at_one_ip(&f, ip, ["fast.test", "slow.test"]).await;
    for _ in 0..30 {
        t = t.plus(ms(100));
        let l = lease(&f, t).await;
        let usual = if l.host.as_str() == "fast.test" { 50 } else { 1_500 };
        complete(&f, &l, sample(usual), t).await;
    }
    // The IP's own cap (8), no gap: its guard never stepped.
    t = t.plus(ms(100));
    for _ in 0..8 {
        lease(&f, t).await;
    }
    no_lease(&f, t).await;
    assert_eq!(slowed_down(&f).await, Vec::<String>::new(), "nobody slowed down");
}
