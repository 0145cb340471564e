//! End-to-end through the real `shoal` binary as a child process: signals, exit statuses, `--file`,
//! log format. The test server runs in the test's own runtime and logs every request.

use serde_json::Value;
use shoal_tests::testsite::{Site, TestServer};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::db::{pages_so_far, strings};
use crate::procs::shoal_command;

/// Waits for a child at most `deadline`; kills it (this child, by its handle) if it overruns.
fn wait_deadline(child: &mut Child, deadline: Duration) -> Option<ExitStatus> {
    let until = Instant::now() + deadline;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// Async twin of [`wait_deadline`], so the test server keeps serving while the child runs.
async fn wait_child(child: &mut Child, deadline: Duration) -> Option<ExitStatus> {
    let until = Instant::now() + deadline;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// A `shoal` command with a clean environment (no `SHOAL_*` settings from the caller) whose
/// standard output and error go to files in `dir`.
fn shoal(dir: &Path) -> Command {
    let mut cmd = shoal_command();
    cmd.current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join("stdout")).expect("stdout file"))
        .stderr(std::fs::File::create(dir.join("stderr")).expect("stderr file"));
    cmd
}

fn stderr_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("stderr")).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_cleanly_keeps_pages_marks_cancelled_and_exits_130() {
    let server = TestServer::start(vec![Site::generated("slow.test", 200, 4).latency(Duration::from_millis(50))])
        .await
        .expect("server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    let mut child = shoal(dir.path())
        .args(["audit", &server.url("slow.test", "/"), "--db"])
        .arg(&db)
        .args(["--allow-private", "--no-dns", "--no-progress", "--gap-ms", "50"])
        .args(["--resolve", &server.resolve_arg("slow.test")])
        .spawn()
        .expect("shoal starts");

    let until = Instant::now() + Duration::from_secs(15);
    let mut seen = 0;
    while seen < 5 {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("shoal ended before it was interrupted ({status}):\n{}", stderr_of(dir.path()));
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no pages in the database after 15 s:\n{}\n{}", stderr_of(dir.path()), server.log().dump());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        seen = pages_so_far(&db, None);
    }

    let signalled = Instant::now();
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("run kill");
    assert!(kill.success(), "kill -INT failed");
    let status = wait_child(&mut child, Duration::from_secs(25)).await;
    let took = signalled.elapsed();
    let port = server.port();
    let log = server.shutdown().await;
    let stderr = stderr_of(dir.path());
    let status = status.unwrap_or_else(|| panic!("shoal did not exit within 25 s of SIGINT:\n{stderr}"));
    assert_eq!(status.code(), Some(130), "{status} after {took:?}\n{stderr}");

    let status_row = strings(&db, "SELECT status FROM audits");
    assert_eq!(status_row, vec!["cancelled".to_owned()], "{stderr}");
    let stored = pages_so_far(&db, None);
    assert!(stored >= seen, "{stored} pages stored, {seen} seen before the signal");
    let urls = strings(&db, "SELECT url FROM pages");
    let requested: Vec<String> = log.all().iter().map(|r| format!("http://slow.test:{port}{}", r.path)).collect();
    // What was crawled is kept: every page the server answered (requests in flight at the signal
    // were let finish) is in the database.
    let answered: Vec<String> = log
        .all()
        .iter()
        .filter(|r| r.status.is_some() && r.path != "/robots.txt")
        .map(|r| format!("http://slow.test:{port}{}", r.path))
        .collect();
    let lost: Vec<&String> = answered.iter().filter(|u| !urls.contains(u)).collect();
    assert!(lost.is_empty(), "answered but not stored: {lost:?}\n{}\n{stderr}", log.dump());
    for u in &urls {
        assert!(requested.contains(u), "{u} stored but never requested\n{}", log.dump());
    }
    let page_requests = log.paths("slow.test").iter().filter(|p| *p != "/robots.txt").count();
    assert!(page_requests < 200, "the crawl finished before the signal: the test proves nothing\n{}", log.dump());
    let late: Vec<String> = log
        .all()
        .iter()
        .filter(|r| r.start > signalled + Duration::from_secs(1))
        .map(|r| format!("{} {} ({:?} after the signal)", r.method, r.path, r.start - signalled))
        .collect();
    assert!(late.is_empty(), "requests started more than 1 s after SIGINT: {late:?}\n{}", log.dump());
    assert!(log.all().iter().all(|r| r.end.is_some()), "a request was left open\n{}", log.dump());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_of_sites_skips_comments_and_blank_lines() {
    let server = TestServer::start(vec![
        Site::generated("s1.test", 5, 2),
        Site::generated("s2.test", 5, 2),
        Site::generated("s3.test", 5, 2),
        Site::generated("s4.test", 5, 2),
    ])
    .await
    .expect("server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    let starts: Vec<String> = ["s1.test", "s2.test", "s3.test"].iter().map(|h| server.url(h, "/")).collect();
    let file = dir.path().join("sites.txt");
    std::fs::write(
        &file,
        format!(
            "# client sites, one per line\n{}\n\n{}\n   \n{}\n# {}\n",
            starts[0],
            starts[1],
            starts[2],
            server.url("s4.test", "/")
        ),
    )
    .expect("write sites.txt");
    let mut cmd = shoal(dir.path());
    cmd.args(["audit", "--file"]).arg(&file).arg("--db").arg(&db).args([
        "--allow-private",
        "--no-dns",
        "--no-progress",
        "--gap-ms",
        "0",
    ]);
    for h in ["s1.test", "s2.test", "s3.test", "s4.test"] {
        cmd.args(["--resolve", &server.resolve_arg(h)]);
    }
    let mut child = cmd.spawn().expect("shoal starts");
    let status = wait_child(&mut child, Duration::from_secs(30)).await;
    let log = server.shutdown().await;
    let stderr = stderr_of(dir.path());
    let status = status.unwrap_or_else(|| panic!("shoal did not finish within 30 s:\n{stderr}"));
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.lines().any(|l| l.contains("3 site(s)")), "summary line:\n{stderr}");
    assert_eq!(log.hosts(), vec!["s1.test", "s2.test", "s3.test"], "{}", log.dump());
    for h in ["s1.test", "s2.test", "s3.test"] {
        let pages = log.paths(h).iter().filter(|p| p.starts_with("/p/") || *p == "/").count();
        assert_eq!(pages, 5, "5 pages\n{}", log.dump());
    }
    let mut stored = strings(&db, "SELECT start_url FROM sites ORDER BY id");
    stored.sort();
    assert_eq!(stored, starts);
    assert_eq!(strings(&db, "SELECT status FROM audits"), vec!["done".to_owned()]);
}

/// `--active-sites 2`: six sites are crawled two at a time, each one whole (robots.txt, pages,
/// probes) before a waiting one starts, as the server sees it: at no request are more than two
/// sites between their first and last request. Every site is crawled completely.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn active_sites_bounds_how_many_sites_are_crawled_at_once() {
    let hosts: Vec<String> = (1..=6).map(|i| format!("w{i}.test")).collect();
    let server =
        TestServer::start(hosts.iter().map(|h| Site::generated(h, 6, 2)).collect()).await.expect("server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    let mut cmd = shoal(dir.path());
    cmd.arg("audit").arg("--db").arg(&db).args(["--allow-private", "--no-dns", "--no-progress", "--gap-ms", "20"]);
    cmd.args(["--active-sites", "2"]);
    for h in &hosts {
        cmd.arg(server.url(h, "/")).args(["--resolve", &server.resolve_arg(h)]);
    }
    let mut child = cmd.spawn().expect("shoal starts");
    let status = wait_child(&mut child, Duration::from_secs(60)).await;
    let log = server.shutdown().await;
    let stderr = stderr_of(dir.path());
    let status = status.unwrap_or_else(|| panic!("shoal did not finish within 60 s:\n{stderr}"));
    assert_eq!(status.code(), Some(0), "{stderr}");
    for h in &hosts {
        let pages = log.paths(h).iter().filter(|p| p.starts_with("/p/") || *p == "/").count();
        assert_eq!(pages, 6, "6 pages of {h}\n{}", log.dump());
    }
    // Each site's span of requests (its www twin's robots.txt included).
    let site_of = |host: &str| host.trim_start_matches("www.").to_owned();
    let mut spans: std::collections::BTreeMap<String, (Instant, Instant)> = std::collections::BTreeMap::new();
    for r in log.all() {
        let end = r.end.unwrap_or(r.start);
        let span = spans.entry(site_of(&r.host)).or_insert((r.start, end));
        span.0 = span.0.min(r.start);
        span.1 = span.1.max(end);
    }
    assert_eq!(spans.len(), 6, "{}", log.dump());
    for r in log.all() {
        let open: Vec<&String> =
            spans.iter().filter(|(_, (a, b))| *a <= r.start && r.start <= *b).map(|(h, _)| h).collect();
        assert!(open.len() <= 2, "{} {}{} while {open:?} were being crawled\n{}", r.method, r.host, r.path, log.dump());
    }
    assert_eq!(strings(&db, "SELECT DISTINCT status FROM sites"), vec!["done".to_owned()]);
}

/// Runs `shoal --log-format json audit http://nowhere.test/ --no-dns` (a host that cannot resolve:
/// no DNS query is sent, nothing is contacted); returns the exit status, the database and stderr.
fn audit_unresolvable(dir: &Path) -> (ExitStatus, PathBuf, String) {
    let db = dir.join("audit.db");
    let mut child = shoal(dir)
        .args(["--log-format", "json", "audit", "http://nowhere.test/", "--db"])
        .arg(&db)
        .args(["--no-dns", "--no-progress"])
        .spawn()
        .expect("shoal starts");
    let status = wait_deadline(&mut child, Duration::from_secs(30));
    let stderr = stderr_of(dir);
    let status = status.unwrap_or_else(|| panic!("shoal did not finish within 30 s:\n{stderr}"));
    (status, db, stderr)
}

fn is_json_object(line: &str) -> bool {
    serde_json::from_str::<Value>(line).is_ok_and(|v| v.is_object())
}

#[test]
fn unresolvable_start_host_is_a_finding_not_a_failure_and_logs_are_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (status, db, stderr) = audit_unresolvable(dir.path());
    assert_eq!(status.code(), Some(0), "an unreachable site is a finding, not a failure of Shoal\n{stderr}");
    let codes = strings(&db, "SELECT code FROM findings");
    assert!(codes.contains(&"start_unreachable".to_owned()), "{codes:?}\n{stderr}");
    let urls = strings(&db, "SELECT url FROM findings WHERE code = 'start_unreachable'");
    assert!(urls.iter().all(|u| u.starts_with("http://nowhere.test/")), "{urls:?}");
    assert_eq!(strings(&db, "SELECT status FROM audits"), vec!["done".to_owned()]);

    let json: Vec<Value> =
        stderr.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(Value::is_object).collect();
    assert!(!json.is_empty(), "no JSON log lines on stderr:\n{stderr}");
    for entry in &json {
        assert!(
            entry.get("level").is_some() && entry.get("timestamp").is_some(),
            "a log line without level or timestamp: {entry}"
        );
    }
}

#[test]
fn json_log_format_writes_nothing_but_json_lines_to_stderr() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (status, _db, stderr) = audit_unresolvable(dir.path());
    assert_eq!(status.code(), Some(0), "{stderr}");
    let not_json: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty() && !is_json_object(l)).collect();
    assert!(
        not_json.is_empty(),
        "with --log-format json (\"for log collectors\") every stderr line should be a JSON object, \
         but these are not: {not_json:#?}"
    );
}
