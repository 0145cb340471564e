//! Shared causes: sites of an audit whose findings point to one thing behind them, so a hosting
//! provider fixes it once instead of site by site.
//!
//! Only what the audit database records is used (documented in `docs/report-html.md`):
//! - **The same failing URL**: one external URL (a CDN script, a widget, a partner's page) behind
//!   `broken_external_link` findings on several sites.
//! - **The same server software**: sites whose start page answered with the same `Server` header
//!   (`Apache/2.4.29 (Ubuntu)`), with the codes most of them share.
//! - **The same CMS**: sites the crawler recognised as WordPress, with the codes most of them share.
//!
//! A code counts as shared by a group when at least two of its sites and at least half of them
//! have it, and its share in the group is at least [`LIFT`] (20 percentage points) above its share
//! among the audit's other sites: a code as common everywhere (a missing CSP header on nine sites
//! in ten) says nothing about the group. Groups without such a code are left out. The server's IP address and the generator's version are not
//! recorded by the crawler, so sites are not grouped by them.

use crate::issues::SiteHealth;
use crate::score::{self, Scope};
use shoal_shared::finding::Severity;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_store::{AuditDb, DbError};
use std::collections::{BTreeMap, HashMap, HashSet};

/// How much more common (in percentage points, as a fraction) a code must be in a group than
/// among the other sites to count as shared by the group.
pub const LIFT: f64 = 0.2;

/// Causes of each kind shown at most.
pub const MAX_PER_KIND: usize = 20;

/// Codes whose URL can be the same thing on several sites (a URL outside them).
const SHARED_URL_CODES: [&str; 1] = ["broken_external_link"];

/// What the sites of a cause have in common.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CauseKind {
    /// One URL behind findings of `code` on every site of the group.
    SharedUrl {
        /// The code.
        code: String,
        /// The URL.
        url: String,
    },
    /// The start page's `Server` header.
    Server(String),
    /// The CMS the crawler recognised.
    Cms(&'static str),
}

impl CauseKind {
    /// A stable spelling of the kind (JSON `causes[].kind`).
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            CauseKind::SharedUrl { .. } => "shared_url",
            CauseKind::Server(_) => "server",
            CauseKind::Cms(_) => "cms",
        }
    }

    /// The value the sites share: the URL, the header, the CMS.
    #[must_use]
    pub fn value(&self) -> &str {
        match self {
            CauseKind::SharedUrl { url, .. } => url,
            CauseKind::Server(s) => s,
            CauseKind::Cms(c) => c,
        }
    }
}

/// A code most sites of a group share.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedCode {
    /// The code.
    pub code: String,
    /// Its worst severity in the group.
    pub severity: Severity,
    /// Sites of the group that have it.
    pub sites: u64,
    /// The share of the audit's other sites that have it (0 to 1).
    pub elsewhere: f64,
}

/// Sites with something in common and the findings it likely explains.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// What they share.
    pub kind: CauseKind,
    /// The sites, in id order.
    pub sites: Vec<SiteId>,
    /// The codes they share, most sites first.
    pub shared: Vec<SharedCode>,
}

/// The shared causes of an audit: shared URLs first, then server software, then CMS, each kind
/// by number of sites (most first), at most [`MAX_PER_KIND`] of each.
///
/// # Errors
/// A read failure.
pub fn causes(db: &AuditDb, audit: AuditId, sites: &[SiteHealth]) -> Result<Vec<Cause>, DbError> {
    let mut out = shared_urls(db, audit, sites)?;
    let mut by_server: BTreeMap<String, Vec<SiteId>> = BTreeMap::new();
    for (site, server) in db.start_servers(audit)? {
        by_server.entry(server).or_default().push(site);
    }
    let mut servers: Vec<Cause> = by_server
        .into_iter()
        .filter_map(|(server, members)| group(CauseKind::Server(server), members, sites))
        .collect();
    servers.sort_by(|a, b| b.sites.len().cmp(&a.sites.len()).then(a.kind.value().cmp(b.kind.value())));
    out.extend(servers.into_iter().take(MAX_PER_KIND));
    out.extend(group(CauseKind::Cms("WordPress"), db.wordpress_sites(audit)?, sites));
    Ok(out)
}

fn shared_urls(db: &AuditDb, audit: AuditId, sites: &[SiteHealth]) -> Result<Vec<Cause>, DbError> {
    let mut out = Vec::new();
    for code in SHARED_URL_CODES {
        let mut by_url: BTreeMap<String, Vec<SiteId>> = BTreeMap::new();
        for (site, url) in db.code_urls(audit, code)? {
            by_url.entry(url).or_default().push(site);
        }
        let severity =
            sites.iter().flat_map(|s| &s.groups).find(|g| g.code == code).map_or(Severity::Warning, |g| g.severity);
        let mut found: Vec<Cause> = by_url
            .into_iter()
            .filter(|(_, members)| members.len() >= 2)
            .map(|(url, members)| Cause {
                shared: vec![SharedCode {
                    code: code.to_owned(),
                    severity,
                    sites: members.len() as u64,
                    elsewhere: 0.0,
                }],
                kind: CauseKind::SharedUrl { code: code.to_owned(), url },
                sites: members,
            })
            .collect();
        found.sort_by(|a, b| b.sites.len().cmp(&a.sites.len()).then(a.kind.value().cmp(b.kind.value())));
        out.extend(found.into_iter().take(MAX_PER_KIND));
    }
    Ok(out)
}

/// A group of sites with the codes they share (see the module doc), or `None` when they share
/// none (or are fewer than two).
fn group(kind: CauseKind, members: Vec<SiteId>, sites: &[SiteHealth]) -> Option<Cause> {
    if members.len() < 2 {
        return None;
    }
    let inside: HashSet<SiteId> = members.iter().copied().collect();
    let others = sites.len().saturating_sub(inside.len());
    // code → (sites in the group, sites outside, worst severity in the group)
    let mut tally: HashMap<&str, (u64, u64, Severity)> = HashMap::new();
    for s in sites {
        let member = inside.contains(&s.site.id);
        for g in &s.groups {
            if score::scope(&g.code) == Scope::Info {
                continue;
            }
            let e = tally.entry(&g.code).or_insert((0, 0, g.severity));
            if member {
                e.0 += 1;
                e.2 = e.2.min(g.severity);
            } else {
                e.1 += 1;
            }
        }
    }
    let size = inside.len() as f64;
    let mut shared: Vec<SharedCode> = tally
        .into_iter()
        .filter_map(|(code, (n, out, severity))| {
            let share = n as f64 / size;
            let elsewhere = if others == 0 { 0.0 } else { out as f64 / others as f64 };
            (n >= 2 && share >= 0.5 && share >= elsewhere + LIFT).then(|| SharedCode {
                code: code.to_owned(),
                severity,
                sites: n,
                elsewhere,
            })
        })
        .collect();
    if shared.is_empty() {
        return None;
    }
    shared.sort_by(|a, b| b.sites.cmp(&a.sites).then(a.severity.cmp(&b.severity)).then(a.code.cmp(&b.code)));
    let mut members = members;
    members.sort();
    Some(Cause { kind, sites: members, shared })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::issues::SiteHealth;
    use crate::issues::testing::{count, site};
    use shoal_store::IssueCount;

    fn health(id: u64, codes: &[&str]) -> SiteHealth {
        let counts: Vec<IssueCount> = codes.iter().map(|c| count(id, c, Severity::Warning, 1)).collect();
        SiteHealth::new(site(id, 10), &counts, 10, None)
    }

    #[test]
    fn a_group_keeps_the_codes_most_of_it_shares_and_others_have_less() {
        let sites = [
            health(1, &["hsts_missing", "tls_old_version", "page_limit_reached"]),
            health(2, &["hsts_missing", "tls_old_version", "page_limit_reached"]),
            health(3, &["hsts_missing", "h1_missing", "page_limit_reached"]),
            health(4, &["hsts_missing"]),
            health(5, &["h1_missing"]),
        ];
        let c = group(CauseKind::Server("Apache/2.4.29".into()), vec![SiteId(3), SiteId(1), SiteId(2)], &sites)
            .expect("a group");
        assert_eq!(c.sites, [SiteId(1), SiteId(2), SiteId(3)]);
        let codes: Vec<(&str, u64)> = c.shared.iter().map(|s| (s.code.as_str(), s.sites)).collect();
        // hsts_missing: 3 of 3 here, 1 of 2 elsewhere; tls_old_version 2 of 3, none elsewhere;
        // h1_missing only once in the group; page_limit_reached is informational.
        assert_eq!(codes, [("hsts_missing", 3), ("tls_old_version", 2)]);
        assert!((c.shared[0].elsewhere - 0.5).abs() < 1e-9);
        assert!(group(CauseKind::Cms("WordPress"), vec![SiteId(4), SiteId(5)], &sites).is_none(), "nothing shared");
        assert!(group(CauseKind::Cms("WordPress"), vec![SiteId(1)], &sites).is_none(), "one site is no group");
    }

    #[test]
    fn a_code_as_common_elsewhere_is_not_a_cause() {
        let sites = [
            health(1, &["hsts_missing"]),
            health(2, &["hsts_missing"]),
            health(3, &["hsts_missing"]),
            health(4, &["hsts_missing"]),
        ];
        assert!(group(CauseKind::Server("nginx".into()), vec![SiteId(1), SiteId(2)], &sites).is_none());
        // The whole audit on one server: nothing to compare with, so what most share is shown.
        let all = group(CauseKind::Server("nginx".into()), (1..=4).map(SiteId).collect(), &sites).expect("group");
        assert_eq!(all.shared.len(), 1);
    }
}
