//! Recurring audits in the audit database: the schedules table, runs linked to their schedule, the
//! comparison a run's report and notification use, and a version-2 file upgrading in place.

use rusqlite::Connection;
use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::{AuditId, ScheduleId, SiteId};
use shoal_shared::record::Event;
use shoal_shared::time::UnixMs;
use shoal_store::compare::{ChangeCounts, compare};
use shoal_store::{AuditDb, AuditStatus, NewSchedule, schema};

fn weekly() -> NewSchedule {
    NewSchedule {
        name: "Weekly <clients>".to_owned(),
        urls: vec!["https://a.example/".to_owned(), "https://b.example/".to_owned()],
        options_json: r#"{"max_pages":50}"#.to_owned(),
        spec: "0 6 * * MON".to_owned(),
        time_zone: "Europe/Berlin".to_owned(),
    }
}

fn finding(audit: AuditId, site: SiteId, code: Code, url: &str) -> Event {
    Event::Finding(Finding::new(audit, site, code, url.to_owned(), String::new()))
}

/// Starts a run of `schedule` with one site, records `findings` on it (by URL, all
/// `title_missing`) and ends it.
fn run(db: &mut AuditDb, schedule: ScheduleId, at: u64, findings: &[&str]) -> AuditId {
    let audit = db
        .start_scheduled_audit(schedule, "{}", UnixMs(at), UnixMs(at + 1000))
        .expect("start")
        .expect("the schedule exists");
    let site = db.add_site(audit, "https://a.example/").expect("site");
    let events: Vec<Event> = findings.iter().map(|u| finding(audit, site, Code::TitleMissing, u)).collect();
    db.apply(&events).expect("findings");
    db.finish_audit(audit, AuditStatus::Done, UnixMs(at + 500)).expect("finish");
    audit
}

#[test]
fn schedules_round_trip_and_runs_link_to_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = AuditDb::open(&dir.path().join("a.db")).expect("open");
    let id = db.add_schedule(&weekly(), UnixMs(1000), UnixMs(5000)).expect("add");
    let row = db.schedule(id).expect("read").expect("there");
    assert_eq!(row.name, "Weekly <clients>");
    assert_eq!((row.sites, row.spec.as_str(), row.time_zone.as_str()), (2, "0 6 * * MON", "Europe/Berlin"));
    assert_eq!(
        (row.created_at, row.next_run, row.options_json.as_str()),
        (UnixMs(1000), UnixMs(5000), r#"{"max_pages":50}"#)
    );
    assert_eq!((row.last_audit, row.last_status, row.settled), (None, None, true));
    assert_eq!(db.schedule_urls(id).expect("urls"), Some(weekly().urls));

    // A run: created, linked and recorded as the latest, unsettled, in one step.
    let audit = db.start_scheduled_audit(id, "{}", UnixMs(6000), UnixMs(9000)).expect("start").expect("exists");
    let row = db.schedule(id).expect("read").expect("there");
    assert_eq!((row.last_audit, row.last_status, row.settled), (Some(audit), Some(AuditStatus::Running), false));
    assert_eq!((row.last_started, row.next_run), (Some(UnixMs(6000)), UnixMs(9000)));
    let linked = db.scheduled_run(audit).expect("read").expect("scheduled");
    assert_eq!((linked.schedule, linked.name.as_deref(), linked.previous), (id, Some("Weekly <clients>"), None));

    // Settling names the run it settles: a stale one changes nothing.
    assert!(!db.settle_schedule(id, AuditId(audit.0 + 100), UnixMs(1)).expect("settle"));
    db.finish_audit(audit, AuditStatus::Done, UnixMs(7000)).expect("finish");
    assert!(db.settle_schedule(id, audit, UnixMs(12_000)).expect("settle"));
    let row = db.schedule(id).expect("read").expect("there");
    assert_eq!((row.last_status, row.settled, row.next_run), (Some(AuditStatus::Done), true, UnixMs(12_000)));
    db.set_next_run(id, UnixMs(13_000)).expect("move");
    assert_eq!(db.schedule(id).expect("read").expect("there").next_run, UnixMs(13_000));

    // A second run knows the first; a submitted audit belongs to no schedule.
    let second = db.start_scheduled_audit(id, "{}", UnixMs(14_000), UnixMs(20_000)).expect("start").expect("exists");
    assert_eq!(db.scheduled_run(second).expect("read").expect("scheduled").previous, Some(audit));
    let submitted = db.create_audit("{}", UnixMs(15_000)).expect("submit");
    assert_eq!(db.scheduled_run(submitted).expect("read"), None);
    assert_eq!(db.schedules().expect("list").len(), 1);

    // Removed: the runs stay and keep their link (their reports still compare), no new run starts.
    assert!(db.remove_schedule(id).expect("remove"));
    assert!(!db.remove_schedule(id).expect("remove twice"));
    assert_eq!(db.schedule(id).expect("read"), None);
    assert_eq!(db.start_scheduled_audit(id, "{}", UnixMs(30_000), UnixMs(40_000)).expect("start"), None);
    let kept = db.scheduled_run(second).expect("read").expect("still linked");
    assert_eq!((kept.name, kept.previous), (None, Some(audit)));
    // Ids are never reused, so a new schedule cannot inherit the removed one's runs.
    assert!(db.add_schedule(&weekly(), UnixMs(1), UnixMs(2)).expect("add") > id);
}

#[test]
fn consecutive_runs_compare_as_new_fixed_and_remaining() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = AuditDb::open(&dir.path().join("a.db")).expect("open");
    let id = db.add_schedule(&weekly(), UnixMs(0), UnixMs(0)).expect("add");
    let first = run(&mut db, id, 1000, &["https://a.example/old", "https://a.example/both"]);
    let second = run(&mut db, id, 2000, &["https://a.example/both", "https://a.example/new", "https://a.example/new2"]);
    let c = compare(&db, first, second).expect("compare");
    assert_eq!(c.totals(), ChangeCounts { new: 2, fixed: 1, remaining: 1 });
    assert_eq!((c.pairs.both.len(), c.pairs.added.len(), c.pairs.removed.len()), (1, 0, 0));
    let sev = db.audit_severities(second).expect("severities");
    assert_eq!((sev.errors + sev.warnings + sev.notices), 3);
}

/// A version-2 file (what the previous release wrote): its audits survive the upgrade and the
/// schedules work at once.
#[test]
fn a_version_2_database_upgrades_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.db");
    {
        let conn = Connection::open(&path).expect("sqlite");
        conn.execute_batch(schema::MIGRATIONS[0]).expect("v1");
        conn.execute_batch(schema::MIGRATIONS[1]).expect("v2");
        conn.execute_batch(&format!("PRAGMA user_version = 2; PRAGMA application_id = {};", schema::APPLICATION_ID))
            .expect("version");
        conn.execute(
            "INSERT INTO audits (created_at_ms, finished_at_ms, status, options_json) VALUES (100, 200, 'done', '{}')",
            [],
        )
        .expect("an old audit");
        conn.execute(
            "INSERT INTO sites (audit_id, start_url, status, pages, urls, findings)
             VALUES (1, 'https://a.example/', 'done', 3, 5, 2), (1, 'https://b.example/', 'running', 1, 1, 0)",
            [],
        )
        .expect("old sites");
    }
    let mut db = AuditDb::open(&path).expect("upgrade");
    let version: i64 =
        Connection::open(&path).and_then(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0))).expect("version");
    assert_eq!(version, i64::try_from(schema::MIGRATIONS.len()).expect("small"));
    let old = db.audit(AuditId(1)).expect("read").expect("the old audit is kept");
    assert_eq!((old.status, old.sites), (AuditStatus::Done, 2));
    // Version 4 filled in the audit's totals from its sites.
    assert_eq!((old.sites_done, old.pages, old.urls, old.findings), (1, 4, 6, 2));
    assert_eq!(db.scheduled_run(AuditId(1)).expect("read"), None, "an old audit belongs to no schedule");
    let id = db.add_schedule(&weekly(), UnixMs(1000), UnixMs(2000)).expect("schedules work after the upgrade");
    let audit = db.start_scheduled_audit(id, "{}", UnixMs(3000), UnixMs(4000)).expect("start").expect("exists");
    assert!(audit > AuditId(1));
    drop(db);
    // Opening again changes nothing.
    let db = AuditDb::open(&path).expect("reopen");
    assert_eq!(db.schedules().expect("list").len(), 1);
}
