//! The scheduler of recurring audits (issue 36) in one process, on the embedded frontier and no
//! workers (a run started stays running until it is cancelled): a wake-up reads the schedules that
//! are due and the runs that ended, never all 10,000; the scheduler sleeps until the next one is
//! due and wakes at once when a schedule is added or a run ends, and at shutdown; a schedule more
//! often than the coordinator's minimum is refused, and the operator's setting lowers it; a run
//! that needs a browser skips its slot while no browser worker is live.

use shoal_coordinator::schedule::{self, Scheduler, when::Step};
use shoal_coordinator::{Coordinator as Engine, EngineConfig, EngineError};
use shoal_shared::frontier::Frontier;
use shoal_shared::frontier::embedded::EmbeddedFrontier;
use shoal_shared::ids::{AuditId, ScheduleId, WorkerId};
use shoal_shared::time::UnixMs;
use shoal_shared::wire::{ScheduleRequest, ScheduleView};
use shoal_store::AuditDb;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

type Coordinator = Engine<EmbeddedFrontier>;

const HOUR_MS: u64 = 3_600_000;
/// How long the scheduler may take to react to what wakes it. It sleeps up to
/// `schedule::MAX_SLEEP` (60 s) otherwise, so a missed wake-up shows.
const REACT: Duration = Duration::from_secs(10);

fn engine(db: &Path, min: Option<Duration>) -> Arc<Coordinator> {
    let mut config = EngineConfig::default();
    if let Some(min) = min {
        config.schedule_min_interval = min;
    }
    let frontier = Arc::new(EmbeddedFrontier::new(config.frontier));
    Arc::new(Engine::new(AuditDb::open(db).expect("the database"), frontier, config, "embedded").expect("engine"))
}

fn request(name: &str, when: &str) -> ScheduleRequest {
    ScheduleRequest {
        name: name.to_owned(),
        urls: vec![format!("http://{name}.test/")],
        options: shoal_shared::wire::AuditOptions::default(),
        when: when.to_owned(),
        time_zone: None,
    }
}

/// Stores `n` weekly schedules straight into the database file, in one transaction (the API would
/// take a commit each), the first due at `first` and the others a millisecond apart.
fn insert_schedules(db: &Path, n: u64, first: UnixMs) {
    let mut conn = rusqlite::Connection::open(db).expect("open");
    let tx = conn.transaction().expect("a transaction");
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO schedules (name, urls_json, sites, options_json, spec, time_zone, created_at_ms, next_run_ms)
                 VALUES (?1, ?2, 1, '{}', '0 6 * * MON', 'UTC', 0, ?3)",
            )
            .expect("insert");
        for i in 0..n {
            let urls = format!("[\"http://s{i}.test/\"]");
            let next = i64::try_from(first.0 + i).expect("small");
            insert.execute(rusqlite::params![format!("s{i}"), urls, next]).expect("a schedule");
        }
    }
    tx.commit().expect("commit");
}

async fn view(engine: &Coordinator, id: u64) -> ScheduleView {
    schedule::get(engine, ScheduleId(id)).await.expect("the schedule")
}

/// Whether the schedule's latest run has been settled (its end handled).
fn settled(db: &Path, id: u64) -> bool {
    let db = AuditDb::open(db).expect("open");
    db.schedule(ScheduleId(id)).expect("read").expect("the schedule").settled
}

/// Polls `cond` every 20 ms until it holds, at most [`REACT`]; how long it took, or `None`.
async fn within_react(mut cond: impl AsyncFnMut() -> bool) -> Option<Duration> {
    let began = Instant::now();
    while began.elapsed() < REACT {
        if cond().await {
            return Some(began.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_up_reads_the_due_schedules_and_ended_runs_not_all_10000() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    // A whole hour (the schedule is hourly, by cron: its times do not depend on when a run really
    // started, which is the wall clock's).
    let t = UnixMs(528_000 * HOUR_MS);
    let engine = engine(&db, None);
    // 10,000 schedules, the most a coordinator keeps: 9,999 due later, and one added through the API.
    insert_schedules(&db, 9_999, t.plus(Duration::from_secs(7200)));
    let added_at = UnixMs(t.0 - 600_000);
    let due = schedule::add(&engine, request("hourly", "0 * * * *"), added_at).await.expect("added").id;
    let scheduler = Scheduler::new(Arc::clone(&engine), None);
    let (mut deliveries, stop) = (JoinSet::new(), CancellationToken::new());

    // Before its time nothing is read; the next wake-up is the schedule's time.
    let before = scheduler.pass(UnixMs(t.0 - 1), &mut deliveries, &stop).await.expect("a pass");
    assert_eq!((before.steps.len(), before.rows_read), (0, 0), "steps and rows read before it is due");
    assert_eq!(scheduler.next_due().await.expect("next"), Some(t));

    // At its time: one row read, one run started, the next an hour on.
    let at = scheduler.pass(t, &mut deliveries, &stop).await.expect("a pass");
    assert_eq!(at.steps, vec![(ScheduleId(due), Step::Start { next_run: UnixMs(t.0 + HOUR_MS) })]);
    assert_eq!(at.rows_read, 1, "only the due schedule was read, not the other 9,999");
    assert_eq!(scheduler.next_due().await.expect("next"), Some(UnixMs(t.0 + HOUR_MS)));
    let audit = view(&engine, due).await.last_audit.expect("a run");

    // While it runs, a wake-up reads nothing (an audit ending elsewhere wakes it, say).
    let idle = scheduler.pass(UnixMs(t.0 + 1), &mut deliveries, &stop).await.expect("a pass");
    assert_eq!((idle.steps.len(), idle.rows_read), (0, 0), "steps and rows read while it runs");

    // Its run ends: the next wake-up reads that one schedule and settles it.
    engine.cancel(AuditId(audit)).await.expect("cancelled");
    let ended = scheduler.pass(UnixMs(t.0 + 2), &mut deliveries, &stop).await.expect("a pass");
    assert_eq!(ended.steps, vec![(ScheduleId(due), Step::Settle { next_run: UnixMs(t.0 + HOUR_MS) })]);
    assert_eq!(ended.rows_read, 1);
    let after = scheduler.pass(UnixMs(t.0 + 3), &mut deliveries, &stop).await.expect("a pass");
    assert_eq!(after.rows_read, 0);

    // An hour on, it is due again and starts on time.
    let again = scheduler.pass(UnixMs(t.0 + HOUR_MS), &mut deliveries, &stop).await.expect("a pass");
    assert_eq!(again.steps, vec![(ScheduleId(due), Step::Start { next_run: UnixMs(t.0 + 2 * HOUR_MS) })]);
    assert_eq!(again.rows_read, 1);
}

/// A run that needs a browser (`browser_pages` 1) while no browser worker is live is refused as a
/// submit is: its slot is skipped (no audit recorded, the next slot an hour on) and the scheduler
/// goes on; once a browser worker announced itself, the next slot starts its run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_needs_a_browser_skips_its_slot_while_no_browser_worker_is_live() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    let t = UnixMs(528_000 * HOUR_MS);
    let engine = engine(&db, None);
    let mut req = request("seeing", "0 * * * *");
    req.options.browser_pages = Some(1);
    let id = schedule::add(&engine, req, UnixMs(t.0 - 600_000)).await.expect("added with no browser worker live").id;
    let scheduler = Scheduler::new(Arc::clone(&engine), None);
    let (mut deliveries, stop) = (JoinSet::new(), CancellationToken::new());

    let at = scheduler.pass(t, &mut deliveries, &stop).await.expect("a pass");
    assert_eq!(at.failed, 0, "a refused run is no failure of the scheduler");
    let skipped = view(&engine, id).await;
    assert_eq!((skipped.last_audit, skipped.next_run_ms), (None, Some(t.0 + HOUR_MS)), "{skipped:?}");
    assert!(engine.list().await.expect("the audits").is_empty(), "no audit recorded");

    // A browser worker's heartbeat announces it (at the real time: the check reads the clock).
    let now = UnixMs::from(std::time::SystemTime::now());
    engine.frontier().announce_browser_worker(&WorkerId("seeing".into()), now).await.expect("announced");
    let next = scheduler.pass(UnixMs(t.0 + HOUR_MS), &mut deliveries, &stop).await.expect("a pass");
    assert_eq!(next.steps, vec![(ScheduleId(id), Step::Start { next_run: UnixMs(t.0 + 2 * HOUR_MS) })]);
    assert!(view(&engine, id).await.last_audit.is_some(), "the run started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scheduler_sleeps_until_due_and_wakes_for_a_new_schedule_an_ended_run_and_shutdown() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    let engine = engine(&db, None);
    let stop = CancellationToken::new();
    let mut tasks = JoinSet::new();
    tasks.spawn(Scheduler::new(Arc::clone(&engine), None).run(stop.clone()));
    // No schedule: the scheduler is asleep (for up to a minute).
    tokio::time::sleep(Duration::from_millis(300)).await;

    // A schedule added through the API wakes it: its first run starts at once.
    let now = || UnixMs::from(std::time::SystemTime::now());
    let hourly = schedule::add(&engine, request("hourly", "every 1h"), now()).await.expect("added").id;
    let started = within_react(async || view(&engine, hourly).await.last_audit.is_some()).await;
    assert!(started.is_some(), "the new schedule's first run did not start within {REACT:?}");
    let audit = view(&engine, hourly).await.last_audit.expect("a run");

    // The run ends: its end is settled at once, not at the next due time.
    assert!(!settled(&db, hourly));
    engine.cancel(AuditId(audit)).await.expect("cancelled");
    assert!(within_react(async || settled(&db, hourly)).await.is_some(), "the ended run was not settled");

    // A schedule due in 3 s (stored as a restarted coordinator would find it, without a wake-up),
    // then two wake-ups before its time: it still starts at its time.
    let due = now().plus(Duration::from_secs(3));
    insert_schedules(&db, 1, due);
    let soon = schedule::list(&engine).await.expect("list").iter().find(|s| s.name == "s0").expect("stored").id;
    schedule::add(&engine, request("weekly", "0 6 * * MON"), now()).await.expect("added");
    tokio::time::sleep(Duration::from_millis(500)).await;
    schedule::add(&engine, request("monthly", "0 6 1 * *"), now()).await.expect("added");
    let mut began = None;
    let waited = Instant::now();
    while began.is_none() && waited.elapsed() < Duration::from_secs(3) + REACT {
        began = view(&engine, soon).await.last_started_ms;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let began = began.expect("the schedule due in 3 s did not start");
    assert!(began >= due.0, "started before its time: {began} < {}", due.0);
    assert!(began - due.0 < 5_000, "started {} ms late", began - due.0);

    // Shutdown wakes it too.
    stop.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(5), tasks.join_next()).await;
    assert!(matches!(ended, Ok(Some(Ok(())))), "the scheduler did not stop at shutdown: {ended:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_more_often_than_the_minimum_is_refused_unless_the_operator_lowers_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let now = UnixMs::from(std::time::SystemTime::now());
    // The default minimum: an hour.
    let default = engine(&dir.path().join("a.db"), None);
    for (when, gap) in [("every 1s", "1s"), ("every 30m", "30m"), ("*/10 * * * *", "10m")] {
        match schedule::add(&default, request("often", when), now).await {
            Err(EngineError::BadRequest(e)) => {
                assert!(e.contains(&format!("would run {gap} after")) && e.contains("minimum interval is 1h"), "{e}");
            }
            other => panic!("{when}: {other:?}"),
        }
    }
    assert!(schedule::list(&default).await.expect("list").is_empty());
    for when in ["every 1h", "0 * * * *", "0 6 * * MON"] {
        schedule::add(&default, request("fine", when), now).await.unwrap_or_else(|e| panic!("{when}: {e}"));
    }
    // An operator's lower minimum (the coordinator's `schedule_min_interval`).
    let lowered = engine(&dir.path().join("b.db"), Some(Duration::from_secs(60)));
    for when in ["every 1m", "* * * * *"] {
        schedule::add(&lowered, request("often", when), now).await.unwrap_or_else(|e| panic!("{when}: {e}"));
    }
    let refused = schedule::add(&lowered, request("often", "every 30s"), now).await;
    assert!(matches!(&refused, Err(EngineError::BadRequest(e)) if e.contains("minimum interval is 1m")), "{refused:?}");
}
