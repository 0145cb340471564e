//! `shoal report` on the command line over the report crate's fixtures (the same databases its
//! own tests read): the comparison and the HTML report reach the user through the binary.

use crate::support;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

use shoal_report::fixtures::batch as batch_fixture;
use shoal_report::fixtures::compare::{expected_new, keys, two_audits};
use shoal_report::fixtures::html::{CHARTS, one_audit};

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

/// The exit status and standard error of `shoal report ARGS --db DB`.
fn status(args: &[&str], db: &Path) -> (Option<i32>, String) {
    let out = shoal(args, db);
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn fail_on_exits_five_after_writing_the_report_and_new_only_counts_new_findings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = batch_fixture::batch(dir.path());
    let db = b.db.path().to_owned();
    let (first, second) = (b.first.0.to_string(), b.second.0.to_string());
    drop(b);
    let sarif = dir.path().join("audit.sarif");
    let sarif_arg = sarif.to_str().expect("utf-8");

    // Errors in the audit: status 5, the report written all the same, the reason on stderr.
    let (code, err) = status(&["report", &second, "--format", "sarif", "--out", sarif_arg, "--fail-on", "error"], &db);
    assert_eq!(code, Some(5), "{err}");
    assert!(err.contains("--fail-on error: 154 findings") && err.contains("title_missing (150)"), "{err}");
    let log: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).expect("written")).expect("SARIF");
    assert_eq!(log["version"], "2.1.0");
    // Only the new error since audit 1 with --new-only; none new in a site without errors.
    let (code, err) = status(&["report", &second, "--fail-on", "error", "--new-only", "--out", sarif_arg], &db);
    assert_eq!(code, Some(5), "{err}");
    assert!(err.contains("1 new finding") && err.contains("server_error (1)"), "{err}");
    let (code, err) =
        status(&["report", &second, "--site", "gamma.test", "--fail-on", "error", "--out", sarif_arg], &db);
    assert_eq!(code, Some(0), "gamma has warnings only: {err}");
    let (code, err) =
        status(&["report", &second, "--site", "gamma.test", "--fail-on", "warning", "--out", sarif_arg], &db);
    assert_eq!(code, Some(5), "{err}");
    let (code, _) = status(&["report", &first, "--fail-on", "error", "--new-only", "--out", sarif_arg], &db);
    assert_eq!(code, Some(5), "no earlier audit: every error is new");
    // A bad level is a usage error, as any bad flag value.
    let (code, _) = status(&["report", &second, "--fail-on", "fatal"], &db);
    assert_eq!(code, Some(2));

    // JUnit: test cases fail by the same rule.
    let junit = dir.path().join("junit.xml");
    let (code, err) = status(
        &[
            "report",
            &second,
            "--format",
            "junit",
            "--out",
            junit.to_str().expect("utf-8"),
            "--fail-on",
            "error",
            "--new-only",
        ],
        &db,
    );
    assert_eq!(code, Some(5), "{err}");
    let xml = std::fs::read_to_string(&junit).expect("junit written");
    assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
}

#[test]
fn site_and_per_site_reports_on_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = batch_fixture::batch(dir.path());
    let db = b.db.path().to_owned();
    let second = b.second.0.to_string();
    let beta_id = b.sites[1].0.to_string();
    drop(b);

    // --site by start URL as typed, by id; its JSON is a v1 document of that site only.
    for wanted in ["beta.test", "https://beta.test/", beta_id.as_str()] {
        let out = shoal(&["report", &second, "--site", wanted], &db);
        assert!(out.status.success(), "{wanted}: {}", String::from_utf8_lossy(&out.stderr));
        let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(doc["sites"].as_array().map(Vec::len), Some(1));
        assert_eq!(doc["sites"][0]["start_url"], "https://beta.test/");
    }
    let html = dir.path().join("beta.html");
    let out = shoal(
        &["report", &second, "--site", "beta.test", "--format", "html", "--out", html.to_str().expect("utf-8")],
        &db,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&html).expect("written").contains("Site audit: https://beta.test/"));
    let (code, err) = status(&["report", &second, "--site", "nowhere.test"], &db);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("has no site \"nowhere.test\"") && err.contains("https://alpha.test/"), "{err}");
    let (code, err) = status(&["report", &second, "--site", "beta.test", "--format", "csv"], &db);
    assert_eq!(code, Some(3), "{err}");

    // --per-site with the operator's name and logo.
    let logo = dir.path().join("logo.svg");
    std::fs::write(&logo, r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>"#).expect("logo");
    let reports = dir.path().join("reports");
    let out = shoal(
        &[
            "report",
            &second,
            "--per-site",
            reports.to_str().expect("utf-8"),
            "--operator-name",
            "Acme Hosting",
            "--operator-logo",
            logo.to_str().expect("utf-8"),
        ],
        &db,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let index = std::fs::read_to_string(reports.join("index.html")).expect("index");
    assert!(index.contains("Prepared by Acme Hosting") && index.contains("data:image/svg+xml;base64,"));
    assert_eq!(
        std::fs::read_dir(reports.join("sites")).expect("sites").count(),
        10,
        "an HTML and a JSON file per site"
    );
    // A file that is not an image is refused before anything is written.
    let (code, err) =
        status(&["report", &second, "--format", "html", "--operator-logo", db.to_str().expect("utf-8")], &db);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("not a PNG, JPEG, GIF, WebP or SVG"), "{err}");
}
