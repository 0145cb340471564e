//! The `shoal` binary as scripts use it: exit statuses, error messages, `--help`, and the
//! robots.txt conformance corpus through `shoal robots`.

use std::path::PathBuf;
use std::process::{Command, Output};

fn shoal(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shoal")).args(args).env_remove("SHOAL_DB").output().expect("shoal runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_explains_every_audit_option_with_its_default() {
    let out = shoal(&["audit", "--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--file",
        "--db",
        "--allow-private",
        "--resolve",
        "--user-agent",
        "--robots-token",
        "--max-pages",
        "--max-depth",
        "--in-flight",
        "--gap-ms",
        "--timeout-s",
        "--ip-in-flight",
        "--max-resources",
    ] {
        assert!(text.contains(flag), "--help lacks {flag}:\n{text}");
    }
    for default in ["[default: 500]", "[default: 5]", "[default: 4]", "[default: 300]", "[default: 15]", "[default: 8]"]
    {
        assert!(text.contains(default), "--help lacks {default}:\n{text}");
    }
    assert!(text.contains("SHOAL_MAX_PAGES"), "env vars are shown");
}

#[test]
fn bad_start_url_is_an_input_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("a.db");
    let out = shoal(&["audit", "ftp://example.com/", "--db", db.to_str().expect("utf-8 path"), "--no-dns"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("unsupported scheme"), "{}", stderr(&out));
    let out = shoal(&["audit", "http://exa mple.com/", "--no-dns"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

#[test]
fn unreadable_url_file_is_an_input_error() {
    let out = shoal(&["audit", "--file", "/nonexistent/sites.txt", "--no-dns"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("/nonexistent/sites.txt"), "{}", stderr(&out));
}

#[test]
fn unwritable_database_is_a_database_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A directory where the database file should be.
    let out = shoal(&["audit", "http://a.test/", "--db", dir.path().to_str().expect("utf-8"), "--no-dns"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains(dir.path().to_str().expect("utf-8")), "{}", stderr(&out));
}

#[test]
fn invalid_pace_is_refused_with_the_range() {
    let out = shoal(&["audit", "http://a.test/", "--in-flight", "17", "--no-dns"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("1..=16"), "{}", stderr(&out));
    let out = shoal(&["audit", "http://a.test/", "--gap-ms", "60001", "--no-dns"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

#[test]
fn report_on_missing_database_is_an_input_error() {
    let out = shoal(&["report", "--db", "/nonexistent/x.db"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

#[test]
fn robots_cli_prints_one_verdict_per_url() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("robots.txt");
    std::fs::write(
        &file,
        "User-agent: ShoalBot/2.1\nDisallow: /private\nCrawl-delay: 2.5\nSitemap: https://a.test/s.xml\n",
    )
    .expect("write");
    let f = file.to_str().expect("utf-8");
    let out = shoal(&[
        "robots",
        "--file",
        f,
        "--agent",
        "ShoalBot/0.1 (+https://x.invalid)",
        "https://a.test/private/x",
        "https://a.test/ok",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "disallowed https://a.test/private/x\nallowed https://a.test/ok\n"
    );
    let out = shoal(&["robots", "--file", f, "--agent", "shoalbot", "--crawl-delay"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2.5");
    let out = shoal(&["robots", "--file", f, "--sitemaps"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "https://a.test/s.xml");
    let out = shoal(&["robots", "--file", "/nonexistent/robots.txt", "https://a.test/"]);
    assert_eq!(out.status.code(), Some(3));
}

/// The 256 crawler-profile cases of ../shared/robots-conformance through the real binary, with the
/// corpus's own runner. Fails (never skips) when the corpus or python3 is missing.
#[test]
fn robots_conformance_corpus_crawler_profile_passes_in_full() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/robots-conformance");
    let runner = corpus.join("run_cli.py");
    assert!(runner.exists(), "conformance runner missing at {}", runner.display());
    let bin = env!("CARGO_BIN_EXE_shoal");
    let out = Command::new("python3")
        .arg(&runner)
        .arg("--batch")
        .arg("--profile")
        .arg("crawler")
        .arg("--sitemaps-cmd")
        .arg(format!("{bin} robots --sitemaps --file {{robots_file}}"))
        .arg("--crawl-delay-cmd")
        .arg(format!("{bin} robots --crawl-delay --file {{robots_file}} --agent {{agent}}"))
        .arg(format!("{bin} robots --file {{robots_file}} --agent {{agent}} {{url}}"))
        .output()
        .expect("python3 runs the conformance runner");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    assert!(out.status.success(), "{stdout}\n{}", stderr(&out));
    assert_eq!(last, "256 passed, 0 failed", "{stdout}");
}
