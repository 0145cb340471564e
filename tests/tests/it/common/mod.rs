//! Shared helpers for the end-to-end tests: run `shoal audit` in-process against a test server
//! (the audit database is read back with [`crate::db`]).

#![allow(dead_code, reason = "each test binary uses a different subset of the helpers")]

use clap::Parser;
use shoal::cli::Cli;
use shoal::{Exit, run};
use shoal_coordinator::local::{AuditRequest, MakeObserver, run_audit as run_local};
use shoal_tests::log::RequestLog;
use shoal_tests::testsite::{Site, TestServer};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Upper bound on any one audit in a test: every request loop is bounded in time.
pub const AUDIT_DEADLINE: Duration = Duration::from_secs(120);

/// One finished in-process audit.
pub struct Audited {
    pub exit: Exit,
    pub db: PathBuf,
    pub _dir: tempfile::TempDir,
}

/// Runs `shoal audit START... --db TMP --allow-private --no-dns --no-progress --resolve H=127.0.0.1
/// (for every host given; their www twins do not resolve) EXTRA...` in this process.
/// `--deny-private` among EXTRA leaves `--allow-private` out. The server is only there for the
/// host names: see [`audit_in_process`].
pub async fn audit(server: &TestServer, hosts: &[&str], starts: &[String], extra: &[&str]) -> Audited {
    let _ = server;
    audit_in_process(hosts, starts, extra).await
}

/// [`audit`], for tests that do not hold the server.
pub async fn audit_in_process(hosts: &[&str], starts: &[String], extra: &[&str]) -> Audited {
    let (args, db, dir) = audit_args(hosts, starts, extra);
    run_audit(&args, db, dir).await
}

/// [`audit`] with the crawler's test-only fault injection on (`CrawlSettings::inject_faults`,
/// which no flag sets): the `/__shoal_fault/...` paths panic, abort or hang.
pub async fn audit_with_faults(hosts: &[&str], starts: &[String], extra: &[&str]) -> Audited {
    let (args, db, dir) = audit_args(hosts, starts, extra);
    let cli = Cli::try_parse_from(&args).expect("arguments parse");
    let shoal::cli::Command::Audit(a) = cli.command else { panic!("not `shoal audit` arguments") };
    let mut config = shoal::cli::CrawlConfig::try_from(&a.crawl).expect("valid settings");
    config.worker.crawl.inject_faults = true;
    let starts = shoal::cli::start_urls(&a.urls, a.file.as_ref()).expect("start URLs");
    let req = AuditRequest {
        starts,
        db: a.db.clone(),
        engine: config.engine,
        worker: config.worker,
        concurrency: a.concurrency.max(1),
    };
    let observer: MakeObserver = Box::new(|_| Arc::new(Quiet));
    let outcome = tokio::time::timeout(AUDIT_DEADLINE, run_local(req, observer, CancellationToken::new()))
        .await
        .expect("audit finished within the deadline")
        .unwrap_or_else(|e| panic!("audit failed: {e}"));
    let exit = if outcome.interrupted { Exit::Interrupted } else { Exit::Ok };
    Audited { exit, db, _dir: dir }
}

/// An observer of an audit that shows nothing.
#[derive(Debug)]
struct Quiet;

impl shoal_coordinator::engine::Observer for Quiet {}

/// The command line of `shoal audit` that [`audit_in_process`] runs, its database and folder.
fn audit_args(hosts: &[&str], starts: &[String], extra: &[&str]) -> (Vec<String>, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    let mut args: Vec<String> = vec!["shoal".into(), "audit".into()];
    args.extend(starts.iter().cloned());
    args.extend(["--db".into(), db.display().to_string(), "--no-dns".into(), "--no-progress".into()]);
    if !extra.contains(&"--deny-private") {
        args.push("--allow-private".into());
    }
    for h in hosts {
        args.push("--resolve".into());
        args.push(format!("{h}=127.0.0.1"));
    }
    args.extend(extra.iter().filter(|a| **a != "--deny-private").map(|s| (*s).to_owned()));
    (args, db, dir)
}

/// Runs the `shoal audit` command line `args` (writing `db` in `dir`) in this process, within
/// [`AUDIT_DEADLINE`].
pub async fn run_audit(args: &[String], db: PathBuf, dir: tempfile::TempDir) -> Audited {
    let cli = Cli::try_parse_from(args).expect("arguments parse");
    let exit = tokio::time::timeout(AUDIT_DEADLINE, run(cli, CancellationToken::new()))
        .await
        .expect("audit finished within the deadline")
        .unwrap_or_else(|f| panic!("audit failed: {:#}", f.error));
    Audited { exit, db, _dir: dir }
}

/// Audits `host`'s start page on a running server with `--gap-ms 0` and `extra`, then stops the
/// server: the audit and the server's request log.
pub async fn audit_host(server: TestServer, host: &str, extra: &[&str]) -> (Audited, RequestLog) {
    let mut args = vec!["--gap-ms", "0"];
    args.extend_from_slice(extra);
    let run = audit(&server, &[host], &[server.url(host, "/")], &args).await;
    let log = server.shutdown().await;
    (run, log)
}

/// Paths of the standard probes every audit makes (SPEC §2), besides robots.txt.
pub fn is_standard_probe(path: &str) -> bool {
    path == "/robots.txt"
        || path == "/llms.txt"
        || path == "/.well-known/security.txt"
        || path.starts_with("/shoal-soft-404-check-")
}

/// The paths requested from `host` other than robots.txt and the standard probes.
pub fn page_paths(log: &RequestLog, host: &str) -> Vec<String> {
    log.paths(host).into_iter().filter(|p| !is_standard_probe(p)).collect()
}

/// A site of two pages that link to each other, for tests about what surrounds a crawl (tokens,
/// retention) rather than the crawl itself.
pub fn two_page_site(host: &str) -> Site {
    Site::new(host)
        .page(
            "/",
            r#"<html lang="en"><head><title>Home</title></head><body><h1>Home</h1><a href="/a">a</a></body></html>"#,
        )
        .page(
            "/a",
            r#"<html lang="en"><head><title>A</title></head><body><h1>A</h1><a href="/">home</a></body></html>"#,
        )
}
