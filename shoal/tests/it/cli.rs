//! The `shoal` binary as scripts use it: exit statuses, error messages, `--help`, and the
//! robots.txt conformance corpus through `shoal robots`.

use crate::support::{shoal, stderr};
use std::path::PathBuf;

use shoal_test_support::robots_corpus::{Case, load_corpus};

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

/// Issue 37: a scope rule that does not compile, or is over the regex crate's limits, is a clear
/// configuration error naming the flag and the pattern, from a flag or from the environment.
#[test]
fn a_bad_scope_rule_is_refused_naming_it() {
    let out = shoal(&["audit", "http://a.test/", "--exclude", "/cart", "--exclude", "(unclosed", "--no-dns"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("--exclude \"(unclosed\""), "{}", stderr(&out));
    let huge = r"(\w{1,100}){1,100}";
    let out = crate::support::shoal_with(&["audit", "http://a.test/", "--no-dns"], &[("SHOAL_INCLUDE", huge)]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("--include") && stderr(&out).contains("compiled pattern"), "{}", stderr(&out));
    let out = shoal(&["audit", "http://a.test/", "--strip-query", "a=b", "--no-dns"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("--strip-query"), "{}", stderr(&out));
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

/// `--ai-crawlers`: every documented AI crawler's verdict, by the same rules as the audit's table.
#[test]
fn robots_cli_prints_the_ai_crawlers_verdicts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("robots.txt");
    std::fs::write(&file, "User-agent: GPTBot\nDisallow: /\n\nUser-agent: ClaudeBot\nDisallow: /shop/\n")
        .expect("write");
    let f = file.to_str().expect("utf-8");
    let out = shoal(&["robots", "--file", f, "--ai-crawlers", "https://a.test/shop/kettle"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), shoal_shared::ai_crawlers::AI_CRAWLERS.len(), "{text}");
    assert_eq!(lines[0], "GPTBot disallowed https://a.test/shop/kettle (rule /)");
    assert!(lines.contains(&"ClaudeBot disallowed https://a.test/shop/kettle (rule /shop/)"), "{text}");
    assert!(lines.contains(&"OAI-SearchBot allowed https://a.test/shop/kettle"), "{text}");
}

/// The 256 crawler-profile cases of the project's robots.txt corpus (`test-support/data/robots/`)
/// through the real binary, as a batch caller uses it: one `shoal robots` call per (body, agent)
/// with all its URLs, verdict lines in order; then `--sitemaps` and `--crawl-delay` on the cases
/// that state them. Fails (never skips) when the corpus is missing.
#[test]
fn robots_conformance_corpus_crawler_profile_passes_in_full() {
    let cases: Vec<Case> = load_corpus().into_iter().filter(Case::is_crawler).collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut files: Vec<(Vec<u8>, PathBuf)> = Vec::new();
    let mut file_for = |body: Vec<u8>| -> PathBuf {
        if let Some((_, path)) = files.iter().find(|(b, _)| *b == body) {
            return path.clone();
        }
        let path = dir.path().join(format!("robots-{}.txt", files.len()));
        std::fs::write(&path, &body).expect("write robots.txt");
        files.push((body, path.clone()));
        path
    };
    // Groups of cases sharing a body and an agent, in corpus order.
    let mut groups: Vec<(PathBuf, &str, Vec<&Case>)> = Vec::new();
    for case in &cases {
        let path = file_for(case.body());
        match groups.iter_mut().find(|(p, agent, _)| *p == path && *agent == case.agent) {
            Some((_, _, group)) => group.push(case),
            None => groups.push((path, &case.agent, vec![case])),
        }
    }

    let mut failed: Vec<String> = Vec::new();
    for (path, agent, group) in &groups {
        let file = path.to_str().expect("UTF-8 temp path");
        let mut args = vec!["robots", "--file", file, "--agent", agent];
        args.extend(group.iter().map(|c| c.url.as_str()));
        let out = shoal(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let verdicts: Vec<bool> = stdout
            .lines()
            .filter_map(|line| match line.split_whitespace().next() {
                Some("allowed") => Some(true),
                Some("disallowed") => Some(false),
                _ => None,
            })
            .collect();
        if verdicts.len() != group.len() {
            let ids: Vec<&str> = group.iter().map(|c| c.id.as_str()).collect();
            failed.push(format!(
                "{ids:?}: expected {} verdict lines, got {}; exit {:?}; stdout {stdout:?}; stderr {:?}",
                group.len(),
                verdicts.len(),
                out.status.code(),
                stderr(&out)
            ));
            continue;
        }
        for (case, allowed) in group.iter().zip(verdicts) {
            if allowed != case.allowed {
                failed.push(format!("{}: expected allowed={}, got allowed={allowed}", case.id, case.allowed));
            }
            if let Some(expected) = &case.sitemaps {
                let out = shoal(&["robots", "--sitemaps", "--file", file]);
                let got: Vec<String> = String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(String::from)
                    .collect();
                if &got != expected {
                    failed.push(format!("{}: sitemaps: expected {expected:?}, got {got:?}", case.id));
                }
            }
            if let Some(expected) = case.crawl_delay {
                let out = shoal(&["robots", "--crawl-delay", "--file", file, "--agent", agent]);
                let stdout = String::from_utf8_lossy(&out.stdout);
                let first = stdout.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
                if first.parse::<f64>().map_or(true, |got| (got - expected).abs() > 1e-6) {
                    failed.push(format!("{}: crawl-delay: expected {expected}, got {first:?}", case.id));
                }
            }
        }
    }
    assert!(
        failed.is_empty(),
        "crawler profile through `shoal robots`: {} of {} cases failed:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
}
