//! The frontier conformance suite on the embedded back end.

use shoal_shared::frontier::embedded::EmbeddedFrontier;
use shoal_tests::conformance;

#[tokio::test]
async fn embedded_frontier_passes_conformance() {
    conformance::run_all(|| async { EmbeddedFrontier::new(Default::default()) }).await;
}

/// The crawl runs at most 2,000 unread events ahead of the audit database: past that, claims wait
/// (completions are always taken) until the engine has read them.
#[tokio::test]
async fn claims_wait_while_the_database_lags() {
    use shoal_shared::finding::{Code, Finding};
    use shoal_shared::frontier::{Claim, Completion, Frontier, RobotsOutcome};
    use shoal_shared::ids::{AuditId, SiteId, WorkerId};
    use shoal_shared::record::Event;
    use shoal_shared::time::UnixMs;
    let f = EmbeddedFrontier::new(Default::default());
    f.seed(conformance::seed(1, 1, "a.test", 4, 0, 100)).await.expect("seed");
    let (w, t) = (WorkerId("w".into()), UnixMs(1_700_000_000_000));
    let lease = |c: Claim| match c {
        Claim::Leased(l) => *l,
        other => panic!("expected a lease, got {other:?}"),
    };
    for _ in 0..2 {
        // robots.txt of the host and of its www twin
        let l = lease(f.claim(&w, t).await.expect("claim"));
        let done = Completion {
            resolved: conformance::resolution(&l, None),
            robots: Some(RobotsOutcome::AllowAll),
            ..Completion::default()
        };
        f.complete(&l, done, t).await.expect("complete");
    }
    let start = lease(f.claim(&w, t).await.expect("claim"));
    let note = |i: usize| {
        Event::Finding(Finding::new(AuditId(1), SiteId(1), Code::SlowedDown, "http://a.test/", i.to_string()))
    };
    let done = Completion {
        discovered: (1..5).map(|i| conformance::page(1, 1, &format!("http://a.test/{i}"), 1)).collect(),
        events: (0..2_100).map(note).collect(),
        ..Completion::default()
    };
    f.complete(&start, done, t).await.expect("a completion is always taken");
    assert_eq!(f.claim(&w, t).await.expect("claim"), Claim::Wait(t.plus(std::time::Duration::from_millis(10))));
    let read = f.read_events(5_000).await.expect("read");
    assert_eq!(read.len(), 2_100, "every event is read");
    lease(f.claim(&w, t).await.expect("claim once the events were read"));
}
