//! Issues, not rows: a site's findings grouped by code and ranked by impact, with its health score
//! and its trend; and the same for every site of an audit at once, for the batch overview.
//!
//! Built from the audit database's aggregates ([`shoal_store::issues`]): one row per (site, code),
//! never a pass over the findings, so the overview of 10,000 sites stays cheap. The formula is in
//! [`crate::score`]; the texts in [`crate::guidance`].

use crate::guidance;
use crate::score::{self, Scope, Score, Weighed};
use shoal_shared::finding::{Code, Severity};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_store::compare::pair_sites;
use shoal_store::cursor::Previous;
use shoal_store::{AuditDb, DbError, IssueCount, SeverityCounts, SiteSummary};
use std::collections::{BTreeMap, HashMap};

/// The family of a code this version does not know.
pub const OTHER_FAMILY: &str = "other";

/// All findings of one code on one site.
#[derive(Debug, Clone, PartialEq)]
pub struct IssueGroup {
    /// The code as stored.
    pub code: String,
    /// The worst stored severity of its findings.
    pub severity: Severity,
    /// Its family (`links`, `https`, …; [`OTHER_FAMILY`] for an unknown code).
    pub family: &'static str,
    /// How far one finding reaches ([`Scope`]).
    pub scope: Scope,
    /// Distinct URLs.
    pub urls: u64,
    /// Findings.
    pub findings: u64,
    /// The points this issue alone takes off the site's score (`100 × penalty`).
    pub impact: f64,
}

impl IssueGroup {
    fn of(count: &IssueCount, pages: u64) -> IssueGroup {
        let w = Weighed { code: &count.code, severity: count.severity, urls: count.urls };
        IssueGroup {
            code: count.code.clone(),
            severity: count.severity,
            family: family(&count.code),
            scope: score::scope(&count.code),
            urls: count.urls,
            findings: count.findings,
            impact: 100.0 * score::penalty(w, pages),
        }
    }

    fn weighed(&self) -> Weighed<'_> {
        Weighed { code: &self.code, severity: self.severity, urls: self.urls }
    }

    /// What the code means (one sentence), if this version knows it.
    #[must_use]
    pub fn message(&self) -> Option<&'static str> {
        Code::parse(&self.code).map(|c| c.message()).or_else(|| guidance::code_text(&self.code).map(|t| t.what))
    }

    /// How to fix it, from `docs/findings.md`.
    #[must_use]
    pub fn fix(&self) -> Option<String> {
        guidance::code_text(&self.code).map(|t| guidance::plain(t.fix))
    }

    /// Why it matters (its family's paragraph in `docs/findings.md`).
    #[must_use]
    pub fn why(&self) -> Option<String> {
        guidance::why(self.family).map(guidance::plain)
    }
}

/// The family of a stored code.
#[must_use]
pub fn family(code: &str) -> &'static str {
    Code::parse(code)
        .map(|c| c.family())
        .or_else(|| guidance::code_text(code).map(|t| t.family))
        .unwrap_or(OTHER_FAMILY)
}

/// A site's score in an earlier audit, for its trend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earlier {
    /// Which audit and site.
    pub previous: Previous,
    /// Its score there (`None` if it had none).
    pub score: Option<Score>,
}

/// One site's issues, score and trend.
#[derive(Debug, Clone)]
pub struct SiteHealth {
    /// The site.
    pub site: SiteSummary,
    /// Its issue groups, largest impact first.
    pub groups: Vec<IssueGroup>,
    /// Findings by severity.
    pub counts: SeverityCounts,
    /// Pages (kind `page`) that answered 2xx.
    pub answered: u64,
    /// The health score, `None` when nothing answered.
    pub score: Option<Score>,
    /// The same start URL in the audit compared with, if any.
    pub earlier: Option<Earlier>,
}

impl SiteHealth {
    /// Builds a site's health from its issue counts (in any order).
    #[must_use]
    pub fn new(site: SiteSummary, counts: &[IssueCount], answered: u64, earlier: Option<Earlier>) -> SiteHealth {
        let mut groups: Vec<IssueGroup> = counts.iter().map(|c| IssueGroup::of(c, site.pages)).collect();
        groups.sort_by(|a, b| score::by_impact((a.impact, a.weighed()), (b.impact, b.weighed())));
        let weighed: Vec<Weighed<'_>> = groups.iter().map(IssueGroup::weighed).collect();
        let score = score::score(&weighed, site.pages, answered);
        let mut sev = SeverityCounts::default();
        for c in counts {
            match c.severity {
                Severity::Error => sev.errors += c.findings,
                Severity::Warning => sev.warnings += c.findings,
                Severity::Notice => sev.notices += c.findings,
            }
        }
        SiteHealth { site, groups, counts: sev, answered, score, earlier }
    }

    /// The change of the score since the earlier audit, when both have one.
    #[must_use]
    pub fn trend(&self) -> Option<i16> {
        let now = self.score?;
        let then = self.earlier.as_ref()?.score?;
        Some(i16::from(now.get()) - i16::from(then.get()))
    }

    /// The worst severity among its findings, if any.
    #[must_use]
    pub fn worst(&self) -> Option<Severity> {
        self.groups.iter().map(|g| g.severity).min()
    }

    /// The families its issues belong to, as a bit set over [`families`] (for the overview's
    /// family filter).
    #[must_use]
    pub fn family_bits(&self) -> u64 {
        self.groups.iter().fold(0, |bits, g| bits | family_bit(g.family))
    }
}

/// Every family, in documentation order, then [`OTHER_FAMILY`].
#[must_use]
pub fn families() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for c in Code::ALL {
        if !out.contains(&c.family()) {
            out.push(c.family());
        }
    }
    out.push(OTHER_FAMILY);
    out
}

/// A family's bit in [`SiteHealth::family_bits`] (families past the 63rd share the last bit).
#[must_use]
pub fn family_bit(family: &str) -> u64 {
    let all = families();
    let i = all.iter().position(|f| *f == family).unwrap_or(all.len() - 1);
    1 << i.min(63)
}

/// What each site of an audit is compared with: for a run of a schedule, the site of the same
/// start URL in the schedule's previous run; otherwise the latest earlier audit of the start URL
/// (the rules of the reports' "changes" sections, `docs/report-compare.md`).
///
/// # Errors
/// A read failure.
pub fn baselines(db: &AuditDb, audit: AuditId) -> Result<HashMap<SiteId, Previous>, DbError> {
    match db.scheduled_run(audit)? {
        Some(run) => match run.previous {
            Some(previous) => Ok(pair_sites(db, previous, audit)?
                .both
                .into_iter()
                .map(|(o, n)| (n.id, Previous { audit: previous, site: o.id, status: o.status }))
                .collect()),
            None => Ok(HashMap::new()),
        },
        None => db.previous_sites(audit),
    }
}

/// One site's health, with its score in `earlier` (if given) for the trend.
///
/// # Errors
/// A read failure.
pub fn site_health(db: &AuditDb, site: SiteSummary, earlier: Option<&Previous>) -> Result<SiteHealth, DbError> {
    let counts = db.site_issue_counts(site.id)?;
    let answered = db.site_answered_pages(site.id)?;
    let earlier = match earlier {
        Some(p) => Some(Earlier { previous: p.clone(), score: score_of(db, p.site)? }),
        None => None,
    };
    Ok(SiteHealth::new(site, &counts, answered, earlier))
}

/// The score of one site, alone.
fn score_of(db: &AuditDb, site: SiteId) -> Result<Option<Score>, DbError> {
    let Some(summary) = db.site(site)? else { return Ok(None) };
    Ok(SiteHealth::new(summary, &db.site_issue_counts(site)?, db.site_answered_pages(site)?, None).score)
}

/// Every site of an audit with its health, in site order, and trends against [`baselines`].
/// Reads aggregates only: one row per (site, code) of this audit and of each audit compared with.
///
/// # Errors
/// A read failure.
pub fn audit_health(db: &AuditDb, audit: AuditId) -> Result<Vec<SiteHealth>, DbError> {
    let base = baselines(db, audit)?;
    let mut earlier_scores: HashMap<SiteId, Option<Score>> = HashMap::new();
    let mut by_audit: BTreeMap<AuditId, Vec<SiteId>> = BTreeMap::new();
    for p in base.values() {
        by_audit.entry(p.audit).or_default().push(p.site);
    }
    for (old, _) in by_audit {
        for h in health_of(db, old, |_| None)? {
            earlier_scores.insert(h.site.id, h.score);
        }
    }
    health_of(db, audit, |site| {
        base.get(&site).map(|p| Earlier { previous: p.clone(), score: earlier_scores.get(&p.site).copied().flatten() })
    })
}

/// Every site of `audit` with its health; `earlier` gives each site's comparison.
fn health_of(
    db: &AuditDb,
    audit: AuditId,
    earlier: impl Fn(SiteId) -> Option<Earlier>,
) -> Result<Vec<SiteHealth>, DbError> {
    let mut counts: HashMap<SiteId, Vec<IssueCount>> = HashMap::new();
    for c in db.issue_counts(audit)? {
        counts.entry(c.site).or_default().push(c);
    }
    let answered = db.answered_pages(audit)?;
    Ok(db
        .site_counts(audit)?
        .into_iter()
        .map(|s| {
            let id = s.id;
            SiteHealth::new(
                s,
                counts.get(&id).map_or(&[][..], Vec::as_slice),
                answered.get(&id).copied().unwrap_or(0),
                earlier(id),
            )
        })
        .collect())
}

/// One code across the sites of an audit: how many sites it affects, and how many URLs there.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeAcross {
    /// The code as stored.
    pub code: String,
    /// The worst severity among its sites.
    pub severity: Severity,
    /// Its family.
    pub family: &'static str,
    /// Sites with at least one finding of it.
    pub sites: u64,
    /// Distinct URLs over those sites.
    pub urls: u64,
    /// The sum of its impact over those sites (for ordering ties).
    pub impact: f64,
}

impl CodeAcross {
    /// What the code means, if known.
    #[must_use]
    pub fn message(&self) -> Option<&'static str> {
        Code::parse(&self.code).map(|c| c.message()).or_else(|| guidance::code_text(&self.code).map(|t| t.what))
    }
}

/// The codes of an audit by the number of sites they affect (most first; then worse severity,
/// larger total impact, code).
#[must_use]
pub fn across_sites(sites: &[SiteHealth]) -> Vec<CodeAcross> {
    let mut by_code: BTreeMap<&str, CodeAcross> = BTreeMap::new();
    for s in sites {
        for g in &s.groups {
            let e = by_code.entry(&g.code).or_insert_with(|| CodeAcross {
                code: g.code.clone(),
                severity: g.severity,
                family: g.family,
                sites: 0,
                urls: 0,
                impact: 0.0,
            });
            e.severity = e.severity.min(g.severity);
            e.sites += 1;
            e.urls += g.urls;
            e.impact += g.impact;
        }
    }
    let mut out: Vec<CodeAcross> = by_code.into_values().collect();
    out.sort_by(|a, b| {
        b.sites
            .cmp(&a.sites)
            .then(a.severity.cmp(&b.severity))
            .then(b.impact.total_cmp(&a.impact))
            .then(a.code.cmp(&b.code))
    });
    out
}

/// Sites by score band: ten bands of ten points (the last one is 90–100), then the sites
/// without a score.
#[must_use]
pub fn score_bands(sites: &[SiteHealth]) -> [u64; 11] {
    let mut out = [0; 11];
    for s in sites {
        match s.score {
            Some(score) => out[usize::from(score.get().min(99) / 10)] += 1,
            None => out[10] += 1,
        }
    }
    out
}

/// The median score of the scored sites (the lower middle one for an even number).
#[must_use]
pub fn median_score(sites: &[SiteHealth]) -> Option<u8> {
    let mut scores: Vec<u8> = sites.iter().filter_map(|s| s.score.map(|s| s.get())).collect();
    scores.sort_unstable();
    scores.get(scores.len().checked_sub(1)? / 2).copied()
}

/// Sites ordered worst first: no score before any score (nothing could be audited), then lowest
/// score, more errors, site id.
#[must_use]
pub fn by_score(sites: &[SiteHealth]) -> Vec<&SiteHealth> {
    let mut out: Vec<&SiteHealth> = sites.iter().collect();
    out.sort_by(|a, b| {
        a.score.cmp(&b.score).then(b.counts.errors.cmp(&a.counts.errors)).then(a.site.id.cmp(&b.site.id))
    });
    out
}

/// Sites ordered by errors (most first), then by score (lowest first), then id.
#[must_use]
pub fn by_errors(sites: &[SiteHealth]) -> Vec<&SiteHealth> {
    let mut out: Vec<&SiteHealth> = sites.iter().collect();
    out.sort_by(|a, b| {
        b.counts.errors.cmp(&a.counts.errors).then(a.score.cmp(&b.score)).then(a.site.id.cmp(&b.site.id))
    });
    out
}

/// Sites and counts for the unit tests of the report crate.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use shoal_store::SiteStatus;

    /// A finished site `https://s{id}.test/` of audit 1 with `pages` pages.
    pub(crate) fn site(id: u64, pages: u64) -> SiteSummary {
        SiteSummary {
            id: SiteId(id),
            audit: AuditId(1),
            start_url: format!("https://s{id}.test/"),
            status: SiteStatus::Done,
            pages,
            urls: pages,
            findings: 0,
            done_at: None,
        }
    }

    /// `urls` findings of `code` on site `site`, one per URL.
    pub(crate) fn count(site: u64, code: &str, severity: Severity, urls: u64) -> IssueCount {
        IssueCount { site: SiteId(site), code: code.to_owned(), severity, urls, findings: urls }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_store::SiteStatus;

    use super::testing::{count, site};

    #[test]
    fn groups_are_ranked_by_impact_and_counted_by_severity() {
        let h = SiteHealth::new(
            site(1, 100),
            &[
                count(1, "title_too_long", Severity::Notice, 100),
                count(1, "broken_internal_link", Severity::Error, 3),
                count(1, "tls_certificate_expired", Severity::Error, 1),
                count(1, "page_limit_reached", Severity::Notice, 1),
            ],
            90,
            None,
        );
        let order: Vec<&str> = h.groups.iter().map(|g| g.code.as_str()).collect();
        assert_eq!(order, ["tls_certificate_expired", "broken_internal_link", "title_too_long", "page_limit_reached"]);
        assert_eq!((h.counts.errors, h.counts.warnings, h.counts.notices), (4, 0, 101));
        assert_eq!(h.groups[0].scope, Scope::Site);
        assert_eq!(h.groups[3].impact, 0.0, "informational");
        assert!((h.groups[0].impact - 50.0).abs() < 1e-9);
        assert_eq!(h.worst(), Some(Severity::Error));
        assert_eq!(
            h.family_bits(),
            family_bit("https") | family_bit("links") | family_bit("content") | family_bit("limits")
        );
        let fix = h.groups[1].fix().expect("documented");
        assert!(fix.starts_with("Fix or remove the link"), "{fix}");
        assert!(h.groups[1].why().expect("why").contains("dead ends"));
    }

    #[test]
    fn the_trend_needs_both_scores() {
        let earlier = |score| Earlier {
            previous: Previous { audit: AuditId(1), site: SiteId(9), status: SiteStatus::Done },
            score,
        };
        let h = SiteHealth::new(site(1, 10), &[], 10, Some(earlier(Score::new(70))));
        assert_eq!(h.trend(), Some(30));
        let h = SiteHealth::new(site(1, 10), &[], 10, Some(earlier(None)));
        assert_eq!(h.trend(), None);
        let h = SiteHealth::new(site(1, 10), &[], 0, Some(earlier(Score::new(70))));
        assert_eq!((h.score, h.trend()), (None, None), "not scored now");
    }

    #[test]
    fn codes_across_sites_count_sites_and_rank_by_reach() {
        let sites = [
            SiteHealth::new(
                site(1, 10),
                &[count(1, "hsts_missing", Severity::Warning, 1), count(1, "title_missing", Severity::Error, 4)],
                10,
                None,
            ),
            SiteHealth::new(site(2, 10), &[count(2, "hsts_missing", Severity::Warning, 1)], 10, None),
            SiteHealth::new(
                site(3, 10),
                &[count(3, "hsts_missing", Severity::Warning, 1), count(3, "title_missing", Severity::Error, 1)],
                10,
                None,
            ),
            SiteHealth::new(site(4, 10), &[count(4, "no_such_code", Severity::Error, 2)], 0, None),
        ];
        let across = across_sites(&sites);
        let rows: Vec<(&str, u64, u64)> = across.iter().map(|c| (c.code.as_str(), c.sites, c.urls)).collect();
        assert_eq!(rows, [("hsts_missing", 3, 3), ("title_missing", 2, 5), ("no_such_code", 1, 2)]);
        assert_eq!(across[2].family, OTHER_FAMILY);
        let worst: Vec<u64> = by_score(&sites).iter().map(|s| s.site.id.0).collect();
        assert_eq!(worst, [4, 1, 3, 2], "not scored first, then lowest score");
        let errors: Vec<u64> = by_errors(&sites).iter().map(|s| s.site.id.0).collect();
        assert_eq!(errors, [1, 4, 3, 2]);
    }
}
