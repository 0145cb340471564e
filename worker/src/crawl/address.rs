//! Looking a host's address up afresh, when a lease asks for it ([`Lease::resolve`]): the first
//! lease of a host, the first of a new audit on it, and one when its DNS TTL ran out.
//!
//! The frontier paces the IP the lease counts against, so a lease whose host turns out to live
//! somewhere else (or was never looked up) fetches nothing: the task goes back unchanged and its
//! next lease counts against the new address. A host that keeps its address (still among the
//! answers) goes on under the same lease. A lookup that fails keeps a known address for a minute
//! (a DNS hiccup does not stop a crawl); a host never resolved decides its lane the way it always
//! did: a twin that does not resolve is not part of the site, a start host that does not is
//! unreachable.
//!
//! A name that does not resolve is remembered for the audit ([`UNRESOLVED_TTL`]): its other
//! tasks (the link checks of every page and site that links there) fail with the same error
//! without a lookup or a request, and the frontier gives back the gap of a lease that reached
//! nobody, so they settle one after another at once instead of a gap each (issue 40).
//!
//! [`Lease::resolve`]: shoal_shared::frontier::Lease::resolve

use super::{Crawler, Job};
use crate::fetch::FetchError;
use shoal_shared::finding::Code;
use shoal_shared::frontier::{Frontier, Resolution, RobotsOutcome, audit_cache_key};
use shoal_shared::task::TaskKind;
use std::time::Duration;

/// The audit's result-cache entries of names that did not resolve (`unresolved:<name>`, the
/// resolver's message): the audit's other tasks of the name (link checks of many pages and sites)
/// fail with it at once, without a lookup or a request each.
const UNRESOLVED: &str = "unresolved:";
/// How long the audit remembers a name that did not resolve: for the rest of a typical audit, not
/// forever (a name fixed during a long audit is looked up again after this).
const UNRESOLVED_TTL: Duration = Duration::from_secs(10 * 60);

/// What a fresh lookup leaves the lease to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lookup {
    /// Go on and fetch under this lease (the address is the one it counts against, or none could
    /// be found and the fetch will say why).
    Fetch,
    /// Nothing more under this lease: the completion says what happens next.
    Done,
}

impl<F: Frontier> Crawler<F> {
    /// Looks the lease's host up afresh; see the module documentation.
    pub(super) async fn look_up(&self, job: &mut Job<'_>) -> Lookup {
        let url = job.task().url.clone();
        let known = job.lease.ip;
        // A name the audit already failed to look up is not asked about again (for
        // [`UNRESOLVED_TTL`]): this task fails with the same error at once.
        let key = audit_cache_key(job.task().audit, &format!("{UNRESOLVED}{}", job.lease.host.host_name()));
        let remembered = match known {
            None => self
                .frontier
                .cache_get(&key, job.now)
                .await
                .ok()
                .flatten()
                .map(|b| String::from_utf8_lossy(&b).into_owned()),
            Some(_) => None,
        };
        let from_memory = remembered.is_some();
        let result = match remembered {
            Some(why) => Err(FetchError::Dns(why)),
            None => self.fetcher.look_up(url.as_url(), known).await,
        };
        match result {
            Ok((ip, ttl)) => {
                let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
                job.out.resolved = Some(Resolution::Address { ip, ttl_ms });
                if known == Some(ip) {
                    return Lookup::Fetch;
                }
                if let Some(old) = known {
                    tracing::info!(host = %job.lease.host, old = %old, new = %ip, "host moved to a new address");
                }
                job.out.requeue = Some(job.task().clone());
                Lookup::Done
            }
            Err(e) => {
                job.out.resolved = Some(Resolution::Failed);
                if known.is_none()
                    && let FetchError::Dns(why) = &e
                {
                    if !from_memory
                        && let Err(err) =
                            self.frontier.cache_put(&key, why.clone().into_bytes(), job.now, UNRESOLVED_TTL).await
                    {
                        tracing::warn!(error = %err, "could not share a failed lookup");
                    }
                    job.unresolved = Some(why.clone());
                }
                if known.is_some() || job.task().kind != TaskKind::Robots {
                    // A known address is used a while longer; a task of a host never resolved
                    // is fetched and records the failure itself.
                    tracing::debug!(host = %job.lease.host, error = %e, "address lookup failed");
                    return Lookup::Fetch;
                }
                // A resolver that answers nothing is reported once for the audit, not as each
                // site's own failure (the site still ends unreachable, saying why).
                let silent = match self.fetcher.resolver().and_then(crate::dns::Resolver::silent) {
                    Some(s) if job.is_start_host() => {
                        self.report_silent_resolver(job, &s).await;
                        true
                    }
                    _ => false,
                };
                self.unresolved_lane(job, e, silent);
                Lookup::Done
            }
        }
    }

    /// A lane whose host never resolved: what its robots.txt outcome is. `silent`: because the
    /// resolver answers nothing at all (reported once for the audit).
    fn unresolved_lane(&self, job: &mut Job<'_>, e: FetchError, silent: bool) {
        let url = job.task().url.clone();
        let outcome = match e {
            e if job.is_external_lane() => {
                // Another site's host that cannot be reached: its links are broken, which the
                // check of each URL records; there are no rules to read.
                tracing::debug!(url = %url, error = %e, "external host not reachable");
                RobotsOutcome::AllowAll
            }
            FetchError::Dns(m) if !job.is_start_host() => {
                tracing::debug!(url = %url, error = %m, "twin host does not resolve: not part of the site");
                RobotsOutcome::NotPartOfSite
            }
            FetchError::PrivateAddress(ip) => {
                let detail = format!("resolves to {ip}; use --allow-private to audit private networks");
                let about = if job.is_start_host() { job.site.start.to_string() } else { url.to_string() };
                job.finding(Code::PrivateAddress, &about, detail);
                RobotsOutcome::OffLimits
            }
            e => {
                let start = job.site.start.to_string();
                let mut detail = e.to_string();
                if silent {
                    detail.push_str(" (not this site's fault: see dns_resolver_silent, reported once for the audit)");
                }
                job.finding(Code::StartUnreachable, &start, detail);
                RobotsOutcome::OffLimits
            }
        };
        job.out.robots = Some(outcome);
    }
}
