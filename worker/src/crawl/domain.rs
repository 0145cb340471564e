//! SPEC §9's checks of an audited site's domain: the DNS check (one task per site, in a lane of
//! its start host without robots.txt). The first of an audit's sites under a registrable domain
//! to run it checks the domain for all of them (issue 40) and queues the rest: a conversation with
//! each of the two most preferred mail servers (`mail.rs`), the MTA-STS policy as an ordinary
//! request, and the registry's RDAP record (through the IANA bootstrap file, or `--rdap-url`);
//! their findings are the domain's (`Finding::domain_wide`), which the audit database gives to
//! every site under it. Every site's task asks about its own host's CAA set.
//!
//! What DNS, the policy and the registry say is judged by `shoal_shared::domain`; this file asks
//! and turns the verdicts into findings. Results a registry or the bootstrap shares between sites
//! go through the frontier's result cache, as external link checks do.

use super::{Crawler, Job};
use crate::dns::{DnsInspector, Silent};
use crate::fetch::Method;
use shoal_shared::domain::rdap::{self, MAX_RDAP_BYTES, Registration, RegistrationIssue};
use shoal_shared::domain::records::{StsMode, StsPolicy};
use shoal_shared::domain::{Answer, DnsFacts, Issue, MTA_STS_MAX_BYTES, MTA_STS_PATH, registrable_domain};
use shoal_shared::finding::Code;
use shoal_shared::frontier::{Frontier, FrontierError, audit_cache_key};
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::url::NormalizedUrl;
use std::time::Duration;

/// Mail servers talked to per domain: the two most preferred (SPEC §9).
pub const MAIL_SERVERS_CHECKED: usize = 2;
/// How long the IANA bootstrap file is reused (it changes a few times a year).
const BOOTSTRAP_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// How long an audit keeps a registry's answer or a mail server's conversation for its other
/// sites (the audit's own cache entries end with it in any case).
pub(super) const AUDIT_RESULT_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// The bootstrap file's entry in the frontier's (frontier-wide) result cache.
const BOOTSTRAP_KEY: &str = "rdap:bootstrap";
/// The audit's result-cache entry that says its silent resolver has been reported.
const SILENT_REPORTED: &str = "dns:resolver-silent";
/// The audit's result-cache entries naming, per registrable domain, the site whose DNS check
/// checks it (`dns-domain:<domain>`).
const DOMAIN_CHECKED_BY: &str = "dns-domain:";

/// A registry's answer as an audit keeps it for its other sites.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct RdapAnswer {
    status: Option<u16>,
    error: Option<String>,
    /// The answer's body (JSON, so text; anything else fails to parse either way).
    body: String,
}

impl Job<'_> {
    /// A finding of the domain's checks (shared by the sites under the domain, see [`Job::finding`]).
    fn issue(&mut self, i: Issue) {
        self.finding(i.code, &i.about, i.detail);
    }

    /// A finding about this site's own host (its CAA set), never shared.
    fn site_issue(&mut self, i: Issue) {
        self.site_finding(i.code, &i.about, i.detail);
    }

    /// The site's registrable domain (its start host's), which SPEC §9's checks are about.
    fn domain(&self) -> Option<String> {
        self.site.start.as_url().host_str().and_then(registrable_domain)
    }

    fn check_task(&self, url: NormalizedUrl, kind: TaskKind) -> Task {
        let t = self.task();
        Task::new(t.audit, t.site, url, kind, 0, FoundVia::Standard)
    }
}

impl<F: Frontier> Crawler<F> {
    fn inspector(&self) -> Option<DnsInspector> {
        self.fetcher.resolver().cloned().map(DnsInspector::new)
    }

    /// The worker's resolver answers nothing at all ([`Silent`]): that is reported once per
    /// audit, by the first of its sites to meet it (`dns_resolver_silent`, about the resolver),
    /// whichever worker that is; the others' DNS checks are skipped and their lanes say why they
    /// were not reached. True if this job reported it.
    pub(super) async fn report_silent_resolver(&self, job: &mut Job<'_>, silent: &Silent) -> bool {
        let key = audit_cache_key(job.task().audit, SILENT_REPORTED);
        let first = self.frontier.cache_add(&key, b"1".to_vec(), job.now, AUDIT_RESULT_TTL).await.unwrap_or(true);
        if first {
            let detail = format!(
                "{silent}: no name could be looked up while it was silent, so the audit's sites that needed one end \
                 unreachable (start_unreachable) and their DNS checks were skipped; reported once for the audit"
            );
            job.site_finding(Code::DnsResolverSilent, &silent.servers, detail);
        }
        first
    }

    /// The DNS check of a site: its registrable domain's records, once per audit (by the first
    /// of the audit's sites under the domain to get here, which also queues the mail, MTA-STS and
    /// RDAP checks; what they find is the domain's, given to every site under it by the audit
    /// database), and its start host's own CAA set, for every site.
    pub(super) async fn domain_dns_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let Some(domain) = job.domain() else { return Ok(()) };
        let checks_domain = self.checks_the_domain(job, &domain).await?;
        let Some(dns) = self.inspector() else {
            if checks_domain {
                job.finding(Code::DnsLookupFailed, &domain, "this worker sends no DNS queries (--no-dns)");
            }
            return Ok(());
        };
        let start_host = job.site.start.as_url().host_str().unwrap_or(&domain).to_owned();
        if !checks_domain {
            match dns.inspect_host(&domain, &start_host).await {
                Ok(facts) => facts.issues().into_iter().for_each(|i| job.site_issue(i)),
                Err(silent) => {
                    self.report_silent_resolver(job, &silent).await;
                }
            }
            return Ok(());
        }
        let facts = match dns.inspect(&domain, &start_host).await {
            Ok(facts) => facts,
            Err(silent) => {
                self.report_silent_resolver(job, &silent).await;
                return Ok(());
            }
        };
        tracing::debug!(domain = %domain, mail = facts.has_mail(), unanswered = facts.unanswered.len(), "DNS checked");
        for i in facts.domain_issues() {
            job.issue(i);
        }
        for i in facts.host_issues() {
            job.site_issue(i);
        }
        if !matches!(facts.ns, Answer::None) {
            self.queue_follow_ups(job, &domain, &facts);
        }
        Ok(())
    }

    /// Whether this site's DNS check is the one that checks `domain` for the audit: the first of
    /// the audit's sites under it to ask (a retry of that site's task is still it). Why through
    /// the audit's result cache: the sites of an audit are spread over workers, and the entry
    /// ends with the audit ([`Frontier::forget`]).
    async fn checks_the_domain(&self, job: &Job<'_>, domain: &str) -> Result<bool, FrontierError> {
        let key = audit_cache_key(job.task().audit, &format!("{DOMAIN_CHECKED_BY}{domain}"));
        let me = job.task().site.to_string().into_bytes();
        if self.frontier.cache_add(&key, me.clone(), job.now, AUDIT_RESULT_TTL).await? {
            return Ok(true);
        }
        Ok(self.frontier.cache_get(&key, job.now).await?.as_deref() == Some(&me[..]))
    }

    fn queue_follow_ups(&self, job: &mut Job<'_>, domain: &str, facts: &DnsFacts) {
        if job.site.limits.smtp {
            let port = self.settings.smtp_port;
            for mx in facts.mail_servers().into_iter().filter(|m| m.resolves == Some(true)).take(MAIL_SERVERS_CHECKED) {
                match NormalizedUrl::service("smtp", &mx.exchange, port) {
                    Ok(u) => {
                        let t = job.check_task(u, TaskKind::Smtp);
                        job.out.discovered.push(t);
                    }
                    Err(e) => tracing::debug!(mx = %mx.exchange, error = %e, "MX host is no host name"),
                }
            }
        }
        let sts_record =
            facts.mta_sts.found().is_some_and(|t| t.iter().any(|r| shoal_shared::domain::records::is_mta_sts(r)));
        if facts.has_mail()
            && sts_record
            && let Ok(u) = NormalizedUrl::parse(&format!("https://mta-sts.{domain}{MTA_STS_PATH}"))
        {
            let t = job.check_task(u, TaskKind::MtaStsPolicy);
            job.out.discovered.push(t);
        }
        let rdap = match &self.settings.rdap_url {
            Some(base) => NormalizedUrl::parse(&rdap::domain_query(base, domain)).map(|u| (u, TaskKind::Rdap)),
            None => NormalizedUrl::parse(rdap::IANA_DNS_BOOTSTRAP).map(|u| (u, TaskKind::RdapBootstrap)),
        };
        match rdap {
            Ok((u, kind)) => {
                let t = job.check_task(u, kind);
                job.out.discovered.push(t);
            }
            Err(e) => tracing::warn!(error = %e, "no RDAP URL for the domain"),
        }
    }

    /// The MTA-STS policy, fetched as senders fetch it (no redirects followed) under the policy
    /// host's robots.txt and pace, and checked against the domain's MX hosts.
    pub(super) async fn mta_sts_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let Some(domain) = job.domain() else { return Ok(()) };
        let mut rec = job.record();
        let result = self.fetch(job, Method::Get, &url, Some(MTA_STS_MAX_BYTES)).await;
        let resp = match result {
            Ok(r) => r,
            Err(e) => {
                rec.error = Some(e.kind());
                if e.is_retryable() && job.retry(None).is_none() {
                    return Ok(());
                }
                job.finding(Code::MtaStsInvalid, url.as_str(), format!("the policy could not be fetched: {e}"));
                job.publish(rec);
                return Ok(());
            }
        };
        super::fill_response(&mut rec, &resp);
        if !self.transient_status(job, &resp) {
            return Ok(());
        }
        job.publish(rec);
        let problem = match resp.status {
            200 => None,
            s @ 300..=399 => Some(format!("HTTP {s}: senders do not follow redirects for the policy")),
            s => Some(format!("the policy answered HTTP {s}")),
        };
        if let Some(p) = problem {
            job.finding(Code::MtaStsInvalid, url.as_str(), p);
            return Ok(());
        }
        let text_plain =
            resp.header("content-type").is_some_and(|c| c.trim().to_ascii_lowercase().starts_with("text/plain"));
        let policy =
            match std::str::from_utf8(&resp.body).map_err(|_| "not UTF-8 text".to_owned()).and_then(StsPolicy::parse) {
                Ok(p) => p,
                Err(e) => {
                    job.finding(Code::MtaStsInvalid, url.as_str(), e);
                    return Ok(());
                }
            };
        if !text_plain {
            let ct = resp.header("content-type").unwrap_or("none").to_owned();
            job.finding(Code::MtaStsInvalid, url.as_str(), format!("Content-Type {ct}, not text/plain"));
        }
        match policy.mode {
            StsMode::Testing => job.finding(Code::MtaStsTesting, url.as_str(), "mode: testing"),
            StsMode::None => return Ok(()),
            StsMode::Enforce => {}
        }
        if let Some(dns) = self.inspector()
            && let Answer::Found(mx) = dns.mx_names(&domain).await
        {
            let uncovered: Vec<String> =
                mx.into_iter().filter(|name| !name.is_empty() && !policy.covers(name)).collect();
            if !uncovered.is_empty() {
                let detail = format!(
                    "not covered by the policy's mx: {} (policy: {})",
                    uncovered.join(", "),
                    policy.mx.join(", ")
                );
                job.finding(Code::MtaStsMxMismatch, url.as_str(), detail);
            }
        }
        Ok(())
    }

    /// The IANA bootstrap file (shared by every site and audit for a day): which registry answers
    /// for the domain's TLD; queues the RDAP request there.
    pub(super) async fn rdap_bootstrap_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let Some(domain) = job.domain() else { return Ok(()) };
        let bytes = match self.frontier.cache_get(BOOTSTRAP_KEY, job.now).await? {
            Some(b) => b,
            None => {
                if !job.task().get_only && !self.first_to_ask(job, BOOTSTRAP_KEY).await {
                    return Ok(());
                }
                let url = job.task().url.clone();
                let mut rec = job.record();
                let result = self.fetch(job, Method::Get, &url, Some(MAX_RDAP_BYTES)).await;
                let Some(resp) = self.answered(job, &mut rec, result) else { return Ok(()) };
                job.publish(rec);
                if resp.status != 200 || resp.truncated {
                    let detail = format!("the IANA RDAP bootstrap file answered HTTP {}", resp.status);
                    job.finding(Code::DomainRdapFailed, &domain, detail);
                    return Ok(());
                }
                let body = resp.body.to_vec();
                if let Err(e) = self.frontier.cache_put(BOOTSTRAP_KEY, body.clone(), job.now, BOOTSTRAP_TTL).await {
                    tracing::warn!(error = %e, "could not share the RDAP bootstrap file");
                }
                body
            }
        };
        match rdap::base_for(&bytes, &domain) {
            Ok(Some(base)) => match NormalizedUrl::parse(&rdap::domain_query(&base, &domain)) {
                Ok(u) => {
                    let t = job.check_task(u, TaskKind::Rdap);
                    job.out.discovered.push(t);
                }
                Err(e) => job.finding(Code::DomainRdapFailed, &domain, format!("the bootstrap's RDAP URL {base}: {e}")),
            },
            Ok(None) => {
                let tld = domain.rsplit('.').next().unwrap_or("");
                job.finding(Code::DomainRdapFailed, &domain, format!("no RDAP service is listed for .{tld}"));
            }
            Err(e) => job.finding(Code::DomainRdapFailed, &domain, e),
        }
        Ok(())
    }

    /// The registry's RDAP record of the domain: asked once per audit (other sites of the same
    /// domain read the answer from the audit's cache), judged at the lease's time.
    pub(super) async fn rdap_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let Some(domain) = job.domain() else { return Ok(()) };
        let url = job.task().url.clone();
        let key = audit_cache_key(job.task().audit, &format!("rdap:{url}"));
        let answer = match self.frontier.cache_get(&key, job.now).await? {
            Some(blob) => rmp_serde::from_slice::<RdapAnswer>(&blob).ok(),
            None => None,
        };
        let answer = match answer {
            Some(a) => a,
            None => {
                if !job.task().get_only && !self.first_to_ask(job, &key).await {
                    return Ok(());
                }
                let mut rec = job.record();
                let a = match self.fetch(job, Method::Get, &url, Some(MAX_RDAP_BYTES)).await {
                    Err(e) => {
                        rec.error = Some(e.kind());
                        if e.is_retryable() && job.retry(None).is_none() {
                            return Ok(());
                        }
                        RdapAnswer { status: None, error: Some(e.to_string()), body: String::new() }
                    }
                    Ok(resp) => {
                        super::fill_response(&mut rec, &resp);
                        if !self.transient_status(job, &resp) {
                            return Ok(());
                        }
                        let error = resp.truncated.then(|| format!("answer over {MAX_RDAP_BYTES} bytes"));
                        RdapAnswer {
                            status: Some(resp.status),
                            error,
                            body: String::from_utf8_lossy(&resp.body).into_owned(),
                        }
                    }
                };
                job.publish(rec);
                if let Ok(blob) = rmp_serde::to_vec_named(&a)
                    && let Err(e) = self.frontier.cache_put(&key, blob, job.now, AUDIT_RESULT_TTL).await
                {
                    tracing::warn!(error = %e, "could not share an RDAP answer");
                }
                a
            }
        };
        let failed = |why: String| (Code::DomainRdapFailed, why);
        let found: Vec<(Code, String)> = match (&answer.error, answer.status) {
            (Some(e), _) => vec![failed(format!("{url}: {e}"))],
            (None, Some(200)) => match Registration::parse(answer.body.as_bytes()) {
                Err(e) => vec![failed(format!("{url}: {e}"))],
                Ok(reg) => reg
                    .issues(job.now)
                    .into_iter()
                    .map(|i| match i {
                        RegistrationIssue::Expired(d) => (Code::DomainExpired, format!("expired {d} days ago")),
                        RegistrationIssue::Expiring(d) => (Code::DomainExpiring, format!("{d} days left")),
                        RegistrationIssue::Hold(s) => (Code::DomainHold, s.join(", ")),
                        RegistrationIssue::TransferBlocked(s) => (Code::DomainTransferBlocked, s.join(", ")),
                    })
                    .collect(),
            },
            (None, Some(404)) => vec![failed(format!("{url}: the registry has no record of the domain (HTTP 404)"))],
            (None, s) => vec![failed(format!("{url}: HTTP {}", s.unwrap_or(0)))],
        };
        for (code, detail) in found {
            job.finding(code, &domain, detail);
        }
        Ok(())
    }
}
