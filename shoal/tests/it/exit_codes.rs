//! Every documented exit status (README "Exit status"), produced by the real program from the
//! type of the error, with the cases that were once wrong. Statuses 3 and 4 from `shoal audit` are
//! also covered in `cli.rs`; 130 (Ctrl-C) needs a slow site and is in the end-to-end crate
//! (`tests/tests/it/audit_process.rs`).

use crate::support::{command, shoal, stderr};
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, AuditStatus};
use std::path::Path;
use std::process::Stdio;

/// A database holding one finished audit with one site.
fn database(path: &Path) {
    let mut db = AuditDb::open(path).expect("open a new audit database");
    let audit = db.create_audit("{}", UnixMs(1_700_000_000_000)).expect("create audit");
    db.add_site(audit, "https://a.test/").expect("add site");
    db.finish_audit(audit, AuditStatus::Done, UnixMs(1_700_000_001_000)).expect("finish audit");
}

#[test]
fn zero_when_the_command_did_its_job() {
    let dir = tempfile::tempdir().expect("tempdir");
    let robots = dir.path().join("robots.txt");
    std::fs::write(&robots, "User-agent: *\nDisallow: /private\n").expect("write robots.txt");
    let out = shoal(&["robots", "--file", robots.to_str().expect("utf-8"), "--agent", "ShoalBot", "http://a.test/"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let db = dir.path().join("a.db");
    database(&db);
    let out = shoal(&["report", "--db", db.to_str().expect("utf-8"), "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn one_when_shoal_itself_fails() {
    // The report cannot be written to standard output (a full disk): not the user's input.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("a.db");
    database(&db);
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full exists on Linux");
    let out = command()
        .args(["report", "--db", db.to_str().expect("utf-8"), "--format", "json"])
        .stdout(Stdio::from(full))
        .output()
        .expect("shoal runs");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("No space left"), "{}", stderr(&out));
}

#[test]
fn two_for_bad_arguments() {
    let out = shoal(&["audit", "--no-such-flag", "http://a.test/"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = shoal(&["no-such-command"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn three_for_unusable_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.db");
    let out = shoal(&["report", "--db", missing.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let db = dir.path().join("a.db");
    database(&db);
    let out = shoal(&["report", "99", "--db", db.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(3), "no such audit: {}", stderr(&out));
}

#[test]
fn four_when_the_audit_database_fails_in_any_command() {
    // Not a Shoal database: refused when the report opens it (once exit 1 by way of the report's
    // own error type, which wraps the database's).
    let dir = tempfile::tempdir().expect("tempdir");
    let other = dir.path().join("other.db");
    std::fs::write(&other, b"this is not an SQLite file, but it is long enough to look like one at a glance")
        .expect("write file");
    let out = shoal(&["report", "--db", other.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let out = shoal(&["report", "--db", other.to_str().expect("utf-8"), "--compare", "1", "2"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
}

#[test]
fn five_when_the_report_finds_what_fail_on_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db_path = dir.path().join("a.db");
    database(&db_path);
    let db = db_path.to_str().expect("utf-8");
    let out = shoal(&["report", "--db", db, "--fail-on", "notice"]);
    assert_eq!(out.status.code(), Some(0), "no finding at all: {}", stderr(&out));
    let mut store = AuditDb::open(&db_path).expect("open");
    let site = store.site_counts(shoal_shared::ids::AuditId(1)).expect("sites")[0].id;
    let finding = shoal_shared::finding::Finding::new(
        shoal_shared::ids::AuditId(1),
        site,
        shoal_shared::finding::Code::CspMissing,
        "https://a.test/",
        "",
    );
    store.apply(&[shoal_shared::record::Event::Finding(finding)]).expect("a notice");
    drop(store);
    let out = shoal(&["report", "--db", db, "--fail-on", "warning"]);
    assert_eq!(out.status.code(), Some(0), "a notice is not a warning: {}", stderr(&out));
    let out = shoal(&["report", "--db", db, "--fail-on", "notice"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(out.stdout.starts_with(b"{\"schema\":\"shoal.report/v1\""), "the report was written first");
}
