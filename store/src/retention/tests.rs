//! The retention rule, table by table deletion, the query plans, the space given back, and two
//! connections at once, on real SQLite files.

use super::*;
use crate::NewSchedule;
use std::collections::BTreeMap;

const DAY: u64 = 24 * 3600 * 1000;

fn open() -> (tempfile::TempDir, AuditDb) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = AuditDb::open(&dir.path().join("a.db")).expect("open");
    (dir, db)
}

/// An ended audit of `urls`, created at `day` and finished the same day.
fn ended<S: AsRef<str>>(db: &mut AuditDb, urls: &[S], day: u64) -> AuditId {
    let a = db.create_audit("{}", UnixMs(day * DAY)).expect("audit");
    db.add_sites(a, urls).expect("sites");
    db.finish_audit(a, AuditStatus::Done, UnixMs(day * DAY + 1)).expect("finish");
    a
}

fn keep_last(n: u32) -> Retention {
    Retention { keep_last: NonZeroU32::new(n), max_age: None }
}

fn gone(db: &AuditDb, rule: &Retention, now: UnixMs) -> Vec<AuditId> {
    db.prunable(rule, now).expect("prunable").into_iter().map(|p| p.audit).collect()
}

#[test]
fn per_start_url_the_latest_n_ended_audits_stay() {
    let (_dir, mut db) = open();
    let a1 = ended(&mut db, &["https://a.test/", "https://b.test/"], 1);
    let a2 = ended(&mut db, &["https://a.test/"], 2);
    let a3 = ended(&mut db, &["https://a.test/"], 3);
    let a4 = ended(&mut db, &["https://b.test/"], 4);
    let now = UnixMs(100 * DAY);
    let rule = keep_last(2);
    // a.test: a2, a3 are its two latest; b.test: a1 is still one of its two latest (a4 is the other).
    assert_eq!(gone(&db, &rule, now), Vec::<AuditId>::new());
    assert_eq!(db.verdict(a1, &rule, now).expect("verdict"), Some(Verdict::Kept));
    let a5 = ended(&mut db, &["https://b.test/"], 5);
    assert_eq!(gone(&db, &rule, now), vec![a1], "every start URL of a1 now has two later audits");
    assert_eq!(db.verdict(a1, &rule, now).expect("verdict"), Some(Verdict::Superseded));
    // A running audit neither goes nor counts as a later audit of its start URLs.
    let running = db.create_audit("{}", UnixMs(6 * DAY)).expect("audit");
    db.add_sites(running, &["https://a.test/", "https://b.test/"]).expect("sites");
    assert_eq!(gone(&db, &rule, now), vec![a1]);
    assert_eq!(db.verdict(running, &keep_last(1), now).expect("verdict"), Some(Verdict::Running));
    // The same start URL twice in one later audit counts that audit once.
    let twice = ended(&mut db, &["https://c.test/"], 7);
    ended(&mut db, &["https://c.test/", "https://c.test/"], 8);
    assert_eq!(db.verdict(twice, &rule, now).expect("verdict"), Some(Verdict::Kept));
    assert_eq!(gone(&db, &keep_last(1), now), vec![a1, a2, a4, twice]);
    assert_eq!(db.verdict(a3, &keep_last(1), now).expect("verdict"), Some(Verdict::Kept));
    assert_eq!(db.verdict(a5, &keep_last(1), now).expect("verdict"), Some(Verdict::Kept));
    assert_eq!(db.verdict(AuditId(999), &rule, now).expect("verdict"), None);
}

#[test]
fn an_audit_that_ended_before_the_age_limit_goes_and_no_rule_removes_nothing() {
    let (_dir, mut db) = open();
    let old = ended(&mut db, &["https://a.test/"], 1);
    let recent = ended(&mut db, &["https://a.test/"], 9);
    // Cancelled without a recorded end: its creation counts.
    let unfinished = db.create_audit("{}", UnixMs(2 * DAY)).expect("audit");
    db.conn.execute("UPDATE audits SET status = 'cancelled' WHERE id = ?1", [int(unfinished.0)]).expect("cancel");
    let rule = Retention { keep_last: None, max_age: Some(Duration::from_millis(5 * DAY)) };
    let now = UnixMs(10 * DAY);
    assert_eq!(gone(&db, &rule, now), vec![old, unfinished]);
    assert_eq!(db.verdict(recent, &rule, now).expect("verdict"), Some(Verdict::Kept));
    assert_eq!(db.verdict(old, &rule, now).expect("verdict"), Some(Verdict::TooOld));
    // Exactly at the limit stays.
    let edge = UnixMs(9 * DAY + 1 + 5 * DAY);
    assert_eq!(db.verdict(recent, &rule, edge).expect("verdict"), Some(Verdict::Kept));
    assert!(gone(&db, &Retention::default(), now).is_empty(), "no rule, nothing goes");
    // Either rule removes: keep-last 5 keeps `old`, the age does not.
    let both = Retention { keep_last: NonZeroU32::new(5), ..rule };
    assert_eq!(gone(&db, &both, now), vec![old, unfinished]);
}

#[test]
fn a_schedule_keeps_its_last_two_runs_whatever_the_rule() {
    let (_dir, mut db) = open();
    let s = db
        .add_schedule(
            &NewSchedule {
                name: "weekly".into(),
                urls: vec!["https://a.test/".into()],
                options_json: "{}".into(),
                spec: "every 7d".into(),
                time_zone: "UTC".into(),
            },
            UnixMs(0),
            UnixMs(DAY),
        )
        .expect("schedule");
    let mut runs = Vec::new();
    for day in 1..=4 {
        let a = db.start_scheduled_audit(s, "{}", UnixMs(day * DAY), UnixMs((day + 7) * DAY)).expect("start");
        let a = a.expect("the schedule exists");
        db.add_sites(a, &["https://a.test/"]).expect("site");
        db.finish_audit(a, AuditStatus::Done, UnixMs(day * DAY + 1)).expect("finish");
        runs.push(a);
    }
    let strict = Retention { keep_last: NonZeroU32::new(1), max_age: Some(Duration::from_millis(1)) };
    let now = UnixMs(100 * DAY);
    assert_eq!(gone(&db, &strict, now), runs[..2].to_vec());
    assert_eq!(db.verdict(runs[2], &strict, now).expect("verdict"), Some(Verdict::ScheduleRun(s)));
    // A run under way is one of the last two: the run before it stays to be compared with.
    let running = db.start_scheduled_audit(s, "{}", UnixMs(5 * DAY), UnixMs(12 * DAY)).expect("start").expect("there");
    assert_eq!(gone(&db, &strict, now), runs[..3].to_vec());
    assert_eq!(db.verdict(running, &strict, now).expect("verdict"), Some(Verdict::Running));
    assert_eq!(db.verdict(runs[3], &strict, now).expect("verdict"), Some(Verdict::ScheduleRun(s)));
    // Pruned, the latest run still finds the one before it.
    for p in db.prunable(&strict, now).expect("prunable") {
        db.prune_audit(p.audit, &strict, now).expect("prune").expect("pruned");
    }
    let run = db.scheduled_run(running).expect("run").expect("scheduled");
    assert_eq!(run.previous, Some(runs[3]));
}

/// Every table with a `site_id` or `audit_id` column, from the schema itself (so a table added
/// later is checked too).
fn tables_with_audit_rows(db: &AuditDb) -> Vec<(String, &'static str)> {
    let mut stmt = db.conn.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").expect("tables");
    let names: Vec<String> = stmt.query_map([], |r| r.get(0)).expect("query").map(|r| r.expect("name")).collect();
    let mut out = Vec::new();
    for name in names {
        let cols: Vec<String> = db
            .conn
            .prepare(&format!("SELECT name FROM pragma_table_info('{name}')"))
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .expect("columns");
        if cols.iter().any(|c| c == "site_id") {
            out.push((name, "site_id"));
        } else if cols.iter().any(|c| c == "audit_id") {
            out.push((name, "audit_id"));
        } else if name == "audits" {
            out.push((name, "id"));
        }
    }
    out
}

/// Rows of each such table belonging to `audit`.
fn rows_of(db: &AuditDb, audit: AuditId) -> BTreeMap<String, i64> {
    tables_with_audit_rows(db)
        .into_iter()
        .map(|(table, col)| {
            let sql = match col {
                "site_id" => {
                    format!("SELECT COUNT(*) FROM {table} WHERE site_id IN (SELECT id FROM sites WHERE audit_id = ?1)")
                }
                _ => format!("SELECT COUNT(*) FROM {table} WHERE {col} = ?1"),
            };
            let n: i64 = db.conn.query_row(&sql, [int(audit.0)], |r| r.get(0)).expect("count");
            (table, n)
        })
        .collect()
}

/// Fills every per-site table for each site of `audit`: `pages` pages with two links each, a
/// finding per page, a browser row with screenshots and an hreflang row.
fn fill(db: &mut AuditDb, audit: AuditId, pages: u32, blob: usize) {
    let sites: Vec<i64> = db
        .conn
        .prepare("SELECT id FROM sites WHERE audit_id = ?1")
        .and_then(|mut s| s.query_map([int(audit.0)], |r| r.get(0))?.collect())
        .expect("sites");
    let tx = db.conn.transaction().expect("tx");
    let jpeg = vec![0xab_u8; blob];
    for site in sites {
        for p in 0..pages {
            let url = format!("https://s{site}.test/p{p}");
            tx.execute(
                "INSERT INTO pages (site_id, url, kind, depth, found_via, bytes, response_ms, fetched_at_ms, h1_json,
                    meta_robots_json, x_robots_tag_json, hreflang_json, headers_json, title)
                 VALUES (?1, ?2, 'page', 1, 'link', 1000, 20, 1, '[]', '[]', '[]', '[]', '[]', ?3)",
                rusqlite::params![site, url, "a title long enough to take some room ".repeat(4)],
            )
            .expect("page");
            for position in 0..2 {
                tx.execute(
                    "INSERT INTO links (site_id, from_url, position, to_url, kind, nofollow, internal)
                     VALUES (?1, ?2, ?3, ?4, 'anchor', 0, 1)",
                    rusqlite::params![site, url, position, format!("{url}/{position}")],
                )
                .expect("link");
            }
            tx.execute(
                "INSERT INTO findings (site_id, code, severity, url, detail, origin) VALUES (?1, 'title_missing', 'warning', ?2, '', 'worker')",
                rusqlite::params![site, url],
            )
            .expect("finding");
        }
        tx.execute(
            "INSERT INTO browser_pages (site_id, url, final_url, resources_json, third_party_json, blocked_json, axe_json,
                keyboard_json, consent_json, desktop_jpeg, phone_jpeg)
             VALUES (?1, 'https://x.test/', 'https://x.test/', '[]', '[]', '[]', '[]', '{}', '{}', ?2, ?2)",
            rusqlite::params![site, jpeg],
        )
        .expect("browser page");
        tx.execute(
            "INSERT INTO rendered_pages (site_id, url, depth, queued, rendered_json) VALUES (?1, 'https://x.test/', 0, 0, '{}')",
            [site],
        )
        .expect("rendered page");
        tx.execute(
            "INSERT INTO hreflang (site_id, found_in, position, page_url, source, lang, target)
             VALUES (?1, 'https://x.test/', 0, 'https://x.test/', 'html', 'de', 'https://x.test/de')",
            [site],
        )
        .expect("hreflang");
        tx.execute(
            "UPDATE sites SET pages = ?2, urls = ?2, findings = ?2, status = 'done' WHERE id = ?1",
            rusqlite::params![site, pages],
        )
        .expect("counters");
    }
    tx.commit().expect("commit");
}

#[test]
fn pruning_removes_every_row_of_the_audit_and_nothing_of_the_others() {
    let (_dir, mut db) = open();
    let urls = ["https://a.test/", "https://b.test/"];
    let old = ended(&mut db, &urls, 1);
    fill(&mut db, old, 5, 100);
    let kept = ended(&mut db, &urls, 2);
    fill(&mut db, kept, 7, 100);
    let before_kept = rows_of(&db, kept);
    let before_old = rows_of(&db, old);
    // Every table that can hold an audit's rows is filled, so each one's deletion is checked.
    for table in
        ["audits", "audit_totals", "sites", "pages", "links", "findings", "browser_pages", "rendered_pages", "hreflang"]
    {
        assert!(before_old.get(table).copied().unwrap_or(0) > 0, "{table} has rows of the old audit: {before_old:?}");
    }
    assert_eq!(
        before_old.keys().collect::<Vec<_>>(),
        {
            let mut t: Vec<&String> = before_old.keys().collect();
            t.retain(|t| DELETE.iter().any(|(name, _)| name == t));
            t
        },
        "every table holding an audit's rows is in DELETE"
    );
    let now = UnixMs(10 * DAY);
    let removed = db.prune_audit(old, &keep_last(1), now).expect("prune").expect("it goes");
    assert_eq!(
        removed,
        Removed { sites: 2, pages: 10, links: 20, findings: 10, browser_pages: 2, rendered_pages: 2, hreflang: 2 }
    );
    assert!(rows_of(&db, old).values().all(|n| *n == 0), "{:?}", rows_of(&db, old));
    assert_eq!(rows_of(&db, kept), before_kept);
    assert_eq!(db.audit(old).expect("read"), None);
    let k = db.audit(kept).expect("read").expect("kept");
    assert_eq!((k.sites, k.pages, k.findings), (2, 14, 14), "the kept audit's totals are untouched");
    // Pruning again, or an audit the rule keeps, changes nothing.
    assert_eq!(db.prune_audit(old, &keep_last(1), now).expect("prune"), None);
    assert_eq!(db.prune_audit(kept, &keep_last(1), now).expect("prune"), None);
    let fk: i64 = db.conn.query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| r.get(0)).expect("fk");
    assert_eq!(fk, 0, "no row is left pointing at a deleted parent");
    // Ids are never given out again.
    let next = db.create_audit("{}", now).expect("audit");
    assert!(next.0 > kept.0);
}

use crate::query_plan as plan;

#[test]
fn deleting_and_judging_an_audit_search_indexes_and_scan_no_table() {
    let (_dir, db) = open();
    let keep_last_sql = "SELECT EXISTS (SELECT 1 FROM sites s WHERE s.audit_id = ?1 AND (
            SELECT COUNT(*) FROM (
                SELECT DISTINCT n.audit_id FROM sites n JOIN audits a ON a.id = n.audit_id
                WHERE n.start_url = s.start_url AND n.audit_id > ?1 AND a.status != 'running'
                LIMIT ?2)
         ) < ?2)";
    let mut statements: Vec<&str> = DELETE.iter().map(|(_, sql)| *sql).collect();
    statements.extend([
        keep_last_sql,
        "SELECT schedule_id FROM audits INDEXED BY audits_schedule_of WHERE schedule_id IS NOT NULL AND id = ?1",
        "SELECT COUNT(*) FROM (SELECT 1 FROM audits WHERE schedule_id = ?1 AND id > ?2 LIMIT ?3)",
        "SELECT status, created_at_ms, finished_at_ms FROM audits WHERE id = ?1",
    ]);
    for sql in statements {
        let steps = plan(&db, sql);
        // A scan of a table or an index (not of the one constant row or of a subquery's few rows).
        let scans: Vec<&String> = steps
            .iter()
            .filter(|d| {
                d.starts_with("SCAN") && !d.starts_with("SCAN CONSTANT ROW") && !d.starts_with("SCAN (subquery")
            })
            .collect();
        assert!(scans.is_empty(), "{sql}\nscans: {steps:?}");
        assert!(steps.iter().any(|d| d.starts_with("SEARCH")), "{sql}\n{steps:?}");
    }
    // The keep-last rule finds later audits of a start URL by the index made for it.
    assert!(plan(&db, keep_last_sql).iter().any(|d| d.contains("sites_by_start_url")));
    let schedule_of =
        "SELECT schedule_id FROM audits INDEXED BY audits_schedule_of WHERE schedule_id IS NOT NULL AND id = ?1";
    let steps = plan(&db, schedule_of);
    assert!(
        steps.iter().any(|d| d.starts_with("SEARCH") && d.contains("COVERING INDEX audits_schedule_of (id=?")),
        "{steps:?}"
    );
}

fn file_bytes(dir: &tempfile::TempDir) -> u64 {
    std::fs::metadata(dir.path().join("a.db")).expect("file").len()
}

#[test]
fn a_new_file_gives_the_space_of_pruned_audits_back() {
    let (dir, mut db) = open();
    assert!(db.space().expect("space").incremental, "new files are in incremental mode");
    let urls: Vec<String> = (0..20).map(|i| format!("https://s{i}.test/")).collect();
    let old = ended(&mut db, &urls, 1);
    fill(&mut db, old, 100, 20_000);
    let kept = ended(&mut db, &urls, 2);
    fill(&mut db, kept, 100, 20_000);
    db.checkpoint().expect("checkpoint");
    let full = file_bytes(&dir);
    db.prune_audit(old, &keep_last(1), UnixMs(3 * DAY)).expect("prune").expect("it goes");
    let space = db.space().expect("space");
    assert!(space.free_bytes() > full / 3, "half the file is free: {space:?}, file {full}");
    let mut freed = 0;
    loop {
        let n = db.reclaim(64).expect("reclaim");
        if n == 0 {
            break;
        }
        assert!(n <= 64, "a step frees at most what it was asked");
        freed += n;
    }
    assert!(freed > 0 && db.space().expect("space").free_pages == 0);
    assert!(db.checkpoint().expect("checkpoint"));
    let after = file_bytes(&dir);
    assert!(after < full * 6 / 10, "the file shrank from {full} to {after}");
    let k = db.audit(kept).expect("read").expect("kept");
    assert_eq!(k.pages, 2000, "the kept audit reads back whole");
    let integrity: String = db.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("check");
    assert_eq!(integrity, "ok");
}

#[test]
fn a_file_made_before_incremental_mode_shrinks_by_one_vacuum() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("a.db");
    {
        // What a file created by an older Shoal is: auto_vacuum off, fixed before any table.
        let c = Connection::open(&path).expect("raw");
        c.execute_batch("PRAGMA auto_vacuum = NONE; CREATE TABLE t (x); DROP TABLE t;").expect("old file");
    }
    let mut db = AuditDb::open(&path).expect("open");
    assert!(!db.space().expect("space").incremental);
    let urls: Vec<String> = (0..10).map(|i| format!("https://s{i}.test/")).collect();
    let old = ended(&mut db, &urls, 1);
    fill(&mut db, old, 100, 20_000);
    ended(&mut db, &urls, 2);
    db.checkpoint().expect("checkpoint");
    let full = std::fs::metadata(&path).expect("file").len();
    db.prune_audit(old, &keep_last(1), UnixMs(3 * DAY)).expect("prune").expect("it goes");
    assert_eq!(db.reclaim(RECLAIM_STEP).expect("reclaim"), 0, "nothing to give back a step at a time");
    db.checkpoint().expect("checkpoint");
    assert!(std::fs::metadata(&path).expect("file").len() >= full, "the free pages stay in the file");
    db.vacuum().expect("vacuum");
    let space = db.space().expect("space");
    assert!(space.incremental && space.free_pages == 0, "{space:?}");
    let after = std::fs::metadata(&path).expect("file").len();
    assert!(after < full / 4, "the file shrank from {full} to {after}");
}

#[test]
fn a_second_connection_holding_the_write_lock_makes_pruning_wait_then_fail_clearly() {
    let (dir, mut db) = open();
    let file = dir.path().join("a.db");
    let path = file.as_path();
    let old = ended(&mut db, &["https://a.test/"], 1);
    fill(&mut db, old, 10, 100);
    let kept = ended(&mut db, &["https://a.test/"], 2);
    let rule = keep_last(1);
    let now = UnixMs(3 * DAY);

    // Another process's writer (a coordinator committing a batch) holds the lock for 300 ms:
    // pruning waits for it, then works.
    let (locked_tx, locked) = std::sync::mpsc::channel();
    let (release_tx, release) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let holder = scope.spawn(move || {
            let mut other = AuditDb::open(path).expect("second connection");
            let tx = other.conn.transaction_with_behavior(TransactionBehavior::Immediate).expect("lock");
            tx.execute("UPDATE audits SET reason = 'held' WHERE id = ?1", [int(kept.0)]).expect("write");
            locked_tx.send(()).expect("tell");
            let hold = release.recv_timeout(Duration::from_millis(300));
            tx.commit().expect("the other writer commits after us either way");
            hold.is_ok()
        });
        locked.recv().expect("the lock is held");
        db.wait_for_locks(Duration::from_secs(5)).expect("timeout");
        let started = std::time::Instant::now();
        let removed = db.prune_audit(old, &rule, now).expect("waits for the lock, then prunes").expect("goes");
        assert!(started.elapsed() >= Duration::from_millis(250), "it waited for the other writer");
        assert_eq!(removed.pages, 10);
        drop(release_tx);
        assert!(!holder.join().expect("holder"));
    });

    // A writer that keeps the lock past the wait: a clear error, nothing changed, nothing broken.
    let older = db.create_audit("{}", UnixMs(0)).expect("audit");
    db.finish_audit(older, AuditStatus::Done, UnixMs(1)).expect("finish");
    let (locked_tx, locked) = std::sync::mpsc::channel();
    let (release_tx, release) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let holder = scope.spawn(move || {
            let mut other = AuditDb::open(path).expect("second connection");
            let tx = other.conn.transaction_with_behavior(TransactionBehavior::Immediate).expect("lock");
            locked_tx.send(()).expect("tell");
            release.recv().expect("released");
            tx.execute("UPDATE audits SET reason = 'after' WHERE id = ?1", [int(kept.0)]).expect("write");
            tx.commit().expect("the other writer's commit is intact");
        });
        locked.recv().expect("the lock is held");
        db.wait_for_locks(Duration::from_millis(200)).expect("timeout");
        let e = db.prune_audit(older, &keep_last(1), now).expect_err("busy");
        assert!(matches!(e, DbError::Busy { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains("busy") && text.contains("another process") && text.contains("nothing was changed"),
            "{text}"
        );
        let e = db.vacuum().expect_err("busy");
        assert!(matches!(e, DbError::Busy { .. }), "{e:?}");
        release_tx.send(()).expect("release");
        holder.join().expect("holder");
    });
    assert!(db.audit(older).expect("read").is_some(), "nothing was deleted");
    assert_eq!(db.audit(kept).expect("read").expect("kept").reason.as_deref(), Some("after"));
    db.wait_for_locks(crate::BUSY_TIMEOUT).expect("timeout");
    assert!(db.prune_audit(older, &keep_last(1), now).expect("prune").is_some());
    let integrity: String = db.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("check");
    assert_eq!(integrity, "ok");
}
