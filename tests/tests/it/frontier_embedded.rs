//! The frontier conformance suite on the embedded back end.

use shoal_shared::frontier::FrontierSettings;
use shoal_shared::frontier::embedded::EmbeddedFrontier;
use shoal_tests::conformance;

#[tokio::test]
async fn embedded_frontier_passes_conformance() {
    conformance::run_all(|| async { EmbeddedFrontier::new(unpaced()) }).await;
}

/// The checks of the run above are of the limits users set: without the latency guard's slow start.
fn unpaced() -> FrontierSettings {
    FrontierSettings { slow_start: false, ..FrontierSettings::default() }
}

/// Issue 41: new hosts and server IPs start at one request in flight.
#[tokio::test]
async fn embedded_frontier_starts_hosts_and_ips_slowly() {
    conformance::run_slow_start(|| async { EmbeddedFrontier::new(FrontierSettings::default()) }).await;
}

/// The embedded frontier leases one task at a time whatever `lease_batch` says; the batch checks
/// hold for it all the same.
#[tokio::test]
async fn embedded_frontier_passes_the_batch_checks() {
    conformance::run_batched(|| async { EmbeddedFrontier::new(unpaced()) }, false).await;
}

/// The crawl runs at most 1,000 unread events ahead of the audit database: past that, claims wait
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

/// The embedded frontier hands its events over when they are read, so a batch the audit database
/// failed to write (a full disk, say) is kept by the engine and written before anything more is
/// read: nothing is lost, nothing is written twice.
#[tokio::test]
async fn a_batch_the_database_could_not_write_is_written_later() {
    use shoal_coordinator::{Coordinator, EngineConfig};
    use shoal_shared::finding::{Code, Finding};
    use shoal_shared::frontier::{Claim, Completion, Frontier, RobotsOutcome};
    use shoal_shared::ids::WorkerId;
    use shoal_shared::record::Event;
    use shoal_shared::task::SiteLimits;
    use shoal_shared::time::UnixMs;
    use shoal_shared::url::NormalizedUrl;
    use std::sync::Arc;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("audit.db");
    let frontier = Arc::new(EmbeddedFrontier::new(Default::default()));
    let db = shoal_store::AuditDb::open(&path).expect("db");
    let engine = Coordinator::new(db, Arc::clone(&frontier), EngineConfig::default(), "embedded").expect("engine");
    let start = NormalizedUrl::parse("http://a.test/").expect("url");
    let (audit, sites) = engine.start(vec![start], SiteLimits::default()).await.expect("start");
    let site = sites[0].0;
    let (w, t) = (WorkerId("w".into()), UnixMs::from(std::time::SystemTime::now()));
    let Claim::Leased(l) = frontier.claim(&w, t).await.expect("claim") else { panic!("a lease") };
    let note = |i: usize| Event::Finding(Finding::new(audit, site, Code::SlowedDown, "http://a.test/", i.to_string()));
    let done = Completion {
        resolved: conformance::resolution(&l, None),
        robots: Some(RobotsOutcome::AllowAll),
        events: (0..3).map(note).collect(),
        ..Completion::default()
    };
    frontier.complete(&l, done, t).await.expect("complete");
    // Another connection makes every insert into findings fail, as a full disk would.
    let other = rusqlite::Connection::open(&path).expect("second connection");
    other
        .execute_batch("CREATE TRIGGER full BEFORE INSERT ON findings BEGIN SELECT RAISE(ABORT, 'disk full'); END;")
        .expect("trigger");
    let failed = engine.aggregate().await.expect_err("the write fails");
    assert!(failed.to_string().contains("disk full"), "{failed}");
    assert!(frontier.read_events(10).await.expect("read").is_empty(), "the frontier handed the batch over");
    other.execute_batch("DROP TRIGGER full;").expect("drop trigger");
    assert_eq!(engine.aggregate().await.expect("written now"), 3);
    assert_eq!(engine.aggregate().await.expect("nothing left"), 0);
    let n: i64 =
        other.query_row("SELECT count(*) FROM findings WHERE code = 'slowed_down'", [], |r| r.get(0)).expect("count");
    assert_eq!(n, 3, "each finding once");
}
