//! Invalid configuration gives clear errors: the file, the line, the key, and what to do.

use crate::support::{shoal, shoal_with, stderr};
use shoal::cli::Command;
use shoal::config::{self, ConfigFileError, LoadError};
use std::path::{Path, PathBuf};

fn write(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("shoal.toml");
    std::fs::write(&path, text).expect("write the test config file");
    path
}

/// The error of loading `text` as the config file of `shoal audit`.
fn file_error(text: &str) -> (PathBuf, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write(dir.path(), text);
    let args = ["shoal", "--config", f.to_str().expect("utf-8 path"), "audit", "https://a.test/"];
    match config::load(args) {
        Err(LoadError::File(e)) => (f, e.to_string()),
        Err(e) => panic!("expected a config file error, got {e}"),
        Ok(_) => panic!("{text:?} should be refused"),
    }
}

#[test]
fn unknown_keys_are_named_with_file_line_and_hint() {
    let (f, e) = file_error("max_pages = 10\nmax_page = 200\n");
    assert!(e.contains(&format!("{}:2: unknown key `max_page`", f.display())), "{e}");
    assert!(e.contains("did you mean `max_pages`?"), "{e}");
    let (_, e) = file_error("[crawl]\nmax-depth = 3\n");
    assert!(e.contains(":2: unknown key `max-depth`: write `max_depth`"), "{e}");
    let (_, e) = file_error("[crawler]\nmax_pages = 3\n");
    assert!(e.contains(":1: unknown section [crawler]: did you mean [crawl]?"), "{e}");
    let (_, e) = file_error("config = \"other.toml\"\n");
    assert!(e.contains("unknown key `config`: a config file cannot name another one"), "{e}");
    let (_, e) = file_error("colour = \"blue\"\n");
    assert!(e.contains("unknown key `colour`") && e.contains("docs/config.md"), "{e}");
}

#[test]
fn keys_in_the_wrong_section_say_where_they_belong() {
    let (_, e) = file_error("[audit]\nredis = \"redis://r\"\n");
    assert!(e.contains("`redis` is not a setting of [audit]: it belongs in [coordinator], [worker]"), "{e}");
    let (_, e) = file_error("[worker]\ngap_ms = 100\n");
    assert!(e.contains("`gap_ms` is a crawl setting: put it in [crawl] or at the top level"), "{e}");
}

#[test]
fn wrong_types_are_explained() {
    let (f, e) = file_error("[crawl]\nmax_pages = \"many\"\n");
    assert_eq!(
        e,
        format!(
            "{}:2: [crawl] `max_pages`: expected a whole number without quotes (like `max_pages = 500`), found the string \"many\"",
            f.display()
        )
    );
    let (_, e) = file_error("no_dns = \"yes\"\n");
    assert!(e.contains("`no_dns`: expected true or false, found the string \"yes\""), "{e}");
    let (_, e) = file_error("user_agent = 5\n");
    assert!(e.contains("`user_agent`: expected a string in quotes, found the number 5"), "{e}");
    let (_, e) = file_error("gap_ms = 1.5\n");
    assert!(e.contains("found a decimal number"), "{e}");
    let (_, e) = file_error("max_depth = 70000\n");
    assert!(e.contains("`max_depth`") && e.contains("70000"), "the flag's own range check applies: {e}");
    let (_, e) = file_error("[audit]\nreport = \"pdf\"\n");
    assert!(e.contains("invalid value 'pdf'") && e.contains("one of: json, csv, html"), "{e}");
}

#[test]
fn every_problem_is_reported_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write(dir.path(), "max_page = 1\n[crawl]\nin_flight = \"x\"\n");
    let catalogue = config::Catalogue::new();
    match config::ConfigFile::load(&f, &catalogue) {
        Err(ConfigFileError::Invalid { problems, .. }) => {
            assert_eq!(problems.iter().map(|p| p.line).collect::<Vec<_>>(), [1, 3]);
        }
        other => panic!("expected two problems, got {other:?}"),
    }
}

#[test]
fn syntax_errors_name_the_line() {
    let (f, e) = file_error("max_pages = 1\ngap_ms = [1\n");
    assert!(e.starts_with(&format!("{}:2: not valid TOML", f.display())), "{e}");
}

#[test]
fn out_of_range_values_give_the_flags_own_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write(dir.path(), "in_flight = 40\n");
    let f = f.to_str().expect("utf-8 path");
    let validate = |args: &[&str]| {
        let loaded = config::load(args.iter().copied()).expect("40 parses as a number");
        let Command::Audit(a) = loaded.cli.command else { panic!("audit expected") };
        a.crawl.validate().expect_err("40 in flight is out of range").to_string()
    };
    let from_file = validate(&["shoal", "--config", f, "audit", "https://a.test/"]);
    let from_flag = validate(&["shoal", "audit", "--in-flight", "40", "https://a.test/"]);
    assert_eq!(from_file, from_flag);
    assert!(from_flag.contains("--in-flight") && from_flag.contains("40"), "{from_flag}");

    // The binary: exit 3 with that message, and `config check` says where the value came from.
    let out = shoal(&["--config", f, "audit", "https://a.test/"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains(&from_flag), "{}", stderr(&out));
    let out = shoal(&["config", "check", f]);
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    assert!(err.contains(&from_flag) && err.contains(&format!("in_flight = 40 comes from file {f}:1")), "{err}");
}

#[test]
fn a_missing_file_is_named_and_exits_3() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("nope.toml");
    let missing = missing.to_str().expect("utf-8 path");
    for args in [vec!["--config", missing, "audit", "https://a.test/"], vec!["config", "check", missing]] {
        let out = shoal(&args);
        assert_eq!(out.status.code(), Some(3), "{args:?}");
        assert!(stderr(&out).contains(&format!("cannot read the config file {missing}")), "{}", stderr(&out));
    }
    // SHOAL_CONFIG names the file too.
    let out = shoal_with(&["botpage", "--out", dir.path().to_str().expect("utf-8 path")], &[("SHOAL_CONFIG", missing)]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains(missing));
}

#[test]
fn config_check_reports_a_missing_required_setting() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write(dir.path(), "[coordinator]\nredis = \"redis://:pw@r:6379/0\"\n");
    let f = f.to_str().expect("utf-8 path");
    let out = shoal(&["config", "check", f, "--for", "coordinator"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("`token` is required by `shoal coordinator`"), "{}", stderr(&out));
    let out = shoal(&["config", "check", f, "--for", "coordinator", "--", "--token", "t0ken"]);
    assert_eq!(out.status.code(), Some(3), "a 5-character token is refused: {}", stderr(&out));
    assert!(stderr(&out).contains("is 5 characters long; it must be at least 16"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("t0ken"), "{}", stderr(&out));
    let out = shoal(&["config", "check", f, "--for", "coordinator", "--", "--token", "t0ken-0123456789"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("redis = \"redis://:***@r:6379/0\""), "passwords are masked: {text}");
    assert!(!text.contains("t0ken") && !text.contains(":pw@"), "{text}");
    assert!(text.contains("# ok: the configuration is valid for `shoal coordinator`"));
}

#[test]
fn robots_and_config_ignore_the_config_file() {
    // Support tools take everything from their arguments; a broken SHOAL_CONFIG does not stop them.
    let dir = tempfile::tempdir().expect("temp dir");
    let robots = dir.path().join("robots.txt");
    std::fs::write(&robots, "User-agent: *\nDisallow: /x\n").expect("write robots.txt");
    let missing = dir.path().join("missing.toml");
    let out = shoal_with(
        &["robots", "--file", robots.to_str().expect("utf-8 path"), "https://a.test/x"],
        &[("SHOAL_CONFIG", missing.to_str().expect("utf-8 path"))],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}
