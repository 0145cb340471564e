//! `shoal prune` (issue 40) as the real program: what it removes and prints, bad input, and a
//! second process holding the audit database's write lock (a coordinator committing): prune waits
//! for it, or fails with a clear message having changed nothing; the file stays sound.

use crate::support::{shoal, shoal_with, stderr, stdout};
use shoal_shared::record::{Event, PageRecord};
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, AuditStatus};
use std::path::Path;
use std::time::{Duration, Instant};

const DAY: u64 = 24 * 3600 * 1000;

/// Three ended audits of one start URL (100 pages each, 20, 9 and 1 days old) and a
/// running audit of another; returns their ids, oldest first.
fn database(path: &Path) -> Vec<shoal_shared::ids::AuditId> {
    let now = UnixMs::from(std::time::SystemTime::now()).0;
    let mut db = AuditDb::open(path).expect("db");
    let mut ids = Vec::new();
    for age in [20, 9, 1] {
        let a = db.create_audit("{}", UnixMs(now - age * DAY)).expect("audit");
        let site = db.add_sites(a, &["https://a.test/"]).expect("site")[0];
        let pages: Vec<Event> = (0..100)
            .map(|i| {
                Event::Page(Box::new(PageRecord {
                    audit: a,
                    site,
                    url: format!("https://a.test/{i}"),
                    title: Some(format!("page {i} {}", "words ".repeat(200))),
                    ..PageRecord::default()
                }))
            })
            .collect();
        db.apply(&pages).expect("pages");
        db.finish_audit(a, AuditStatus::Done, UnixMs(now - age * DAY + 1000)).expect("end");
        ids.push(a);
    }
    let running = db.create_audit("{}", UnixMs(now - 30 * DAY)).expect("audit");
    db.add_sites(running, &["https://b.test/"]).expect("site");
    ids.push(running);
    ids
}

fn audits(path: &Path) -> Vec<u64> {
    AuditDb::open(path).expect("db").audits().expect("list").into_iter().map(|a| a.id.0).collect()
}

fn code(o: &std::process::Output) -> Option<i32> {
    o.status.code()
}

#[test]
fn prune_removes_what_the_rule_lets_go_and_a_dry_run_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("shoal.db");
    let ids: Vec<u64> = database(&db).into_iter().map(|a| a.0).collect();
    let db_arg = db.to_str().expect("utf-8");

    let o = shoal(&["prune", "--db", db_arg, "--keep-last", "1", "--dry-run"]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains(&format!("would remove audit {} (done", ids[0])), "{text}");
    assert!(text.contains(&format!("would remove audit {} (done", ids[1])), "{text}");
    assert!(text.contains("2 audit(s) would be removed; nothing was changed"), "{text}");
    assert_eq!(audits(&db), ids, "a dry run changes nothing");

    // By age, from the environment: only the 20-day-old audit; the running one (30 days) stays.
    let o = shoal_with(&["prune", "--older-than", "10"], &[("SHOAL_DB", db_arg), ("SHOAL_KEEP_LAST", "2")]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains(&format!("removed audit {} (done", ids[0])), "{text}");
    assert!(text.contains("100 pages"), "{text}");
    assert!(text.contains("1 audit(s) removed"), "{text}");
    assert_eq!(audits(&db), ids[1..]);

    let o = shoal(&["prune", "--db", db_arg, "--keep-last", "1"]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("1 audit(s) removed"), "{}", stdout(&o));
    assert_eq!(audits(&db), ids[2..], "the latest ended audit and the running one stay");
    let o = shoal(&["prune", "--db", db_arg, "--keep-last", "1"]);
    assert!(stdout(&o).contains("0 audit(s) removed"), "{}", stdout(&o));
}

#[test]
fn bad_prune_input_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("shoal.db");
    let db_arg = db.to_str().expect("utf-8");
    let o = shoal(&["prune", "--db", db_arg]);
    assert_eq!(code(&o), Some(2), "no rule: a usage error");
    assert!(stderr(&o).contains("--keep-last"), "{}", stderr(&o));
    let o = shoal(&["prune", "--db", db_arg, "--keep-last", "0"]);
    assert_eq!(code(&o), Some(3));
    assert!(stderr(&o).contains("--keep-last must be at least 1"), "{}", stderr(&o));
    let o = shoal(&["prune", "--db", db_arg, "--older-than", "many"]);
    assert_eq!(code(&o), Some(2));
    let o = shoal(&["prune", "--db", "/nonexistent-dir/x.db", "--keep-last", "1"]);
    assert_eq!(code(&o), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("/nonexistent-dir/x.db"), "{}", stderr(&o));
    let not_ours = dir.path().join("other.db");
    rusqlite::Connection::open(&not_ours).and_then(|c| c.execute_batch("CREATE TABLE t (x)")).expect("other db");
    let o = shoal(&["prune", "--db", not_ours.to_str().expect("utf-8"), "--keep-last", "1"]);
    assert_eq!(code(&o), Some(4));
    assert!(stderr(&o).contains("not a Shoal audit database"), "{}", stderr(&o));
}

/// This test process holds the database's write lock on its own connection, the way a coordinator
/// does while it commits, while `shoal prune` runs as another process.
#[test]
fn prune_beside_another_process_holding_the_database_waits_or_fails_clearly_and_never_corrupts_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("shoal.db");
    let ids: Vec<u64> = database(&db).into_iter().map(|a| a.0).collect();
    let db_arg = db.to_str().expect("utf-8");
    let mut other = rusqlite::Connection::open(&db).expect("second connection");

    // Held longer than prune waits: exit 4, a message that says why, nothing removed.
    let tx = other.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).expect("lock");
    let started = Instant::now();
    let o = shoal(&["prune", "--db", db_arg, "--keep-last", "1", "--wait-s", "1"]);
    assert!(started.elapsed() >= Duration::from_secs(1), "it waited for the lock first");
    assert_eq!(code(&o), Some(4), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("busy") && e.contains("another process") && e.contains("nothing was changed"), "{e}");
    tx.execute("UPDATE audits SET reason = 'written while prune waited' WHERE id = ?1", [ids[2] as i64])
        .expect("the other process still writes");
    tx.commit().expect("and commits");
    assert_eq!(audits(&db), ids, "nothing was removed");

    // Held for a moment (a batch being committed): prune waits for it, then does its work.
    let o = std::thread::scope(|scope| {
        let tx = other.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).expect("lock");
        let child = scope.spawn(|| shoal(&["prune", "--db", db_arg, "--keep-last", "1", "--wait-s", "20"]));
        std::thread::sleep(Duration::from_millis(1500));
        tx.execute("UPDATE audits SET reason = 'second write' WHERE id = ?1", [ids[2] as i64]).expect("write");
        tx.commit().expect("commit");
        child.join().expect("prune ran")
    });
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("2 audit(s) removed"), "{}", stdout(&o));
    assert_eq!(audits(&db), ids[2..]);
    let check: String = other.query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("check");
    assert_eq!(check, "ok");
    let reason: String =
        other.query_row("SELECT reason FROM audits WHERE id = ?1", [ids[2] as i64], |r| r.get(0)).expect("read");
    assert_eq!(reason, "second write", "the other process's commits are all there");
}

/// A file made before Shoal created files in incremental-vacuum mode keeps its free pages after a
/// prune (and says how to shrink it); `--vacuum` shrinks it and switches it.
#[test]
fn an_older_file_is_told_about_vacuum_and_shrinks_with_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("shoal.db");
    rusqlite::Connection::open(&db)
        .and_then(|c| c.execute_batch("PRAGMA auto_vacuum = NONE; CREATE TABLE t (x); DROP TABLE t;"))
        .expect("an old-style file");
    database(&db);
    let db_arg = db.to_str().expect("utf-8");
    let size = || std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0);
    let o = shoal(&["prune", "--db", db_arg, "--keep-last", "1"]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("2 audit(s) removed") && text.contains("shoal prune --vacuum"), "{text}");
    let before = size();
    let o = shoal(&["prune", "--db", db_arg, "--vacuum"]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("0 audit(s) removed") && !text.contains("note:"), "{text}");
    assert!(size() < before / 2, "the file shrank from {before} to {}", size());
    let mode: i64 = rusqlite::Connection::open(&db)
        .and_then(|c| c.query_row("PRAGMA auto_vacuum", [], |r| r.get(0)))
        .expect("mode");
    assert_eq!(mode, 2, "incremental from now on");
}
