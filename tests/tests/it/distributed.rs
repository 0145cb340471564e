//! Distributed audits end to end: a real `shoal coordinator` and real `shoal worker` processes on a
//! private `redis-server`, crawling the in-process test web server. Workers are killed with SIGKILL,
//! Redis and the coordinator are restarted mid-audit, and each test asserts, from the server's own
//! request log and from the audit database, that nothing was lost or duplicated and that the
//! per-host and per-IP limits held throughout.
//!
//! The tests run one at a time (they share two cores with real processes, and the pace assertions
//! are about milliseconds); each is bounded in time, and every child process is killed by its
//! handle's `Drop` whatever way the test ends.

use crate::common;
use crate::db::{self, pages_so_far};
use crate::finding_support::titled_page;
use crate::procs;

use procs::{Coordinator, Proc, agent_of, ensure_built, tails, worker};
use rusqlite::OptionalExtension;
use serde_json::json;
use shoal::Exit;
use shoal_tests::log::{LoggedRequest, RequestLog};
use shoal_tests::redis::RedisServer;
use shoal_tests::sentinel::SentinelGroup;
use shoal_tests::testsite::{Route, Site, TestServer};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Scheduling slack between the frontier starting a gap (at claim time) and the server seeing the
/// request; a real violation (two requests inside one gap) shows up as a gap near zero.
const JITTER: Duration = Duration::from_millis(15);
/// What the test coordinators publish as the lease time (`--lease-ttl-s 5`).
const LEASE_TTL: Duration = Duration::from_secs(5);
/// How often the coordinator reclaims expired leases (`service::REAP_EVERY`).
const REAP_EVERY: Duration = Duration::from_secs(1);
/// Pages of each generated test site, and links per page.
const PAGES: usize = 30;
const LINKS: usize = 4;

/// One test at a time: see the module comment. A tokio mutex works across the tests' runtimes.
pub(crate) static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[expect(clippy::print_stderr, reason = "timings of the runs, shown with --nocapture")]
fn note(msg: &str) {
    eprintln!("[distributed] {msg}");
}

// ---------------------------------------------------------------------------------------------
// Sites

/// A generated site with a few flaws, so that findings (worker and site-level analysis) exist:
/// the leaves `/p/28` and `/p/29` share a title, have no meta description and link to `/gone`
/// (404).
fn flawed_site(host: &str, latency: Duration) -> Site {
    let flaw = r#"<!doctype html><html lang="en"><head><title>Shared title</title></head>
        <body><h1>Flaw</h1><a href="/gone">gone</a> <a href="/">home</a></body></html>"#;
    Site::generated(host, PAGES, LINKS)
        .latency(latency)
        .route("/p/28", Route::html(flaw))
        .route("/p/29", Route::html(flaw))
}

/// A small hand-made site: a 404 link, a redirect chain, a duplicate title, a robots.txt
/// disallow (linked directly and as a redirect target) and an image.
fn handmade_site(host: &str) -> Site {
    Site::new(host)
        .robots_txt("User-agent: *\nDisallow: /private\n")
        .page(
            "/",
            r#"<html lang="en"><head><title>Home</title><meta name="description" content="home"></head>
            <body><h1>Home</h1>
            <a href="/missing">missing</a> <a href="/r1">chain</a> <a href="/dup-a">a</a>
            <a href="/dup-b">b</a> <a href="/private/x">private</a> <a href="/to-private">hop</a>
            <img src="/logo.png" alt="logo"></body></html>"#,
        )
        .route("/r1", Route::redirect(301, "/r2"))
        .route("/r2", Route::redirect(302, "/final"))
        .page("/final", &titled_page("Final", "final", "Final"))
        .page("/dup-a", &titled_page("Same title", "a", "A"))
        .page("/dup-b", &titled_page("Same title", "b", "B"))
        .route("/to-private", Route::redirect(301, "/private/y"))
        .page("/private/x", "<title>never</title>")
        .page("/private/y", "<title>never</title>")
        .route("/logo.png", Route::bytes("image/png", vec![0x89, b'P', b'N', b'G']))
}

fn hosts(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}.test")).collect()
}

// ---------------------------------------------------------------------------------------------
// The audit database, read back

/// What one site of an audit holds, with URLs reduced to their path (site ids and ports differ
/// between databases and servers; URLs are compared by what they name).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct SiteRows {
    /// (kind, path, status).
    pages: BTreeSet<(String, String, Option<i64>)>,
    /// (code, path).
    findings: BTreeSet<(String, String)>,
}

/// Everything about one audit in a database.
#[derive(Debug, Default)]
struct AuditRows {
    status: String,
    finished: bool,
    /// Per site, keyed by its start host.
    sites: BTreeMap<String, SiteRows>,
    /// Page rows of kind `page` in total.
    page_rows: usize,
    /// Problems with the stored rows themselves: duplicates, counters that disagree with the rows,
    /// sites not marked done.
    problems: Vec<String>,
}

/// `http://host:port/path` → (host, `/path`).
fn split_url(url: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://")).unwrap_or(url);
    let (authority, path) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
    let host = authority.split(':').next().unwrap_or(authority);
    (host.to_owned(), path.to_owned())
}

/// A URL as compared across databases and servers: its path when it is on the site's own host
/// over http, else `scheme://HOST/path` with the site's host written `SITE` (a www twin is
/// `www.SITE`) and the port left out, since each test server has its own.
fn relative(site_host: &str, url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, path) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    if scheme == "http" && host == site_host {
        return path.to_owned();
    }
    let host = match host.strip_suffix(site_host) {
        Some(prefix) if prefix.is_empty() || prefix.ends_with('.') => format!("{prefix}SITE"),
        _ => host.to_owned(),
    };
    format!("{scheme}://{host}{path}")
}

fn read_audit(db: &Path, audit: u64) -> AuditRows {
    let conn = db::open_read_only(db).expect("open the audit database");
    let audit = i64::try_from(audit).expect("audit id fits");
    let (status, finished): (String, Option<i64>) = conn
        .query_row("SELECT status, finished_at_ms FROM audits WHERE id = ?1", [audit], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .expect("read the audit")
        .unwrap_or_else(|| ("(no such audit)".into(), None));
    let mut out = AuditRows { status, finished: finished.is_some(), ..AuditRows::default() };
    let mut stmt = conn
        .prepare(
            "SELECT s.id, s.start_url, s.status, s.pages, s.urls, s.findings,
                    (SELECT count(*) FROM pages p WHERE p.site_id = s.id AND p.kind = 'page'),
                    (SELECT count(*) FROM pages p WHERE p.site_id = s.id),
                    (SELECT count(*) FROM findings f WHERE f.site_id = s.id)
             FROM sites s WHERE s.audit_id = ?1 ORDER BY s.id",
        )
        .expect("prepare sites");
    type SiteRow = (i64, String, String, i64, i64, i64, i64, i64, i64);
    let sites: Vec<SiteRow> = stmt
        .query_map([audit], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?))
        })
        .expect("query sites")
        .collect::<Result<_, _>>()
        .expect("site rows");
    for (id, start, status, pages, urls, findings, real_pages, real_urls, real_findings) in sites {
        let (host, _) = split_url(&start);
        if status != "done" {
            out.problems.push(format!("site {id} ({start}) is {status}"));
        }
        if (pages, urls, findings) != (real_pages, real_urls, real_findings) {
            out.problems.push(format!(
                "site {id} ({start}): counters pages/urls/findings = {pages}/{urls}/{findings}, rows = {real_pages}/{real_urls}/{real_findings}"
            ));
        }
        let mut rows = SiteRows::default();
        let mut ps = conn.prepare("SELECT kind, url, status FROM pages WHERE site_id = ?1").expect("prepare pages");
        let pages: Vec<(String, String, Option<i64>)> = ps
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query pages")
            .collect::<Result<_, _>>()
            .expect("page rows");
        // The soft-404 probe asks for a random path: compared as `.../*`, in findings too.
        let mut random: BTreeMap<String, String> = BTreeMap::new();
        for (kind, url, st) in pages {
            let mut path = relative(&host, &url);
            if kind == "probe_soft_404" {
                let cut = path.rfind('/').map_or(0, |i| i + 1);
                path = format!("{}*", &path[..cut]);
                random.insert(url.clone(), path.clone());
            }
            if kind == "page" {
                out.page_rows += 1;
            }
            if !rows.pages.insert((kind.clone(), path.clone(), st)) {
                out.problems.push(format!("site {id}: page {kind} {path} twice"));
            }
        }
        let mut fs = conn
            .prepare("SELECT code, url, count(*) FROM findings WHERE site_id = ?1 GROUP BY code, url")
            .expect("prepare findings");
        let findings: Vec<(String, String, i64)> = fs
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query findings")
            .collect::<Result<_, _>>()
            .expect("finding rows");
        for (code, url, n) in findings {
            let path = random.get(&url).cloned().unwrap_or_else(|| relative(&host, &url));
            if n > 1 {
                out.problems.push(format!("site {id}: finding {code} {path} stored {n} times"));
            }
            rows.findings.insert((code, path));
        }
        if out.sites.insert(host.clone(), rows).is_some() {
            out.problems.push(format!("two sites for {host}"));
        }
    }
    out
}

/// The pages and findings of an undisturbed `shoal audit` (embedded frontier, in this process) of
/// one site of the given shape on its own server: what every site of that shape must show.
async fn baseline(site: impl Fn(&str) -> Site) -> SiteRows {
    let server = TestServer::start(vec![site("base.test")]).await.expect("baseline server starts");
    let run = common::audit(&server, &["base.test"], &[server.url("base.test", "/")], &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    drop(server.shutdown().await);
    let rows = read_audit(&run.db, 1);
    assert!(rows.problems.is_empty(), "baseline: {:?}", rows.problems);
    rows.sites.get("base.test").cloned().expect("the baseline site is in its database")
}

/// The paths on the site's own host that every crawl of it requests (the random soft-404 probe
/// left out).
fn fixed_paths(rows: &SiteRows) -> impl Iterator<Item = &String> {
    rows.pages.iter().map(|p| &p.1).filter(|p| p.starts_with('/') && !p.ends_with('*'))
}

/// Differences between each expected host's rows and what the audit stored.
fn compare(rows: &AuditRows, expected: &BTreeMap<String, SiteRows>) -> Vec<String> {
    let mut diffs = Vec::new();
    for (host, want) in expected {
        let Some(got) = rows.sites.get(host) else {
            diffs.push(format!("{host}: no site in the database"));
            continue;
        };
        let missing: Vec<_> = want.pages.difference(&got.pages).collect();
        let extra: Vec<_> = got.pages.difference(&want.pages).collect();
        if !missing.is_empty() || !extra.is_empty() {
            diffs.push(format!("{host}: pages missing {missing:?}, unexpected {extra:?}"));
        }
        let missing: Vec<_> = want.findings.difference(&got.findings).collect();
        let extra: Vec<_> = got.findings.difference(&want.findings).collect();
        if !missing.is_empty() || !extra.is_empty() {
            diffs.push(format!("{host}: findings missing {missing:?}, unexpected {extra:?}"));
        }
    }
    for host in rows.sites.keys() {
        if !expected.contains_key(host) {
            diffs.push(format!("{host}: a site nobody submitted"));
        }
    }
    diffs
}

// ---------------------------------------------------------------------------------------------
// The request log

/// Politeness from the server's log: per host at most `in_flight` at once and request starts at
/// least `gap - JITTER` apart; across the IP (every host here is on 127.0.0.1) at most `ip_cap`.
fn politeness_violations(
    log: &RequestLog,
    hosts: &[String],
    in_flight: usize,
    gap: Duration,
    ip_cap: usize,
) -> Vec<String> {
    let mut v = Vec::new();
    for h in hosts {
        let max = log.max_in_flight(h);
        if max > in_flight {
            v.push(format!("{h}: {max} requests in flight, limit {in_flight}"));
        }
        if let Some(min) = log.min_gap(h)
            && min + JITTER < gap
        {
            v.push(format!("{h}: request starts {min:?} apart, gap {gap:?}"));
        }
        if log.first_path(h).as_deref() != Some("/robots.txt") {
            v.push(format!("{h}: first request {:?}, not /robots.txt", log.first_path(h)));
        }
    }
    let all = log.max_in_flight_where(|_: &LoggedRequest| true);
    if all > ip_cap {
        v.push(format!("{all} requests in flight to 127.0.0.1, cap {ip_cap}"));
    }
    v
}

/// The log lines of the hosts involved in violations (the whole log is too long to read).
fn dump_hosts(log: &RequestLog, violations: &[String]) -> String {
    let involved: BTreeSet<&str> = violations.iter().filter_map(|v| v.split(':').next()).collect();
    let part: Vec<LoggedRequest> = log.all().iter().filter(|r| involved.contains(r.host.as_str())).cloned().collect();
    let part = RequestLog::from(part);
    let text = if part.is_empty() { log.dump() } else { part.dump() };
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(400);
    lines[from..].join("\n")
}

/// URLs requested more than once: (host, path, when the repeat started, counted from `since`).
fn fetched_twice(log: &RequestLog, hosts: &[String], since: Instant) -> Vec<(String, String, Duration)> {
    let mut again = Vec::new();
    for h in hosts {
        let reqs = log.for_host(h);
        for (i, r) in reqs.iter().enumerate() {
            if let Some(next) = reqs[i + 1..].iter().find(|n| n.path == r.path) {
                again.push((h.clone(), r.path.clone(), next.start.saturating_duration_since(since)));
            }
        }
    }
    again
}

/// Waits (bounded) until the database holds at least `n` pages; panics with the processes' logs if
/// it does not, or if a process died.
async fn wait_for_pages(db: &Path, n: i64, deadline: Duration, procs: &mut [&mut Proc]) -> i64 {
    let until = Instant::now() + deadline;
    loop {
        let seen = pages_so_far(db, Some("page"));
        if seen >= n {
            return seen;
        }
        for p in procs.iter_mut() {
            if let Some(status) = p.exited() {
                panic!("{} exited ({status}) before {n} pages were stored\n{}", p.name(), p.tail(procs::TAIL_LINES));
            }
        }
        if Instant::now() > until {
            let all: Vec<&Proc> = procs.iter().map(|p| &**p).collect();
            panic!("only {seen} pages stored after {deadline:?} (waiting for {n})\n{}", tails(all));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The fleet of the fault tests

/// The limits of the fault tests' audits: per host the gap and the in-flight cap (submitted with
/// the audit), per IP the coordinator's `--ip-in-flight`.
const GAP: Duration = Duration::from_millis(20);
const IN_FLIGHT: usize = 2;
const IP_CAP: usize = 8;

/// How a fault test's fleet is made.
struct FleetSpec {
    /// The sites: `PREFIX0.test`, `PREFIX1.test`, ..., [`flawed_site`]s answering after `latency`.
    prefix: &'static str,
    sites: usize,
    latency: Duration,
    /// A redis-server with an append-only file, so that it can be restarted.
    persistent: bool,
    /// A master, its replica and three Sentinels instead of one redis-server (`redis+sentinel://`).
    sentinel: bool,
    /// The fleet's Redis namespace.
    ns: &'static str,
    /// Workers `w1`, `w2`, ... (concurrency 4 each).
    workers: usize,
    /// [`Fleet::start`] returns once `1/progress` of the audit's pages are stored.
    progress: i64,
}

/// The usual fleet: 20 sites answering after 40 ms, two workers, a fifth of the pages stored; each
/// test names its own hosts and namespace.
const FLEET: FleetSpec = FleetSpec {
    prefix: "f",
    sites: 20,
    latency: Duration::from_millis(40),
    persistent: false,
    sentinel: false,
    ns: "fleet",
    workers: 2,
    progress: 5,
};

/// A fault test's distributed audit under way: a private redis-server, a coordinator and workers
/// crawling the test server, the audit submitted and part of it stored.
struct Fleet {
    /// What each site must show: an undisturbed audit of one ([`baseline`]).
    want: SiteRows,
    names: Vec<String>,
    server: TestServer,
    redis: FleetRedis,
    dir: tempfile::TempDir,
    db: PathBuf,
    ns: &'static str,
    coord: Coordinator,
    workers: Vec<Proc>,
    /// When the audit was submitted.
    started: Instant,
    audit: u64,
    /// Page rows of kind `page` the audit stores in all.
    total: i64,
}

impl Fleet {
    async fn start(spec: FleetSpec) -> Fleet {
        ensure_built().await;
        let latency = spec.latency;
        let want = baseline(|h| flawed_site(h, latency)).await;
        let names = hosts(spec.prefix, spec.sites);
        let server =
            TestServer::start(names.iter().map(|h| flawed_site(h, latency)).collect()).await.expect("server starts");
        let redis = if spec.sentinel {
            // With a password, as production runs it: the URL's form with one is tested too.
            FleetRedis::Sentinels(
                SentinelGroup::start_with_password(Some("fleet-redis-pw-0123"))
                    .expect("a master, its replica and three Sentinels start"),
            )
        } else {
            FleetRedis::One(
                if spec.persistent { RedisServer::start_persistent() } else { RedisServer::start() }
                    .expect("redis-server starts"),
            )
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("audit.db");
        let ns = spec.ns;
        let mut coord = fleet_coordinator(dir.path(), &redis.url(), ns, &db).await;
        let mut workers: Vec<Proc> =
            (1..=spec.workers).map(|i| worker(dir.path(), &format!("w{i}"), &redis.url(), ns, &names, 4)).collect();
        let started = Instant::now();
        let starts: Vec<String> = names.iter().map(|h| server.url(h, "/")).collect();
        let gap_ms = u64::try_from(GAP.as_millis()).expect("fits");
        let audit = coord.submit(&starts, json!({"gap_ms": gap_ms, "in_flight": IN_FLIGHT})).await;
        let total = i64::try_from(want.pages.iter().filter(|p| p.0 == "page").count() * names.len()).expect("fits");
        {
            let mut all: Vec<&mut Proc> = workers.iter_mut().collect();
            all.push(&mut coord.proc);
            wait_for_pages(&db, total / spec.progress, Duration::from_secs(60), &mut all).await;
        }
        Fleet { want, names, server, redis, dir, db, ns, coord, workers, started, audit, total }
    }
}

/// Asserts what a fault test's audit must have stored, once it is over: the audit is done, its rows
/// are sound (no duplicates, counters right, every site done) and every site holds what an
/// undisturbed audit of one holds (`want`). `logs` go in the messages. The rows, for more checks.
fn assert_as_baseline(db: &Path, audit: u64, names: &[String], want: &SiteRows, logs: &str) -> AuditRows {
    let rows = read_audit(db, audit);
    assert_eq!(rows.status, "done");
    assert!(rows.problems.is_empty(), "{:?}\n{logs}", rows.problems);
    let expected: BTreeMap<String, SiteRows> = names.iter().map(|h| (h.clone(), want.clone())).collect();
    let diffs = compare(&rows, &expected);
    assert!(diffs.is_empty(), "{diffs:#?}\n{logs}");
    rows
}

/// Starts the fleet's coordinator (`--ip-in-flight` [`IP_CAP`]) on Redis at `redis`, or a new one
/// in its place.
async fn fleet_coordinator(dir: &Path, redis: &str, ns: &str, db: &Path) -> Coordinator {
    let ip_cap = IP_CAP.to_string();
    Coordinator::start(dir, "coordinator", redis, ns, db, &["--ip-in-flight", &ip_cap]).await
}

/// A fleet's Redis: one server, or a Sentinel-watched master with its replica.
enum FleetRedis {
    One(RedisServer),
    Sentinels(SentinelGroup),
}

impl FleetRedis {
    /// The URL the fleet's processes are given.
    fn url(&self) -> String {
        match self {
            FleetRedis::One(r) => r.url(),
            FleetRedis::Sentinels(g) => g.url(),
        }
    }

    /// The one server, for the tests that restart or empty it.
    fn one(&mut self) -> &mut RedisServer {
        match self {
            FleetRedis::One(r) => r,
            FleetRedis::Sentinels(_) => panic!("this fleet's Redis is a Sentinel group"),
        }
    }

    /// The Sentinel group, for the failover test.
    fn sentinels(&mut self) -> &mut SentinelGroup {
        match self {
            FleetRedis::Sentinels(g) => g,
            FleetRedis::One(_) => panic!("this fleet's Redis is one server"),
        }
    }
}

/// A fleet for one audit of the tests below: a private redis-server, a coordinator (with
/// `flags`) and two workers (concurrency 4) for `names`, in namespace `ns`. Dropping it stops the
/// workers, then the coordinator, then Redis.
struct SmallFleet {
    workers: Vec<Proc>,
    coord: Coordinator,
    redis: RedisServer,
    db: PathBuf,
    _dir: tempfile::TempDir,
}

impl SmallFleet {
    async fn start(ns: &str, names: &[String], flags: &[&str]) -> SmallFleet {
        let redis = RedisServer::start().expect("redis-server starts");
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("audit.db");
        let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), ns, &db, flags).await;
        let workers = (1..=2).map(|i| worker(dir.path(), &format!("w{i}"), &redis.url(), ns, names, 4)).collect();
        SmallFleet { workers, coord, redis, db, _dir: dir }
    }

    /// Waits for `audit` to end within `deadline` and asserts it is done; returns the processes'
    /// log tails, for messages.
    async fn wait_done(&self, audit: u64, deadline: Duration) -> String {
        let finished = self.coord.wait_finished(audit, deadline).await;
        let logs = tails(self.workers.iter().chain([&self.coord.proc]));
        let (view, _) = finished.unwrap_or_else(|e| panic!("{e}\n{logs}"));
        assert_eq!(view["status"], "done", "{view}\n{logs}");
        logs
    }
}

// ---------------------------------------------------------------------------------------------
// The tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_killed_with_sigkill_mid_run_loses_nothing() {
    let _serial = SERIAL.lock().await;
    let (gap, in_flight, ip_cap) = (GAP, IN_FLIGHT, IP_CAP);
    let latency = Duration::from_millis(20);
    let spec = FleetSpec { prefix: "h", ns: "kill", sites: 30, latency, workers: 3, progress: 8, ..FLEET };
    let fleet = Fleet::start(spec).await;
    let Fleet { want, names, server, db, coord, mut workers, started, audit, total, .. } = fleet;
    let victim = "w2";
    workers[1].kill();
    let killed_at = Instant::now();
    let stored_at_kill = pages_so_far(&db, Some("page"));
    note(&format!("killed {victim} after {:?} with {stored_at_kill}/{total} pages stored", killed_at - started));

    let finished = coord.wait_finished(audit, Duration::from_secs(90)).await;
    let done_after_kill = killed_at.elapsed();
    let log = server.shutdown().await;
    let logs = tails(workers.iter().chain([&coord.proc]));
    let (view, _) = finished.unwrap_or_else(|e| panic!("{e}\n{logs}"));
    note(&format!(
        "audit finished {done_after_kill:?} after the kill ({:?} in all), {} requests",
        started.elapsed(),
        log.len()
    ));
    assert_eq!(view["status"], "done", "{view}\n{logs}");
    assert!(stored_at_kill < total, "the audit was over before the kill: the test proves nothing");

    // Every page exactly once, findings as in an undisturbed run, counters right.
    let rows = assert_as_baseline(&db, audit, &names, &want, &logs);
    assert!(rows.finished);
    assert_eq!(i64::try_from(rows.page_rows).expect("fits"), total, "page rows");

    // Politeness held throughout, kill included.
    let violations = politeness_violations(&log, &names, in_flight, gap, ip_cap);
    assert!(violations.is_empty(), "{violations:#?}\n{}", dump_hosts(&log, &violations));
    for h in &names {
        for p in fixed_paths(&want) {
            assert!(log.count(h, p) >= 1, "{h}{p} in the database but never requested");
        }
    }

    // The victim was working when it died, and sent nothing after.
    let victim_agent = agent_of(victim);
    let by_victim: Vec<&LoggedRequest> =
        log.all().iter().filter(|r| r.header("user-agent") == Some(victim_agent.as_str())).collect();
    assert!(
        by_victim.iter().any(|r| r.start + Duration::from_millis(500) > killed_at),
        "{victim} sent nothing in the last 500 ms before the kill: not killed mid-run"
    );
    assert!(by_victim.iter().all(|r| r.start <= killed_at), "{victim} sent requests after it was killed");
    // Only what the victim held can have been fetched twice, and it came back once its lease
    // expired: lease time + one reaping round, plus slack for a loaded machine.
    let again = fetched_twice(&log, &names, killed_at);
    note(&format!("fetched twice (host, path, refetch after kill): {again:?}"));
    assert!(again.len() <= 4, "more URLs fetched twice than the victim could hold (concurrency 4): {again:?}");
    // Nothing waited longer than that either: the crawl never stalled for more than the lease
    // time after the kill (a URL the victim had claimed but not yet requested is only seen as the
    // stall before it).
    let bound = LEASE_TTL + REAP_EVERY + Duration::from_secs(3);
    let mut stall = (Duration::ZERO, killed_at);
    let mut prev = killed_at;
    for r in log.all().iter().filter(|r| r.start >= killed_at) {
        let quiet = r.start.saturating_duration_since(prev);
        if quiet > stall.0 {
            stall = (quiet, prev);
        }
        prev = r.start;
    }
    let late: Vec<_> = again.iter().filter(|a| a.2 > bound).collect();
    assert!(
        stall.0 <= bound && late.is_empty(),
        "the crawl stalled for {:?} from {:?} after the kill, longer than the lease time ({LEASE_TTL:?}, \
         published with --lease-ttl-s 5) + reaping allow ({bound:?}); URLs fetched again late: {late:?}; \
         the audit ended {done_after_kill:?} after the kill\n{}",
        stall.0,
        stall.1.saturating_duration_since(killed_at),
        coord.proc.tail(10)
    );
    drop(workers);
    drop(coord);
}

/// A fault test's fleet once its audit ended: the sites' request log, the processes' log tails
/// and the processes themselves (still running), for the test's own checks and figures.
struct After {
    log: RequestLog,
    logs: String,
    names: Vec<String>,
    coord: Coordinator,
    workers: Vec<Proc>,
    /// Kept until the test ends, so no process sees Redis go while it is checked.
    _redis: FleetRedis,
    /// The processes' folder, with their logs: kept until the test ends.
    _dir: tempfile::TempDir,
}

impl Fleet {
    /// Waits up to `limit` for the audit to end after `fault` (done at `at`, with `stored_before`
    /// pages stored), and asserts what every Redis fault test asserts: the audit is done, the fault
    /// came mid-audit, no process died, every site holds what an undisturbed audit stores, and the
    /// sites' request logs show no politeness violation (in flight, gap, per-IP cap).
    async fn after_fault(self, fault: &str, at: Instant, stored_before: i64, limit: Duration) -> After {
        let Fleet { want, names, server, redis, dir, db, coord, mut workers, started, audit, total, .. } = self;
        let finished = coord.wait_finished(audit, limit).await;
        let log = server.shutdown().await;
        let logs = tails(workers.iter().chain([&coord.proc]));
        let (view, _) = finished.unwrap_or_else(|e| panic!("{e}\n{logs}"));
        note(&format!("audit finished {:?} after {fault} ({:?} in all)", at.elapsed(), started.elapsed()));
        assert_eq!(view["status"], "done", "{view}\n{logs}");
        assert!(stored_before < total, "the audit was over before {fault}: the test proves nothing");
        for w in &mut workers {
            assert!(w.exited().is_none(), "{} died with {fault}\n{}", w.name(), w.tail(procs::TAIL_LINES));
        }
        let mut coord = coord;
        assert!(coord.proc.exited().is_none(), "the coordinator died with {fault}\n{logs}");
        assert_as_baseline(&db, audit, &names, &want, &logs);
        let violations = politeness_violations(&log, &names, IN_FLIGHT, GAP, IP_CAP);
        assert!(violations.is_empty(), "{violations:#?}\n{}", dump_hosts(&log, &violations));
        After { log, logs, names, coord, workers, _redis: redis, _dir: dir }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_mid_audit_with_aof_loses_nothing() {
    let _serial = SERIAL.lock().await;
    let spec = FleetSpec { prefix: "r", ns: "aof", persistent: true, ..FLEET };
    let mut fleet = Fleet::start(spec).await;
    let (started, total) = (fleet.started, fleet.total);
    let stored_before = pages_so_far(&fleet.db, Some("page"));
    let restart_at = Instant::now();
    fleet.redis.one().restart().expect("redis-server restarts on its AOF");
    note(&format!(
        "restarted Redis after {:?} with {stored_before}/{total} pages stored; it answered again after {:?}",
        restart_at - started,
        restart_at.elapsed()
    ));
    let after = fleet.after_fault("the Redis restart", restart_at, stored_before, Duration::from_secs(90)).await;
    let reclaimed: Vec<String> =
        after.coord.proc.stderr().lines().filter(|l| l.contains("reclaimed")).map(str::to_owned).collect();
    note(&format!(
        "after the Redis restart: fetched twice {:?}; coordinator: {reclaimed:?}",
        fetched_twice(&after.log, &after.names, restart_at)
    ));
}

/// Issue 40: the master of a Sentinel-watched pair is SIGKILLed mid-audit. Every process follows
/// the promoted replica by itself (no restart), the failover fence keeps the hosts' caps and gaps
/// across what the replica lacked, and the audit ends as an undisturbed one would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_master_killed_mid_audit_fails_over_to_its_replica_and_loses_nothing() {
    let _serial = SERIAL.lock().await;
    let spec = FleetSpec { prefix: "s", ns: "failover", sentinel: true, ..FLEET };
    let mut fleet = Fleet::start(spec).await;
    let (started, total) = (fleet.started, fleet.total);
    let stored_before = pages_so_far(&fleet.db, Some("page"));
    let killed_at = Instant::now();
    fleet.redis.sentinels().kill_master();
    let promoted =
        fleet.redis.sentinels().wait_promoted(Duration::from_secs(30)).expect("the Sentinels promote the replica");
    note(&format!(
        "killed the master after {:?} with {stored_before}/{total} pages stored; the replica was promoted {promoted:?} later",
        killed_at - started
    ));
    let mut after = fleet.after_fault("the master's death", killed_at, stored_before, Duration::from_secs(120)).await;
    let logs = &after.logs;
    for w in &mut after.workers {
        assert!(
            w.stderr().contains("following the Redis master"),
            "{} did not follow the new master\n{logs}",
            w.name()
        );
    }
    assert!(after.coord.proc.stderr().contains("following the Redis master"), "the coordinator did not follow\n{logs}");
    // The figures of the issue: from the master's death to the first request of a lease granted
    // after it (the requests under way at the kill reach the server within a few ms; one more
    // second leaves them out), and what was fetched twice.
    let first_new = after.log.all().iter().map(|r| r.start).filter(|t| *t > killed_at + Duration::from_secs(1)).min();
    note(&format!(
        "first new request {:?} after the kill; fetched twice {:?}",
        first_new.map(|t| t - killed_at),
        fetched_twice(&after.log, &after.names, killed_at)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_flushed_mid_audit_is_seeded_again_and_loses_nothing() {
    let _serial = SERIAL.lock().await;
    let spec = FleetSpec { prefix: "z", ns: "flush", ..FLEET };
    let fleet = Fleet::start(spec).await;
    let Fleet { want, names, server, mut redis, db, coord, mut workers, started, audit, total, .. } = fleet;
    let stored_before = pages_so_far(&db, Some("page"));
    let flushed_at = Instant::now();
    // Redis keeps running with nothing in it: the events stream, its group, every queue, seen set
    // and pace state are gone (a failover to an empty replica, an operator's FLUSHALL).
    redis.one().flush_all().expect("FLUSHALL");
    note(&format!("flushed Redis after {:?} with {stored_before}/{total} pages stored", flushed_at - started));

    let finished = coord.wait_finished(audit, Duration::from_secs(90)).await;
    let after = flushed_at.elapsed();
    let log = server.shutdown().await;
    let logs = tails(workers.iter().chain([&coord.proc]));
    let (view, _) = finished.unwrap_or_else(|e| panic!("{e}\n{logs}"));
    note(&format!("audit finished {after:?} after the flush ({:?} in all), {} requests", started.elapsed(), log.len()));
    assert_eq!(view["status"], "done", "{view}\n{logs}");
    assert!(stored_before < total, "the audit was over before the flush: the test proves nothing");
    assert!(
        coord.proc.stderr().contains("lost its data"),
        "the coordinator did not notice that Redis lost its data\n{logs}"
    );
    for w in &mut workers {
        assert!(w.exited().is_none(), "{} died with the flush\n{}", w.name(), w.tail(procs::TAIL_LINES));
    }
    // Every page exactly once in the database, findings as in an undisturbed run, every site done:
    // nothing the database had is lost, and what was crawled again is applied idempotently.
    let rows = assert_as_baseline(&db, audit, &names, &want, &logs);
    assert!(rows.finished);
    assert_eq!(i64::try_from(rows.page_rows).expect("fits"), total, "page rows");
    drop(workers);
    drop(coord);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinator_restarted_mid_audit_resumes() {
    let _serial = SERIAL.lock().await;
    let (gap, in_flight, ip_cap) = (GAP, IN_FLIGHT, IP_CAP);
    let spec = FleetSpec { prefix: "c", ns: "restart", ..FLEET };
    let fleet = Fleet::start(spec).await;
    let Fleet { want, names, server, redis, dir, db, ns, mut coord, workers, started, audit, total } = fleet;
    coord.proc.kill();
    let stored_at_kill = pages_so_far(&db, Some("page"));
    note(&format!("killed the coordinator after {:?} with {stored_at_kill}/{total} pages stored", started.elapsed()));
    // The workers go on meanwhile; their results wait on the events stream.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let stored_while_down = pages_so_far(&db, Some("page"));
    assert_eq!(stored_while_down, stored_at_kill, "pages were stored while no coordinator ran");
    let coord2 = fleet_coordinator(dir.path(), &redis.url(), ns, &db).await;
    let finished = coord2.wait_finished(audit, Duration::from_secs(90)).await;
    let log = server.shutdown().await;
    let logs = tails(workers.iter().chain([&coord2.proc]));
    let (view, _) = finished.unwrap_or_else(|e| panic!("{e}\n{logs}"));
    note(&format!("audit finished {:?} after the start; the requests: {}", started.elapsed(), log.len()));
    assert_eq!(view["status"], "done", "{view}\n{logs}");
    assert!(stored_at_kill < total, "the audit was over before the coordinator was killed: the test proves nothing");
    let rows = assert_as_baseline(&db, audit, &names, &want, &logs);
    assert!(rows.finished);
    assert_eq!(i64::try_from(rows.page_rows).expect("fits"), total, "page rows");
    let api_pages = view["pages"].as_u64().unwrap_or(0);
    assert_eq!(api_pages, u64::try_from(total).expect("fits"), "the API's page count: {view}");
    let violations = politeness_violations(&log, &names, in_flight, gap, ip_cap);
    assert!(violations.is_empty(), "{violations:#?}\n{}", dump_hosts(&log, &violations));
    // Nothing was fetched twice: a coordinator restart costs the workers nothing.
    for h in &names {
        for p in fixed_paths(&want) {
            assert_eq!(log.count(h, p), 1, "{h}{p}\n{}", log.dump());
        }
    }
    drop(workers);
    drop(coord2);
    drop(coord);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_and_distributed_give_the_same_pages_and_findings() {
    let _serial = SERIAL.lock().await;
    ensure_built().await;
    let names = vec!["g0.test".to_owned(), "g1.test".to_owned(), "m.test".to_owned()];
    let server = TestServer::start(vec![
        Site::generated("g0.test", 15, 3),
        flawed_site("g1.test", Duration::ZERO),
        handmade_site("m.test"),
    ])
    .await
    .expect("server starts");
    let starts: Vec<String> = names.iter().map(|h| server.url(h, "/")).collect();
    let host_refs: Vec<&str> = names.iter().map(String::as_str).collect();

    let t = Instant::now();
    let embedded = common::audit(&server, &host_refs, &starts, &["--gap-ms", "20", "--in-flight", "2"]).await;
    assert_eq!(embedded.exit, Exit::Ok);
    let took_embedded = t.elapsed();
    let local = read_audit(&embedded.db, 1);
    assert!(local.problems.is_empty(), "embedded: {:?}", local.problems);

    let fleet = SmallFleet::start("same", &names, &[]).await;
    let t = Instant::now();
    let audit = fleet.coord.submit(&starts, json!({"gap_ms": 20, "in_flight": 2})).await;
    fleet.wait_done(audit, Duration::from_secs(60)).await;
    note(&format!("embedded audit {took_embedded:?}, distributed {:?}", t.elapsed()));
    let log = server.shutdown().await;
    let remote = read_audit(&fleet.db, audit);
    assert!(remote.problems.is_empty(), "distributed: {:?}", remote.problems);

    // Sanity: the sites produce what they were built to produce, so "equal" means something.
    let m = local.sites.get("m.test").expect("m.test audited");
    for code in ["broken_internal_link", "redirect_chain", "title_duplicate", "redirect_to_disallowed"] {
        assert!(m.findings.iter().any(|f| f.0 == code), "embedded m.test lacks {code}: {:?}", m.findings);
    }
    assert!(
        !log.all().iter().any(|r| r.path.starts_with("/private")),
        "a disallowed URL was requested\n{}",
        log.dump()
    );

    let expected = local.sites.clone();
    let diffs = compare(&remote, &expected);
    assert!(
        diffs.is_empty(),
        "embedded and distributed differ:\n{diffs:#?}\nembedded: {:#?}\ndistributed: {:#?}",
        local.sites,
        remote.sites
    );
    drop(fleet);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_host_in_two_concurrent_audits_gets_one_pace() {
    let _serial = SERIAL.lock().await;
    ensure_built().await;
    let gap = Duration::from_millis(200);
    let in_flight = 2;
    let names = vec!["shared.test".to_owned(), "only1.test".to_owned(), "only2.test".to_owned()];
    let server = TestServer::start(vec![
        Site::generated("shared.test", 10, 3),
        Site::generated("only1.test", 5, 2),
        Site::generated("only2.test", 5, 2),
    ])
    .await
    .expect("server starts");
    let redis = RedisServer::start().expect("redis-server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    let ns = "shared";
    let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), ns, &db, &[]).await;
    let workers: Vec<Proc> =
        (1..=2).map(|i| worker(dir.path(), &format!("w{i}"), &redis.url(), ns, &names, 4)).collect();
    // One audit through the API, the other at the same moment through `shoal submit --wait`.
    let second_file = dir.path().join("second.txt");
    std::fs::write(&second_file, format!("{}\n{}\n", server.url("shared.test", "/"), server.url("only2.test", "/")))
        .expect("write the site list");
    let t = Instant::now();
    let mut submit = Proc::spawn(
        dir.path(),
        "submit",
        &[
            "submit".into(),
            "--coordinator".into(),
            coord.base.clone(),
            "--token".into(),
            procs::TOKEN.into(),
            "--file".into(),
            second_file.display().to_string(),
            "--gap-ms".into(),
            "200".into(),
            "--in-flight".into(),
            in_flight.to_string(),
            "--wait".into(),
        ],
    );
    let first = vec![server.url("shared.test", "/"), server.url("only1.test", "/")];
    let a1 = coord.submit(&first, json!({"gap_ms": 200, "in_flight": in_flight})).await;
    let (f1, waited) =
        tokio::join!(coord.wait_finished(a1, Duration::from_secs(60)), submit.wait_exit(Duration::from_secs(60)));
    let log = server.shutdown().await;
    let logs = tails(workers.iter().chain([&coord.proc, &submit]));
    let (v1, _) = f1.unwrap_or_else(|e| panic!("{e}\n{logs}"));
    note(&format!("two audits finished in {:?}", t.elapsed()));
    assert_eq!(v1["status"], "done", "{v1}\n{logs}");
    let waited = waited.unwrap_or_else(|| panic!("shoal submit --wait did not return within 60 s\n{logs}"));
    assert_eq!(waited.code(), Some(0), "shoal submit --wait: {waited}\n{logs}");
    let a2: u64 = submit
        .stdout()
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no audit id from shoal submit: {:?}\n{logs}", submit.stdout()));
    assert_ne!(a1, a2);
    let (v2, _) = coord.wait_finished(a2, Duration::from_secs(5)).await.unwrap_or_else(|e| panic!("{e}\n{logs}"));
    assert_eq!(v2["status"], "done", "{v2}\n{logs}");

    // Both audits crawled the shared host completely...
    let want: BTreeSet<String> = Site::generated_paths(10).into_iter().collect();
    for audit in [a1, a2] {
        let rows = read_audit(&db, audit);
        assert!(rows.problems.is_empty(), "audit {audit}: {:?}", rows.problems);
        let got: BTreeSet<String> = rows
            .sites
            .get("shared.test")
            .map(|s| s.pages.iter().filter(|p| p.0 == "page").map(|p| p.1.clone()).collect())
            .unwrap_or_default();
        assert_eq!(got, want, "audit {audit}");
    }
    let page_requests = log.paths("shared.test").iter().filter(|p| want.contains(*p)).count();
    assert_eq!(page_requests, 20, "each audit fetches its pages\n{}", log.dump());
    // ...and both audits' requests interleaved at the one pace of the host.
    let shared: Vec<&LoggedRequest> = log.for_host("shared.test");
    let span =
        shared.last().zip(shared.first()).map_or(Duration::ZERO, |(l, f)| l.start.saturating_duration_since(f.start));
    let min = log.min_gap("shared.test").unwrap_or(gap);
    // The audits ran at the same time: the second audit's own host was being crawled while the
    // first audit's own host was (otherwise this would test nothing about sharing).
    let window = |h: &str| {
        let reqs = log.for_host(h);
        let first = reqs.first().map(|r| r.start);
        let last = reqs.last().map(|r| r.start);
        first.zip(last)
    };
    let (w1, w2) = (window("only1.test"), window("only2.test"));
    let overlap = matches!((w1, w2), (Some((s1, e1)), Some((s2, e2))) if s1 <= e2 && s2 <= e1);
    assert!(overlap, "the two audits did not run at the same time: the test proves nothing\n{}", log.dump());
    note(&format!("shared.test: {} requests over {span:?}, smallest gap {min:?}", shared.len()));
    assert!(
        min + JITTER >= gap,
        "shared.test: request starts {min:?} apart across two audits, gap {gap:?}\n{}",
        RequestLog::from(shared.iter().map(|r| (*r).clone()).collect::<Vec<_>>()).dump()
    );
    assert!(log.max_in_flight("shared.test") <= in_flight, "{}", log.dump());
    drop(workers);
    drop(coord);
}

/// A large audit: its sites are recorded in one transaction, the first `--active-sites` of them
/// seeded in pipelines and the rest waiting their turn, and its status lists one page of sites
/// at a time (in id order, `sites_next_after` naming the next page), with totals over all of
/// them. No worker runs, so nothing is fetched and no site ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_audit_is_admitted_in_a_window_and_its_status_comes_in_pages() {
    let _serial = SERIAL.lock().await;
    ensure_built().await;
    let redis = RedisServer::start().expect("redis-server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    let coord =
        Coordinator::start(dir.path(), "coordinator", &redis.url(), "large", &db, &["--active-sites", "1500"]).await;
    let n = 2_345;
    let urls: Vec<String> = (0..n).map(|i| format!("http://s{i:05}.invalid/")).collect();
    let audit = coord.submit(&urls, json!({})).await;

    let get = |path: String| {
        let coord = &coord;
        async move { coord.api(reqwest::Method::GET, &path, None).await.expect("status answers") }
    };
    let ids = |v: &serde_json::Value| -> Vec<u64> {
        v["sites"].as_array().expect("sites listed").iter().map(|s| s["id"].as_u64().expect("site id")).collect()
    };
    let (code, first) = get(format!("/v1/audits/{audit}")).await;
    assert_eq!(code, 200, "{first}");
    assert_eq!((first["sites_total"].as_u64(), first["sites_done"].as_u64()), (Some(n), Some(0)), "{first}");
    assert_eq!(first["sites_waiting"].as_u64(), Some(n - 1_500), "{first}");
    let page1 = ids(&first);
    assert_eq!(page1.len(), 1_000, "the default page");
    assert_eq!(first["sites_next_after"].as_u64(), page1.last().copied());
    assert_eq!(first["sites"][0]["start_url"], urls[0]);
    assert!(first["sites"].as_array().expect("sites").iter().all(|s| s["status"] == "running"), "{first}");

    let mut all = page1.clone();
    let mut queued: Vec<u64> =
        first["sites"].as_array().expect("sites").iter().map(|s| s["queued"].as_u64().unwrap_or(0)).collect();
    let mut after = first["sites_next_after"].as_u64();
    let mut pages = 1;
    while let Some(a) = after {
        let (code, v) = get(format!("/v1/audits/{audit}?after={a}")).await;
        assert_eq!(code, 200, "{v}");
        let page = ids(&v);
        assert!(page.iter().all(|id| *id > a), "page after {a}: {page:?}");
        all.extend(page);
        queued.extend(v["sites"].as_array().expect("sites").iter().map(|s| s["queued"].as_u64().unwrap_or(0)));
        after = v["sites_next_after"].as_u64();
        pages += 1;
        assert!(pages <= 3, "more pages than the sites fill");
    }
    assert_eq!(pages, 3);
    let unique: BTreeSet<u64> = all.iter().copied().collect();
    assert_eq!((all.len(), unique.len()), (n as usize, n as usize), "every site once, in id order");
    assert!(all.windows(2).all(|w| w[0] < w[1]));
    // The first 1,500 sites (in id order) are in the frontier, the others wait with nothing queued.
    assert!(queued[..1_500].iter().all(|q| *q >= 2), "admitted sites have their seeds queued");
    assert!(queued[1_500..].iter().all(|q| *q == 0), "waiting sites have nothing queued yet");

    let (code, small) = get(format!("/v1/audits/{audit}?limit=5&after={}", all[10])).await;
    assert_eq!(code, 200, "{small}");
    assert_eq!(ids(&small), all[11..16].to_vec());
    let (code, bad) = get(format!("/v1/audits/{audit}?limit=many")).await;
    assert_eq!(code, 400, "{bad}");
    let (code, unknown) = get(format!("/v1/audits/{audit}?sort=url")).await;
    assert_eq!(code, 400, "{unknown}");
}

/// Leases of several URLs of one host (`--lease-batch`, 8 by default, 4 here, at no gap) change nothing a
/// site sees or an audit stores: the same pages and findings as the embedded crawler, per host at
/// most its in-flight cap, per IP at most the IP cap, and a 429 answered in the middle of batches
/// stops every batch on the host (this one's and other workers'), so nothing reaches it before
/// Retry-After and slow mode holds from then on, as the server's log shows. And batches are used:
/// fewer leases than requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_leases_keep_every_limit_and_give_the_same_pages() {
    let _serial = SERIAL.lock().await;
    ensure_built().await;
    let names: Vec<String> = ["g0.test", "g1.test", "m.test", "busy.test"].map(str::to_owned).to_vec();
    let sites = || {
        vec![
            Site::generated("g0.test", 40, 3),
            flawed_site("g1.test", Duration::from_millis(5)),
            handmade_site("m.test"),
        ]
    };
    // The start page links to /p/1../p/8: two batches of four run side by side (in flight 2), and
    // /p/2 answers 429 (Retry-After: 2) once, while the other batch has tasks left. Everything
    // answers after 150 ms, so that batch would go on for a while if nothing stopped it.
    let busy = || {
        Site::generated("busy.test", 9, 8)
            .latency(Duration::from_millis(150))
            .route("/p/2", Route::too_many(Some("2"), 1, Route::html("<title>busy ok</title><h1>x</h1>")))
    };
    let host_refs: Vec<&str> = names[..3].iter().map(String::as_str).collect();
    let local_server = TestServer::start(sites()).await.expect("server starts");
    let local_starts: Vec<String> = names[..3].iter().map(|h| local_server.url(h, "/")).collect();
    let embedded =
        common::audit(&local_server, &host_refs, &local_starts, &["--gap-ms", "0", "--in-flight", "2"]).await;
    assert_eq!(embedded.exit, Exit::Ok);
    drop(local_server.shutdown().await);
    let local = read_audit(&embedded.db, 1);
    assert!(local.problems.is_empty(), "embedded: {:?}", local.problems);

    let server = TestServer::start(sites().into_iter().chain([busy()]).collect()).await.expect("server starts");
    let starts: Vec<String> = names.iter().map(|h| server.url(h, "/")).collect();
    let ns = "batch";
    let (in_flight, ip_cap) = (2, 4);
    // Batches of four, so that busy.test's eight pages make two.
    let fleet = SmallFleet::start(ns, &names, &["--ip-in-flight", "4", "--lease-batch", "4"]).await;
    let audit = fleet.coord.submit(&starts, json!({"gap_ms": 0, "in_flight": in_flight})).await;
    let logs = fleet.wait_done(audit, Duration::from_secs(90)).await;
    let log = server.shutdown().await;
    let leases = fleet
        .redis
        .counter(&shoal_frontier_redis::keys::Keys::new(ns).lease_counter())
        .expect("reads the lease counter");
    let requests = log.all().len();
    note(&format!("{requests} requests under {leases} leases"));
    assert!(
        (leases as usize) * 3 < requests * 2,
        "batches were hardly used: {leases} leases for {requests} requests\n{logs}"
    );

    let violations = politeness_violations(&log, &names, in_flight, Duration::ZERO, ip_cap);
    assert!(violations.is_empty(), "{violations:#?}\n{}", dump_hosts(&log, &violations));
    // m.test's robots.txt disallows /private, linked directly and as a redirect target.
    assert!(
        !log.all().iter().any(|r| r.path.starts_with("/private")),
        "a disallowed URL was requested\n{}",
        log.dump()
    );
    // The 429: nothing to the host before Retry-After once it was answered, then slow mode.
    let reqs = log.for_host("busy.test");
    let first_429 = reqs.iter().position(|r| r.status == Some(429)).expect("the 429 was served");
    let answered = reqs[first_429].end.unwrap_or(reqs[first_429].start);
    let after: Vec<&LoggedRequest> =
        reqs.iter().skip(first_429 + 1).copied().filter(|r| r.start > answered + REACTION).collect();
    assert!(!after.is_empty(), "busy.test was crawled on after its 429\n{}", log.dump());
    assert!(
        after[0].start.duration_since(answered) + JITTER >= Duration::from_secs(2),
        "a request {:?} after the 429, before its Retry-After\n{}",
        after[0].start.duration_since(answered),
        log.dump()
    );
    for pair in after.windows(2) {
        let gap = pair[1].start.duration_since(pair[0].start);
        assert!(gap + JITTER >= Duration::from_secs(3), "slow mode gap {gap:?}\n{}", log.dump());
    }
    assert!(shoal_tests::log::max_in_flight_of(after.iter().copied()) <= 1, "{}", log.dump());

    let mut remote = read_audit(&fleet.db, audit);
    assert!(remote.problems.is_empty(), "distributed: {:?}", remote.problems);
    let busy = remote.sites.remove("busy.test").expect("busy.test audited");
    assert!(busy.findings.iter().any(|f| f.0 == "rate_limited"), "{:?}", busy.findings);
    let diffs = compare(&remote, &local.sites);
    assert!(diffs.is_empty(), "embedded and distributed (batched) differ:\n{diffs:#?}");
    drop(fleet);
}

/// How long after a 429 was answered requests already on their way may still arrive (as in the
/// politeness tests).
const REACTION: Duration = Duration::from_millis(100);

/// A worker holds a request back when its previous one to the host may have arrived late (its
/// answer came slower than the host's quickest): the frontier, which started the gap at the claim,
/// is told, so another worker's request keeps the whole gap to the held-back one. A host whose
/// answers alternate between quick and slow, two workers, gap 300 ms: no two request starts less
/// than the gap apart in the server's log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_held_back_by_its_worker_keeps_the_gap_to_other_workers() {
    let _serial = SERIAL.lock().await;
    ensure_built().await;
    let pages = 14;
    let links: String = (1..=pages).map(|i| format!(r#"<a href="/p/{i}">{i}</a> "#)).collect();
    let mut site = Site::new("uneven.test").page("/", &format!("<title>t</title><h1>h</h1>{links}"));
    for i in 1..=pages {
        let page = Route::html(format!("<title>p{i}</title><h1>p{i}</h1>"));
        site = site
            .route(&format!("/p/{i}"), if i % 2 == 1 { Route::slow(Duration::from_millis(220), page) } else { page });
    }
    let server = TestServer::start(vec![site]).await.expect("server starts");
    let names = vec!["uneven.test".to_owned()];
    let fleet = SmallFleet::start("heldback", &names, &[]).await;
    let gap = Duration::from_millis(300);
    let audit = fleet.coord.submit(&[server.url("uneven.test", "/")], json!({"gap_ms": 300, "in_flight": 2})).await;
    fleet.wait_done(audit, Duration::from_secs(60)).await;
    let log = server.shutdown().await;
    let reqs = log.for_host("uneven.test");
    let by = |id: &str| {
        reqs.iter().filter(|r| r.headers.iter().any(|(k, v)| k == "user-agent" && *v == agent_of(id))).count()
    };
    note(&format!("uneven.test: {} requests, {} from w1, {} from w2", reqs.len(), by("w1"), by("w2")));
    let violations = politeness_violations(&log, &names, 2, gap, 8);
    assert!(violations.is_empty(), "{violations:#?}\n{}", dump_hosts(&log, &violations));
    drop(fleet);
}
