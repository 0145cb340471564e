//! The Redis back end of Shoal's frontier.
//!
//! Shared by the coordinator and any number of workers on any machines. Every operation that
//! touches more than one key is one Lua script ([`scripts`]), so no race between workers can put
//! one request too many in flight or start two inside one gap; keys are built only in [`keys`].
//! Values are rmp-serde with named fields, so workers of two versions can share a queue during a
//! rolling upgrade.
//!
//! Round trips: one `claim` and one `complete` per fetched URL (findings and page records travel
//! inside `complete` onto the events stream); site info and robots rules are read once per worker
//! and cached; the coordinator reads and acknowledges events in batches.

mod answers;
mod args;
mod browser;
mod conn;
mod events;
pub mod keys;
mod pace;
pub mod params;
mod quarantine;
pub mod rules;
pub mod scripts;
mod sent;
mod status;
mod stream;
mod target;

pub use args::kind_code;
pub use conn::Conn;
pub use target::{RedisTarget, SENTINEL_PORT, TargetError, redact};

use answers::{epoch_of, first_word, int_at, parse_claim, parse_completed};
use conn::replicated;
use keys::{EVENTS_GROUP, Keys};
use redis::{AsyncCommands, RedisError, Value};
use scripts::Scripts;
use serde::Serialize;
use serde::de::DeserializeOwned;
use shoal_shared::finding::Code;
use shoal_shared::frontier::{
    Claim, Completed, Completion, EventId, Frontier, FrontierError, FrontierSettings, LaneRobots, LaneRobotsState,
    Lease, Quarantine, Renewal, SiteInfo, SiteProgress, SiteSeed, audit_of_cache_key, limit_finding,
};
use shoal_shared::ids::{AuditId, LeaseId, SiteId, WorkerId};
use shoal_shared::record::Event;
use shoal_shared::task::Task;
use shoal_shared::time::UnixMs;
use shoal_shared::url::HostKey;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Leases reclaimed per `reap` call at most (it is called again on the next tick).
const REAP_BATCH: usize = 1_000;
/// Seed scripts per pipeline in [`RedisFrontier::seed_many_now`]: large enough that a 100,000-site
/// submit is a few hundred round trips, small enough that one pipeline is a few MB at most.
const SEED_PIPELINE: usize = 500;
/// Sites, hosts or cache keys an ended audit's `forget` step drops at most per call: a call stays
/// within a few milliseconds however large the audit (steps of 1,000 sites took 10-20 ms each on
/// a slow machine, over Redis' default slow-log threshold).
const FORGET_STEP: usize = 250;
/// `forget` steps one `Frontier::forget` makes at most (the coordinator asks again on its next
/// reaping tick while the answer is false): up to half a million sites, hosts and keys a time.
const FORGET_CALLS: usize = 2_000;
/// `cancel` steps (of about [`FORGET_STEP`] sites each, from one SSCAN cursor) before giving up:
/// far more than any audit's sites in Redis, which admission keeps to a window.
const CANCEL_CALLS: usize = 100_000;

/// A frontier in Redis.
#[derive(Clone)]
pub struct RedisFrontier {
    conn: Conn,
    keys: Keys,
    scripts: std::sync::Arc<Scripts>,
    settings: FrontierSettings,
    consumer: String,
    pending_first: std::sync::Arc<AtomicBool>,
    /// Events stream entries quarantined since the last [`Frontier::quarantine`] (see [`events`]).
    quarantined_entries: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The links this process already handed to Redis, per audit (see [`sent`]).
    sent: std::sync::Arc<std::sync::Mutex<sent::Sent>>,
    /// The hosts this process lately read clear for a batch's next request (see [`pace`]).
    paced: std::sync::Arc<std::sync::Mutex<pace::PaceMemo>>,
    /// The namespace's epoch the last lease carried (0 before the first).
    epoch: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Progress reads' own connection (see [`status`]).
    status: std::sync::Arc<status::StatusConn>,
}

impl std::fmt::Debug for RedisFrontier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisFrontier")
            .field("prefix", &self.keys.prefix())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

fn store(op: &'static str) -> impl FnOnce(RedisError) -> FrontierError {
    move |e| FrontierError::Store { op, source: Box::new(e) }
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    // Encoding our own plain data types to a Vec cannot fail.
    rmp_serde::to_vec_named(v).unwrap_or_default()
}

fn decode<T: DeserializeOwned>(what: &'static str, bytes: &[u8]) -> Result<T, FrontierError> {
    rmp_serde::from_slice(bytes).map_err(|e| FrontierError::Corrupt { what, detail: e.to_string() })
}

impl RedisFrontier {
    /// Adds to a cache write the listing of an audit's own entry ([`audit_of_cache_key`]) under
    /// its audit, in the same round trip, so `forget` drops it with the audit.
    fn list_under_audit(&self, pipe: &mut redis::Pipeline, key: &str) {
        if let Some(audit) = audit_of_cache_key(key) {
            pipe.cmd("SADD").arg(self.keys.audit_cache(audit)).arg(key).ignore();
        }
    }

    /// Connects to `url` (`redis://`, `rediss://` for TLS, `redis+unix://`; a password in the URL
    /// is used) and uses namespace `ns` (one per deployment). `consumer` names this process in the
    /// events consumer group (the coordinator uses a fixed name so that after a restart it re-reads
    /// what it had not acknowledged).
    pub async fn connect(
        url: &str,
        ns: &str,
        settings: FrontierSettings,
        consumer: &str,
    ) -> Result<RedisFrontier, FrontierError> {
        RedisFrontier::connect_to(&RedisTarget::new(url), ns, settings, consumer).await
    }

    /// [`RedisFrontier::connect`] to a [`RedisTarget`] (a URL and, for TLS, the certificate
    /// authority to trust).
    pub async fn connect_to(
        target: &RedisTarget,
        ns: &str,
        settings: FrontierSettings,
        consumer: &str,
    ) -> Result<RedisFrontier, FrontierError> {
        let keys = Keys::new(ns);
        let scripts = std::sync::Arc::new(Scripts::new());
        let connector = conn::Connector::new(target, &keys, &scripts, settings.lease_ttl_ms)
            .map_err(|source| FrontierError::Store { op: "open", source })?;
        let conn = connector.open().await.map_err(store("connect"))?;
        let f = RedisFrontier {
            conn,
            keys,
            scripts,
            settings,
            consumer: consumer.to_owned(),
            pending_first: std::sync::Arc::new(AtomicBool::new(true)),
            quarantined_entries: std::sync::Arc::default(),
            sent: std::sync::Arc::default(),
            paced: std::sync::Arc::default(),
            epoch: std::sync::Arc::default(),
            status: std::sync::Arc::new(status::StatusConn::new(connector)),
        };
        f.ensure_group().await?;
        Ok(f)
    }

    /// Stores this frontier's settings for every worker to use (the coordinator calls this at
    /// start, so the per-IP cap and lease time are one value across the deployment).
    pub async fn publish_settings(&self) -> Result<(), FrontierError> {
        let mut c = self.conn.clone();
        c.set::<_, _, ()>(self.keys.settings(), encode(&self.settings)).await.map_err(store("publish settings"))
    }

    /// Adopts the settings the coordinator published, if any (workers call this at start).
    pub async fn load_settings(&mut self) -> Result<bool, FrontierError> {
        let mut c = self.conn.clone();
        let blob: Option<Vec<u8>> = c.get(self.keys.settings()).await.map_err(store("load settings"))?;
        match blob {
            Some(b) => {
                self.settings = decode("settings", &b)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Claims of this client meet every host's and IP's full limits, not the latency guard's slow
    /// start (a worker running with `--no-latency-guard` sends no samples to open them).
    pub fn without_slow_start(&mut self) {
        self.settings.slow_start = false;
    }

    /// The settings in force.
    #[must_use]
    pub fn settings(&self) -> FrontierSettings {
        self.settings
    }

    /// The key schema of this frontier.
    #[must_use]
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// A clone of the connection, for measurements and tests.
    #[must_use]
    pub fn connection(&self) -> Conn {
        self.conn.clone()
    }

    async fn ensure_group(&self) -> Result<(), FrontierError> {
        let mut c = self.conn.clone();
        let r: Result<(), RedisError> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(self.keys.events())
            .arg(EVENTS_GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .query_async(&mut c)
            .await;
        match r {
            Ok(()) => Ok(()),
            Err(e) if e.code() == Some("BUSYGROUP") => Ok(()),
            Err(e) => Err(store("create events group")(e)),
        }
    }

    /// The seed script's invocation for one site (arguments as seed.lua lists them).
    fn seed_invocation(&self, seed: &SiteSeed) -> scripts::Call {
        let info = SiteInfo {
            audit: seed.audit,
            start: seed.start.clone(),
            limits: seed.limits.clone(),
            custom: seed.custom.clone(),
        };
        let lim = |code| encode(&Event::Finding(limit_finding(seed.audit, seed.site, &seed.start, &seed.limits, code)));
        let hosts = seed.scope().host_keys();
        let initial: Vec<&Task> = seed.initial.iter().collect();
        let runs = args::TaskRuns::of(&initial);
        let mut inv = self.scripts.seed.call(self.keys.prefix());
        inv.named(&params::SEED)
            .set("site", seed.site.0)
            .set("audit", seed.audit.0)
            .set("max_pages", seed.limits.max_pages)
            .set("max_depth", seed.limits.max_depth)
            .set("max_resources", seed.limits.max_resources)
            .set("max_in_flight", seed.limits.pace.max_in_flight())
            .set("gap", u64::try_from(seed.limits.pace.gap().as_millis()).unwrap_or(u64::MAX))
            .set("info", encode(&info))
            .set("done_blob", encode(&Event::SiteDone { audit: seed.audit, site: seed.site }))
            .set("lim_d", lim(Code::DepthLimitReached))
            .set("lim_p", lim(Code::PageLimitReached))
            .set("lim_r", lim(Code::ResourceLimitReached))
            .set("max_sitemaps", seed.limits.max_sitemaps)
            .set("max_sitemap_bytes", seed.limits.max_sitemap_bytes)
            .set("lim_s", lim(Code::SitemapLimitReached))
            .set("n_hosts", hosts.len())
            .set("initial_span", runs.span())
            .done();
        for host in &hosts {
            let robots = robots_task(seed, host);
            inv.named(&params::SEED_HOST)
                .set("host", host.as_str())
                .set("robots", robots.map(|t| encode(&t)).unwrap_or_default())
                .done();
        }
        runs.push(&mut inv);
        inv.named(&params::SEED_TAIL)
            .set("browser_phase", u8::from(seed.limits.needs_browser()))
            .set("crawl_done", encode(&Event::CrawlDone { audit: seed.audit, site: seed.site }))
            .set("now", UnixMs::from(std::time::SystemTime::now()).0)
            .done();
        inv
    }

    async fn seed_now(&self, seed: SiteSeed) -> Result<(), FrontierError> {
        let inv = self.seed_invocation(&seed);
        let mut c = self.conn.clone();
        let r: Vec<Value> = inv.invoke_async(&mut c).await.map_err(store("seed"))?;
        match first_word(&r).as_deref() {
            Some("exists") => Err(FrontierError::AlreadySeeded(seed.site)),
            _ => Ok(()),
        }
    }

    /// Seeds in pipelines of [`SEED_PIPELINE`] scripts: one round trip per pipeline. A pipeline
    /// that finds the library missing (Redis restarted without persistence, or flushed) loads it and
    /// runs again; sites it had seeded answer `exists` the second time and are counted once.
    async fn seed_many_now(&self, seeds: Vec<SiteSeed>) -> Result<Vec<SiteId>, FrontierError> {
        let mut seeded = Vec::with_capacity(seeds.len());
        let mut c = self.conn.clone();
        for chunk in seeds.chunks(SEED_PIPELINE) {
            let invocations: Vec<_> = chunk.iter().map(|s| self.seed_invocation(s)).collect();
            let mut pipe = redis::pipe();
            for inv in &invocations {
                pipe.add_command(inv.cmd().clone());
            }
            let answers: Vec<Vec<Value>> = match pipe.query_async(&mut c).await {
                Err(e) if scripts::Call::is_missing(&e) => {
                    invocations[0].load(&mut c).await.map_err(store("seed"))?;
                    pipe.query_async(&mut c).await.map_err(store("seed"))?
                }
                r => r.map_err(store("seed"))?,
            };
            for (seed, answer) in chunk.iter().zip(&answers) {
                if first_word(answer).as_deref() != Some("exists") {
                    seeded.push(seed.site);
                }
            }
        }
        replicated(&mut c, "seed").await;
        Ok(seeded)
    }

    async fn claim_now(&self, worker: &WorkerId, now: UnixMs) -> Result<Claim, FrontierError> {
        self.claim_with(&self.scripts.claim, "claim", worker, now).await
    }

    /// A claim through `step` (`claim` or `claim_browser`: the same arguments and answer).
    pub(crate) async fn claim_with(
        &self,
        step: &scripts::Function,
        op: &'static str,
        worker: &WorkerId,
        now: UnixMs,
    ) -> Result<Claim, FrontierError> {
        let mut c = self.conn.clone();
        let r: Vec<Value> = step
            .call(self.keys.prefix())
            .named(&params::CLAIM)
            .set("now", now.0)
            .set("worker", &worker.0)
            .set("ttl", self.settings.lease_ttl_ms)
            .set("ip_cap", self.settings.max_in_flight_per_ip)
            .set("batch", self.settings.lease_batch)
            .set("slow_start", if self.settings.slow_start { "1" } else { "0" })
            .done()
            .invoke_async(&mut c)
            .await
            .map_err(store(op))?;
        self.saw_epoch(&r);
        parse_claim(worker, &r)
    }

    async fn complete_now(&self, lease: &Lease, c: &Completion, now: UnixMs) -> Result<Completed, FrontierError> {
        let (inv, out) = self.completion_call(&self.scripts.complete, lease, c, now);
        let mut conn = self.conn.clone();
        let r: Vec<Value> = inv.invoke_async(&mut conn).await.map_err(store("complete"))?;
        Ok(self.applied(parse_completed(&r), out))
    }

    /// The links memo of this process, whatever a panicking holder left in it (it is only ever a
    /// shortcut, never the truth).
    fn sent(&self) -> std::sync::MutexGuard<'_, sent::Sent> {
        self.sent.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drops the links memo when a claim's lease comes from another epoch than the last one (Redis
    /// was emptied and the audits seeded again: links sent before are new to it). Leases granted
    /// before are stale then, so nothing they complete is remembered; the memo only ever holds
    /// links of the epoch of the latest lease.
    fn saw_epoch(&self, answer: &[Value]) {
        if let Some(e) = epoch_of(answer)
            && self.epoch.swap(e, Ordering::AcqRel) != e
        {
            self.sent().clear();
        }
    }

    /// The pace memo of this process (a panicking holder cannot leave it wrong, only stale by
    /// [`pace::FRESH`] at most).
    fn paced(&self) -> std::sync::MutexGuard<'_, pace::PaceMemo> {
        self.paced.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The call of `step` (`complete` or `complete_claim`) for `lease` and `c`, with the links
    /// Redis has to see ([`sent`]), and those links to remember once it applied them. A completion
    /// whose answers slowed its host first ends this process's clear reading of the host
    /// ([`pace`]), before Redis has it.
    fn completion_call<'a>(
        &self,
        step: &scripts::Function,
        lease: &Lease,
        c: &'a Completion,
        now: UnixMs,
    ) -> (scripts::Call, sent::Outgoing<'a>) {
        if c.slows_the_host() {
            self.paced().forget(&lease.host);
        }
        let out = self.sent().outgoing(lease, &c.discovered);
        let mut inv = step.call(self.keys.prefix());
        args::completion(&mut inv, lease, c, &out.tasks, self.settings.max_in_flight_per_ip, now);
        (inv, out)
    }

    /// `done`, after remembering the links `out` sent if Redis applied the completion.
    fn applied(&self, done: Completed, out: sent::Outgoing<'_>) -> Completed {
        if matches!(done, Completed::Applied { .. }) {
            self.sent().sent(out, std::time::Instant::now());
        }
        done
    }

    /// `complete`, then `claim` for `worker`, in one `FCALL` (`complete_claim`).
    async fn complete_claim_now(
        &self,
        lease: &Lease,
        c: &Completion,
        worker: &WorkerId,
        now: UnixMs,
    ) -> Result<(Completed, Claim), FrontierError> {
        let (mut inv, out) = self.completion_call(&self.scripts.complete_claim, lease, c, now);
        inv.named(&params::CLAIM_AFTER_COMPLETE)
            .set("slow_start", if self.settings.slow_start { "1" } else { "0" })
            .set("worker", &worker.0)
            .set("ttl", self.settings.lease_ttl_ms)
            .set("batch", self.settings.lease_batch)
            .done();
        let mut conn = self.conn.clone();
        let (done, next): (Vec<Value>, Vec<Value>) =
            inv.invoke_async(&mut conn).await.map_err(store("complete and claim"))?;
        let done = self.applied(parse_completed(&done), out);
        self.saw_epoch(&next);
        Ok((done, parse_claim(worker, &next)?))
    }
}

/// The robots.txt task of one host of a seed (with the start URL's scheme).
fn robots_task(seed: &SiteSeed, host: &HostKey) -> Option<Task> {
    shoal_shared::frontier::robots_task(seed.audit, seed.site, seed.start.as_url().scheme(), host)
}

impl Frontier for RedisFrontier {
    fn seed(&self, seed: SiteSeed) -> impl Future<Output = Result<(), FrontierError>> + Send {
        self.seed_now(seed)
    }

    fn seed_many(&self, seeds: Vec<SiteSeed>) -> impl Future<Output = Result<Vec<SiteId>, FrontierError>> + Send {
        self.seed_many_now(seeds)
    }

    fn claim(&self, worker: &WorkerId, now: UnixMs) -> impl Future<Output = Result<Claim, FrontierError>> + Send {
        self.claim_now(worker, now)
    }

    fn claim_browser(
        &self,
        worker: &WorkerId,
        now: UnixMs,
    ) -> impl Future<Output = Result<Claim, FrontierError>> + Send {
        self.claim_browser_now(worker, now)
    }

    fn queue_browser(
        &self,
        site: SiteId,
        tasks: Vec<Task>,
        now: UnixMs,
    ) -> impl Future<Output = Result<(), FrontierError>> + Send {
        self.queue_browser_now(site, tasks, now)
    }

    fn announce_browser_worker(
        &self,
        worker: &WorkerId,
        now: UnixMs,
    ) -> impl Future<Output = Result<(), FrontierError>> + Send {
        self.announce_browser_worker_now(worker, now)
    }

    fn withdraw_browser_worker(&self, worker: &WorkerId) -> impl Future<Output = Result<(), FrontierError>> + Send {
        self.withdraw_browser_worker_now(worker)
    }

    fn browser_workers(&self, now: UnixMs) -> impl Future<Output = Result<usize, FrontierError>> + Send {
        self.browser_workers_now(now)
    }

    async fn complete(&self, lease: &Lease, completion: Completion, now: UnixMs) -> Result<Completed, FrontierError> {
        self.complete_now(lease, &completion, now).await
    }

    fn complete_kept(
        &self,
        lease: &Lease,
        completion: &Completion,
        now: UnixMs,
    ) -> impl Future<Output = Result<Completed, FrontierError>> + Send {
        self.complete_now(lease, completion, now)
    }

    fn complete_and_claim(
        &self,
        lease: &Lease,
        completion: &Completion,
        worker: &WorkerId,
        now: UnixMs,
    ) -> impl Future<Output = Result<(Completed, Claim), FrontierError>> + Send {
        self.complete_claim_now(lease, completion, worker, now)
    }

    fn reap(&self, now: UnixMs) -> impl Future<Output = Result<usize, FrontierError>> + Send {
        let mut c = self.conn.clone();
        let inv = {
            let mut i = self.scripts.reap.call(self.keys.prefix());
            i.named(&params::REAP)
                .set("now", now.0)
                .set("max", REAP_BATCH)
                .set("ip_cap", self.settings.max_in_flight_per_ip)
                .done();
            i
        };
        async move {
            let n: u64 = inv.invoke_async(&mut c).await.map_err(store("reap"))?;
            Ok(usize::try_from(n).unwrap_or(0))
        }
    }

    fn robots(
        &self,
        site: SiteId,
        host: &HostKey,
    ) -> impl Future<Output = Result<Option<LaneRobotsState>, FrontierError>> + Send {
        let mut c = self.conn.clone();
        let lane = self.keys.lane(site, host);
        let robots = self.keys.robots(site, host);
        async move {
            let (state, at, blob): (Option<String>, Option<u64>, Option<Vec<u8>>) = redis::pipe()
                .hget(&lane, "robots")
                .hget(&lane, "rat")
                .get(&robots)
                .query_async(&mut c)
                .await
                .map_err(store("read robots"))?;
            let fetched_at = UnixMs(at.unwrap_or(0));
            match (state.as_deref(), blob) {
                (None, _) => Ok(None),
                // Pending (also while a day-old robots.txt is fetched again), or not written yet.
                (Some("p"), _) | (_, None) => Ok(Some(LaneRobotsState { robots: LaneRobots::Pending, fetched_at })),
                (Some(_), Some(b)) => Ok(Some(LaneRobotsState { robots: decode("robots", &b)?, fetched_at })),
            }
        }
    }

    fn further_may_start(
        &self,
        lease: &Lease,
        now: UnixMs,
    ) -> impl Future<Output = Result<bool, FrontierError>> + Send {
        // A read of this host by any batch of this process lately (pace.rs).
        let asked = std::time::Instant::now();
        // Two reads in one round trip, no script: the host's gap in force and next start (a 429's
        // slow mode, a hold, a quota, the host's latency guard all show there) and the IP guard's
        // level. None while the shared read is fresh.
        let pipe = (!self.paced().fresh(&lease.host, asked)).then(|| {
            let mut pipe = redis::pipe();
            pipe.cmd("HMGET").arg(self.keys.host(&lease.host)).arg("gape").arg("next");
            if let Some(ip) = lease.ip {
                pipe.cmd("HGET").arg(self.keys.ip_guard(ip)).arg("ll");
            }
            (pipe, self.conn.clone(), self.paced.clone(), lease.host.clone())
        });
        async move {
            let Some((pipe, mut c, paced, host_key)) = pipe else { return Ok(true) };
            let r: Vec<Value> = pipe.query_async(&mut c).await.map_err(store("check a batch's pace"))?;
            // A value that is no number reads as "not clear": the batch stops, and the host's
            // next claim finds it (and quarantines its lane, lua/quarantine.lua).
            let host: Option<Vec<Option<u64>>> = r.first().and_then(|v| redis::from_redis_value(v.clone()).ok());
            let gap = host.as_ref().map_or(Some(u64::MAX), |h| Some(h.first().copied().flatten().unwrap_or(0)));
            let next = host.as_ref().and_then(|h| h.get(1).copied()).flatten().unwrap_or(0);
            let level = match r.get(1) {
                None => Some(0),
                Some(v) => redis::from_redis_value::<Option<u64>>(v.clone()).ok().map(|l| l.unwrap_or(0)),
            };
            let clear = gap == Some(0) && next <= now.0 && level == Some(0);
            let mut memo = paced.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if clear {
                memo.clear_at(&host_key, asked);
            } else {
                memo.forget(&host_key);
            }
            Ok(clear)
        }
    }

    fn depart(
        &self,
        lease: &Lease,
        slot: UnixMs,
        at: UnixMs,
    ) -> impl Future<Output = Result<UnixMs, FrontierError>> + Send {
        let mut inv = self.scripts.depart.call(self.keys.prefix());
        inv.named(&params::DEPART)
            .set("host", lease.host.as_str())
            .set("slot", slot.0)
            .set("at", at.0)
            .set("gap", lease.gap_ms)
            .done();
        let mut c = self.conn.clone();
        async move {
            let leave: u64 = inv.invoke_async(&mut c).await.map_err(store("depart"))?;
            Ok(UnixMs(leave))
        }
    }

    fn renew(
        &self,
        worker: &WorkerId,
        leases: &[LeaseId],
        now: UnixMs,
    ) -> impl Future<Output = Result<Renewal, FrontierError>> + Send {
        let mut c = self.conn.clone();
        let inv = {
            let mut i = self.scripts.renew.call(self.keys.prefix());
            i.named(&params::RENEW)
                .set("now", now.0)
                .set("ttl", self.settings.lease_ttl_ms)
                .set("worker", &worker.0)
                .done();
            for id in leases {
                i.arg(id.0);
            }
            i
        };
        async move {
            let r: Vec<Value> = inv.invoke_async(&mut c).await.map_err(store("renew leases"))?;
            let lost = (1..r.len()).map(|i| LeaseId(int_at(&r, i))).collect();
            Ok(Renewal { deadline: UnixMs(int_at(&r, 0)), lost })
        }
    }

    fn site_info(&self, site: SiteId) -> impl Future<Output = Result<Option<SiteInfo>, FrontierError>> + Send {
        let mut c = self.conn.clone();
        let key = self.keys.site(site);
        async move {
            let blob: Option<Vec<u8>> = c.hget(&key, "info").await.map_err(store("read site"))?;
            blob.map(|b| decode("site info", &b)).transpose()
        }
    }

    fn read_events(&self, max: usize) -> impl Future<Output = Result<Vec<(EventId, Event)>, FrontierError>> + Send {
        self.read_events_now(max)
    }

    fn ack_events(&self, ids: &[EventId]) -> impl Future<Output = Result<(), FrontierError>> + Send {
        let ids = ids.to_vec();
        async move { self.ack_now(&ids).await }
    }

    async fn progress(&self, site: SiteId) -> Result<Option<SiteProgress>, FrontierError> {
        Ok(self.progress_many_now(&[site]).await?.pop().flatten())
    }

    fn progress_many(
        &self,
        sites: &[SiteId],
    ) -> impl Future<Output = Result<Vec<Option<SiteProgress>>, FrontierError>> + Send {
        let sites = sites.to_vec();
        async move { self.progress_many_now(&sites).await }
    }

    fn quarantine(&self, max: usize) -> impl Future<Output = Result<Quarantine, FrontierError>> + Send {
        self.quarantine_now(max)
    }

    fn release_quarantine(&self, sites: &[SiteId]) -> impl Future<Output = Result<(), FrontierError>> + Send {
        let sites = sites.to_vec();
        async move { self.release_quarantine_now(&sites).await }
    }

    fn forget(&self, audit: AuditId) -> impl Future<Output = Result<bool, FrontierError>> + Send {
        let mut c = self.conn.clone();
        let inv = {
            let mut i = self.scripts.forget.call(self.keys.prefix());
            i.named(&params::FORGET).set("audit", audit.0).set("step", FORGET_STEP).done();
            i
        };
        async move {
            // One bounded step a call (see forget.lua), again while a step removes something;
            // other clients are served between the calls.
            for _ in 0..FORGET_CALLS {
                let (gone, progress): (i64, i64) = inv.invoke_async(&mut c).await.map_err(store("forget audit"))?;
                if gone == 1 {
                    return Ok(true);
                }
                if progress == 0 {
                    break;
                }
            }
            Ok(false)
        }
    }

    fn cache_get(
        &self,
        key: &str,
        _now: UnixMs,
    ) -> impl Future<Output = Result<Option<Vec<u8>>, FrontierError>> + Send {
        let mut c = self.conn.clone();
        let key = self.keys.cache(key);
        async move { c.get(&key).await.map_err(store("read cache")) }
    }

    fn cache_add(
        &self,
        key: &str,
        value: Vec<u8>,
        _now: UnixMs,
        ttl: Duration,
    ) -> impl Future<Output = Result<bool, FrontierError>> + Send {
        let mut c = self.conn.clone();
        let mut pipe = redis::pipe();
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        pipe.cmd("SET").arg(self.keys.cache(key)).arg(value).arg("NX").arg("PX").arg(ms);
        self.list_under_audit(&mut pipe, key);
        async move {
            let (r,): (Option<String>,) = pipe.query_async(&mut c).await.map_err(store("add to cache"))?;
            Ok(r.is_some())
        }
    }

    fn cache_put(
        &self,
        key: &str,
        value: Vec<u8>,
        _now: UnixMs,
        ttl: Duration,
    ) -> impl Future<Output = Result<(), FrontierError>> + Send {
        let mut c = self.conn.clone();
        let mut pipe = redis::pipe();
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        pipe.cmd("SET").arg(self.keys.cache(key)).arg(value).arg("PX").arg(ms).ignore();
        self.list_under_audit(&mut pipe, key);
        async move { pipe.query_async::<()>(&mut c).await.map_err(store("write cache")) }
    }

    fn cancel(&self, audit: AuditId) -> impl Future<Output = Result<(), FrontierError>> + Send {
        let mut c = self.conn.clone();
        let scripts = self.scripts.clone();
        let prefix = self.keys.prefix().to_owned();
        async move {
            let mut cursor = String::from("0");
            for _ in 0..CANCEL_CALLS {
                let mut inv = scripts.cancel.call(&prefix);
                inv.named(&params::CANCEL)
                    .set("audit", audit.0)
                    .set("cursor", &cursor)
                    .set("step", FORGET_STEP)
                    .set("now", UnixMs::from(std::time::SystemTime::now()).0)
                    .done();
                cursor = inv.invoke_async(&mut c).await.map_err(store("cancel"))?;
                if cursor == "0" {
                    replicated(&mut c, "cancel").await;
                    return Ok(());
                }
            }
            let left = format!("sites still unvisited after {CANCEL_CALLS} steps of audit {}", audit.0);
            Err(FrontierError::Store { op: "cancel", source: left.into() })
        }
    }
}
