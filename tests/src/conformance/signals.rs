//! Issue 17: what an answer tells about its server ([`ServerSignals`]) paces its host the same on
//! every back end: the latency guard's step (half in flight, double gap), a stated quota's gap, a
//! hold until Retry-After, and a `slowed_down` note for the site's report.

use super::{T0, complete, drain_events, lease, ms, no_lease, page, pass_robots, seed};
use shoal_shared::finding::Code;
use shoal_shared::frontier::{Claim, Completion, Frontier};
use shoal_shared::latency::ServerSignals;
use shoal_shared::record::Event;

fn signals(s: ServerSignals) -> Completion {
    Completion { signals: s, ..Completion::default() }
}

fn sample(response_ms: u32) -> Completion {
    signals(ServerSignals { response_ms: Some(response_ms), ..ServerSignals::default() })
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
    let notes: Vec<String> = drain_events(&f)
        .await
        .into_iter()
        .filter_map(|e| match e {
            Event::Finding(x) if x.code == Code::SlowedDown => Some(format!("{} {}", x.url, x.detail)),
            _ => None,
        })
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].starts_with("http://a.test/ we slowed down at "), "{notes:?}");
    assert!(notes[0].contains("because responses took 2.0 s instead of 0.1 s"), "{notes:?}");
    assert!(notes[1].contains("stated a request quota"), "{notes:?}");
}
