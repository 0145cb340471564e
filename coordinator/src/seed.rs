//! What an audit queues for a site before anything is fetched.

use crate::config::AuditSettings;
use shoal_shared::frontier::SiteSeed;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::task::{FoundVia, ProbeKind, Task, TaskKind};
use shoal_shared::url::NormalizedUrl;

/// The seed of one site: the start page, then the standard probes (SPEC §2: `/llms.txt`,
/// `/.well-known/security.txt`, one random never-existing path, and for an https start the
/// `http://` form of the start page), all behind the robots.txt of its hosts; and the DNS check
/// of its domain (SPEC §9), in a lane of its own.
#[must_use]
pub fn site_seed(audit: AuditId, site: SiteId, start: &NormalizedUrl, config: &AuditSettings) -> SiteSeed {
    let mut initial = vec![Task::new(audit, site, start.clone(), TaskKind::Page, 0, FoundVia::Start)];
    // Random enough that no site has it, stable for one site so a replayed seed is the same.
    let token = xxhash_rust::xxh3::xxh3_64(format!("{audit}/{site}/{start}").as_bytes());
    let probes = vec![
        (ProbeKind::LlmsTxt, "/llms.txt".to_owned()),
        (ProbeKind::SecurityTxt, "/.well-known/security.txt".to_owned()),
        (ProbeKind::Soft404, format!("{}{token:016x}", shoal_shared::finding::SOFT_404_PROBE_PREFIX)),
    ];
    let mut http_form = None;
    if start.as_url().scheme() == "https" {
        let mut u = start.as_url().clone();
        if u.set_scheme("http").is_ok() {
            http_form = NormalizedUrl::from_url(u).ok();
        }
    }
    for (kind, path) in probes {
        if let Ok(u) = NormalizedUrl::join(start.as_url(), &path) {
            initial.push(Task::new(audit, site, u, TaskKind::Probe(kind), 0, FoundVia::Standard));
        }
    }
    if let Some(u) = http_form {
        initial.push(Task::new(audit, site, u, TaskKind::Probe(ProbeKind::HttpsRedirect), 0, FoundVia::Standard));
    }
    // SPEC §9: the DNS check of the site's domain and start host (a lane of its own, no
    // robots.txt: it asks DNS, not the web server). The first site of the audit under a
    // registrable domain to run it checks the domain and queues the mail, MTA-STS and registry
    // checks; the others check their own host's CAA set. The lane is the start host's (port 53),
    // not the domain's: one lane per domain made 200 sites of one domain wait out its gap one
    // after another. Only audited sites are seeded, so only they get it.
    let host = start.as_url().host_str();
    if config.limits.dns_checks
        && let Some(host) = host
        && shoal_shared::domain::registrable_domain(host).is_some()
        && let Ok(u) = NormalizedUrl::service("dns", host, shoal_shared::domain::DNS_TASK_PORT)
    {
        initial.push(Task::new(audit, site, u, TaskKind::DomainDns, 0, FoundVia::Standard));
    }
    SiteSeed {
        audit,
        site,
        start: start.clone(),
        limits: config.limits.clone(),
        initial,
        custom: config.custom.clone(),
    }
}
