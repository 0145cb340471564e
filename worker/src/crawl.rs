//! Turning one lease into one completion: fetch, interpret, extract, decide what to queue.
//!
//! Everything a website does wrong ends up as data in the [`Completion`] (a record, a finding, a
//! retry); only a failing frontier is an `Err`.

use crate::charset::decode_html;
use crate::checks;
use crate::extract::{ExtractCaps, PageFacts, extract};
use crate::fetch::{FetchError, Fetched, Fetcher, Method};
use crate::guard::NonPublic;
use crate::sitemap::{SitemapCaps, SitemapKind, parse_sitemap};
use crate::tls;
use shoal_shared::finding::{Code, Finding};
use shoal_shared::frontier::{Completion, Frontier, FrontierError, LaneRobots, Lease, RobotsOutcome, SiteInfo};
use shoal_shared::ids::SiteId;
use shoal_shared::pace::{MAX_GAP, RetryDecision, parse_retry_after, retry_decision};
use shoal_shared::record::{Event, LinkKind, LinkRecord, PageRecord};
use shoal_shared::robots::{ProductToken, RobotsRules, Verdict};
use shoal_shared::task::{FoundVia, ProbeKind, Task, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_shared::url::{HostKey, MAX_URL_LEN, NormalizedUrl, Scope, UrlError};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
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
/// When another lane is asking an external host the same thing, look again after this long.
const ASK_AGAIN: Duration = Duration::from_millis(500);
/// Never reuse another site's robots.txt longer than this (SPEC §3).
const ROBOTS_CACHE_MAX: Duration = Duration::from_secs(24 * 60 * 60);
/// Hosts whose last send time is remembered before old marks are dropped.
const MAX_SEND_MARKS: usize = 50_000;
/// Probe bodies read at most: enough for security.txt, a directory listing or a JSON index.
const PROBE_BYTES: u64 = 256 * 1024;
/// The four WordPress probes (SPEC §2), made only when the start page looks like WordPress.
const WORDPRESS_PROBES: &[(ProbeKind, &str)] = &[
    (ProbeKind::WpJson, "/wp-json/"),
    (ProbeKind::WpXmlrpc, "/xmlrpc.php"),
    (ProbeKind::WpUploads, "/wp-content/uploads/"),
    (ProbeKind::WpP1, "/?p=1"),
];
/// Resource bodies read after a failed HEAD: enough to see the error, no more.
const RESOURCE_GET_BYTES: u64 = 64 * 1024;
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
        }
    }
}

/// The robots.txt verdict source for one lane, as a worker caches it.
#[derive(Debug)]
enum LaneRules {
    Pending,
    Rules(RobotsRules),
    AllowAll,
    Closed,
}

impl LaneRules {
    fn check(&self, url: &NormalizedUrl) -> Option<Verdict> {
        match self {
            LaneRules::Rules(r) => Some(r.check(url.as_url())),
            LaneRules::AllowAll => Some(Verdict::Allowed),
            LaneRules::Closed => Some(Verdict::Disallowed { rule: "(host off limits)".into() }),
            LaneRules::Pending => None,
        }
    }
}

/// Processes leases for one worker process; caches site info and robots rules.
#[derive(Debug)]
pub struct Crawler<F> {
    frontier: Arc<F>,
    fetcher: Fetcher,
    settings: CrawlSettings,
    sites: Mutex<HashMap<SiteId, Arc<SiteInfo>>>,
    robots: Mutex<HashMap<(SiteId, HostKey), Arc<LaneRules>>>,
    /// When this process last sent a request to each host.
    last_send: Mutex<HashMap<HostKey, std::time::Instant>>,
}

/// One lease being processed: its context, and the completion being built.
struct Job<'a> {
    lease: &'a Lease,
    site: &'a SiteInfo,
    scope: Scope,
    now: UnixMs,
    out: Completion,
}

impl Job<'_> {
    fn task(&self) -> &Task {
        &self.lease.task
    }

    fn finding(&mut self, code: Code, url: &str, detail: impl Into<String>) {
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

    fn is_start_host(&self) -> bool {
        self.site.start.host_key() == self.lease.host
    }

    /// A lane opened for links to another site's host.
    fn is_external_lane(&self) -> bool {
        !self.scope.contains(self.task().url.as_url())
    }

    /// Schedules a retry or says it is time to give up.
    fn retry(&mut self, retry_after: Option<UnixMs>) -> Option<RetryDecision> {
        let d = retry_decision(self.task().retries, retry_after, self.now);
        if let RetryDecision::RetryAt(at) = d {
            shoal_metrics::metrics().retries.inc();
            let mut t = self.task().clone();
            t.retries += 1;
            t.not_before = at;
            self.out.requeue = Some(t);
            return None;
        }
        Some(d)
    }
}

fn describe_give_up(d: RetryDecision) -> String {
    match d {
        RetryDecision::GiveUp(shoal_shared::pace::GiveUpReason::WaitTooLong { wait_ms }) => {
            format!("server asked to wait {} s, over the 60 s limit", wait_ms / 1000)
        }
        _ => "still failing after 2 retries".to_owned(),
    }
}

impl<F: Frontier> Crawler<F> {
    /// A crawler over `frontier` fetching with `fetcher`.
    pub fn new(frontier: Arc<F>, fetcher: Fetcher, settings: CrawlSettings) -> Crawler<F> {
        Crawler {
            frontier,
            fetcher,
            settings,
            sites: Mutex::new(HashMap::new()),
            robots: Mutex::new(HashMap::new()),
            last_send: Mutex::new(HashMap::new()),
        }
    }

    /// The frontier this crawler works for.
    pub fn frontier(&self) -> &Arc<F> {
        &self.frontier
    }

    async fn site(&self, id: SiteId) -> Result<Option<Arc<SiteInfo>>, FrontierError> {
        if let Some(s) = lock(&self.sites).get(&id) {
            return Ok(Some(Arc::clone(s)));
        }
        let Some(info) = self.frontier.site_info(id).await? else {
            return Ok(None);
        };
        let info = Arc::new(info);
        lock(&self.sites).insert(id, Arc::clone(&info));
        Ok(Some(info))
    }

    /// The robots rules of a lane; cached once known (they do not change within a site's crawl).
    async fn lane_rules(&self, site: SiteId, host: &HostKey) -> Result<Arc<LaneRules>, FrontierError> {
        let key = (site, host.clone());
        if let Some(r) = lock(&self.robots).get(&key) {
            return Ok(Arc::clone(r));
        }
        let rules = match self.frontier.robots(site, host).await? {
            None => LaneRules::Closed,
            Some(LaneRobots::Pending) => return Ok(Arc::new(LaneRules::Pending)),
            Some(LaneRobots::Known(RobotsOutcome::Rules { body, .. })) => {
                LaneRules::Rules(RobotsRules::parse(&body, &self.settings.token))
            }
            Some(LaneRobots::Known(RobotsOutcome::AllowAll)) => LaneRules::AllowAll,
            Some(LaneRobots::Known(RobotsOutcome::OffLimits | RobotsOutcome::NotPartOfSite)) => LaneRules::Closed,
        };
        let rules = Arc::new(rules);
        lock(&self.robots).insert(key, Arc::clone(&rules));
        Ok(rules)
    }

    /// Fetches and interprets one leased task.
    pub async fn process(&self, lease: &Lease) -> Result<Completion, FrontierError> {
        let Some(site) = self.site(lease.task.site).await? else {
            return Ok(Completion::default());
        };
        let mut job = Job { lease, site: &site, scope: site.scope(), now: UnixMs::now(), out: Completion::default() };
        if let Some(ip) = lease.ip
            && let Err(refused) = self.fetcher.pin(lease.host.host_name(), ip)
        {
            self.refused_pin(&mut job, &refused);
            return Ok(job.out);
        }
        if lease.task.kind == TaskKind::Robots {
            self.robots_task(&mut job).await;
            return Ok(job.out);
        }
        let rules = self.lane_rules(lease.task.site, &lease.host).await?;
        match rules.check(&lease.task.url) {
            None => {
                // Cannot happen (the frontier leases nothing of a lane before its robots.txt), but
                // if it does: do not fetch, try again shortly.
                let mut t = lease.task.clone();
                t.not_before = job.now.plus(Duration::from_secs(1));
                job.out.requeue = Some(t);
                return Ok(job.out);
            }
            Some(Verdict::Disallowed { rule }) => {
                self.disallowed_at_claim(&mut job, &rule);
                return Ok(job.out);
            }
            Some(Verdict::Allowed) => {}
        }
        match lease.task.kind {
            TaskKind::Page => self.page_task(&mut job).await?,
            TaskKind::Probe(kind) => self.probe_task(&mut job, kind).await?,
            TaskKind::Resource => self.resource_task(&mut job).await?,
            TaskKind::External => self.external_task(&mut job).await?,
            TaskKind::Sitemap { index_depth } => self.sitemap_task(&mut job, index_depth).await?,
            TaskKind::Robots => {}
        }
        Ok(job.out)
    }

    /// The frontier pinned the lease's host to an address this worker's guard refuses: another
    /// worker chose it (one started with `--allow-private`), or someone wrote it into the
    /// frontier. Nothing is requested: the host gets a `private_address` finding from this worker,
    /// the URL is recorded as refused (never silently lost, never retried), and a robots.txt lease
    /// closes the lane, as an unreachable robots.txt does.
    fn refused_pin(&self, job: &mut Job<'_>, refused: &NonPublic) {
        tracing::warn!(host = %job.lease.host, ip = %refused.ip, "refused an address pinned by the frontier");
        let host_root = format!("{}://{}/", job.task().url.as_url().scheme(), job.lease.host);
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
        rec.error = Some(FetchError::PrivateAddress(refused.ip).kind().to_owned());
        job.publish(rec);
        if job.task().kind == TaskKind::Robots {
            job.out.robots = Some(RobotsOutcome::OffLimits);
        }
    }

    fn disallowed_at_claim(&self, job: &mut Job<'_>, rule: &str) {
        shoal_metrics::metrics().robots_denials.inc();
        let url = job.task().url.to_string();
        match job.task().found_via.clone() {
            FoundVia::Start => job.finding(Code::StartDisallowed, &url, format!("blocked by rule {rule}")),
            FoundVia::Redirect { from } => job.finding(
                Code::RedirectToDisallowed,
                from.as_str(),
                format!("redirects to {url}, blocked by rule {rule}"),
            ),
            _ => {}
        }
    }

    async fn robots_task(&self, job: &mut Job<'_>) {
        if job.lease.ip.is_none() {
            self.resolve_host(job).await;
            return;
        }
        let url = job.task().url.clone();
        let external = job.is_external_lane();
        let cache_key = format!("r:{}://{}", url.as_url().scheme(), job.lease.host);
        if external && job.task().chain.is_empty() {
            let cached = self.frontier.cache_get(&cache_key, job.now).await.ok().flatten();
            if let Some(outcome) = cached.and_then(|b| rmp_serde::from_slice::<RobotsOutcome>(&b).ok()) {
                job.out.robots = Some(outcome);
                return;
            }
            if !self.first_to_ask(job, &cache_key).await {
                return;
            }
        }
        if !external && url.as_url().scheme() == "https" && job.task().chain.is_empty() {
            self.certificate_check(job).await;
        }
        let start_host = job.is_start_host();
        let mut rec = job.record();
        let outcome = match self.fetch(job, Method::Get, &url, Some(ROBOTS_MAX_BYTES)).await {
            Err(e) => {
                rec.error = Some(e.kind().to_owned());
                match e {
                    FetchError::Dns(m) if !start_host => {
                        tracing::debug!(url = %url, error = %m, "twin host does not resolve: not part of the site");
                        Some(RobotsOutcome::NotPartOfSite)
                    }
                    FetchError::Dns(m) => {
                        job.finding(Code::StartUnreachable, url.as_str(), format!("DNS: {m}"));
                        Some(RobotsOutcome::OffLimits)
                    }
                    FetchError::PrivateAddress(ip) => {
                        job.finding(
                            Code::PrivateAddress,
                            url.as_str(),
                            format!("resolves to {ip}; use --allow-private to audit private networks"),
                        );
                        Some(RobotsOutcome::OffLimits)
                    }
                    e @ FetchError::HeadersTooLarge => {
                        // Over a cap: asking again gets the same answer.
                        job.finding(Code::HeadersTooLarge, url.as_str(), e.to_string());
                        job.finding(Code::RobotsUnreachable, url.as_str(), format!("{e}; not retried"));
                        Some(RobotsOutcome::OffLimits)
                    }
                    e => match job.retry(None) {
                        None => None,
                        Some(d) => {
                            job.finding(Code::RobotsUnreachable, url.as_str(), format!("{e}; {}", describe_give_up(d)));
                            Some(RobotsOutcome::OffLimits)
                        }
                    },
                }
            }
            Ok(resp) => {
                job.out.ip = resp.ip;
                fill_response(&mut rec, &resp);
                self.robots_response(job, &url, &resp)
            }
        };
        job.publish(rec);
        if external
            && let Some(o) = &outcome
            && let Ok(blob) = rmp_serde::to_vec_named(o)
        {
            let ttl = self.settings.external_cache_ttl.min(ROBOTS_CACHE_MAX);
            if let Err(e) = self.frontier.cache_put(&cache_key, blob, job.now, ttl).await {
                tracing::warn!(error = %e, "could not cache robots.txt of an external host");
            }
        }
        job.out.robots = outcome;
    }

    /// One TLS handshake per https host (no HTTP request), made under the robots.txt lease: the
    /// certificate's dates, issuer and names, and the TLS version. The lease's address passed this
    /// worker's guard in `process` (a refused pin ends the lease before this is reached).
    async fn certificate_check(&self, job: &mut Job<'_>) {
        let (Some(ip), Some(host)) = (job.lease.ip, job.task().url.as_url().host_str().map(str::to_owned)) else {
            return;
        };
        let port = job.task().url.as_url().port_or_known_default().unwrap_or(443);
        let timeout = self.fetcher.settings().timeout;
        let origin = format!("https://{}/", job.lease.host);
        match tls::probe(&host, port, ip, timeout, &self.settings.tls_roots, job.now).await {
            Ok(facts) => {
                let expiry = facts.not_after.map(|t| format!("expires {}", t.to_rfc3339())).unwrap_or_default();
                match &facts.verdict {
                    tls::TlsVerdict::Valid => {}
                    tls::TlsVerdict::Expired => job.finding(Code::TlsCertificateExpired, &origin, expiry.clone()),
                    tls::TlsVerdict::SelfSigned => {
                        job.finding(Code::TlsSelfSigned, &origin, facts.issuer.clone().unwrap_or_default());
                    }
                    tls::TlsVerdict::WrongHostname => {}
                    other => job.finding(Code::TlsUntrusted, &origin, format!("{other:?}")),
                }
                if !facts.name_matches || facts.verdict == tls::TlsVerdict::WrongHostname {
                    job.finding(
                        Code::TlsHostnameMismatch,
                        &origin,
                        format!("certificate names: {}", facts.names.join(", ")),
                    );
                }
                if let Some(days) = facts.days_left(job.now)
                    && (0..30).contains(&days)
                {
                    job.finding(Code::TlsCertificateExpiring, &origin, format!("{days} days left"));
                }
            }
            Err(e @ tls::ProbeError::UnsupportedVersion { .. }) => {
                job.finding(Code::TlsOldVersion, &origin, e.to_string());
            }
            Err(e) => tracing::debug!(host = %host, error = %e, "TLS check failed; the robots.txt fetch will tell why"),
        }
    }

    /// The first lease of a host only resolves its name (no HTTP request): the frontier learns the
    /// server IP before anything is fetched, so the per-IP cap holds from the very first request,
    /// and the address is pinned for the rest of the crawl (no DNS rebinding between check and
    /// connect). A name that does not resolve ends the lane here, having contacted nobody.
    async fn resolve_host(&self, job: &mut Job<'_>) {
        let url = job.task().url.clone();
        match self.fetcher.resolve(url.as_url()).await {
            Ok(ip) => {
                job.out.ip = Some(ip);
                job.out.requeue = Some(job.task().clone());
            }
            Err(e) if job.is_external_lane() => {
                // Another site's host that cannot be reached: its links are broken, which the
                // check of each URL records; there are no rules to read.
                tracing::debug!(url = %url, error = %e, "external host not reachable");
                job.out.robots = Some(RobotsOutcome::AllowAll);
            }
            Err(FetchError::Dns(m)) if !job.is_start_host() => {
                tracing::debug!(url = %url, error = %m, "twin host does not resolve: not part of the site");
                job.out.robots = Some(RobotsOutcome::NotPartOfSite);
            }
            Err(FetchError::PrivateAddress(ip)) => {
                let detail = format!("resolves to {ip}; use --allow-private to audit private networks");
                let about = if job.is_start_host() { job.site.start.to_string() } else { url.to_string() };
                job.finding(Code::PrivateAddress, &about, detail);
                job.out.robots = Some(RobotsOutcome::OffLimits);
            }
            Err(e) => {
                let start = job.site.start.to_string();
                job.finding(Code::StartUnreachable, &start, e.to_string());
                job.out.robots = Some(RobotsOutcome::OffLimits);
            }
        }
    }

    fn robots_response(&self, job: &mut Job<'_>, url: &NormalizedUrl, resp: &Fetched) -> Option<RobotsOutcome> {
        match resp.status {
            200..=299 => {
                let body = if resp.truncated { robots_cut(job, url, &resp.body) } else { &resp.body[..] };
                let rules = RobotsRules::parse(body, &self.settings.token);
                let delay = rules.crawl_delay();
                if let Some(d) = delay
                    && d > MAX_GAP
                {
                    job.finding(
                        Code::CrawlDelayTooHigh,
                        url.as_str(),
                        format!("Crawl-delay {} s for group {:?}", d.as_secs_f64(), rules.group()),
                    );
                    return Some(RobotsOutcome::OffLimits);
                }
                for sm in rules.sitemaps() {
                    let Ok(sm) = NormalizedUrl::parse(&sm) else {
                        continue;
                    };
                    if job.scope.contains(sm.as_url()) {
                        let t = job.task();
                        let task =
                            Task::new(t.audit, t.site, sm, TaskKind::Sitemap { index_depth: 0 }, 0, FoundVia::Standard);
                        job.out.discovered.push(task);
                    }
                }
                Some(RobotsOutcome::Rules {
                    body: body.to_vec(),
                    crawl_delay_ms: delay.map(|d| u32::try_from(d.as_millis()).unwrap_or(u32::MAX)),
                })
            }
            300..=399 => {
                let target = resp.header("location").and_then(|l| NormalizedUrl::join(url.as_url(), l).ok());
                match target {
                    Some(target) if job.task().chain.len() < MAX_ROBOTS_REDIRECTS => {
                        let mut t = job.task().clone();
                        t.chain.push(url.clone());
                        t.url = target;
                        t.not_before = UnixMs(0);
                        job.out.requeue = Some(t);
                        None
                    }
                    _ => {
                        job.finding(
                            Code::RobotsUnreachable,
                            url.as_str(),
                            format!("robots.txt redirects more than {MAX_ROBOTS_REDIRECTS} times or to an invalid URL"),
                        );
                        Some(RobotsOutcome::OffLimits)
                    }
                }
            }
            429 => {
                shoal_metrics::metrics().rate_limited.inc();
                job.out.rate_limited = true;
                let host_root = format!("{}://{}/", url.as_url().scheme(), job.lease.host);
                job.finding(
                    Code::RateLimited,
                    &host_root,
                    "answered 429 Too Many Requests; host slowed to 1 request every 3 s",
                );
                let ra = resp.header("retry-after").and_then(|v| parse_retry_after(v, job.now));
                self.robots_retry(job, url, resp.status, ra)
            }
            400..=499 => Some(RobotsOutcome::AllowAll),
            _ => {
                let ra = resp.header("retry-after").and_then(|v| parse_retry_after(v, job.now));
                self.robots_retry(job, url, resp.status, ra)
            }
        }
    }

    fn robots_retry(
        &self,
        job: &mut Job<'_>,
        url: &NormalizedUrl,
        status: u16,
        ra: Option<UnixMs>,
    ) -> Option<RobotsOutcome> {
        let d = job.retry(ra)?;
        job.finding(Code::RobotsUnreachable, url.as_str(), format!("HTTP {status}; {}", describe_give_up(d)));
        Some(RobotsOutcome::OffLimits)
    }

    /// Handles a failed or retryable answer; returns the record to publish, or None when the task
    /// was requeued.
    fn failure(&self, job: &mut Job<'_>, rec: &mut PageRecord, e: &FetchError) -> bool {
        rec.error = Some(e.kind().to_owned());
        if e.is_retryable() {
            match job.retry(None) {
                None => return false,
                Some(d) => {
                    let url = job.task().url.to_string();
                    job.finding(Code::FetchFailed, &url, format!("{e}; {}", describe_give_up(d)));
                }
            }
        } else {
            let url = job.task().url.to_string();
            let code = match (e, &job.task().found_via) {
                (FetchError::PrivateAddress(_), _) => Code::PrivateAddress,
                (FetchError::HeadersTooLarge, _) => Code::HeadersTooLarge,
                (_, FoundVia::Start) => Code::StartUnreachable,
                _ => Code::FetchFailed,
            };
            job.finding(code, &url, e.to_string());
        }
        true
    }

    /// The common first step of every fetch: a failure is recorded (or retried), an answer is
    /// recorded and 429/502/503/504 retried; `Some` only for a final answer to interpret further.
    fn answered(
        &self,
        job: &mut Job<'_>,
        rec: &mut PageRecord,
        result: Result<Fetched, FetchError>,
    ) -> Option<Fetched> {
        let resp = match result {
            Ok(r) => r,
            Err(e) => {
                if self.failure(job, rec, &e) {
                    job.publish(rec.clone());
                }
                return None;
            }
        };
        job.out.ip = resp.ip;
        fill_response(rec, &resp);
        self.transient_status(job, &resp).then_some(resp)
    }

    /// 429 and 502/503/504: retry on the schedule; true when the answer is final.
    fn transient_status(&self, job: &mut Job<'_>, resp: &Fetched) -> bool {
        let status = resp.status;
        if !matches!(status, 429 | 502 | 503 | 504) {
            return true;
        }
        let url = job.task().url.to_string();
        if status == 429 {
            shoal_metrics::metrics().rate_limited.inc();
            job.out.rate_limited = true;
            let host_root = format!("{}://{}/", job.task().url.as_url().scheme(), job.lease.host);
            job.finding(
                Code::RateLimited,
                &host_root,
                "answered 429 Too Many Requests; host slowed to 1 request every 3 s",
            );
        }
        let ra = resp.header("retry-after").and_then(|v| parse_retry_after(v, job.now));
        match job.retry(ra) {
            None => false,
            Some(d) => {
                let code = if status == 429 { Code::FetchFailed } else { Code::ServerError };
                job.finding(code, &url, format!("HTTP {status}; {}", describe_give_up(d)));
                true
            }
        }
    }

    async fn page_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let mut rec = job.record();
        let result = self.fetch(job, Method::Get, &url, None).await;
        let Some(resp) = self.answered(job, &mut rec, result) else { return Ok(()) };
        if resp.truncated {
            job.finding(Code::BodyTooLarge, url.as_str(), format!("over {} bytes", self.fetcher.settings().max_body));
        }
        let html = is_html(&resp);
        for (code, detail) in checks::response_checks(&resp, html, false) {
            job.finding(code, url.as_str(), detail);
        }
        match resp.status {
            300..=399 => self.redirect(job, &mut rec, &resp).await?,
            500..=599 => job.finding(Code::ServerError, url.as_str(), format!("HTTP {}", resp.status)),
            200..=299 if is_html(&resp) && job.task().kind == TaskKind::Page => {
                self.html_page(job, &mut rec, &resp).await?;
            }
            _ => {}
        }
        job.publish(rec);
        Ok(())
    }

    async fn resource_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let mut rec = job.record();
        let Some(result) = self.check(job, &url).await else { return Ok(()) };
        let Some(resp) = self.answered(job, &mut rec, result) else { return Ok(()) };
        if (300..400).contains(&resp.status) {
            self.redirect(job, &mut rec, &resp).await?;
        }
        for (code, detail) in checks::response_checks(&resp, false, true) {
            job.finding(code, url.as_str(), detail);
        }
        job.publish(rec);
        Ok(())
    }

    /// One request, sent no sooner than the host's gap after this worker's previous request to it.
    ///
    /// The frontier spaces *claims* a gap apart; a request delayed between claim and send (a busy
    /// machine) could otherwise arrive inside the next one's gap, as the site would see it.
    async fn fetch(
        &self,
        job: &Job<'_>,
        method: Method,
        url: &NormalizedUrl,
        cap: Option<u64>,
    ) -> Result<Fetched, FetchError> {
        self.wait_turn(&job.lease.host, Duration::from_millis(job.lease.gap_ms)).await;
        self.fetcher.fetch(method, url.as_url(), cap).await
    }

    async fn wait_turn(&self, host: &HostKey, gap: Duration) {
        if gap.is_zero() {
            return;
        }
        loop {
            let wait = {
                let mut sent = lock(&self.last_send);
                let now = std::time::Instant::now();
                if sent.len() > MAX_SEND_MARKS {
                    sent.retain(|_, t| now.duration_since(*t) < shoal_shared::pace::MAX_GAP);
                }
                match sent.get(host) {
                    Some(last) if *last + gap > now => Some(*last + gap - now),
                    _ => {
                        sent.insert(host.clone(), now);
                        None
                    }
                }
            };
            match wait {
                Some(d) => tokio::time::sleep(d).await,
                None => return,
            }
        }
    }

    /// A resource or external check: one HEAD; if it answers with an error, the one GET is a
    /// request of its own, queued again under the host's pace (`None` then: nothing to record yet).
    async fn check(&self, job: &mut Job<'_>, url: &NormalizedUrl) -> Option<Result<Fetched, FetchError>> {
        if job.task().get_only {
            return Some(self.fetch(job, Method::Get, url, Some(RESOURCE_GET_BYTES)).await);
        }
        let result = self.fetch(job, Method::Head, url, None).await;
        if let Ok(r) = &result
            && r.status >= 400
            && !matches!(r.status, 429 | 502 | 503 | 504)
        {
            job.out.ip = r.ip;
            let mut t = job.task().clone();
            t.get_only = true;
            t.not_before = UnixMs(0);
            job.out.requeue = Some(t);
            return None;
        }
        Some(result)
    }

    /// Whether this worker may ask another site's host for `key` now. If another lane is asking the
    /// same thing at this moment, the task goes back to the queue for a moment, to find the answer
    /// in the cache then.
    async fn first_to_ask(&self, job: &mut Job<'_>, key: &str) -> bool {
        let lock = format!("{key}#asking");
        let ttl = self.fetcher.settings().timeout * 2;
        match self.frontier.cache_add(&lock, Vec::new(), job.now, ttl).await {
            Ok(true) | Err(_) => true,
            Ok(false) => {
                let mut t = job.task().clone();
                t.not_before = job.now.plus(ASK_AGAIN);
                job.out.requeue = Some(t);
                false
            }
        }
    }

    /// Checks a link to another site: one HEAD, one GET only if HEAD answers with an error, the
    /// result shared through the frontier's cache so other sites and audits reuse it.
    async fn external_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let key = format!("x:{url}");
        if let Some(blob) = self.frontier.cache_get(&key, job.now).await?
            && let Ok(cached) = rmp_serde::from_slice::<PageRecord>(&blob)
        {
            let mut rec = job.record();
            rec.status = cached.status;
            rec.error = cached.error;
            rec.redirect_to = cached.redirect_to;
            rec.content_type = cached.content_type;
            rec.response_ms = cached.response_ms;
            rec.fetched_at = cached.fetched_at;
            job.publish(rec);
            return Ok(());
        }
        // The GET after a failed HEAD still holds the ask-lock its HEAD took.
        if !job.task().get_only && !self.first_to_ask(job, &key).await {
            return Ok(());
        }
        let mut rec = job.record();
        let Some(result) = self.check(job, &url).await else { return Ok(()) };
        match result {
            Ok(resp) => {
                job.out.ip = resp.ip;
                fill_response(&mut rec, &resp);
                rec.error = None;
                if !self.transient_status(job, &resp) {
                    return Ok(());
                }
                rec.redirect_to = resp
                    .header("location")
                    .and_then(|l| NormalizedUrl::join(url.as_url(), l).ok())
                    .map(|u| u.to_string());
            }
            Err(e) => {
                rec.error = Some(e.kind().to_owned());
                if e.is_retryable() && job.retry(None).is_none() {
                    return Ok(());
                }
            }
        }
        rec.links.clear();
        rec.headers.clear();
        if let Ok(blob) = rmp_serde::to_vec_named(&rec)
            && let Err(e) = self.frontier.cache_put(&key, blob, job.now, self.settings.external_cache_ttl).await
        {
            tracing::warn!(error = %e, "could not cache an external link result");
        }
        job.publish(rec);
        Ok(())
    }

    async fn sitemap_task(&self, job: &mut Job<'_>, index_depth: u8) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let mut rec = job.record();
        let result = self.fetch(job, Method::Get, &url, Some(self.settings.sitemap.max_bytes)).await;
        let Some(resp) = self.answered(job, &mut rec, result) else { return Ok(()) };
        match resp.status {
            300..=399 => self.redirect(job, &mut rec, &resp).await?,
            200..=299 => self.sitemap_body(job, &mut rec, &url, &resp, index_depth).await?,
            s => job.finding(Code::SitemapInvalid, url.as_str(), format!("HTTP {s}")),
        }
        job.publish(rec);
        Ok(())
    }

    async fn sitemap_body(
        &self,
        job: &mut Job<'_>,
        rec: &mut PageRecord,
        url: &NormalizedUrl,
        resp: &Fetched,
        index_depth: u8,
    ) -> Result<(), FrontierError> {
        let parsed = parse_sitemap(&resp.body, &self.settings.sitemap);
        let mut problems = Vec::new();
        if let Some(e) = &parsed.error {
            problems.push(e.clone());
        }
        if parsed.over_size || resp.truncated {
            problems.push(format!("over {} bytes", self.settings.sitemap.max_bytes));
        }
        if parsed.over_count {
            problems.push(format!("over {} URLs", self.settings.sitemap.max_urls));
        }
        let (kind, depth) = match parsed.kind {
            SitemapKind::Index if index_depth >= MAX_SITEMAP_INDEX_DEPTH => {
                problems.push(format!("sitemap index nested deeper than {MAX_SITEMAP_INDEX_DEPTH}"));
                (None, 0)
            }
            SitemapKind::Index => (Some(TaskKind::Sitemap { index_depth: index_depth + 1 }), 0),
            SitemapKind::UrlSet => (Some(TaskKind::Page), 1),
            SitemapKind::Unknown => {
                problems.push("not a sitemap (no <urlset> or <sitemapindex>)".into());
                (None, 0)
            }
        };
        // URLs over the length cap are skipped, and said so (SPEC §7: over a cap is a finding).
        let mut too_long = parsed.oversized_locs;
        let mut locs = Vec::with_capacity(parsed.urls.len());
        for loc in &parsed.urls {
            match NormalizedUrl::parse(loc) {
                Ok(u) => locs.push(u),
                Err(UrlError::TooLong { .. }) => too_long += 1,
                Err(_) => {}
            }
        }
        if too_long > 0 && kind.is_some() {
            problems.push(format!("URLs over the {MAX_URL_LEN}-byte URL cap skipped: {too_long}"));
        }
        if !problems.is_empty() {
            job.finding(Code::SitemapInvalid, url.as_str(), problems.join("; "));
        }
        let Some(kind) = kind else { return Ok(()) };
        for u in locs {
            let internal = job.scope.contains(u.as_url());
            if kind == TaskKind::Page {
                // Recorded so the audit can check what every listed URL answers.
                let entry = LinkRecord {
                    url: u.to_string(),
                    kind: LinkKind::SitemapEntry,
                    nofollow: false,
                    internal,
                    text: None,
                };
                rec.links.push(entry);
            }
            if !internal || !self.allowed(job, &u).await? {
                continue;
            }
            let t = job.task();
            let task = Task::new(t.audit, t.site, u, kind, depth, FoundVia::Sitemap { sitemap: url.clone() });
            job.out.discovered.push(task);
        }
        Ok(())
    }

    /// Whether robots.txt allows `url`, when its lane's rules are known; pending rules are checked
    /// again when the URL is claimed.
    async fn allowed(&self, job: &Job<'_>, url: &NormalizedUrl) -> Result<bool, FrontierError> {
        let rules = self.lane_rules(job.task().site, &url.host_key()).await?;
        let denied = matches!(rules.check(url), Some(Verdict::Disallowed { .. }));
        if denied {
            shoal_metrics::metrics().robots_denials.inc();
        }
        Ok(!denied)
    }

    async fn redirect(&self, job: &mut Job<'_>, rec: &mut PageRecord, resp: &Fetched) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let target = match resp.header("location").map(|l| NormalizedUrl::join(url.as_url(), l)) {
            Some(Ok(target)) => target,
            Some(Err(e)) => {
                // Over the URL length cap, or not a URL at all: say which.
                let why: String = e.to_string().chars().take(300).collect();
                job.finding(
                    Code::RedirectInvalid,
                    url.as_str(),
                    format!("HTTP {} without a usable Location: {why}", resp.status),
                );
                return Ok(());
            }
            None => {
                job.finding(
                    Code::RedirectInvalid,
                    url.as_str(),
                    format!("HTTP {} without a usable Location", resp.status),
                );
                return Ok(());
            }
        };
        rec.redirect_to = Some(target.to_string());
        if matches!(resp.status, 302 | 303 | 307) && job.task().kind == TaskKind::Page {
            job.finding(Code::RedirectTemporary, url.as_str(), format!("HTTP {} to {target}", resp.status));
        }
        let mut chain = job.task().chain.clone();
        chain.push(url.clone());
        if chain.contains(&target) {
            return Ok(()); // a loop: the audit database reports it from the page records
        }
        // `chain` holds every URL that redirected so far, this one included: its length is the
        // number of the hop at hand. Hops 1..=MAX_REDIRECTS are followed (the 10th hop's target
        // is requested); the one after is the limit.
        if chain.len() > MAX_REDIRECTS {
            let related = chain.iter().map(ToString::to_string).chain([target.to_string()]).collect();
            let first = chain[0].to_string();
            job.finding_related(Code::RedirectLimit, &first, format!("more than {MAX_REDIRECTS} redirects"), related);
            return Ok(());
        }
        if !job.scope.contains(target.as_url()) {
            return Ok(()); // another site: recorded as redirect_to, never crawled
        }
        let rules = self.lane_rules(job.task().site, &target.host_key()).await?;
        if let Some(Verdict::Disallowed { rule }) = rules.check(&target) {
            job.finding(
                Code::RedirectToDisallowed,
                url.as_str(),
                format!("redirects to {target}, blocked by rule {rule}"),
            );
            return Ok(());
        }
        let t = job.task();
        let mut next = Task::new(t.audit, t.site, target, t.kind, t.depth, FoundVia::Redirect { from: url });
        next.chain = chain;
        job.out.discovered.push(next);
        Ok(())
    }

    async fn html_page(&self, job: &mut Job<'_>, rec: &mut PageRecord, resp: &Fetched) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        // Parsing is CPU work (bounded, see `crate::parse`, yet up to a second on hostile markup):
        // keep it off the async threads.
        let body = resp.body.clone();
        let ct = resp.header("content-type").map(str::to_owned);
        let base = url.as_url().clone();
        let caps = self.settings.extract.clone();
        let (facts, wordpress) = tokio::task::spawn_blocking(move || {
            let (text, _) = decode_html(&body, ct.as_deref());
            (extract(&text, &base, &caps), checks::looks_like_wordpress(&text))
        })
        .await
        .unwrap_or_else(|e| {
            tracing::error!(url = %url, error = %e, "HTML extraction failed; recording the page without facts");
            (PageFacts::default(), false)
        });
        if job.task().found_via == FoundVia::Start {
            self.start_page(job, &url, resp, wordpress);
        }
        if let Some(c) = facts.canonical.as_deref().and_then(|c| NormalizedUrl::parse(c).ok())
            && c != url
        {
            let internal = job.scope.contains(c.as_url());
            rec.links.push(LinkRecord {
                url: c.to_string(),
                kind: LinkKind::Canonical,
                nofollow: false,
                internal,
                text: None,
            });
            if internal && self.allowed(job, &c).await? {
                let t = job.task();
                let task =
                    Task::new(t.audit, t.site, c, TaskKind::Page, t.depth + 1, FoundVia::Link { from: url.clone() });
                job.out.discovered.push(task);
            }
        }
        rec.title.clone_from(&facts.title);
        rec.meta_description.clone_from(&facts.meta_description);
        rec.h1.clone_from(&facts.h1);
        rec.canonical.clone_from(&facts.canonical);
        rec.meta_robots.clone_from(&facts.meta_robots);
        rec.hreflang.clone_from(&facts.hreflang);
        let header_nofollow = robots_header_has(&rec.x_robots_tag, self.settings.token.as_str(), "nofollow");
        let header_noindex = robots_header_has(&rec.x_robots_tag, self.settings.token.as_str(), "noindex");
        let page_nofollow = facts.robots_nofollow() || header_nofollow;
        let follow_nofollow = job.site.limits.follow_nofollow;
        let mut queued = HashSet::new();
        for link in &facts.links {
            let Ok(target) = NormalizedUrl::from_url(link.url.clone()) else {
                continue;
            };
            let internal = job.scope.contains(target.as_url());
            let nofollow = link.nofollow || (page_nofollow && link.kind == LinkKind::Anchor);
            rec.links.push(LinkRecord {
                url: target.to_string(),
                kind: link.kind,
                nofollow,
                internal,
                text: link.text.clone(),
            });
            if !internal {
                if self.settings.check_external && queued.insert(target.clone()) {
                    // Checked, never crawled: its host's robots.txt and pace apply when claimed.
                    let t = job.task();
                    let task = Task::new(
                        t.audit,
                        t.site,
                        target,
                        TaskKind::External,
                        t.depth + 1,
                        FoundVia::Link { from: url.clone() },
                    );
                    job.out.discovered.push(task);
                }
                continue;
            }
            if (nofollow && !follow_nofollow) || !queued.insert(target.clone()) {
                continue;
            }
            if !self.allowed(job, &target).await? {
                continue;
            }
            let kind = if link.kind.is_navigation() { TaskKind::Page } else { TaskKind::Resource };
            let t = job.task();
            let task = Task::new(t.audit, t.site, target, kind, t.depth + 1, FoundVia::Link { from: url.clone() });
            job.out.discovered.push(task);
        }
        self.page_findings(job, &url, &facts, header_noindex, header_nofollow);
        Ok(())
    }

    /// Site-wide rules read from the start page: security headers, plain http, and whether the
    /// WordPress probes are worth making.
    fn start_page(&self, job: &mut Job<'_>, url: &NormalizedUrl, resp: &Fetched, wordpress: bool) {
        let https = url.as_url().scheme() == "https";
        for (code, detail) in checks::security_header_checks(resp, https) {
            job.finding(code, url.as_str(), detail);
        }
        if !https {
            job.finding(Code::NoHttps, url.as_str(), "");
        }
        if wordpress {
            for (kind, path) in WORDPRESS_PROBES {
                let Ok(u) = NormalizedUrl::join(url.as_url(), path) else { continue };
                let t = job.task();
                job.out.discovered.push(Task::new(t.audit, t.site, u, TaskKind::Probe(*kind), 0, FoundVia::Standard));
            }
        }
    }

    async fn probe_task(&self, job: &mut Job<'_>, kind: ProbeKind) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let mut rec = job.record();
        let resp = match self.fetch(job, Method::Get, &url, Some(PROBE_BYTES)).await {
            Ok(r) => r,
            Err(e) if kind == ProbeKind::HttpsRedirect => {
                // Nothing answering on http:// (port 80 closed, TLS only) is no redirect either;
                // not a failure of the site's pages, so no retries.
                rec.error = Some(e.kind().to_owned());
                job.finding(Code::HttpsRedirectMissing, url.as_str(), format!("http:// does not answer: {e}"));
                job.publish(rec);
                return Ok(());
            }
            Err(e) => {
                if self.failure(job, &mut rec, &e) {
                    job.publish(rec);
                }
                return Ok(());
            }
        };
        job.out.ip = resp.ip;
        fill_response(&mut rec, &resp);
        if resp.truncated {
            rec.error = None; // probes read only the start of a body on purpose
        }
        if !self.transient_status(job, &resp) {
            return Ok(());
        }
        let follow = (300..400).contains(&resp.status) && matches!(kind, ProbeKind::SecurityTxt | ProbeKind::LlmsTxt);
        if follow {
            // security.txt and llms.txt may live behind a redirect (http to https, say).
            self.redirect(job, &mut rec, &resp).await?;
        } else {
            let body = String::from_utf8_lossy(&resp.body);
            for (code, detail) in checks::probe_checks(kind, &resp, &body, job.now) {
                job.finding(code, url.as_str(), detail);
            }
            if let Some(to) = resp.header("location").and_then(|l| NormalizedUrl::join(url.as_url(), l).ok()) {
                rec.redirect_to = Some(to.to_string());
            }
        }
        job.publish(rec);
        Ok(())
    }

    fn page_findings(&self, job: &mut Job<'_>, url: &NormalizedUrl, f: &PageFacts, noindex: bool, nofollow: bool) {
        let max_links = self.settings.extract.max_links;
        for (code, detail) in checks::page_checks(f, &job.scope, noindex, nofollow, max_links) {
            job.finding(code, url.as_str(), detail);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn is_html(resp: &Fetched) -> bool {
    match resp.header("content-type") {
        Some(ct) => {
            let ct = ct.to_ascii_lowercase();
            ct.contains("text/html") || ct.contains("application/xhtml")
        }
        None => {
            let head = &resp.body[..resp.body.len().min(512)];
            let s = String::from_utf8_lossy(head).to_ascii_lowercase();
            s.trim_start().starts_with('<') && (s.contains("<html") || s.contains("<!doctype html"))
        }
    }
}

/// robots.txt cut at [`ROBOTS_MAX_BYTES`]: reported on its URL, and the incomplete last line
/// dropped, so that a rule cut in the middle (`Disallow: /` of `Disallow: /private`) cannot turn
/// into a different rule. What is kept is what every worker parses.
fn robots_cut<'b>(job: &mut Job<'_>, url: &NormalizedUrl, body: &'b [u8]) -> &'b [u8] {
    let kept = body.iter().rposition(|b| matches!(b, b'\n' | b'\r')).map_or(&body[..0], |i| &body[..=i]);
    job.finding(
        Code::RobotsTxtTooLarge,
        url.as_str(),
        format!(
            "over the {} KiB cap: only its first {} bytes were parsed, rules after them were ignored",
            ROBOTS_MAX_BYTES / 1024,
            kept.len()
        ),
    );
    kept
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
        rec.error = Some("body_too_large".into());
    }
}

/// Whether X-Robots-Tag values carry `directive` for everyone or for our token
/// (`noindex`, `shoalbot: noindex`), but not for another crawler (`googlebot: noindex`).
fn robots_header_has(values: &[String], token: &str, directive: &str) -> bool {
    values.iter().any(|v| {
        let (scope, rest) = match v.split_once(':') {
            Some((ua, rest)) if !ua.contains(',') && !ua.trim().contains(' ') && !is_directive(ua.trim()) => {
                (Some(ua.trim()), rest)
            }
            _ => (None, v.as_str()),
        };
        scope.is_none_or(|ua| ua.eq_ignore_ascii_case(token))
            && rest
                .split(',')
                .map(str::trim)
                .any(|d| d.eq_ignore_ascii_case(directive) || d.eq_ignore_ascii_case("none"))
    })
}

fn is_directive(s: &str) -> bool {
    matches!(
        s.to_ascii_lowercase().as_str(),
        "unavailable_after" | "max-snippet" | "max-image-preview" | "max-video-preview"
    )
}

#[cfg(test)]
mod tests {
    use super::robots_header_has;

    #[test]
    fn x_robots_tag_scoping() {
        let v = |s: &str| vec![s.to_owned()];
        assert!(robots_header_has(&v("noindex, nofollow"), "ShoalBot", "nofollow"));
        assert!(robots_header_has(&v("shoalbot: noindex"), "ShoalBot", "noindex"));
        assert!(!robots_header_has(&v("googlebot: noindex"), "ShoalBot", "noindex"));
        assert!(robots_header_has(&v("none"), "ShoalBot", "noindex"));
        assert!(!robots_header_has(&v("unavailable_after: 25 Jun 2010 15:00:00 PST"), "ShoalBot", "noindex"));
        assert!(!robots_header_has(&[], "ShoalBot", "noindex"));
    }
}
