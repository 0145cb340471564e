//! The batch overview, an audit's first page: totals and the distribution of health scores, the
//! issues that affect the most sites, shared causes, the sites to look at first, and every site
//! ranked worst first, with filters by severity, family and site.
//!
//! Small for large batches: it is written from the per-(site, code) aggregates, one row per site
//! (at most [`MAX_SITE_ROWS`]) and one per code, never a row per finding or per page, so its size
//! grows with the number of sites only (about 120 bytes a site past the first 500).

use super::base::render;
use super::data::DataBlock;
use super::links::Links;
use super::site::{band, family_label, family_options, points, sev_letter};
use super::svg::{self, Bar, palette};
use super::view_issues::{
    AcrossRow, AcrossView, CauseView, CausesView, IssueSiteRow, IssueSitesStart, OverviewSummary, RankRow,
    RankingsView, SharedView, SiteRef, SiteRow, SitesData, SitesEnd, SitesStart,
};
use crate::causes::{Cause, CauseKind};
use crate::issues::{CodeAcross, SiteHealth, by_errors, by_score, family, family_bit, median_score, score_bands};
use crate::{ReportError, guidance, rfc3339};
use shoal_shared::finding::Severity;
use shoal_shared::ids::SiteId;
use shoal_store::{AuditSummary, SiteStatus};
use std::collections::HashMap;
use std::io::Write;

/// Sites listed in the overview at most (the lowest scores); the rest are in the overview JSON,
/// `sites.csv`, and the directory's and the dashboard's per-site pages. In the data block a site
/// takes about 120 bytes, so the page of 10,000 sites stays near 1.3 MB.
pub const MAX_SITE_ROWS: usize = 10_000;
/// Sites written as rows of the table; a larger batch hands the script every site as data
/// ([`super::data`]), which it pages, sorts and filters without laying out 10,000 rows.
pub const HTML_SITE_ROWS: usize = 500;
/// Sites in each of the short rankings.
pub const RANKING_ROWS: usize = 20;
/// Sites named under a shared cause at most.
const CAUSE_SITES: usize = 50;

/// The `data-s` letters of the severities a site has.
fn sev_letters(h: &SiteHealth) -> String {
    let c = &h.counts;
    [(c.errors, 'e'), (c.warnings, 'w'), (c.notices, 'n')].iter().filter(|(n, _)| *n > 0).map(|(_, l)| *l).collect()
}

fn score_text(h: &SiteHealth) -> String {
    h.score.map_or_else(|| "–".to_owned(), |s| s.get().to_string())
}

/// The summary, the score chart and the filter bar.
pub(crate) fn summary<W: Write>(
    w: &mut W,
    audit: &AuditSummary,
    sites: &[SiteHealth],
    links: Links,
) -> Result<(), ReportError> {
    let bars: Vec<Bar> = score_bands(sites)
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let (label, color) = match i {
                10 => ("none".to_owned(), palette::GREY),
                9 => ("90–100".to_owned(), palette::GREEN),
                i => (
                    format!("{}–{}", i * 10, i * 10 + 9),
                    if i >= 7 {
                        palette::TEAL
                    } else if i >= 5 {
                        palette::ORANGE
                    } else {
                        palette::RED
                    },
                ),
            };
            Bar::new(label, *n, color)
        })
        .collect();
    let (better, worse) = sites.iter().filter_map(SiteHealth::trend).fold((0, 0), |(b, w), t| match t {
        t if t > 0 => (b + 1, w),
        t if t < 0 => (b, w + 1),
        _ => (b, w),
    });
    let compared = sites.iter().filter(|s| s.trend().is_some()).count();
    let options = serde_json::from_str::<serde_json::Value>(&audit.options_json)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| audit.options_json.clone());
    render(
        w,
        &OverviewSummary {
            audit_id: audit.id.0,
            status: audit.status.as_str(),
            created_at: rfc3339(audit.created_at),
            finished_at: audit.finished_at.map(rfc3339),
            sites: sites.len(),
            scored: sites.iter().filter(|s| s.score.is_some()).count(),
            pages: audit.pages,
            urls: audit.urls,
            median: median_score(sites),
            trend: (compared > 0).then(|| {
                format!("{better} sites better and {worse} worse than in their previous audit ({compared} compared)")
            }),
            errors: sites.iter().map(|s| s.counts.errors).sum(),
            warnings: sites.iter().map(|s| s.counts.warnings).sum(),
            notices: sites.iter().map(|s| s.counts.notices).sum(),
            chart: svg::columns("scores", "Sites by health score", &bars),
            options,
            json: links.overview_json(),
            families: family_options(),
        },
    )
}

/// The issues across sites.
pub(crate) fn across<W: Write>(
    w: &mut W,
    codes: &[CodeAcross],
    total_sites: usize,
    links: Links,
) -> Result<(), ReportError> {
    let rows = codes
        .iter()
        .map(|c| AcrossRow {
            code: c.code.clone(),
            severity: c.severity.as_str(),
            sev_letter: sev_letter(c.severity),
            rank: severity_rank(c.severity),
            family: family_label(c.family),
            family_bit: family_bit(c.family),
            message: c.message(),
            sites: c.sites,
            share: c.sites * 100 / (total_sites.max(1) as u64),
            urls: c.urls,
            link: links.audit_issue(&c.code),
        })
        .collect();
    let linked = !matches!(links, Links::SingleFile { .. });
    render(w, &AcrossView { rows, linked })
}

fn severity_rank(s: Severity) -> u8 {
    match s {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Notice => 2,
    }
}

/// The shared causes.
pub(crate) fn causes<W: Write>(
    w: &mut W,
    causes: &[Cause],
    sites: &[SiteHealth],
    links: Links,
) -> Result<(), ReportError> {
    let by_id: HashMap<SiteId, &SiteHealth> = sites.iter().map(|s| (s.site.id, s)).collect();
    let views = causes
        .iter()
        .map(|c| CauseView {
            kind: c.kind.as_str(),
            title: match c.kind {
                CauseKind::SharedUrl { .. } => "The same failing URL",
                CauseKind::Server(_) => "The same server software",
                CauseKind::Cms(_) => "The same CMS",
            },
            value: c.kind.value().to_owned(),
            shared: c
                .shared
                .iter()
                .map(|s| SharedView {
                    code: s.code.clone(),
                    severity: s.severity.as_str(),
                    sites: s.sites,
                    elsewhere: (!matches!(c.kind, CauseKind::SharedUrl { .. }))
                        .then(|| (s.elsewhere * 100.0).round() as u64),
                })
                .collect(),
            sites: c
                .sites
                .iter()
                .take(CAUSE_SITES)
                .filter_map(|id| by_id.get(id))
                .map(|h| SiteRef { start_url: h.site.start_url.clone(), link: links.site(&h.site) })
                .collect(),
            more: c.sites.len().saturating_sub(CAUSE_SITES),
        })
        .collect();
    render(w, &CausesView { causes: views })
}

fn rank_row(h: &SiteHealth, links: Links) -> RankRow {
    RankRow {
        start_url: h.site.start_url.clone(),
        link: links.site(&h.site),
        score: score_text(h),
        band: band(h.score.map(|s| s.get())),
        errors: h.counts.errors,
        sevs: sev_letters(h),
        families: h.family_bits(),
    }
}

/// The two short rankings and the table of every site, worst first.
pub(crate) fn rankings_and_sites<W: Write>(w: &mut W, sites: &[SiteHealth], links: Links) -> Result<(), ReportError> {
    let worst = by_score(sites);
    render(
        w,
        &RankingsView {
            by_score: worst.iter().take(RANKING_ROWS).map(|h| rank_row(h, links)).collect(),
            by_errors: by_errors(sites)
                .iter()
                .filter(|h| h.counts.errors > 0)
                .take(RANKING_ROWS)
                .map(|h| rank_row(h, links))
                .collect(),
        },
    )?;
    let listed = worst.len().min(MAX_SITE_ROWS);
    let rows = listed.min(HTML_SITE_ROWS);
    let data = listed > rows;
    render(
        w,
        &SitesStart {
            total: sites.len(),
            listed,
            rows,
            linked: !matches!(links, Links::SingleFile { inline: false }),
            data,
        },
    )?;
    for h in worst.iter().take(rows) {
        render(w, &site_row(h, links))?;
    }
    render(w, &SitesEnd)?;
    if data {
        let all: Vec<SiteData<'_>> = worst.iter().take(listed).map(|h| SiteData::of(site_row(h, links))).collect();
        render(w, &SitesData { data: DataBlock::of(&all).map_err(|e| ReportError::Write { source: e.into() })? })?;
    }
    Ok(())
}

fn site_row(h: &SiteHealth, links: Links) -> SiteRow<'_> {
    SiteRow {
        start_url: &h.site.start_url,
        link: links.site(&h.site),
        running: h.site.status == SiteStatus::Running,
        score: score_text(h),
        band: band(h.score.map(|s| s.get())),
        trend: h.trend().map_or_else(String::new, |t| format!("{t:+}")),
        errors: h.counts.errors,
        warnings: h.counts.warnings,
        notices: h.counts.notices,
        pages: h.site.pages,
        top: h.groups.first().map_or("", |g| g.code.as_str()),
        sevs: sev_letters(h),
        families: h.family_bits(),
    }
}

/// One site in the data block, as an array (names would double its size): start URL, link, score
/// text, band class, trend text, errors, warnings, notices, pages, largest issue, severity letters,
/// family bits, unfinished (0 or 1). The order is the script's (`report.js`, `dataTable`).
#[derive(serde::Serialize)]
struct SiteData<'a>(
    &'a str,
    Option<String>,
    String,
    &'static str,
    String,
    u64,
    u64,
    u64,
    u64,
    &'a str,
    String,
    u64,
    u8,
);

impl<'a> SiteData<'a> {
    fn of(r: SiteRow<'a>) -> SiteData<'a> {
        SiteData(
            r.start_url,
            r.link.map(|l| l.to_string()),
            r.score,
            r.band,
            r.trend,
            r.errors,
            r.warnings,
            r.notices,
            r.pages,
            r.top,
            r.sevs,
            r.families,
            u8::from(r.running),
        )
    }
}

/// The page of one code across the sites of an audit: why and how, then every site that has it,
/// the most URLs first. `None` when no site has the code.
pub(crate) fn issue_sites<W: Write>(
    w: &mut W,
    code: &str,
    sites: &[SiteHealth],
    links: Links,
) -> Result<bool, ReportError> {
    let mut with: Vec<(&SiteHealth, &crate::issues::IssueGroup)> =
        sites.iter().filter_map(|s| s.groups.iter().find(|g| g.code == code).map(|g| (s, g))).collect();
    let Some(first) = with.first().map(|(_, g)| *g) else { return Ok(false) };
    with.sort_by(|a, b| b.1.urls.cmp(&a.1.urls).then(a.0.score.cmp(&b.0.score)).then(a.0.site.id.cmp(&b.0.site.id)));
    let fam = family(code);
    render(
        w,
        &IssueSitesStart {
            code,
            severity: with.iter().map(|(_, g)| g.severity).min().unwrap_or(first.severity).as_str(),
            message: first.message(),
            family: family_label(fam),
            why: guidance::why(fam).map(guidance::plain),
            fix: guidance::code_text(code).map(|t| guidance::plain(t.fix)),
            sites: with.len() as u64,
            total_sites: sites.len(),
            urls: with.iter().map(|(_, g)| g.urls).sum(),
        },
    )?;
    for (h, g) in &with {
        render(
            w,
            &IssueSiteRow {
                start_url: &h.site.start_url,
                link: links.site(&h.site),
                urls: g.urls,
                findings: g.findings,
                impact: points(g.impact),
                score: score_text(h),
                score_sort: h.score.map_or(-1, |s| i32::from(s.get())),
                band: band(h.score.map(|s| s.get())),
            },
        )?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::issues::SiteHealth;
    use crate::issues::testing::{count, site};
    use shoal_store::IssueCount;

    fn h(id: u64, answered: u64, errors: u64) -> SiteHealth {
        let counts: Vec<IssueCount> =
            (errors > 0).then(|| count(id, "title_missing", Severity::Error, errors)).into_iter().collect();
        SiteHealth::new(site(id, 10), &counts, answered, None)
    }

    #[test]
    fn the_median_counts_scored_sites_only() {
        assert_eq!(median_score(&[]), None);
        assert_eq!(median_score(&[h(1, 0, 0)]), None);
        let sites = [h(1, 1, 0), h(2, 1, 10), h(3, 0, 0), h(4, 1, 2)];
        let scores: Vec<Option<u8>> = sites.iter().map(|s| s.score.map(|s| s.get())).collect();
        assert_eq!(scores, [Some(100), Some(50), None, Some(80)]);
        assert_eq!(median_score(&sites), Some(80));
        assert_eq!(score_bands(&sites), [0, 0, 0, 0, 0, 1, 0, 0, 1, 1, 1]);
        assert_eq!(sev_letters(&sites[1]), "e");
        assert_eq!(sev_letters(&sites[0]), "");
    }
}
