//! Turning one lease into one completion: fetch, interpret, extract, decide what to queue.
//!
//! Everything a website does wrong ends up as data in the [`Completion`] (a record, a finding, a
//! retry); only a failing frontier is an `Err`.
//!
//! This module holds what every task kind shares (the crawler, its settings, the job being built)
//! and dispatches a lease to its task kind: `robots` opens a lane, `page` crawls, `resource` and
//! `external` check links, `sitemap` lists URLs, `probe` looks for known files. `policy` is the
//! pacing and retry step every fetch goes through; the rules themselves live in
//! `shoal_shared::pace` and `shoal_shared::robots`, so that the worker never restates them.

mod address;
mod browser;
mod domain;
mod external;
mod hreflang;
mod mail;
mod page;
mod policy;
mod probe;
mod resource;
mod robots;
mod rules;
mod sitemap;
mod stylesheet;
#[cfg(test)]
mod testing;

pub use browser::DEFAULT_PAGE_TIMEOUT;
pub use domain::MAIL_SERVERS_CHECKED;
pub use probe::WORDPRESS_PROBES;

use self::address::Lookup;
use self::robots::CachedRules;
use crate::custom::CompiledRules;
use crate::extract::ExtractCaps;
use crate::fetch::{Fetched, Fetcher};
use crate::guard::NonPublic;
use crate::sitemap::SitemapCaps;
use crate::tls;
use shoal_shared::finding::{Code, Finding};
use shoal_shared::frontier::{Completion, Frontier, FrontierError, Lease, MAX_LEASE_EXPIRIES, RobotsOutcome, SiteInfo};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Event, FetchFailure, PageRecord};
use shoal_shared::robots::{ProductToken, Verdict};
use shoal_shared::scope_rules::ScopeRules;
use shoal_shared::task::{Task, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_shared::url::{HostKey, Scope};
use std::sync::Arc;
use std::time::Duration;

/// robots.txt bytes parsed at most (RFC 9309 §2.5: at least 500 KiB). A longer file is cut there
/// (after its last complete line) and reported as `robots_txt_too_large`.
pub const ROBOTS_MAX_BYTES: u64 = 500 * 1024;
/// Redirect hops followed for a page (SPEC §4).
pub const MAX_REDIRECTS: usize = 10;
/// Redirect hops followed for robots.txt (RFC 9309 §2.3.1.2).
pub const MAX_ROBOTS_REDIRECTS: usize = 5;
/// How deep sitemap indexes may nest.
pub const MAX_SITEMAP_INDEX_DEPTH: u8 = 2;
/// How long external link results and other sites' robots.txt are reused by default.
pub const DEFAULT_EXTERNAL_CACHE_TTL: Duration = Duration::from_secs(6 * 60 * 60);

/// Sites whose info a worker keeps at most (a worker runs for months; its caches are bounded
/// and expire, and anything dropped is read from the frontier again when needed).
const SITE_CACHE_ENTRIES: u64 = 100_000;
/// A site's info unused for this long is dropped (its audit has most likely ended; a site still
/// crawled is read from the frontier again, one small read).
const SITE_CACHE_IDLE: Duration = Duration::from_secs(2 * 60);
/// Audits whose scope rules a worker keeps one compiled copy of at most.
const SCOPE_RULES_AUDITS: u64 = 1_000;
/// The robots.txt rules a worker keeps, by weight: the sum of their files' sizes in KiB.
const ROBOTS_CACHE_KIB: u64 = 256 * 1024;
/// Rules kept this long at most, so that a lane's robots.txt fetched again after a day replaces
/// them for link filtering too (leases carry the time of their lane's rules and are checked
/// against current ones in any case) ...
const ROBOTS_CACHE_TTL: Duration = Duration::from_secs(10 * 60);
/// ... and dropped sooner when unused (their site's crawl has most likely ended).
const ROBOTS_CACHE_IDLE: Duration = Duration::from_secs(2 * 60);
/// Hosts whose last send time a worker remembers at most ...
const SEND_MARKS: u64 = 100_000;
/// ... and for how long: a mark older than the longest gap a host may ask for says nothing.
const SEND_MARK_TTL: Duration = Duration::from_secs(2 * 60);

/// Audits whose compiled extraction and search rules a worker keeps at most (each at most
/// [`MAX_RULES`](shoal_shared::custom::MAX_RULES) rules, compiled programs capped by
/// [`crate::custom::REGEX_SIZE_LIMIT`]); dropped like site info when unused.
const CUSTOM_RULE_AUDITS: u64 = 64;

/// Response headers kept in page records (security, caching, compression).
const KEPT_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "content-encoding",
    "cache-control",
    "expires",
    "etag",
    "last-modified",
    "strict-transport-security",
    "content-security-policy",
    "x-content-type-options",
    "x-frame-options",
    "referrer-policy",
    "x-robots-tag",
    "location",
    "retry-after",
    "server",
];

/// What the crawler needs besides the fetcher.
#[derive(Debug, Clone)]
pub struct CrawlSettings {
    /// The robots.txt product token.
    pub token: ProductToken,
    /// HTML extraction caps.
    pub extract: ExtractCaps,
    /// Sitemap caps.
    pub sitemap: SitemapCaps,
    /// The roots the TLS certificate check judges against.
    pub tls_roots: tls::Roots,
    /// Check links to other sites (one HEAD, one GET only if HEAD fails).
    pub check_external: bool,
    /// How long an external link's result and another site's robots.txt are reused.
    pub external_cache_ttl: Duration,
    /// The port mail servers are talked to on (`--smtp-port`; 25, other values for tests).
    pub smtp_port: u16,
    /// The name sent with EHLO (`--helo-name`).
    pub helo_name: String,
    /// One RDAP base URL used for every domain instead of the IANA bootstrap (`--rdap-url`).
    pub rdap_url: Option<String>,
    /// Report response times to the frontier's latency guard (`--no-latency-guard` turns it off).
    pub latency_guard: bool,
    /// The Chromium binary of browser tasks (`--chromium`).
    pub chromium: std::path::PathBuf,
    /// How long one page may take in the browser (`--browser-timeout-s`).
    pub browser_timeout: Duration,
    /// The most memory Chromium's processes may use together, in bytes (`--browser-memory-mb`).
    pub browser_memory_limit: u64,
    /// Test only: obey the fault-injection paths (`/__shoal_fault/...`, `worker/src/fault.rs`), which
    /// panic, abort the process or hang on purpose. Off by default, and no flag, config key or
    /// environment variable turns it on: only Rust code (the tests) can. Why a runtime switch as
    /// well as the `fault-injection` feature: Cargo unifies features, so a workspace build that
    /// includes the test crate compiles the hooks into the `shoal` binary too, and a website
    /// could then kill the worker with a link. Does nothing in a build without the feature.
    pub inject_faults: bool,
}

impl Default for CrawlSettings {
    fn default() -> Self {
        CrawlSettings {
            token: ProductToken::from_agent("ShoalBot"),
            extract: ExtractCaps::default(),
            sitemap: SitemapCaps::default(),
            tls_roots: tls::Roots::webpki(),
            check_external: true,
            external_cache_ttl: DEFAULT_EXTERNAL_CACHE_TTL,
            smtp_port: crate::smtp::DEFAULT_SMTP_PORT,
            helo_name: crate::smtp::DEFAULT_HELO_NAME.to_owned(),
            rdap_url: None,
            latency_guard: true,
            chromium: std::path::PathBuf::from("/usr/bin/chromium"),
            browser_timeout: DEFAULT_PAGE_TIMEOUT,
            browser_memory_limit: crate::browser::DEFAULT_MEMORY_LIMIT_MIB * 1024 * 1024,
            inject_faults: false,
        }
    }
}

/// Processes leases for one worker process; caches site info and robots rules, each cache
/// bounded in size and expiring (moka), so a worker's memory stays flat over months of audits.
pub struct Crawler<F> {
    frontier: Arc<F>,
    fetcher: Fetcher,
    settings: CrawlSettings,
    sites: crate::Cache<SiteId, Arc<SiteInfo>>,
    /// One compiled copy of each audit's scope rules, shared by the audit's sites: every site's
    /// info carries the rules and compiles them when decoded, and a list of 64 patterns can take
    /// a megabyte compiled, so a worker holding thousands of sites keeps one copy per audit.
    scope_rules: crate::Cache<shoal_shared::ids::AuditId, ScopeRules>,
    robots: crate::Cache<(SiteId, HostKey), Arc<CachedRules>>,
    /// When this process last sent a request to each host (and how quickly it answers).
    last_send: crate::Cache<HostKey, policy::SendMark>,
    /// Each audit's extraction and search rules, compiled once ([`crate::custom`]).
    custom: crate::Cache<AuditId, Arc<CompiledRules>>,
    /// HTML parses running at once, at most one per core: parsing is CPU work on the blocking
    /// pool, and 64 leases parsing at once only made the pool grow to dozens of threads, each
    /// with its own stack and allocator arena, switching between them on two cores.
    parse_slots: tokio::sync::Semaphore,
    /// Chromium for browser tasks (a worker started with `--browser`).
    browser: Option<browser::BrowserSlot>,
}

impl<F> std::fmt::Debug for Crawler<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Crawler")
            .field("settings", &self.settings)
            .field("sites_cached", &self.sites.entry_count())
            .field("robots_cached", &self.robots.entry_count())
            .finish_non_exhaustive()
    }
}

/// One lease being processed: its context, and the completion being built.
struct Job<'a> {
    lease: &'a Lease,
    site: &'a SiteInfo,
    scope: Scope,
    now: UnixMs,
    out: Completion,
    /// The lease's host name does not resolve (its lookup under this lease failed, or the audit
    /// remembers that it did: `address.rs`): every fetch under the lease fails with this at once,
    /// asking no one, and is recorded as the failure it is.
    unresolved: Option<String>,
    /// Something was sent to the lease's host: a request, a TLS handshake. Without, the
    /// completion says so ([`Completion::sent_nothing`]) and the frontier gives back the gap the
    /// claim took.
    sent: bool,
}

impl Job<'_> {
    fn task(&self) -> &Task {
        &self.lease.task
    }

    /// A finding of this lease's task. Those of the checks of a registrable domain (SPEC §9) are
    /// the domain's ([`Finding::domain_wide`]): one site's tasks check it for the whole audit
    /// (`domain.rs`), and the audit database gives them to every site under it.
    fn finding(&mut self, code: Code, url: &str, detail: impl Into<String>) {
        let t = self.task();
        let mut f = Finding::new(t.audit, t.site, code, url, detail);
        f.domain_wide = t.kind.is_beyond_http();
        self.out.events.push(Event::Finding(f));
    }

    /// A finding about this site alone, whatever the task.
    fn site_finding(&mut self, code: Code, url: &str, detail: impl Into<String>) {
        let t = self.task();
        let f = Finding::new(t.audit, t.site, code, url, detail);
        self.out.events.push(Event::Finding(f));
    }

    fn finding_related(&mut self, code: Code, url: &str, detail: impl Into<String>, related: Vec<String>) {
        let t = self.task();
        let mut f = Finding::new(t.audit, t.site, code, url, detail);
        f.related = related;
        self.out.events.push(Event::Finding(f));
    }

    fn record(&self) -> PageRecord {
        let t = self.task();
        let mut r = PageRecord::for_task(t.audit, t.site, t.url.as_str(), t.kind, t.depth, &t.found_via);
        r.fetched_at = self.lease.started_at;
        r
    }

    fn publish(&mut self, rec: PageRecord) {
        self.out.events.push(Event::Page(Box::new(rec)));
    }

    /// The start page: the start URL, or the end of its redirect chain (apex to www, http to
    /// https), where the site-wide checks (security headers, plain http, WordPress) belong.
    fn is_start_page(&self) -> bool {
        match self.task().found_via {
            shoal_shared::task::FoundVia::Start => true,
            shoal_shared::task::FoundVia::Redirect { .. } => self.task().chain.first() == Some(&self.site.start),
            _ => false,
        }
    }

    fn is_start_host(&self) -> bool {
        self.site.start.host_key() == self.lease.host
    }

    /// A lane opened for links to another site's host.
    fn is_external_lane(&self) -> bool {
        !self.scope.contains(self.task().url.as_url())
    }

    /// The root of the lease's host, where host-wide findings (rate limits, refused addresses)
    /// are reported.
    fn host_root(&self) -> String {
        format!("{}://{}/", self.task().url.as_url().scheme(), self.lease.host)
    }
}

impl<F: Frontier> Crawler<F> {
    /// A crawler over `frontier` fetching with `fetcher`.
    pub fn new(frontier: Arc<F>, fetcher: Fetcher, settings: CrawlSettings) -> Crawler<F> {
        Crawler {
            frontier,
            fetcher,
            settings,
            sites: moka::sync::Cache::builder()
                .max_capacity(SITE_CACHE_ENTRIES)
                .time_to_idle(SITE_CACHE_IDLE)
                .build_with_hasher(foldhash::fast::RandomState::default()),
            scope_rules: moka::sync::Cache::builder()
                .max_capacity(SCOPE_RULES_AUDITS)
                .time_to_idle(SITE_CACHE_IDLE)
                .build_with_hasher(foldhash::fast::RandomState::default()),
            robots: moka::sync::Cache::builder()
                .max_capacity(ROBOTS_CACHE_KIB)
                .weigher(|_, r: &Arc<CachedRules>| r.weight_kib)
                .time_to_live(ROBOTS_CACHE_TTL)
                .time_to_idle(ROBOTS_CACHE_IDLE)
                .build_with_hasher(foldhash::fast::RandomState::default()),
            last_send: moka::sync::Cache::builder()
                .max_capacity(SEND_MARKS)
                .time_to_live(SEND_MARK_TTL)
                .build_with_hasher(foldhash::fast::RandomState::default()),
            custom: moka::sync::Cache::builder()
                .max_capacity(CUSTOM_RULE_AUDITS)
                .time_to_idle(SITE_CACHE_IDLE)
                .build_with_hasher(foldhash::fast::RandomState::default()),
            parse_slots: tokio::sync::Semaphore::new(std::thread::available_parallelism().map_or(1, usize::from)),
            browser: None,
        }
    }

    /// The frontier this crawler works for.
    pub fn frontier(&self) -> &Arc<F> {
        &self.frontier
    }

    /// Lets the caches drop what has expired and reports their sizes (`shoal_worker_cache_entries`):
    /// the worker's heartbeat calls it, so a cache that nothing reads any more still empties.
    pub fn housekeeping(&self) {
        self.sites.run_pending_tasks();
        self.scope_rules.run_pending_tasks();
        self.robots.run_pending_tasks();
        self.last_send.run_pending_tasks();
        self.custom.run_pending_tasks();
        let addresses = self.fetcher.housekeeping();
        let m = shoal_metrics::metrics();
        for (cache, n) in [
            ("sites", self.sites.entry_count()),
            ("robots", self.robots.entry_count()),
            ("send_marks", self.last_send.entry_count()),
            ("addresses", addresses),
        ] {
            m.cache_entries
                .get_or_create(&shoal_metrics::CacheLabels { cache })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    async fn site(&self, id: SiteId) -> Result<Option<Arc<SiteInfo>>, FrontierError> {
        if let Some(s) = self.sites.get(&id) {
            return Ok(Some(s));
        }
        let Some(mut info) = self.frontier.site_info(id).await? else {
            return Ok(None);
        };
        if !info.limits.scope.is_empty() {
            let shared = self.scope_rules.get_with(info.audit, || info.limits.scope.clone());
            if shared == info.limits.scope {
                info.limits.scope = shared;
            }
        }
        let info = Arc::new(info);
        self.sites.insert(id, Arc::clone(&info));
        Ok(Some(info))
    }

    /// Fetches and interprets one leased task. What it found to queue passes the audit's scope
    /// rules on the way out (`rules::apply`): one place, whatever the task kind.
    pub async fn process(&self, lease: &Lease) -> Result<Completion, FrontierError> {
        let Some(site) = self.site(lease.task.site).await? else {
            return Ok(Completion::default());
        };
        let mut job = Job {
            lease,
            site: &site,
            scope: site.scope(),
            now: UnixMs::from(std::time::SystemTime::now()),
            out: Completion::default(),
            unresolved: None,
            sent: false,
        };
        self.run(&mut job).await?;
        rules::apply(&mut job);
        // A browser's page load and a mail server's conversation reach the host without a fetch.
        job.out.sent_nothing =
            !job.sent && !matches!(lease.task.kind, TaskKind::Browser | TaskKind::Render | TaskKind::Smtp);
        Ok(job.out)
    }

    async fn run(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let lease = job.lease;
        if lease.expired >= MAX_LEASE_EXPIRIES {
            let detail = format!(
                "{} leases of it expired without an answer: the workers holding it died, hung or were stopped",
                lease.expired
            );
            tracing::warn!(url = %lease.task.url, expired = lease.expired, "giving up a URL whose leases keep expiring");
            job.out = abandoned(lease, &detail);
            return Ok(());
        }
        #[cfg(feature = "fault-injection")]
        if self.settings.inject_faults {
            crate::fault::inject(&lease.task.url).await;
        }
        if lease.task.kind == TaskKind::DomainDns {
            // Asks the worker's resolver, not the domain's web server: no address to look up.
            return self.domain_dns_task(job).await;
        }
        if lease.resolve && self.look_up(job).await == Lookup::Done {
            return Ok(());
        }
        if let Some(ip) = lease.ip
            && let Err(refused) = self.fetcher.pin(lease.host.host_name(), ip)
        {
            self.refused_pin(job, &refused);
            return Ok(());
        }
        if lease.task.kind == TaskKind::Robots {
            self.robots_task(job).await;
            return Ok(());
        }
        if lease.task.kind == TaskKind::Smtp {
            // A mail server: no robots.txt applies; its address and pace are the lease's.
            self.smtp_task(job).await?;
            return Ok(());
        }
        let rules = self.lane_rules(lease.task.site, &lease.host, Some(lease.robots_at)).await?;
        match rules.rules.check(&lease.task.url) {
            None => {
                // Cannot happen (the frontier leases nothing of a lane before its robots.txt), but
                // if it does: do not fetch, try again shortly.
                let mut t = lease.task.clone();
                t.not_before = job.now.plus(Duration::from_secs(1));
                job.out.requeue = Some(t);
                return Ok(());
            }
            Some(Verdict::Disallowed { rule }) => {
                self.disallowed_at_claim(job, &rule);
                return Ok(());
            }
            Some(Verdict::Allowed) => {}
        }
        match lease.task.kind {
            TaskKind::Page => self.page_task(job).await?,
            TaskKind::Probe(kind) => self.probe_task(job, kind).await?,
            TaskKind::Resource { stylesheet: false } => self.resource_task(job).await?,
            TaskKind::Resource { stylesheet: true } => self.stylesheet_task(job).await?,
            TaskKind::External => self.external_task(job).await?,
            TaskKind::Sitemap { index_depth } => self.sitemap_task(job, index_depth).await?,
            TaskKind::MtaStsPolicy => self.mta_sts_task(job).await?,
            TaskKind::RdapBootstrap => self.rdap_bootstrap_task(job).await?,
            TaskKind::Rdap => self.rdap_task(job).await?,
            TaskKind::Browser => self.browser_task(job).await?,
            TaskKind::Render => self.render_task(job).await?,
            TaskKind::Robots | TaskKind::DomainDns | TaskKind::Smtp => {}
        }
        Ok(())
    }

    /// The frontier pinned the lease's host to an address this worker's guard refuses: another
    /// worker chose it (one started with `--allow-private`), or someone wrote it into the
    /// frontier. Nothing is requested: the host gets a `private_address` finding from this worker,
    /// the URL is recorded as refused (never silently lost, never retried), and a robots.txt lease
    /// closes the lane, as an unreachable robots.txt does.
    fn refused_pin(&self, job: &mut Job<'_>, refused: &NonPublic) {
        tracing::warn!(host = %job.lease.host, ip = %refused.ip, "refused an address pinned by the frontier");
        let host_root = job.host_root();
        job.finding(
            Code::PrivateAddress,
            &host_root,
            format!(
                "pinned by the frontier to {}: {refused}; this worker refuses non-public addresses \
                 (start it with --allow-private to audit private networks)",
                refused.ip
            ),
        );
        let mut rec = job.record();
        rec.error = Some(FetchFailure::PrivateAddress);
        job.publish(rec);
        if job.task().kind == TaskKind::Robots {
            job.out.robots = Some(RobotsOutcome::OffLimits);
        }
    }
}

/// What a task given up leaves behind, without fetching anything: its record (error
/// `abandoned`) and a `fetch_abandoned` finding saying why; a robots.txt task closes its lane, as
/// an unreachable robots.txt does. For tasks whose leases kept expiring and for a failure inside
/// Shoal (a panic), so that no URL can keep an audit from ending.
#[must_use]
pub fn abandoned(lease: &Lease, detail: &str) -> Completion {
    let t = &lease.task;
    let mut rec = PageRecord::for_task(t.audit, t.site, t.url.as_str(), t.kind, t.depth, &t.found_via);
    rec.fetched_at = lease.started_at;
    rec.error = Some(FetchFailure::Abandoned);
    let finding = Finding::new(t.audit, t.site, Code::FetchAbandoned, t.url.as_str(), detail);
    let mut out =
        Completion { events: vec![Event::Page(Box::new(rec)), Event::Finding(finding)], ..Completion::default() };
    if t.kind == TaskKind::Robots {
        out.robots = Some(RobotsOutcome::OffLimits);
    }
    out
}

fn fill_response(rec: &mut PageRecord, resp: &Fetched) {
    rec.status = Some(resp.status);
    rec.content_type = resp.header("content-type").map(str::to_owned);
    rec.bytes = resp.body.len() as u64;
    rec.response_ms = u64::try_from(resp.elapsed.as_millis()).unwrap_or(u64::MAX);
    rec.x_robots_tag = resp.header_all("x-robots-tag");
    rec.headers = KEPT_HEADERS
        .iter()
        .filter_map(|h| resp.header(h).map(|v| ((*h).to_owned(), v.chars().take(1024).collect())))
        .collect();
    if resp.truncated {
        rec.error = Some(FetchFailure::BodyTooLarge);
    }
}
