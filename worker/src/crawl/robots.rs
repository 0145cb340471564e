//! Opening a lane: the first leases of a host check its certificate and read its robots.txt (its
//! name is looked up first, `address.rs`), and every later lease of the lane is checked against
//! the rules read then, which the frontier has read again once they are a day old.
//!
//! What a robots.txt status means (rules, allow all, retry) is decided by
//! [`rules_for_status`]; this step adds what a single answer cannot say: redirects followed hop
//! by hop under the host's pace, the size cap, a Crawl-delay too slow to honour, and the sitemaps
//! the file lists.

use super::policy::describe_give_up;
use super::{Crawler, Job, MAX_ROBOTS_REDIRECTS, ROBOTS_MAX_BYTES, fill_response};
use crate::fetch::{FetchError, Fetched, Method};
use crate::tls;
use shoal_shared::ai_crawlers::{AiBlocked, AiRules};
use shoal_shared::finding::Code;
use shoal_shared::frontier::{Frontier, FrontierError, LaneRobots, RobotsOutcome};
use shoal_shared::ids::SiteId;
use shoal_shared::pace::{MAX_GAP, StatusPace, answer_pace};
use shoal_shared::robots::{ROBOTS_MAX_AGE, RobotsRules, RobotsStatus, Verdict, rules_for_status};
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_shared::url::{HostKey, NormalizedUrl};
use std::sync::Arc;

/// The robots.txt verdict source for one lane, as a worker caches it.
#[derive(Debug)]
pub(super) enum LaneRules {
    Pending,
    Rules(RobotsRules),
    AllowAll,
    Closed,
}

impl LaneRules {
    pub(super) fn check(&self, url: &NormalizedUrl) -> Option<Verdict> {
        match self {
            LaneRules::Rules(r) => Some(r.check(url.as_url())),
            LaneRules::AllowAll => Some(Verdict::Allowed),
            LaneRules::Closed => Some(Verdict::Disallowed { rule: "(host off limits)".into() }),
            LaneRules::Pending => None,
        }
    }
}

/// A lane's rules as a worker keeps them: what the frontier holds, and when it was fetched.
#[derive(Debug)]
pub(super) struct CachedRules {
    pub(super) fetched_at: UnixMs,
    pub(super) rules: LaneRules,
    /// On a host of the lane's own site, the same file as each AI crawler reads it
    /// ([`shoal_shared::ai_crawlers`]): every page crawled there records which of them it blocks.
    pub(super) ai: Option<AiRules>,
    /// Roughly what it costs to keep, in KiB (the robots.txt body), for the cache's bound.
    pub(super) weight_kib: u32,
}

impl CachedRules {
    /// A lane nothing may be fetched from.
    fn closed(fetched_at: UnixMs) -> CachedRules {
        CachedRules { fetched_at, rules: LaneRules::Closed, ai: None, weight_kib: 1 }
    }
}

/// A robots.txt outcome shared between sites through the frontier's result cache, with the time
/// it was fetched: a lane that takes it over fetches robots.txt again a day after that, not a day
/// after it took the copy.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct SharedRobots {
    outcome: RobotsOutcome,
    fetched_at: UnixMs,
}

impl<F: Frontier> Crawler<F> {
    /// The robots rules of a lane. Cached once known; `current`, a lease's
    /// [`Lease::robots_at`](shoal_shared::frontier::Lease::robots_at), asks for rules at least
    /// that recent (the frontier fetches a lane's robots.txt again once a day), and the cache
    /// itself forgets rules after [`ROBOTS_CACHE_IDLE`](super::ROBOTS_CACHE_IDLE).
    pub(super) async fn lane_rules(
        &self,
        site: SiteId,
        host: &HostKey,
        current: Option<UnixMs>,
    ) -> Result<Arc<CachedRules>, FrontierError> {
        let key = (site, host.clone());
        if let Some(r) = self.robots.get(&key)
            && current.is_none_or(|t| r.fetched_at >= t)
        {
            return Ok(r);
        }
        let Some(state) = self.frontier.robots(site, host).await? else {
            return Ok(self.cache_rules(key, CachedRules::closed(UnixMs(0))));
        };
        let fetched_at = state.fetched_at;
        let cached = match state.robots {
            LaneRobots::Pending => {
                return Ok(Arc::new(CachedRules { fetched_at, rules: LaneRules::Pending, ai: None, weight_kib: 1 }));
            }
            LaneRobots::Known(RobotsOutcome::Rules { body, .. }) => {
                let kib = u32::try_from(body.len() / 1024).unwrap_or(u32::MAX).saturating_add(1);
                let ai = self.is_own_host(site, host).await?.then(|| AiRules::parse(&body));
                // Each AI crawler with a group of its own keeps a copy of its rules, and `*`'s are
                // kept once more for the others: weighed as that many more files.
                let copies = ai.as_ref().map_or(0, |a| 1 + a.own_groups());
                let weight_kib = kib.saturating_mul(1 + u32::try_from(copies).unwrap_or(u32::MAX));
                let rules = LaneRules::Rules(RobotsRules::parse(&body, &self.settings.token));
                CachedRules { fetched_at, rules, ai, weight_kib }
            }
            LaneRobots::Known(RobotsOutcome::AllowAll) => {
                let ai = self.is_own_host(site, host).await?.then(AiRules::allow_all);
                CachedRules { fetched_at, rules: LaneRules::AllowAll, ai, weight_kib: 1 }
            }
            LaneRobots::Known(RobotsOutcome::OffLimits | RobotsOutcome::NotPartOfSite) => {
                CachedRules::closed(fetched_at)
            }
        };
        Ok(self.cache_rules(key, cached))
    }

    fn cache_rules(&self, key: (SiteId, HostKey), cached: CachedRules) -> Arc<CachedRules> {
        let rules = Arc::new(cached);
        self.robots.insert(key, Arc::clone(&rules));
        rules
    }

    /// Whether `host` belongs to the site itself (its start host or their www/apex twin), not to
    /// another site whose links it checks.
    async fn is_own_host(&self, site: SiteId, host: &HostKey) -> Result<bool, FrontierError> {
        Ok(self.site(site).await?.is_some_and(|info| info.scope().host_keys().contains(host)))
    }

    /// The AI crawlers the lane's robots.txt blocks from `url`, for the record of a page of the
    /// site; `None` when the lane's rules are not known here.
    pub(super) async fn ai_blocked(
        &self,
        job: &Job<'_>,
        url: &NormalizedUrl,
    ) -> Result<Option<AiBlocked>, FrontierError> {
        let rules = self.lane_rules(job.task().site, &url.host_key(), None).await?;
        Ok(rules.ai.as_ref().map(|ai| ai.blocked(url.as_url())))
    }

    /// Whether robots.txt allows `url`, when its lane's rules are known; pending rules are checked
    /// again when the URL is claimed.
    pub(super) async fn allowed(&self, job: &Job<'_>, url: &NormalizedUrl) -> Result<bool, FrontierError> {
        let rules = self.lane_rules(job.task().site, &url.host_key(), None).await?;
        let denied = matches!(rules.rules.check(url), Some(Verdict::Disallowed { .. }));
        if denied {
            shoal_metrics::metrics().robots_denials.inc();
        }
        Ok(!denied)
    }

    pub(super) fn disallowed_at_claim(&self, job: &mut Job<'_>, rule: &str) {
        shoal_metrics::metrics().robots_denials.inc();
        if job.task().kind == TaskKind::External {
            return; // another site's robots.txt: its URL is not checked, and that is all
        }
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

    /// A lane's robots.txt: fetched once per host per audit, whoever asks first (the site's own
    /// lane, or the lane another site of the audit opened to check a link to it); the others of
    /// the audit take that copy. A lane opened for links to another site may also take a copy
    /// another audit fetched within the result cache's time. No copy is used past
    /// [`ROBOTS_MAX_AGE`] after its fetch.
    pub(super) async fn robots_task(&self, job: &mut Job<'_>) {
        let url = job.task().url.clone();
        let external = job.is_external_lane();
        let host = format!("{}://{}", url.as_url().scheme(), job.lease.host);
        let in_audit = shoal_shared::frontier::audit_cache_key(job.task().audit, &format!("r:{host}"));
        let across_audits = format!("r:{host}");
        if job.task().chain.is_empty() {
            let mut copy = self.shared_robots(&in_audit, job.now).await;
            if copy.is_none() && external {
                copy = self.shared_robots(&across_audits, job.now).await;
            }
            if let Some(shared) = copy {
                if let RobotsOutcome::Rules { body, .. } = &shared.outcome
                    && !external
                {
                    // The site's own lane: its sitemaps are its own to queue.
                    let rules = RobotsRules::parse(body, &self.settings.token);
                    queue_sitemaps(job, &rules);
                }
                job.out.robots = Some(self.for_this_lane(job, shared.outcome));
                job.out.robots_fetched_at = Some(shared.fetched_at);
                return;
            }
            if !self.first_to_ask(job, &in_audit).await {
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
                rec.error = Some(e.kind());
                robots_unreachable(job, &url, e, start_host)
            }
            Ok(resp) => {
                fill_response(&mut rec, &resp);
                self.robots_response(job, &url, &resp)
            }
        };
        job.publish(rec);
        if let Some(o) = &outcome {
            let shared = SharedRobots { outcome: o.clone(), fetched_at: job.lease.started_at };
            self.share_robots(&in_audit, &shared, job.now, ROBOTS_MAX_AGE).await;
            let ttl = self.settings.external_cache_ttl.min(ROBOTS_MAX_AGE);
            self.share_robots(&across_audits, &shared, job.now, ttl).await;
        }
        job.out.robots = outcome.map(|o| self.for_this_lane(job, o));
    }

    /// What a host's robots.txt means for this lane. On the start host of its own site, rules
    /// that disallow the start page close the lane: nothing else is requested from the host (no
    /// probes, no sitemaps; SPEC §3), and `start_disallowed` names the rule. The rules themselves
    /// are what other lanes share: for a link check from another site they are just rules.
    fn for_this_lane(&self, job: &mut Job<'_>, outcome: RobotsOutcome) -> RobotsOutcome {
        let RobotsOutcome::Rules { body, .. } = &outcome else { return outcome };
        if job.is_external_lane() || !job.is_start_host() {
            return outcome;
        }
        let start = job.site.start.clone();
        let rules = RobotsRules::parse(body, &self.settings.token);
        let Verdict::Disallowed { rule } = rules.check(start.as_url()) else { return outcome };
        shoal_metrics::metrics().robots_denials.inc();
        job.finding(Code::StartDisallowed, start.as_str(), format!("blocked by rule {rule}"));
        job.out.discovered.retain(|t| !matches!(t.kind, TaskKind::Sitemap { .. }));
        RobotsOutcome::OffLimits
    }

    /// A copy of a host's robots.txt outcome from the frontier's result cache, if one is there and
    /// less than [`ROBOTS_MAX_AGE`] old.
    async fn shared_robots(&self, key: &str, now: UnixMs) -> Option<SharedRobots> {
        let blob = self.frontier.cache_get(key, now).await.ok().flatten()?;
        rmp_serde::from_slice::<SharedRobots>(&blob).ok().filter(|s| s.fetched_at.plus(ROBOTS_MAX_AGE) > now)
    }

    async fn share_robots(&self, key: &str, shared: &SharedRobots, now: UnixMs, ttl: std::time::Duration) {
        let Ok(blob) = rmp_serde::to_vec_named(shared) else { return };
        if let Err(e) = self.frontier.cache_put(key, blob, now, ttl).await {
            tracing::warn!(error = %e, "could not share a robots.txt outcome");
        }
    }

    /// One TLS handshake per https host (no HTTP request), made under the robots.txt lease: the
    /// certificate's dates, issuer and names, and the TLS version. The lease's address passed this
    /// worker's guard in `process` (a refused pin ends the lease before this is reached).
    async fn certificate_check(&self, job: &mut Job<'_>) {
        let (Some(ip), Some(host)) = (job.lease.ip, job.task().url.as_url().host_str().map(str::to_owned)) else {
            return;
        };
        let port = job.task().url.as_url().port_or_known_default().unwrap_or(443);
        job.sent = true;
        let timeout = self.fetcher.settings().timeout;
        let origin = format!("https://{}/", job.lease.host);
        match tls::probe(&host, port, ip, timeout, &self.settings.tls_roots, job.now).await {
            Ok(facts) => {
                let expiry = facts.not_after.map(|t| format!("expires {}", t.to_rfc3339())).unwrap_or_default();
                for problem in facts.problems(job.now) {
                    match problem {
                        tls::CertProblem::Expired => job.finding(Code::TlsCertificateExpired, &origin, expiry.clone()),
                        tls::CertProblem::SelfSigned => {
                            job.finding(Code::TlsSelfSigned, &origin, facts.issuer.clone().unwrap_or_default());
                        }
                        tls::CertProblem::Untrusted(why) => job.finding(Code::TlsUntrusted, &origin, why),
                        tls::CertProblem::WrongName(names) => job.finding(
                            Code::TlsHostnameMismatch,
                            &origin,
                            format!("certificate names: {}", names.join(", ")),
                        ),
                        tls::CertProblem::Expiring(days) => {
                            job.finding(Code::TlsCertificateExpiring, &origin, format!("{days} days left"));
                        }
                    }
                }
            }
            Err(e @ tls::ProbeError::UnsupportedVersion { .. }) => {
                job.finding(Code::TlsOldVersion, &origin, e.to_string());
            }
            Err(e) => tracing::debug!(host = %host, error = %e, "TLS check failed; the robots.txt fetch will tell why"),
        }
    }

    /// What an answer for robots.txt means for the lane; `None` when the task was queued again.
    ///
    /// Redirects are followed here, one hop per lease under the host's pace, so they never reach
    /// [`rules_for_status`] (which reads a 3xx as "the fetcher gave up"). Every other status is
    /// its decision; a 429 (or a 503 with Retry-After) also slows the host, as it does for any
    /// request ([`shoal_shared::pace::answer_pace`]).
    fn robots_response(&self, job: &mut Job<'_>, url: &NormalizedUrl, resp: &Fetched) -> Option<RobotsOutcome> {
        if (300..=399).contains(&resp.status) {
            return robots_redirect(job, url, resp);
        }
        let body = if resp.truncated { robots_cut(&resp.body) } else { &resp.body[..] };
        match rules_for_status(resp.status, body, &self.settings.token) {
            RobotsStatus::Rules(rules) => Some(self.robots_rules(job, url, resp, body, &rules)),
            RobotsStatus::AllowAll => Some(RobotsOutcome::AllowAll),
            RobotsStatus::Retry => {
                let ra = job.retry_after(resp);
                if answer_pace(resp.status, ra.is_some()) == StatusPace::SlowDown {
                    job.rate_limited(resp.status);
                }
                robots_retry(job, url, resp.status, ra)
            }
        }
    }

    /// A robots.txt that was read: its rules, unless it asks for a Crawl-delay over [`MAX_GAP`]
    /// (the host is then off limits: we never crawl faster than asked); its sitemaps are queued.
    fn robots_rules(
        &self,
        job: &mut Job<'_>,
        url: &NormalizedUrl,
        resp: &Fetched,
        body: &[u8],
        rules: &RobotsRules,
    ) -> RobotsOutcome {
        if resp.truncated {
            robots_too_large(job, url, body.len());
        }
        let delay = rules.crawl_delay();
        if let Some(d) = delay
            && d > MAX_GAP
        {
            job.finding(
                Code::CrawlDelayTooHigh,
                url.as_str(),
                format!("Crawl-delay {} s for group {:?}", d.as_secs_f64(), rules.group()),
            );
            return RobotsOutcome::OffLimits;
        }
        queue_sitemaps(job, rules);
        RobotsOutcome::Rules {
            body: body.to_vec(),
            crawl_delay_ms: delay.map(|d| u32::try_from(d.as_millis()).unwrap_or(u32::MAX)),
        }
    }
}

/// Queues the sitemaps robots.txt names that belong to the site.
fn queue_sitemaps(job: &mut Job<'_>, rules: &RobotsRules) {
    for sm in rules.sitemaps() {
        let Ok(sm) = NormalizedUrl::parse(&sm) else {
            continue;
        };
        if job.scope.contains(sm.as_url()) {
            let t = job.task();
            let task = Task::new(t.audit, t.site, sm, TaskKind::Sitemap { index_depth: 0 }, 0, FoundVia::Standard);
            job.out.discovered.push(task);
        }
    }
}

/// robots.txt could not be fetched at all. A twin host (`www.`) that does not resolve is simply
/// not part of the site; anything else closes the lane, after the retries a network failure is
/// worth (none for a refused address or an answer over a cap: asking again changes nothing).
fn robots_unreachable(
    job: &mut Job<'_>,
    url: &NormalizedUrl,
    e: FetchError,
    start_host: bool,
) -> Option<RobotsOutcome> {
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

/// A 3xx for robots.txt: the next hop is queued as the same task (up to
/// [`MAX_ROBOTS_REDIRECTS`], RFC 9309 §2.3.1.2); a redirect past that, or to no valid URL,
/// closes the lane at once.
fn robots_redirect(job: &mut Job<'_>, url: &NormalizedUrl, resp: &Fetched) -> Option<RobotsOutcome> {
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

/// robots.txt could not be read (429, 5xx, ...): retried on the schedule; once given up, the host
/// is off limits, never "allow all".
fn robots_retry(job: &mut Job<'_>, url: &NormalizedUrl, status: u16, ra: Option<UnixMs>) -> Option<RobotsOutcome> {
    let d = job.retry(ra)?;
    job.finding(Code::RobotsUnreachable, url.as_str(), format!("HTTP {status}; {}", describe_give_up(d)));
    Some(RobotsOutcome::OffLimits)
}

/// robots.txt cut at [`ROBOTS_MAX_BYTES`]: the incomplete last line is dropped, so that a rule cut
/// in the middle (`Disallow: /` of `Disallow: /private`) cannot turn into a different rule. What
/// is kept is what every worker parses.
fn robots_cut(body: &[u8]) -> &[u8] {
    body.iter().rposition(|b| matches!(b, b'\n' | b'\r')).map_or(&body[..0], |i| &body[..=i])
}

/// Reports a robots.txt cut by [`robots_cut`] on its URL, so the site owner knows which rules
/// were never read.
fn robots_too_large(job: &mut Job<'_>, url: &NormalizedUrl, kept: usize) {
    let cap_kib = ROBOTS_MAX_BYTES / 1024;
    let detail =
        format!("over the {cap_kib} KiB cap: only its first {kept} bytes were parsed, rules after them were ignored");
    job.finding(Code::RobotsTxtTooLarge, url.as_str(), detail);
}

#[cfg(test)]
mod tests {
    use crate::crawl::testing::{crawler, findings, job, lease, response, site};
    use shoal_shared::finding::Code;
    use shoal_shared::frontier::RobotsOutcome;
    use shoal_shared::task::TaskKind;

    /// What one robots.txt answer did to the completion, in terms a test can compare.
    #[derive(Debug, PartialEq)]
    struct Seen {
        outcome: Option<&'static str>,
        requeued: Option<(String, u8)>,
        rate_limited: bool,
        findings: Vec<(Code, String)>,
        discovered: usize,
    }

    fn answer(status: u16, headers: &[(&'static str, &str)], body: &str, truncated: bool, retries: u8) -> Seen {
        let lease = lease(ROBOTS, TaskKind::Robots, retries);
        let site = site();
        let mut job = job(&lease, &site);
        let answer = response(status, headers, body, truncated);
        let outcome = crawler().robots_response(&mut job, &lease.task.url, &answer);
        Seen {
            outcome: outcome.map(|o| match o {
                RobotsOutcome::Rules { .. } => "rules",
                RobotsOutcome::AllowAll => "allow_all",
                RobotsOutcome::OffLimits => "off_limits",
                RobotsOutcome::NotPartOfSite => "not_part_of_site",
            }),
            requeued: job.out.requeue.as_ref().map(|t| (t.url.to_string(), t.retries)),
            rate_limited: job.out.rate_limited,
            findings: findings(&job.out),
            discovered: job.out.discovered.len(),
        }
    }

    fn seen(outcome: Option<&'static str>, requeued: Option<(&str, u8)>, findings: &[(Code, &str)]) -> Seen {
        Seen {
            outcome,
            requeued: requeued.map(|(u, r)| (u.to_owned(), r)),
            rate_limited: false,
            findings: findings.iter().map(|(c, d)| (*c, (*d).to_owned())).collect(),
            discovered: 0,
        }
    }

    const ROBOTS: &str = "https://a.test/robots.txt";
    const SLOWED: &str = "answered 429 Too Many Requests; host slowed to 1 request every 3 s";

    /// Issue 10 moved the status decision to `rules_for_status` and `status_pace`: every status
    /// class must still mean what it meant when the worker decided it itself.
    #[test]
    fn robots_statuses_keep_their_meaning() {
        let ok = "User-agent: *\nDisallow: /x\n";
        assert_eq!(answer(200, &[], ok, false, 0), seen(Some("rules"), None, &[]));
        assert_eq!(answer(204, &[], "", false, 0), seen(Some("rules"), None, &[]));
        for status in [400, 401, 403, 404, 410, 451] {
            assert_eq!(answer(status, &[], ok, false, 0), seen(Some("allow_all"), None, &[]), "HTTP {status}");
        }
        for status in [100, 500, 501, 502, 503, 504, 599, 600] {
            assert_eq!(answer(status, &[], "", false, 0), seen(None, Some((ROBOTS, 1)), &[]), "HTTP {status}");
            let gave_up = format!("HTTP {status}; still failing after 2 retries");
            assert_eq!(
                answer(status, &[], "", false, 2),
                seen(Some("off_limits"), None, &[(Code::RobotsUnreachable, &gave_up)]),
                "HTTP {status}"
            );
        }
    }

    #[test]
    fn robots_429_slows_the_host_and_is_retried() {
        let mut first = seen(None, Some((ROBOTS, 1)), &[(Code::RateLimited, SLOWED)]);
        first.rate_limited = true;
        assert_eq!(answer(429, &[], "", false, 0), first);
        let mut last = seen(
            Some("off_limits"),
            None,
            &[(Code::RateLimited, SLOWED), (Code::RobotsUnreachable, "HTTP 429; still failing after 2 retries")],
        );
        last.rate_limited = true;
        assert_eq!(answer(429, &[], "", false, 2), last);
        let mut too_long = seen(
            Some("off_limits"),
            None,
            &[
                (Code::RateLimited, SLOWED),
                (Code::RobotsUnreachable, "HTTP 429; server asked to wait 120 s, over the 60 s limit"),
            ],
        );
        too_long.rate_limited = true;
        assert_eq!(answer(429, &[("retry-after", "120")], "", false, 0), too_long);
        // Issue 17: a 503 that says when to come back slows the host like a 429 (here the wait is
        // too long, so robots.txt is also given up); one without Retry-After is a plain retry.
        let unavailable = answer(503, &[("retry-after", "120")], "", false, 0);
        let detail = "HTTP 503; server asked to wait 120 s, over the 60 s limit";
        let slowed_503 = "answered 503 Service Unavailable with Retry-After; host slowed to 1 request every 3 s";
        let mut expected =
            seen(Some("off_limits"), None, &[(Code::RateLimited, slowed_503), (Code::RobotsUnreachable, detail)]);
        expected.rate_limited = true;
        assert_eq!(unavailable, expected);
        let mut plain = seen(None, Some((ROBOTS, 1)), &[]);
        plain.rate_limited = false;
        assert_eq!(answer(503, &[], "", false, 0), plain);
    }

    #[test]
    fn robots_redirects_are_followed_by_the_worker() {
        assert_eq!(
            answer(301, &[("location", "/moved.txt")], "", false, 0),
            seen(None, Some(("https://a.test/moved.txt", 0)), &[])
        );
        let gave_up = "robots.txt redirects more than 5 times or to an invalid URL";
        assert_eq!(
            answer(302, &[], "", false, 0),
            seen(Some("off_limits"), None, &[(Code::RobotsUnreachable, gave_up)])
        );
    }

    #[test]
    fn robots_size_cap_crawl_delay_and_sitemaps() {
        let cut = answer(200, &[], "User-agent: *\nDisallow: /a\nDisallow: /pri", true, 0);
        let detail = "over the 500 KiB cap: only its first 27 bytes were parsed, rules after them were ignored";
        assert_eq!(cut, seen(Some("rules"), None, &[(Code::RobotsTxtTooLarge, detail)]));
        let slow = answer(200, &[], "User-agent: *\nCrawl-delay: 61\n", false, 0);
        assert_eq!(slow.outcome, Some("off_limits"));
        assert_eq!(slow.findings.iter().map(|f| f.0).collect::<Vec<_>>(), vec![Code::CrawlDelayTooHigh]);
        let sitemaps = answer(200, &[], "Sitemap: https://a.test/s.xml\nSitemap: https://b.test/s.xml\n", false, 0);
        assert_eq!(sitemaps.discovered, 1, "only the site's own sitemaps are queued");
        assert_eq!(super::robots_cut(b"a\nb\r\nc"), b"a\nb\r\n", "only whole lines are kept");
        assert_eq!(super::robots_cut(b"no line end"), b"");
    }
}
