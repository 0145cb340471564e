//! `shoal report` on the command line over the report crate's fixtures (the same databases its
//! own tests read): the comparison and the HTML report reach the user through the binary.

use crate::support;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

#[path = "../../../report/tests/it/compare_fixture.rs"]
mod compare_fixture;
#[path = "../../../report/tests/it/html_fixture.rs"]
mod html_fixture;

use compare_fixture::{expected_new, keys, two_audits};
use html_fixture::{CHARTS, one_audit};

/// Runs `shoal ARGS --db DB` (no `SHOAL_*` variable: see [`support::command`]).
fn shoal(args: &[&str], db: &Path) -> Output {
    support::command().args(args).arg("--db").arg(db).output().expect("shoal runs")
}

#[test]
fn shoal_report_compare_on_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fx = two_audits(dir.path());
    let db = fx.db.path().to_owned();
    let (old, new) = (fx.old.0.to_string(), fx.new.0.to_string());
    drop(fx);

    let out = shoal(&["report", "--compare", &old, &new], &db);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(doc["schema"], "shoal.compare/v1");
    assert_eq!(keys(&doc["sites"][0]["new"]), expected_new());

    let html = dir.path().join("changes.html");
    let out =
        shoal(&["report", "--compare", &old, &new, "--format", "html", "--out", html.to_str().expect("utf-8")], &db);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&html).expect("html written").contains("<b>3</b> fixed"));

    let out = shoal(&["report", "--compare", &old, &new, "--format", "csv"], &db);
    assert_eq!(out.status.code(), Some(3), "csv is refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("json or html"));
    let out = shoal(&["report", "--compare", &old, "99"], &db);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no audit 99"));
    let out = shoal(&["report", "--compare", &old], &db);
    assert_eq!(out.status.code(), Some(2), "two ids are required");
    let out = shoal(&["report", &new, "--compare", &old, &new], &db);
    assert_eq!(out.status.code(), Some(2), "an audit id and --compare do not go together");
}

#[test]
fn shoal_report_writes_html_with_the_cli() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, audit, _) = one_audit(dir.path());
    let db_path = db.path().to_owned();
    drop(db);
    let out = dir.path().join("report.html");
    let status =
        shoal(&["report", &audit.0.to_string(), "--format", "html", "--out", out.to_str().expect("utf-8")], &db_path);
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let doc = std::fs::read_to_string(&out).expect("report file");
    assert!(doc.starts_with("<!DOCTYPE html>") && doc.ends_with("</html>\n"));
    assert_eq!(doc.matches("<svg").count(), CHARTS.len());
}
