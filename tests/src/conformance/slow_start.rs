//! Issue 41: the latency guard's slow start paces a new host and a new server IP the same on every
//! back end: one request in flight at first, one more per answer near the fastest taken with every
//! slot in use, and back below a ceiling when answers rise with our in-flight count. These checks
//! need a frontier with `FrontierSettings::slow_start` on; [`super::run_all`]'s run with it off.

use super::{T0, complete, lease, no_lease, page, resolution, seed};
use shoal_shared::frontier::{Claim, Completion, Frontier, Lease, RobotsOutcome};
use shoal_shared::latency::ServerSignals;
use shoal_shared::task::TaskKind;
use std::net::{IpAddr, Ipv4Addr};

/// An answer of `response_ms`, with the address lookup the lease asked for (`ip`).
fn answer(l: &Lease, ip: IpAddr, response_ms: u32) -> Completion {
    Completion {
        resolved: resolution(l, Some(ip)),
        signals: ServerSignals { response_ms: Some(response_ms), ..ServerSignals::default() },
        ..Completion::default()
    }
}

/// A host of 4 in flight and no gap at a new address: 1, then 2, then 3 in flight as fast answers
/// come back with every slot in use; a slow answer at 3 closes it to 2, and it stays at 2.
pub async fn a_new_host_and_ip_start_at_one_and_open_while_answers_stay_fast<F: Frontier>(f: F) {
    let ip = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 41));
    f.seed(seed(1, 1, "a.test", 4, 0, 100)).await.expect("seed");
    let t = T0;
    // robots.txt of the host and its www twin (no address known yet: only the hosts' own caps).
    for _ in 0..2 {
        let r = lease(&f, t).await;
        assert_eq!(r.task.kind, TaskKind::Robots);
        let c = Completion { robots: Some(RobotsOutcome::AllowAll), ..answer(&r, ip, 10) };
        complete(&f, &r, c, t).await;
    }
    let start = lease(&f, t).await;
    assert_eq!(start.ip, Some(ip));
    assert!(matches!(no_lease(&f, t).await, Claim::Idle), "the IP is new: one request in flight to it");
    let discovered = (1..40).map(|i| page(1, 1, &format!("http://a.test/{i}"), 1)).collect();
    complete(&f, &start, Completion { discovered, ..answer(&start, ip, 10) }, t).await;
    let (a, b) = (lease(&f, t).await, lease(&f, t).await);
    no_lease(&f, t).await;
    // A fast answer with both slots in use opens the third, at the host and at the IP.
    complete(&f, &a, answer(&a, ip, 12), t).await;
    let (c, d) = (lease(&f, t).await, lease(&f, t).await);
    no_lease(&f, t).await;
    // Answers that grew with the third request: back to 2, and never 3 again.
    complete(&f, &b, answer(&b, ip, 400), t).await;
    no_lease(&f, t).await;
    let mut held = std::collections::VecDeque::from([c, d]);
    for round in 0..5 {
        let done = held.pop_front().expect("two in flight");
        complete(&f, &done, answer(&done, ip, 10), t).await;
        held.push_back(lease(&f, t).await);
        assert!(matches!(no_lease(&f, t).await, Claim::Idle), "round {round}: two in flight, not three");
    }
}

/// The slow start's checks, each on a fresh frontier from `make` (with the slow start on).
pub async fn run_slow_start<F, Fut, M>(mut make: M)
where
    F: Frontier,
    Fut: std::future::Future<Output = F>,
    M: FnMut() -> Fut,
{
    a_new_host_and_ip_start_at_one_and_open_while_answers_stay_fast(make().await).await;
}
