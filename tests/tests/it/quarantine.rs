//! A bad entry is quarantined, never a wedge (issue 36, part 3): the three attacks of a co-tenant
//! who can write to the deployment's Redis keys, each against a real `shoal coordinator` and two
//! `shoal worker` processes on a private `redis-server`, with a bystander audit that must end
//! `done` with every one of its pages, as if nothing had happened:
//!
//! 1. garbage entries in the events stream, among the real ones of one batch (the bystander ended
//!    `done` without the batch's pages; after a restart the coordinator read the bad entry forever);
//! 2. a counter of the victim audit's site hash that is no number, met by a coordinator starting
//!    (it refused to start at all);
//! 3. garbage in the victim's host hash (claims failed for every audit while its lane was first in
//!    line, and the victim stayed `running` forever).
//!
//! The victim audit ends `failed` with a reason naming what could not be read, and its site gets a
//! `results_incomplete` finding (the end-to-end case of that code: it comes from no website).

use crate::db;
use crate::distributed::SERIAL;
use crate::procs::{Coordinator, Proc, ensure_built, tails, worker};

use serde_json::{Value, json};
use shoal_frontier_redis::keys::{EVENTS_GROUP, Keys};
use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::Event;
use shoal_shared::url::NormalizedUrl;
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::{Site, TestServer};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The bystander audit's one site, and its pages (all of them must be stored).
const BYSTANDER: &str = "by.test";
const BYSTANDER_PAGES: usize = 120;
/// The victim audit's one site.
const VICTIM: &str = "vic.test";
/// How long an audit of these tests may take at most.
const AUDIT_DEADLINE: Duration = Duration::from_secs(90);

/// A coordinator and two workers on a private Redis, crawling the bystander's and the victim's
/// sites.
struct Fleet {
    server: TestServer,
    redis: RedisServer,
    dir: tempfile::TempDir,
    db: PathBuf,
    ns: &'static str,
    coord: Coordinator,
    workers: Vec<Proc>,
    extra: &'static [&'static str],
}

impl Fleet {
    /// The victim's site has `victim_pages` pages answering after `victim_latency`; `extra`: the
    /// coordinator's further flags.
    async fn start(
        ns: &'static str,
        victim_pages: usize,
        victim_latency: Duration,
        extra: &'static [&'static str],
    ) -> Fleet {
        ensure_built().await;
        let sites = vec![
            Site::generated(BYSTANDER, BYSTANDER_PAGES, 4),
            Site::generated(VICTIM, victim_pages, 3).latency(victim_latency),
        ];
        let server = TestServer::start(sites).await.expect("server starts");
        let redis = RedisServer::start().expect("redis-server starts");
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("audit.db");
        let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), ns, &db, extra).await;
        let names = [BYSTANDER.to_owned(), VICTIM.to_owned()];
        let workers = (1..=2).map(|i| worker(dir.path(), &format!("w{i}"), &redis.url(), ns, &names, 4)).collect();
        Fleet { server, redis, dir, db, ns, coord, workers, extra }
    }

    async fn submit(&self, host: &str, gap_ms: u64) -> u64 {
        self.coord.submit(&[self.server.url(host, "/")], json!({"gap_ms": gap_ms, "in_flight": 4})).await
    }

    fn logs(&self) -> String {
        tails(self.workers.iter().chain([&self.coord.proc]))
    }

    /// A fresh coordinator in place of the one running (SIGKILL), on the same database and Redis.
    async fn restart_coordinator(&mut self) {
        self.coord.proc.kill();
        self.coord =
            Coordinator::start(self.dir.path(), "coordinator", &self.redis.url(), self.ns, &self.db, self.extra).await;
    }

    async fn redis(&self) -> redis::aio::MultiplexedConnection {
        let client = redis::Client::open(self.redis.url()).expect("a Redis URL");
        client.get_multiplexed_async_connection().await.expect("connects to the test's Redis")
    }

    fn keys(&self) -> Keys {
        Keys::new(self.ns)
    }

    /// The one site of `audit`.
    fn site_of(&self, audit: u64) -> SiteId {
        let ids: Vec<i64> = db::query(&self.db, "SELECT id FROM sites WHERE audit_id = ?1", [sql(audit)], |r| r.get(0));
        assert_eq!(ids.len(), 1, "audit {audit} has one site");
        SiteId(u64::try_from(ids[0]).expect("positive"))
    }

    /// Waits until `audit` stored at least `n` pages (bounded), while it runs.
    async fn wait_pages(&self, audit: u64, n: usize) {
        let until = Instant::now() + AUDIT_DEADLINE;
        while page_paths(&self.db, audit).len() < n {
            assert!(Instant::now() < until, "audit {audit} did not store {n} pages\n{}", self.logs());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `audit` is over; its status answer.
    async fn finished(&self, audit: u64) -> Value {
        let done = self.coord.wait_finished(audit, AUDIT_DEADLINE).await;
        done.unwrap_or_else(|e| panic!("{e}\n{}", self.logs())).0
    }

    /// The bystander ended `done` with every one of its pages, once each.
    async fn assert_bystander_whole(&self, audit: u64) {
        let view = self.finished(audit).await;
        assert_eq!(view["status"], "done", "{view}\n{}", self.logs());
        let want: BTreeSet<String> = Site::generated_paths(BYSTANDER_PAGES).into_iter().collect();
        let got = page_paths(&self.db, audit);
        assert_eq!(got.len(), BYSTANDER_PAGES, "page rows of the bystander\n{}", self.logs());
        assert_eq!(got, want, "the bystander's pages");
        assert_eq!(view["pages"].as_u64(), Some(BYSTANDER_PAGES as u64), "{view}");
    }

    /// The victim ended `failed`, its reason containing `what`, in the answer and in the database,
    /// and its site has a `results_incomplete` finding saying so too.
    async fn assert_victim_failed(&self, audit: u64, what: &str) {
        let view = self.finished(audit).await;
        assert_eq!(view["status"], "failed", "{view}\n{}", self.logs());
        let reason = view["reason"].as_str().unwrap_or_default();
        assert!(reason.contains(what), "reason {reason:?} names {what:?}\n{}", self.logs());
        let row: Vec<(String, Option<String>)> =
            db::query(&self.db, "SELECT status, reason FROM audits WHERE id = ?1", [sql(audit)], |r| {
                Ok((r.get(0)?, r.get(1)?))
            });
        assert_eq!(row, vec![("failed".to_owned(), Some(reason.to_owned()))]);
        let site = self.site_of(audit);
        let notes = incomplete(&self.db, site);
        assert!(notes.iter().any(|d| d.contains(what)), "a results_incomplete finding on the site: {notes:?}");
        // Its audit ended: the frontier forgets the quarantined site, record and all.
        let key = self.keys().quarantine();
        let mut c = self.redis().await;
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let left: u64 = redis::cmd("HLEN").arg(&key).query_async(&mut c).await.expect("HLEN");
            if left == 0 {
                break;
            }
            assert!(Instant::now() < until, "{left} quarantine records left\n{}", self.logs());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Entries of the events stream its consumer group read and did not acknowledge.
    async fn pending(&self) -> u64 {
        let mut c = self.redis().await;
        let summary: redis::Value = redis::cmd("XPENDING")
            .arg(self.keys().events())
            .arg(EVENTS_GROUP)
            .query_async(&mut c)
            .await
            .expect("XPENDING");
        match summary {
            redis::Value::Array(v) => v.first().and_then(|n| redis::from_redis_value(n.clone()).ok()).unwrap_or(0),
            other => panic!("XPENDING answered {other:?}"),
        }
    }

    /// A metric's value on the coordinator's `/metrics` (0 if absent).
    async fn metric(&self, name: &str) -> f64 {
        let (_, text) = self.coord.api(reqwest::Method::GET, "/metrics", None).await.expect("/metrics answers");
        let text = text.as_str().unwrap_or_default().to_owned();
        text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok()).unwrap_or(0.0)
    }

    /// Waits until a metric of the coordinator reaches `at_least` (bounded).
    async fn wait_metric(&self, name: &str, at_least: f64) {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let v = self.metric(name).await;
            if v >= at_least {
                return;
            }
            assert!(Instant::now() < until, "{name} = {v}, expected at least {at_least}\n{}", self.logs());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The paths of an audit's page rows of kind `page`.
fn page_paths(db: &std::path::Path, audit: u64) -> BTreeSet<String> {
    let Ok(conn) = db::open_read_only(db) else { return BTreeSet::new() };
    let Ok(mut stmt) = conn.prepare(
        "SELECT p.url FROM pages p JOIN sites s ON s.id = p.site_id WHERE s.audit_id = ?1 AND p.kind = 'page'",
    ) else {
        return BTreeSet::new();
    };
    let urls: Vec<String> = stmt
        .query_map([sql(audit)], |r| r.get(0))
        .map(|rows| rows.filter_map(Result::ok).collect())
        .unwrap_or_default();
    urls.iter().filter_map(|u| url::Url::parse(u).ok()).map(|u| u.path().to_owned()).collect()
}

/// The details of a site's `results_incomplete` findings.
fn incomplete(db: &std::path::Path, site: SiteId) -> Vec<String> {
    let sql_ = "SELECT detail FROM findings WHERE site_id = ?1 AND code = ?2";
    db::query(db, sql_, (sql(site.0), Code::ResultsIncomplete.as_str()), |r| r.get(0))
}

/// An id as SQLite takes it.
fn sql(id: u64) -> i64 {
    i64::try_from(id).expect("an id fits")
}

type Conn = redis::aio::MultiplexedConnection;

async fn xlen(c: &mut Conn, events: &str) -> u64 {
    redis::cmd("XLEN").arg(events).query_async(c).await.expect("XLEN")
}

/// Appends an entry to the events stream, as anyone with write access to the keys could.
async fn xadd(c: &mut Conn, events: &str, fields: &[(&str, &[u8])]) -> String {
    let mut cmd = redis::cmd("XADD");
    cmd.arg(events).arg("*");
    for (k, v) in fields {
        cmd.arg(*k).arg(*v);
    }
    cmd.query_async(c).await.expect("XADD")
}

fn rmp(e: &Event) -> Vec<u8> {
    rmp_serde::to_vec_named(e).expect("an event encodes")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_in_the_events_stream_is_quarantined_and_the_rest_of_its_batch_stored() {
    let _serial = SERIAL.lock().await;
    // Leases of one page each: many entries, so the garbage lands among real ones.
    let mut fleet = Fleet::start("qstream", 5, Duration::ZERO, &["--lease-batch", "1"]).await;
    let victim = fleet.submit(VICTIM, 0).await;
    let view = fleet.finished(victim).await;
    assert_eq!(view["status"], "done", "{view}");
    let victim_site = fleet.site_of(victim);
    // A gap, so that the crawl is still publishing when the coordinator goes down.
    let audit = fleet.submit(BYSTANDER, 30).await;
    fleet.wait_pages(audit, 5).await;
    // The coordinator goes down; the workers go on publishing; garbage lands among their entries,
    // all of it read back in one batch by the next coordinator.
    fleet.coord.proc.kill();
    let mut c = fleet.redis().await;
    let events = fleet.keys().events();
    let until = Instant::now() + AUDIT_DEADLINE;
    while xlen(&mut c, &events).await < 5 {
        assert!(Instant::now() < until, "the workers published nothing\n{}", fleet.logs());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let kept = Finding::new(AuditId(victim), victim_site, Code::TitleMissing, fleet.server.url(VICTIM, "/x"), "kept");
    let nowhere = Event::SiteDone { audit: AuditId(audit), site: SiteId(999_999) };
    xadd(&mut c, &events, &[("x", b"not a field Shoal writes")]).await;
    xadd(&mut c, &events, &[("e", b"\xc1 not rmp")]).await;
    xadd(&mut c, &events, &[("E", &[9, 0, 0, 0, 1])]).await;
    let mixed = xadd(&mut c, &events, &[("e", &rmp(&Event::Finding(kept))), ("e", b"\xc1")]).await;
    xadd(&mut c, &events, &[("e", &rmp(&nowhere))]).await;
    // Real entries after the garbage too (for a while, the crawl may be over before).
    let after = xlen(&mut c, &events).await;
    let more = Instant::now() + Duration::from_secs(3);
    while xlen(&mut c, &events).await < after + 5 && Instant::now() < more {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    fleet.restart_coordinator().await;

    fleet.assert_bystander_whole(audit).await;
    // The readable part of the mixed entry was stored, and the victim's site says what was lost
    // (the garbage may come in a batch after the bystander's end: waited for, bounded).
    let title_of = |db: &std::path::Path| -> Vec<String> {
        let q = "SELECT detail FROM findings WHERE site_id = ?1 AND code = 'title_missing'";
        db::query(db, q, [sql(victim_site.0)], |r| r.get(0))
    };
    let until = Instant::now() + Duration::from_secs(10);
    while incomplete(&fleet.db, victim_site).is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let titles = title_of(&fleet.db);
    assert!(titles.contains(&"kept".to_owned()), "{titles:?}\n{}", fleet.logs());
    let notes = incomplete(&fleet.db, victim_site);
    assert!(notes.len() == 1 && notes[0].contains(&mixed), "{notes:?} (entry {mixed})\n{}", fleet.logs());
    // Recorded: a log line per bad entry and the metric (three unreadable, one naming no site).
    fleet.wait_metric("shoal_events_quarantined_total", 4.0).await;
    let log = fleet.coord.proc.stderr();
    assert!(log.matches("quarantined").count() >= 4, "{log}");
    assert_eq!(fleet.pending().await, 0, "nothing stays pending in the consumer group");
    // Started again, the coordinator reads none of it again.
    fleet.restart_coordinator().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(fleet.pending().await, 0, "nothing stays pending in the consumer group");
    assert_eq!(xlen(&mut c, &events).await, 0, "every entry was acknowledged and deleted");
    assert_eq!(incomplete(&fleet.db, victim_site).len(), 1, "the entry was not applied twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_counter_that_is_no_number_fails_only_its_audit_and_the_coordinator_starts() {
    let _serial = SERIAL.lock().await;
    let mut fleet = Fleet::start("qsite", 60, Duration::from_millis(50), &[]).await;
    let victim = fleet.submit(VICTIM, 400).await;
    fleet.wait_pages(victim, 2).await;
    let audit = fleet.submit(BYSTANDER, 30).await;
    fleet.wait_pages(audit, 5).await;
    fleet.coord.proc.kill();
    let site = fleet.site_of(victim);
    let mut c = fleet.redis().await;
    let _: i64 = redis::cmd("HSET")
        .arg(fleet.keys().site(site))
        .arg("queued")
        .arg("garbage")
        .query_async(&mut c)
        .await
        .expect("HSET");
    // It starts (answers /healthz) and goes on.
    fleet.restart_coordinator().await;

    fleet.assert_bystander_whole(audit).await;
    fleet.assert_victim_failed(victim, "queued = \"garbage\"").await;
    fleet.wait_metric("shoal_audits_failed_total", 1.0).await;
    fleet.wait_metric("shoal_sites_quarantined_total", 1.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_in_a_host_hash_fails_only_its_audit() {
    let _serial = SERIAL.lock().await;
    let fleet = Fleet::start("qhost", 60, Duration::from_millis(50), &[]).await;
    let victim = fleet.submit(VICTIM, 300).await;
    fleet.wait_pages(victim, 2).await;
    let audit = fleet.submit(BYSTANDER, 30).await;
    let host = NormalizedUrl::parse(&fleet.server.url(VICTIM, "/")).expect("url").host_key();
    let mut c = fleet.redis().await;
    let _: i64 = redis::cmd("HSET")
        .arg(fleet.keys().host(&host))
        .arg("inf")
        .arg("garbage")
        .query_async(&mut c)
        .await
        .expect("HSET");

    fleet.assert_bystander_whole(audit).await;
    fleet.assert_victim_failed(victim, "inf = \"garbage\"").await;
    let log = fleet.coord.proc.stderr();
    assert!(log.contains("audit failed"), "{log}");
}
