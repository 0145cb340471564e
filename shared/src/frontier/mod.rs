//! The frontier: per-host queues, pace state, leases and seen sets, behind one trait.
//!
//! Two back ends implement [`Frontier`]: [`embedded::EmbeddedFrontier`] (in-process, for
//! `shoal audit`) and the Redis one (its own crate, for coordinator + workers). Both pass the same
//! conformance suite (`shoal_tests::conformance`), so a crawl means the same on either.
//!
//! The unit of scheduling is a *lane*: one host of one site. Pace is per host (shared by every lane
//! of that host, whatever audit it belongs to) and per server IP; robots.txt is per lane, so each
//! audit reads it afresh; the queue is per lane.

pub mod budget;
pub mod embedded;
mod serde_bytes_compat;
pub mod workers;

use crate::custom::CustomRules;
use crate::ids::{AuditId, LeaseId, SiteId, WorkerId};
use crate::record::Event;
use crate::task::{SiteLimits, Task};
use crate::time::UnixMs;
use crate::url::{HostKey, NormalizedUrl, Scope};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::net::IpAddr;
use std::time::Duration;

/// How long a lease lasts without a renewal. Workers renew the leases they hold every third of
/// this ([`Frontier::renew`]), so a slow fetch keeps its lease, and a dead worker's URLs are
/// handed out again this long after its last renewal (plus one reaping tick).
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

/// After a failover to a replica (Redis Sentinel), how long no lease is granted at least: the
/// promoted replica may lack the old master's last grants, and every request they started must be
/// over before new ones are counted against the hosts' caps. A request gives up after 15 s; with
/// its connection and a robots.txt lease's TLS handshake, 20 s covers it. The hold is the lease
/// time when that is longer (an unrenewed lease is over by then). docs/redis.md, "Failover".
pub const FAILOVER_HOLD: Duration = Duration::from_secs(20);

/// Leases of one task that may expire (its worker died, hung or was killed while holding it)
/// before the task is given up: the next lease of it records `fetch_abandoned` instead of
/// fetching, so a URL that kills every worker that touches it cannot keep an audit from ending.
pub const MAX_LEASE_EXPIRIES: u8 = 3;

/// Whether browser tasks queued for a site are a round of the rendered crawl
/// ([`crate::render`]): any render task makes it one. After a round the site's crawl goes on
/// with what it found and `CrawlDone` is published again; after other browser tasks the site ends.
#[must_use]
pub fn another_round<'a>(tasks: impl IntoIterator<Item = &'a Task>) -> bool {
    tasks.into_iter().any(|t| t.kind == crate::task::TaskKind::Render)
}

/// The least time between the starts of two page loads in the browser to one host, whatever the
/// host's gap (SPEC §10: a page load brings many requests). Loads to one host are also serialised:
/// the next starts only after the previous one's lease ended.
pub const BROWSER_MIN_GAP: Duration = Duration::from_secs(3);
/// The least time between a rendered page's load (the rendered crawl, `--render`) and the next
/// page load or request to its host: a render is one load (the browser check's are several: the
/// reload after Reject), its bundles come from the site's cache after the first page.
pub const RENDER_MIN_GAP: Duration = Duration::from_secs(1);

/// The least time from the end of a page load of a task of `kind` to the next start at its host:
/// [`RENDER_MIN_GAP`] for a render, [`BROWSER_MIN_GAP`] for the browser check.
#[must_use]
pub fn page_load_gap(kind: crate::task::TaskKind) -> Duration {
    if kind == crate::task::TaskKind::Render { RENDER_MIN_GAP } else { BROWSER_MIN_GAP }
}

/// Settings of a frontier that hold for every audit in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrontierSettings {
    /// Requests in flight to one server IP at most, across all its hosts and audits.
    pub max_in_flight_per_ip: u16,
    /// How long a worker holds a lease before it is reclaimed (longer than one fetch can take).
    pub lease_ttl_ms: u64,
    /// Tasks of one lane a lease may carry at most ([`Lease::more`]): a worker fetches them one
    /// after another under the lease's one slot of the host and of its IP, and completes them in
    /// one step. Only hosts with no gap in force get more than one (a gap is kept between the
    /// starts of any two requests, which a lease cannot promise for requests it starts later).
    /// Back ends that gain nothing from it (the embedded frontier) always lease one.
    #[serde(default = "one")]
    pub lease_batch: u8,
    /// Whether new hosts and server IPs start at one request in flight and open up while their
    /// answers stay near their fastest (the latency guard's slow start, [`crate::latency`]). Off
    /// with the guard (`--no-latency-guard`), whose answers would never open them.
    #[serde(default = "yes")]
    pub slow_start: bool,
}

fn one() -> u8 {
    1
}

fn yes() -> bool {
    true
}

/// Tasks per lease by default ([`FrontierSettings::lease_batch`]).
pub const DEFAULT_LEASE_BATCH: u8 = 32;

impl Default for FrontierSettings {
    fn default() -> Self {
        FrontierSettings {
            max_in_flight_per_ip: crate::pace::DEFAULT_MAX_IN_FLIGHT_PER_IP,
            lease_ttl_ms: u64::try_from(DEFAULT_LEASE_TTL.as_millis()).unwrap_or(u64::MAX),
            lease_batch: DEFAULT_LEASE_BATCH,
            slow_start: true,
        }
    }
}

impl FrontierSettings {
    /// The lease time as a duration.
    #[must_use]
    pub fn lease_ttl(&self) -> Duration {
        Duration::from_millis(self.lease_ttl_ms)
    }
}

/// A site to crawl, as handed to [`Frontier::seed`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteSeed {
    /// The audit.
    pub audit: AuditId,
    /// The site.
    pub site: SiteId,
    /// Its start URL.
    pub start: NormalizedUrl,
    /// Its limits and pace.
    pub limits: SiteLimits,
    /// The first tasks after robots.txt: the start page, then the standard probes.
    pub initial: Vec<Task>,
    /// The audit's extraction and search rules (the same for every site of the audit).
    #[serde(default)]
    pub custom: CustomRules,
}

impl SiteSeed {
    /// The site's scope (start host and its www/apex twin).
    #[must_use]
    pub fn scope(&self) -> Scope {
        Scope::of(self.start.as_url())
    }
}

/// What a worker needs to know about a site to process its tasks: its start URL (the scope) and
/// its limits. Fixed at seed time, so workers cache it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteInfo {
    /// The audit.
    pub audit: AuditId,
    /// The start URL.
    pub start: NormalizedUrl,
    /// Limits and pace.
    pub limits: SiteLimits,
    /// The audit's extraction and search rules (`--extract`, `--search`): a few hundred bytes at
    /// most in practice, [`MAX_RULES`](crate::custom::MAX_RULES) rules of at most
    /// [`MAX_EXPR_BYTES`](crate::custom::MAX_EXPR_BYTES) each by rule.
    #[serde(default)]
    pub custom: CustomRules,
}

impl SiteInfo {
    /// The site's scope.
    #[must_use]
    pub fn scope(&self) -> Scope {
        Scope::of(self.start.as_url())
    }
}

/// A claimed task: the worker may fetch it now, and must complete it before `deadline`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// Its id.
    pub id: LeaseId,
    /// Who holds it.
    pub worker: WorkerId,
    /// The host it is paced under.
    pub host: HostKey,
    /// The server IP it counts against, if known (after the host's first lookup). Workers connect
    /// to this address, so the IP we pace is the IP we talk to.
    pub ip: Option<IpAddr>,
    /// The host's address is due to be looked up again (its first lease, a new audit started
    /// using it, or its DNS TTL ran out): the worker looks the name up afresh and reports it in
    /// [`Completion::resolved`]. If the address changed (or none was known), nothing is fetched
    /// under this lease: the task goes back unchanged, and its next lease counts against the new
    /// address. One such lease per host is out at a time, and the host's other lanes wait for it.
    #[serde(default)]
    pub resolve: bool,
    /// Earlier leases of this task that expired without a completion. At
    /// [`MAX_LEASE_EXPIRIES`] the worker gives the task up instead of fetching it.
    #[serde(default)]
    pub expired: u8,
    /// When the lane's robots.txt rules in force were fetched (0 while they are pending). A
    /// worker's cached rules for the lane are current only if they carry this time.
    #[serde(default)]
    pub robots_at: UnixMs,
    /// What to fetch.
    pub task: Task,
    /// When it started (the pace clock counts from here).
    pub started_at: UnixMs,
    /// After this, the lease is reclaimed and the task returns to the queue.
    pub deadline: UnixMs,
    /// The gap in force for the host when the lease was granted, in milliseconds. A worker keeps
    /// its own requests to the host at least this far apart as they leave, so a request delayed
    /// between claim and send (a busy machine) cannot arrive inside the next one's gap.
    #[serde(default)]
    pub gap_ms: u64,
    /// Further tasks of the same lane under this lease (see [`FrontierSettings::lease_batch`]),
    /// fetched after `task`, one at a time, each only after the one before has ended. Its
    /// completion says what became of each ([`Completion::more`]); tasks not started then go back
    /// to the queue as they were.
    #[serde(default)]
    pub more: Vec<Task>,
}

impl Lease {
    /// The lease as its `i`-th further task sees it: that task, started at `now`, with nothing to
    /// look up and no expired leases (a batch only takes tasks without).
    #[must_use]
    pub fn follow_up(&self, i: usize, now: UnixMs) -> Option<Lease> {
        let task = self.more.get(i)?.clone();
        Some(Lease {
            id: self.id,
            worker: self.worker.clone(),
            host: self.host.clone(),
            ip: self.ip,
            resolve: false,
            expired: 0,
            robots_at: self.robots_at,
            task,
            started_at: now,
            deadline: self.deadline,
            gap_ms: self.gap_ms,
            more: Vec::new(),
        })
    }
}

/// The answer to [`Frontier::claim`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Fetch this now.
    Leased(Box<Lease>),
    /// Nothing may start yet; the earliest start is at this time.
    Wait(UnixMs),
    /// Nothing can start until a lease completes or new work is seeded.
    Idle,
}

/// What a robots.txt fetch taught.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "r", rename_all = "snake_case")]
pub enum RobotsOutcome {
    /// 2xx: these rules (the raw body, capped at 500 KiB), with our group's Crawl-delay.
    Rules {
        /// The robots.txt body.
        #[serde(with = "serde_bytes_compat")]
        body: Vec<u8>,
        /// Crawl-delay for our group, in milliseconds (at most 60 s; more is `OffLimits`).
        crawl_delay_ms: Option<u32>,
    },
    /// 4xx other than 429: no rules, everything allowed.
    AllowAll,
    /// 5xx, 429, timeouts or network errors after retries, or Crawl-delay over 60 s: nothing more
    /// is requested from this host for this site.
    OffLimits,
    /// The host does not resolve: a www/apex twin that simply is not part of the site.
    NotPartOfSite,
}

/// The robots.txt state of one lane with the time its rules were fetched (0 while pending), as
/// [`Frontier::robots`] answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneRobotsState {
    /// The rules.
    pub robots: LaneRobots,
    /// When they were fetched; compare with [`Lease::robots_at`].
    pub fetched_at: UnixMs,
}

/// A fresh lookup of a lease's host ([`Lease::resolve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Resolution {
    /// The host's address, and how long it may be used (its DNS TTL; the frontier clamps it to
    /// [`crate::pace::MIN_ADDRESS_TTL`] ..= [`crate::pace::MAX_ADDRESS_TTL`]).
    Address {
        /// The address the worker's guard chose.
        ip: IpAddr,
        /// The answer's TTL in milliseconds.
        ttl_ms: u64,
    },
    /// The lookup failed. A host with a known address keeps it for
    /// [`crate::pace::MIN_ADDRESS_TTL`] (a DNS hiccup does not stop a crawl); one without stays
    /// unresolved, and its next lease looks it up again.
    Failed,
}

/// What [`Frontier::renew`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renewal {
    /// The renewed leases' new deadline.
    pub deadline: UnixMs,
    /// Leases that could not be renewed: reclaimed (they expired) or completed already. Their
    /// tasks may be with another worker now.
    pub lost: Vec<LeaseId>,
}

/// The robots.txt state of one lane, as workers read it to check URLs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LaneRobots {
    /// Not fetched yet: nothing but robots.txt may be requested.
    Pending,
    /// Known.
    Known(RobotsOutcome),
}

/// Everything a completed fetch tells the frontier, applied in one atomic step.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Completion {
    /// The fresh lookup of a [`Lease::resolve`] lease.
    pub resolved: Option<Resolution>,
    /// The answer was a 429: the host enters slow mode.
    pub rate_limited: bool,
    /// For a robots.txt task, what it taught.
    pub robots: Option<RobotsOutcome>,
    /// When those rules were fetched, if not under this lease (a copy shared between sites); the
    /// frontier fetches them again [`crate::robots::ROBOTS_MAX_AGE`] after this.
    pub robots_fetched_at: Option<UnixMs>,
    /// Queue this task in the lease's lane again: the leased task with one retry more and a
    /// not-before time, or a robots.txt task moved to its redirect target.
    pub requeue: Option<Task>,
    /// URLs found (links, sitemap entries, redirect targets). The frontier deduplicates them against
    /// the audit's seen set and applies the budgets; workers filter scope and robots first.
    pub discovered: Vec<Task>,
    /// Page records and findings to publish.
    pub events: Vec<Event>,
    /// Bytes of a sitemap read under this lease (decompressed), against the site's sitemap budget.
    pub sitemap_bytes: u64,
    /// What the answer told about its server (response time, a stated quota, a hold), applied to
    /// the host's pace ([`crate::pace::HostPace::apply_signals`]).
    #[serde(default)]
    pub signals: crate::latency::ServerSignals,
    /// Nothing was sent to the lease's host under it: an answer from the cache (a link another
    /// site checked), a robots.txt copied from another lane of the host, a check another lane is
    /// asking at this moment, a URL its robots.txt disallows, an address that changed. The gap its
    /// claim took is given back ([`crate::pace::HostPace::give_back`]), so a host with a
    /// Crawl-delay waits only between the requests it gets (issue 43: a site with `Crawl-delay: 1`
    /// that 4 other sites linked to took 18 s for its 9 requests, a second for every cached answer).
    #[serde(default)]
    pub sent_nothing: bool,
    /// What became of each of the lease's further tasks ([`Lease::more`]), in their order; tasks
    /// past the end of this list were not started and go back to the queue unchanged. The
    /// fields above hold what all of them taught together (links, events, a 429, the last quota
    /// and the latest hold); the response times of the further tasks are here.
    #[serde(default)]
    pub more: Vec<FollowUp>,
}

impl Completion {
    /// Takes in the completion of one of the lease's further tasks ([`Lease::more`], in order):
    /// its links, events and sitemap bytes join this one's, a 429 or a hold counts for the
    /// host, the latest quota stands, and what became of the task is added to
    /// [`Completion::more`]. A further task is never a robots.txt task and never looks its host up,
    /// so it has neither to give.
    pub fn absorb(&mut self, further: Completion) {
        self.rate_limited |= further.rate_limited;
        self.sent_nothing &= further.sent_nothing;
        self.discovered.extend(further.discovered);
        self.events.extend(further.events);
        self.sitemap_bytes = self.sitemap_bytes.saturating_add(further.sitemap_bytes);
        if further.signals.quota_gap_ms.is_some() {
            self.signals.quota_gap_ms = further.signals.quota_gap_ms;
        }
        self.signals.hold_until = self.signals.hold_until.max(further.signals.hold_until);
        let response_ms = further.signals.response_ms;
        self.more.push(match further.requeue {
            Some(task) => FollowUp::Requeue { task: Box::new(task), response_ms },
            None => FollowUp::Done { response_ms },
        });
    }

    /// Whether the host asked to be left alone or slowed (a 429, a hold, a quota): a lease's
    /// further tasks are not started after such an answer; they go back to the queue and wait
    /// for the host's new pace.
    #[must_use]
    pub fn slows_the_host(&self) -> bool {
        self.rate_limited || self.signals.hold_until.is_some() || self.signals.quota_gap_ms.is_some_and(|g| g > 0)
    }
}

/// What became of one further task of a lease ([`Lease::more`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FollowUp {
    /// Fetched and processed: done, with its answer's time to the head for the latency guards
    /// (`None` without an answer or with the guard off).
    Done {
        /// The response time in milliseconds.
        response_ms: Option<u32>,
    },
    /// Fetched, and to be tried again: this task (one retry more, a not-before time).
    Requeue {
        /// The task to queue.
        task: Box<Task>,
        /// The response time in milliseconds.
        response_ms: Option<u32>,
    },
}

impl FollowUp {
    /// The response time it reports.
    #[must_use]
    pub fn response_ms(&self) -> Option<u32> {
        match self {
            FollowUp::Done { response_ms } | FollowUp::Requeue { response_ms, .. } => *response_ms,
        }
    }
}

/// What [`Frontier::complete`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completed {
    /// Applied.
    Applied {
        /// Discovered tasks that were new and fit the budgets.
        enqueued: usize,
    },
    /// The lease had expired and been reclaimed, or was completed already: nothing changed.
    Stale,
}

/// A site's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SiteProgress {
    /// Tasks waiting in the site's lanes (ready or delayed).
    pub queued: u64,
    /// Tasks leased to workers now.
    pub leased: u64,
    /// Pages enqueued so far (against the page budget).
    pub pages_enqueued: u64,
    /// Tasks completed.
    pub completed: u64,
    /// No queued or leased work left.
    pub done: bool,
    /// Its crawl (or a round of the rendered crawl) ended and it waits for the coordinator to
    /// queue its browser tasks ([`Frontier::queue_browser`]): what the coordinator checks before
    /// planning them, so an [`crate::record::Event::CrawlDone`] delivered twice plans nothing while
    /// the first one's tasks run.
    #[serde(default)]
    pub awaiting_browser: bool,
}

/// A site a frontier step took out of the crawl because it could not read the site's state (a
/// value that should be a number and is not, a key of the wrong type): see
/// [`Frontier::quarantine`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuarantinedSite {
    /// The site.
    pub site: SiteId,
    /// When a step first found it so (ms, in the clock of the process that ran the step; 0 if not
    /// known).
    pub since: UnixMs,
    /// What could not be read.
    pub reason: String,
}

/// What a frontier quarantined (see [`Frontier::quarantine`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quarantine {
    /// Entries of the events log skipped whole or in part as unreadable since the last call.
    pub entries: u64,
    /// Quarantined sites not yet forgotten, at most as many as asked for.
    pub sites: Vec<QuarantinedSite>,
}

/// An event's position in the results log, for acknowledgement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EventId(pub String);

/// Failures of the frontier itself (not of websites).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrontierError {
    /// The back end's store failed (Redis down, script error).
    #[error("frontier store failed during {op}: {source}")]
    Store {
        /// The operation.
        op: &'static str,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A value read from the store did not decode.
    #[error("frontier data corrupt in {what}: {detail}")]
    Corrupt {
        /// What was read.
        what: &'static str,
        /// The decoder's message.
        detail: String,
    },
    /// A site was seeded twice.
    #[error("site {0} is already seeded")]
    AlreadySeeded(SiteId),
    /// The back end's store lost its data (Redis restarted empty, was flushed, or failed over to an
    /// empty replica). What the back end itself needs was recreated; the audits still running must
    /// be seeded again from the audit database, which the coordinator engine does on this error.
    #[error("the frontier store lost its data ({0} was missing); recreated it, live audits must be seeded again")]
    Lost(&'static str),
}

/// The result-cache key of something that belongs to one audit (`a:{audit}:{rest}`): such
/// entries are dropped when the audit is forgotten ([`Frontier::forget`]), whatever their time,
/// so a copy kept for the length of an audit (a host's robots.txt, 24 h) does not outlive it.
#[must_use]
pub fn audit_cache_key(audit: AuditId, rest: &str) -> String {
    format!("a:{audit}:{rest}")
}

/// The audit an [`audit_cache_key`] belongs to; `None` for a frontier-wide key.
#[must_use]
pub fn audit_of_cache_key(key: &str) -> Option<AuditId> {
    let (audit, _) = key.strip_prefix("a:")?.split_once(':')?;
    audit.parse().ok().map(AuditId)
}

/// One frontier, two back ends. All methods are atomic with respect to each other.
pub trait Frontier: Send + Sync + 'static {
    /// Creates the site's lanes (start host and twin), each with robots.txt as its first task, and
    /// queues `seed.initial` behind the start host's robots.txt. The initial URLs join the seen set.
    fn seed(&self, seed: SiteSeed) -> impl Future<Output = Result<(), FrontierError>> + Send;

    /// Seeds many sites in as few steps as the back end allows (pipelined on Redis), so a submit of
    /// 100,000 sites costs a few hundred round trips, not 100,000. A site already seeded is left
    /// as it is (seeding is idempotent, which a retried submit and recovery rely on). Returns the
    /// sites seeded by this call, in the order given.
    fn seed_many(&self, seeds: Vec<SiteSeed>) -> impl Future<Output = Result<Vec<SiteId>, FrontierError>> + Send;

    /// Picks a ready lane and leases its next task: the host's start time has come, its in-flight
    /// count and its IP's are under their caps. Increments both and moves the host's next start.
    fn claim(&self, worker: &WorkerId, now: UnixMs) -> impl Future<Output = Result<Claim, FrontierError>> + Send;

    /// Like [`Frontier::claim`], for a worker that can run the browser check (started with
    /// `--browser`): leases only browser tasks ([`crate::task::TaskKind::Browser`]), which
    /// [`Frontier::claim`] never hands out. A host's browser tasks go one at a time, each under
    /// the host's pace and at least [`BROWSER_MIN_GAP`] after the previous one ended.
    fn claim_browser(
        &self,
        worker: &WorkerId,
        now: UnixMs,
    ) -> impl Future<Output = Result<Claim, FrontierError>> + Send;

    /// Queues a site's browser tasks after its crawl ended ([`crate::record::Event::CrawlDone`]),
    /// bypassing the seen set (their pages were crawled already) and the budgets. The site is done
    /// once they are; with no tasks it is done at once. Tasks that are a round of the rendered
    /// crawl ([`another_round`]) are the exception: once they, and the crawl of the pages they
    /// found, are done, the site publishes `CrawlDone` again for the next round. A site that is
    /// not waiting for them (unknown, done, cancelled, queued already) is left as it is.
    fn queue_browser(
        &self,
        site: SiteId,
        tasks: Vec<Task>,
        now: UnixMs,
    ) -> impl Future<Output = Result<(), FrontierError>> + Send;

    /// Announces that `worker` runs browser tasks (it was started with `--browser`) until
    /// [`FrontierSettings::browser_worker_ttl`] after `now`, replacing its earlier announcement.
    /// The worker's heartbeat renews it; a worker that dies simply stops being counted.
    fn announce_browser_worker(
        &self,
        worker: &WorkerId,
        now: UnixMs,
    ) -> impl Future<Output = Result<(), FrontierError>> + Send;

    /// Withdraws `worker`'s announcement (its clean shutdown): it is no longer counted at once.
    fn withdraw_browser_worker(&self, worker: &WorkerId) -> impl Future<Output = Result<(), FrontierError>> + Send;

    /// How many workers' announcements are live at `now` (they expire after `now`), dropping the
    /// expired ones: the coordinator refuses an audit that needs a browser while this is 0
    /// ([`crate::task::SiteLimits::needs_browser`]).
    fn browser_workers(&self, now: UnixMs) -> impl Future<Output = Result<usize, FrontierError>> + Send;

    /// Whether the frontier's store is across a network (Redis): a completion can fail for a while
    /// and succeed when sent again, so a worker keeps it for those retries, and a round trip saved
    /// ([`Frontier::complete_and_claim`]) is CPU saved on both ends. In one process a completion
    /// is handed over once, never copied, and completing and claiming separately costs nothing.
    const REMOTE: bool = true;

    /// Releases the lease's slot and applies what the fetch taught, atomically. Completing a lease
    /// that was reclaimed or completed already changes nothing.
    fn complete(
        &self,
        lease: &Lease,
        completion: Completion,
        now: UnixMs,
    ) -> impl Future<Output = Result<Completed, FrontierError>> + Send;

    /// [`Frontier::complete`] for a caller that keeps the completion to send it again if this
    /// fails. A back end that only encodes it borrows it, so the page's records are not copied
    /// for every request just in case; the default copies it.
    fn complete_kept(
        &self,
        lease: &Lease,
        completion: &Completion,
        now: UnixMs,
    ) -> impl Future<Output = Result<Completed, FrontierError>> + Send {
        self.complete(lease, completion.clone(), now)
    }

    /// [`Frontier::complete_kept`] followed by [`Frontier::claim`] for `worker`, in one atomic
    /// step where the back end can (one round trip to Redis instead of two): the slot the
    /// completion frees goes straight to the worker that freed it, under the same rules as any
    /// claim (the lowest-scored ready lane, its host's and IP's caps and gap). A stale completion
    /// still claims. If this fails, the completion may or may not have been applied (completing
    /// again is harmless) and a lease granted may be lost to the caller: it expires and counts
    /// against its URL, as a claim whose answer was lost does.
    fn complete_and_claim(
        &self,
        lease: &Lease,
        completion: &Completion,
        worker: &WorkerId,
        now: UnixMs,
    ) -> impl Future<Output = Result<(Completed, Claim), FrontierError>> + Send {
        async move {
            let done = self.complete_kept(lease, completion, now).await?;
            let next = self.claim(worker, now).await?;
            Ok((done, next))
        }
    }

    /// Reclaims leases past their deadline: slots are freed and tasks return to their queues, each
    /// with one more expired lease counted ([`Lease::expired`]).
    fn reap(&self, now: UnixMs) -> impl Future<Output = Result<usize, FrontierError>> + Send;

    /// Moves the deadline of `worker`'s leases to `now` + the lease time (the worker's
    /// heartbeat, while their fetches run). Leases already reclaimed or completed are reported
    /// lost, never revived.
    fn renew(
        &self,
        worker: &WorkerId,
        leases: &[LeaseId],
        now: UnixMs,
    ) -> impl Future<Output = Result<Renewal, FrontierError>> + Send;

    /// Whether a lease's next further task ([`Lease::more`]) may start at `now`: its host still
    /// has no gap in force and nothing holds it, and its IP is not slowed. Another lease's answer
    /// (a 429, a hold, a quota, a latency guard that moved) may have changed that since the lease
    /// was granted; the worker asks before every further request, so a host that asked to be
    /// left alone sees no more of a batch than of single leases. Back ends that never lease more
    /// than one task answer yes.
    fn further_may_start(
        &self,
        lease: &Lease,
        now: UnixMs,
    ) -> impl Future<Output = Result<bool, FrontierError>> + Send {
        let _ = (lease, now);
        std::future::ready(Ok(true))
    }

    /// The request under `lease`, given the start `slot` (the lease's, or what this answered
    /// before), would leave at `at`, later than the slot: the worker's own spacing held it back, or
    /// a busy machine woke it late. Answers when it may leave: `at` if no other start was given
    /// after the slot, else no sooner than a gap after the latest one; the host's next start moves
    /// to a gap after that answer, never earlier. So a late request never reaches the host less
    /// than a gap from another worker's. Back ends whose requests all leave from one process
    /// (whose spacing holds every request) answer `at` and keep nothing.
    fn depart(
        &self,
        lease: &Lease,
        slot: UnixMs,
        at: UnixMs,
    ) -> impl Future<Output = Result<UnixMs, FrontierError>> + Send {
        let _ = (lease, slot);
        std::future::ready(Ok(at))
    }

    /// The robots.txt state of one lane, for workers to check URLs against.
    fn robots(
        &self,
        site: SiteId,
        host: &HostKey,
    ) -> impl Future<Output = Result<Option<LaneRobotsState>, FrontierError>> + Send;

    /// The site's start URL and limits.
    fn site_info(&self, site: SiteId) -> impl Future<Output = Result<Option<SiteInfo>, FrontierError>> + Send;

    /// Up to `max` unacknowledged events, oldest first; an event read but not acknowledged is
    /// delivered again by the next read of a new reader (after a crash).
    fn read_events(&self, max: usize) -> impl Future<Output = Result<Vec<(EventId, Event)>, FrontierError>> + Send;

    /// Acknowledges events after they are safely stored.
    fn ack_events(&self, ids: &[EventId]) -> impl Future<Output = Result<(), FrontierError>> + Send;

    /// A site's progress.
    fn progress(&self, site: SiteId) -> impl Future<Output = Result<Option<SiteProgress>, FrontierError>> + Send;

    /// The progress of many sites in one step (one round trip on Redis), in the order asked:
    /// what an audit's status and the gauges read, whatever the number of sites.
    fn progress_many(
        &self,
        sites: &[SiteId],
    ) -> impl Future<Output = Result<Vec<Option<SiteProgress>>, FrontierError>> + Send;

    /// Drops every queued task of the audit's sites; leased ones finish but discover nothing more.
    fn cancel(&self, audit: AuditId) -> impl Future<Output = Result<(), FrontierError>> + Send;

    /// What the frontier quarantined: state it could not read is never guessed at. An events log
    /// entry that does not decode is skipped (what decodes of it is delivered, and counted here);
    /// a site whose state a step cannot read is taken out of the crawl and listed here until its
    /// audit is forgotten ([`Frontier::forget`] drops it), at most `max` of them. The coordinator
    /// fails the audits of listed sites (docs/runbook.md, "A bad entry is quarantined"). The
    /// embedded frontier holds typed state in its own memory and has nothing to report.
    fn quarantine(&self, max: usize) -> impl Future<Output = Result<Quarantine, FrontierError>> + Send {
        let _ = max;
        std::future::ready(Ok(Quarantine::default()))
    }

    /// Drops the quarantine records of `sites` that belong to no running audit (their audit ended
    /// and was forgotten, or they were never seeded: a record anyone could have written).
    fn release_quarantine(&self, sites: &[SiteId]) -> impl Future<Output = Result<(), FrontierError>> + Send {
        let _ = sites;
        std::future::ready(Ok(()))
    }

    /// Drops what the frontier still keeps of an ended audit (its seen set, site records, the
    /// slow mode its 429s put hosts in, its [`audit_cache_key`] entries), so memory does not grow
    /// with every audit. Sites still
    /// running (a cancelled audit's leases out) are kept: true once nothing of the audit is left,
    /// so callers ask again until then.
    fn forget(&self, audit: AuditId) -> impl Future<Output = Result<bool, FrontierError>> + Send;

    /// A value of the frontier-wide result cache, if present and not expired. Workers share
    /// external link results and other sites' robots.txt through it, so a popular external host is
    /// asked once per cache period, not once per customer site.
    fn cache_get(&self, key: &str, now: UnixMs) -> impl Future<Output = Result<Option<Vec<u8>>, FrontierError>> + Send;

    /// Stores a value only if the key is absent (or expired); true if it was stored. Workers use
    /// it as a short lock so two sites' lanes do not ask the same other host the same thing at
    /// the same moment.
    fn cache_add(
        &self,
        key: &str,
        value: Vec<u8>,
        now: UnixMs,
        ttl: Duration,
    ) -> impl Future<Output = Result<bool, FrontierError>> + Send;

    /// Stores a value in the result cache until `now + ttl`.
    fn cache_put(
        &self,
        key: &str,
        value: Vec<u8>,
        now: UnixMs,
        ttl: Duration,
    ) -> impl Future<Output = Result<(), FrontierError>> + Send;
}

/// The robots.txt task of `host` for a site, fetched with `scheme`: the first task of every lane.
#[must_use]
pub fn robots_task(audit: AuditId, site: SiteId, scheme: &str, host: &HostKey) -> Option<Task> {
    let url = NormalizedUrl::parse(&format!("{scheme}://{host}/robots.txt")).ok()?;
    let mut t = Task::new(audit, site, url, crate::task::TaskKind::Robots, 0, crate::task::FoundVia::Standard);
    t.priority = crate::task::Priority(0);
    Some(t)
}

/// The robots.txt task that opens the lane of `task`'s host (same scheme and port).
#[must_use]
pub fn robots_task_for(task: &Task) -> Option<Task> {
    robots_task(task.audit, task.site, task.url.as_url().scheme(), &task.url.host_key())
}

/// The finding published (once per site) when a discovered URL is left out for a budget: the
/// same text from every back end, so a crawl reports the same on either.
#[must_use]
pub fn limit_finding(
    audit: AuditId,
    site: SiteId,
    start: &NormalizedUrl,
    limits: &SiteLimits,
    code: crate::finding::Code,
) -> crate::finding::Finding {
    use crate::finding::Code;
    let detail = match code {
        Code::DepthLimitReached => {
            format!("links deeper than {} were not followed", limits.max_depth)
        }
        Code::PageLimitReached => format!("the page budget of {} was reached", limits.max_pages),
        Code::SitemapLimitReached => format!(
            "sitemaps not read past {} files, {} bytes or the page budget of {}",
            limits.max_sitemaps, limits.max_sitemap_bytes, limits.max_pages
        ),
        _ => format!("the resource-check budget of {} was reached", limits.max_resources),
    };
    crate::finding::Finding::new(audit, site, code, start.as_str(), detail)
}
