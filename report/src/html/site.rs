//! One site's part of the HTML report: its health, its issues grouped and ranked, and (in a site's
//! own report) the changes since the audit it is compared with, its charts, every fetched URL and
//! each URL's details.
//!
//! Rows stream from the database: an issue group's URLs along the findings' index, pages in URL
//! order with their findings from a second cursor. A site's report therefore grows with the site
//! (about 2 KB per fetched URL, plus a row per finding), and memory does not.

use super::base::{
    anchor, finding_row, findings_table, href, human_bytes, related_views, render, status_text, url_view,
};
use super::links::{Links, Local};
use super::svg::{self, Bar, palette};
use super::view::{
    ChangesStart, Chart, DetailsStart, FindingsStart, LinkCounts, PageRowView, PagesStart, PrevView, SectionEnd,
    TableEnd, UrlDetail, UrlFinding,
};
use super::view_issues::{
    ChartsView, FamilyOption, IssueEnd, IssueRow, IssueStart, IssuesEnd, IssuesStart, SiteEnd, SiteHealthView,
    TrendView,
};
use crate::ReportError;
use crate::compare::{self, Change};
use crate::issues::{IssueGroup, SiteHealth, families, family_bit};
use crate::rfc3339;
use crate::score::{FORMULA, Scope};
use shoal_shared::finding::Severity;
use shoal_shared::ids::SiteId;
use shoal_shared::record::LinkKind;
use shoal_store::compare::ChangeCounts;
use shoal_store::cursor::{DEPTH_BARS, Previous, RESPONSE_BUCKETS_MS, Reader};
use shoal_store::{AuditDb, AuditSummary, DbError, FindingRow, LinkRow, PageRow, SiteStats};
use std::io::Write;

/// How much of a site to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Depth {
    /// A site's own report: everything, every URL of every issue group.
    Full,
    /// A section of an overview: health and issues, at most this many URLs per group.
    Compact {
        /// URLs listed per issue group at most.
        urls_per_issue: u64,
    },
}

/// The CSS class of a score's band.
pub(crate) fn band(score: Option<u8>) -> &'static str {
    match score {
        None => "band-none",
        Some(s) if s >= 90 => "band-good",
        Some(s) if s >= 70 => "band-fair",
        Some(s) if s >= 50 => "band-poor",
        Some(_) => "band-bad",
    }
}

/// The one-letter spelling of a severity in `data-s` filter attributes.
pub(crate) fn sev_letter(s: Severity) -> &'static str {
    match s {
        Severity::Error => "e",
        Severity::Warning => "w",
        Severity::Notice => "n",
    }
}

/// A family's name for people: `security_headers` → `Security headers`, `https` → `HTTPS`.
pub(crate) fn family_label(family: &str) -> String {
    match family {
        "https" => return "HTTPS".to_owned(),
        "llms_txt" => return "llms.txt".to_owned(),
        "security_txt" => return "security.txt".to_owned(),
        "soft_404" => return "Soft 404".to_owned(),
        "wordpress" => return "WordPress".to_owned(),
        _ => {}
    }
    let mut s = family.replace('_', " ");
    if let Some(first) = s.get(..1) {
        let upper = first.to_ascii_uppercase();
        s.replace_range(..1, &upper);
    }
    s
}

/// Every family as a filter option.
pub(crate) fn family_options() -> Vec<FamilyOption> {
    families().into_iter().map(|f| FamilyOption { bit: family_bit(f), label: family_label(f) }).collect()
}

/// An impact for people: one decimal.
pub(crate) fn points(impact: f64) -> String {
    format!("{impact:.1}")
}

/// The trend of a site's health, shown beside its score.
pub(crate) fn trend_view(h: &SiteHealth) -> Option<TrendView> {
    let delta = h.trend()?;
    let earlier = h.earlier.as_ref()?;
    let then = earlier.score?.get();
    let (arrow, class) = match delta {
        d if d > 0 => ("\u{25b2}", "up"),
        d if d < 0 => ("\u{25bc}", "down"),
        _ => ("=", "same"),
    };
    Some(TrendView { audit: earlier.previous.audit.0, then, arrow, class, text: format!("{delta:+}") })
}

/// Writes a site: its health, its issues, and in [`Depth::Full`] its changes, charts, pages and
/// URL details. `own_page` links the heading to the site's own report (from an overview).
pub(crate) fn write_site<W: Write>(
    w: &mut W,
    db: &AuditDb,
    reader: &Reader,
    health: &SiteHealth,
    depth: Depth,
    links: Links,
    audit: &AuditSummary,
) -> Result<(), ReportError> {
    let site = &health.site;
    let full = depth == Depth::Full;
    let stats = if full { Some(db.site_stats(site.id)?) } else { None };
    render(
        w,
        &SiteHealthView {
            id: site.id.0,
            start_url: &site.start_url,
            start_href: href(&site.start_url),
            own_page: if full { None } else { links.site(site).filter(|l| !l.as_str().starts_with('#')) },
            status: site.status.as_str(),
            done_at: site.done_at.map(rfc3339),
            pages: site.pages,
            urls: site.urls,
            answered: health.answered,
            score: health.score.map(|s| s.get()),
            band: band(health.score.map(|s| s.get())),
            trend: trend_view(health),
            has_earlier: health.earlier.is_some(),
            errors: health.counts.errors,
            warnings: health.counts.warnings,
            notices: health.counts.notices,
            issues: health.groups.len(),
            full,
            json: links.site_json(site),
            formula: FORMULA,
            audit_line: format!(
                "Audit {} ({}), started {}{}.",
                audit.id,
                audit.status.as_str(),
                rfc3339(audit.created_at),
                audit.finished_at.map(|f| format!(", finished {}", rfc3339(f))).unwrap_or_default()
            ),
        },
    )?;
    write_issues(w, db, reader, health, depth, links)?;
    if full {
        super::domain::write_domain_section(w, db, reader, site)?;
        super::ai_crawlers::write_ai_section(w, db, site)?;
        super::browser::write_browser_section(w, db, site)?;
        super::render::write_render_section(w, db, site)?;
        super::content::write_content_section(w, db, site)?;
    }
    if let Some(stats) = stats {
        let previous = health.earlier.as_ref().map(|e| &e.previous);
        let scheduled = db.scheduled_run(site.audit)?.is_some();
        changes_since_previous(w, db, reader, site.id, previous, scheduled)?;
        render(w, &ChartsView { id: site.id.0, charts: charts(reader, site.id, &stats)? })?;
        super::extracted::write_extracted_section(w, db, audit, site)?;
        write_pages(w, db, reader, site.id, &stats)?;
    }
    render(w, &SiteEnd)
}

/// The issue groups of a site, largest impact first, each with its URLs.
fn write_issues<W: Write>(
    w: &mut W,
    db: &AuditDb,
    reader: &Reader,
    health: &SiteHealth,
    depth: Depth,
    links: Links,
) -> Result<(), ReportError> {
    let site = health.site.id;
    render(w, &IssuesStart { site: site.0, count: health.groups.len(), families: family_options() })?;
    for (i, g) in health.groups.iter().enumerate() {
        let limit = match depth {
            Depth::Full => g.findings,
            Depth::Compact { urls_per_issue } => urls_per_issue.min(g.findings),
        };
        issue_start(w, site, g, i == 0, limit > 100)?;
        issue_rows(w, db, reader, site, &g.code, 0, limit)?;
        let (more, more_text) = match more_link(links, health) {
            Some(l) if limit < g.findings => (Some(l), "all of them in the site's report".to_owned()),
            _ => (None, "all of them: shoal report --site with this start URL".to_owned()),
        };
        render(w, &IssueEnd { shown: limit, total: g.findings, more, more_text, prev: None, next: None })?;
    }
    render(w, &IssuesEnd)
}

/// The opening of one issue group (its summary, why and how, the URL table's head).
pub(crate) fn issue_start<W: Write>(
    w: &mut W,
    site: SiteId,
    g: &IssueGroup,
    open: bool,
    paged: bool,
) -> Result<(), ReportError> {
    render(
        w,
        &IssueStart {
            anchor: format!(
                "issue-{}-{}",
                site.0,
                g.code.chars().filter(char::is_ascii_alphanumeric).collect::<String>()
            ),
            code: &g.code,
            severity: g.severity.as_str(),
            sev_letter: sev_letter(g.severity),
            family_bit: family_bit(g.family),
            family_label: family_label(g.family),
            message: g.message(),
            why: g.why(),
            fix: g.fix(),
            urls: g.urls,
            scope: g.scope.as_str(),
            impact: points(g.impact),
            open,
            paged: paged && g.scope != Scope::Site,
        },
    )
}

/// The rows of one issue group: `limit` findings from the `offset`-th, in URL order. A URL that
/// was fetched links to its details section (which is on the site's own report).
pub(crate) fn issue_rows<W: Write>(
    w: &mut W,
    db: &AuditDb,
    reader: &Reader,
    site: SiteId,
    code: &str,
    offset: u64,
    limit: u64,
) -> Result<(), ReportError> {
    db.for_each_issue_finding(site, code, offset, limit, |f| -> Result<(), ReportError> {
        let a = if reader.has_page(site, &f.url)? { Some(anchor(site, &f.url)) } else { None };
        render(
            w,
            &IssueRow {
                url: &f.url,
                href: href(&f.url),
                anchor: a,
                detail: &f.detail,
                related: related_views(&f.related),
            },
        )
    })
}

fn write_pages<W: Write>(
    w: &mut W,
    db: &AuditDb,
    reader: &Reader,
    site: SiteId,
    stats: &SiteStats,
) -> Result<(), ReportError> {
    render(w, &PagesStart { site: site.0, count: stats.urls })?;
    db.for_each_page(site, |p| -> Result<(), ReportError> {
        let a = anchor(site, &p.url);
        let status = status_text(&p);
        let bytes_text = human_bytes(p.bytes);
        render(
            w,
            &PageRowView {
                anchor: &a,
                url: &p.url,
                status: &status,
                status_sort: p.status.map_or(0, i64::from),
                depth: p.depth,
                found_via: p.found_via.as_str(),
                title: p.title.as_deref(),
                response_ms: p.response_ms,
                bytes: p.bytes,
                bytes_text: &bytes_text,
            },
        )
    })?;
    render(w, &TableEnd { open_table: true, collapsed: false })?;
    render(w, &SectionEnd)?;

    render(w, &DetailsStart { site: site.0 })?;
    let mut stmt = reader.by_url()?;
    let mut findings = reader.cursor(&mut stmt, site)?;
    db.for_each_page(site, |p| -> Result<(), ReportError> {
        let on_url = findings.take_url(&p.url)?;
        let links = db.links_from(site, &p.url)?;
        let final_url = if p.is_redirect() { db.final_url(site, &p.url)? } else { None };
        url_detail(w, site, &p, &links, final_url.as_deref(), &on_url)
    })?;
    render(w, &SectionEnd)
}

fn charts(reader: &Reader, site: SiteId, stats: &SiteStats) -> Result<Vec<Chart>, DbError> {
    let data = reader.charts(site)?;
    let c = &stats.status_classes;
    let status = [
        Bar::new("2xx", c.s2xx, palette::GREEN),
        Bar::new("3xx", c.s3xx, palette::BLUE),
        Bar::new("4xx", c.s4xx, palette::ORANGE),
        Bar::new("5xx", c.s5xx, palette::RED),
        Bar::new("other", c.other, palette::GREY),
        Bar::new("failed", c.failed, palette::DARK),
    ];
    let deepest = data.depth.iter().rposition(|n| *n > 0).unwrap_or(0);
    let depth: Vec<Bar> = data.depth[..=deepest]
        .iter()
        .enumerate()
        .map(|(d, n)| {
            let label = if d == usize::from(DEPTH_BARS) { format!("{d}+") } else { d.to_string() };
            Bar::new(label, *n, palette::BLUE)
        })
        .collect();
    let families: Vec<Bar> = data.families.iter().map(|(f, n)| Bar::new(*f, *n, palette::TEAL)).collect();
    let s = &stats.severities;
    let severity = [
        Bar::new("errors", s.errors, palette::RED),
        Bar::new("warnings", s.warnings, palette::ORANGE),
        Bar::new("notices", s.notices, palette::BLUE),
    ];
    let mut response = Vec::with_capacity(data.response.len());
    let mut lower = 0;
    for (i, n) in data.response.iter().enumerate() {
        let label = match RESPONSE_BUCKETS_MS.get(i) {
            Some(upper) => format!("{}–{}", ms_label(lower), ms_label(*upper)),
            None => format!("≥{}", ms_label(lower)),
        };
        lower = RESPONSE_BUCKETS_MS.get(i).copied().unwrap_or(lower);
        response.push(Bar::new(label, *n, palette::TEAL));
    }
    Ok(vec![
        Chart { caption: "Status codes (every fetched URL)", svg: svg::columns("status", "Status codes", &status) },
        Chart { caption: "Pages by link depth", svg: svg::columns("depth", "Pages by link depth", &depth) },
        Chart { caption: "Findings by family", svg: svg::rows("families", "Findings by family", &families) },
        Chart { caption: "Findings by severity", svg: svg::columns("severity", "Findings by severity", &severity) },
        Chart {
            caption: "Page response times (ms)",
            svg: svg::columns("response", "Page response times in milliseconds", &response),
        },
    ])
}

fn ms_label(ms: u64) -> String {
    if ms >= 1000 && ms.is_multiple_of(1000) { format!("{}s", ms / 1000) } else { ms.to_string() }
}

fn url_detail<W: Write>(
    w: &mut W,
    site: SiteId,
    p: &PageRow,
    links: &[LinkRow],
    final_url: Option<&str>,
    findings: &[FindingRow],
) -> Result<(), ReportError> {
    let a = anchor(site, &p.url);
    let status = status_text(p);
    let bytes_text = human_bytes(p.bytes);
    let fetched_at = rfc3339(p.fetched_at);
    let counts = count_links(links);
    render(
        w,
        &UrlDetail {
            anchor: &a,
            url: &p.url,
            href: href(&p.url),
            kind: p.kind.as_str(),
            status: &status,
            found_via: p.found_via.as_str(),
            found_from: p.found_from.as_deref().map(url_view),
            depth: p.depth,
            redirect_to: p.redirect_to.as_deref().map(url_view),
            final_url: final_url.map(url_view),
            redirect_loops: p.is_redirect() && final_url.is_none(),
            content_type: p.content_type.as_deref(),
            response_ms: p.response_ms,
            bytes_text: &bytes_text,
            fetched_at: &fetched_at,
            title: p.title.as_deref(),
            meta_description: p.meta_description.as_deref(),
            h1: &p.h1,
            canonical: p.canonical.as_deref().map(url_view),
            canonical_is_self: p.canonical.as_deref() == Some(p.url.as_str()),
            meta_robots: p.meta_robots.join(", "),
            x_robots_tag: p.x_robots_tag.join(", "),
            links: counts,
            findings: findings
                .iter()
                .map(|f| UrlFinding {
                    severity: f.severity.as_str(),
                    code: f.code.clone(),
                    message: f.known_code().map_or("", |c| c.message()),
                    detail: f.detail.clone(),
                })
                .collect(),
            extracted: &p.extracted,
        },
    )
}

/// Counts a page's links for its details. The canonical link is shown on its own, not counted;
/// sitemap entries (the links of a sitemap's record) are counted apart from resources.
pub(crate) fn count_links(links: &[LinkRow]) -> LinkCounts {
    let mut counts = LinkCounts::default();
    for l in links {
        let slot = match (l.kind, l.internal) {
            (LinkKind::Canonical, _) => continue,
            (LinkKind::SitemapEntry, _) => &mut counts.sitemap_entries,
            (k, true) if k.is_navigation() => &mut counts.internal,
            (k, false) if k.is_navigation() => &mut counts.external,
            _ => &mut counts.resources,
        };
        *slot += 1;
        counts.total += 1;
        counts.nofollow += u64::from(l.nofollow);
    }
    counts
}

/// The "Changes since the previous audit" section of a site, against `previous` (the schedule's
/// previous run when `scheduled`, else the latest earlier audit of its start URL: the rule of
/// [`crate::issues::baselines`]).
fn changes_since_previous<W: Write>(
    w: &mut W,
    db: &AuditDb,
    reader: &Reader,
    site: SiteId,
    previous: Option<&Previous>,
    scheduled: bool,
) -> Result<(), ReportError> {
    let (heading, none_text) = if scheduled {
        (
            "Changes since the schedule's previous run",
            "This start URL was not in the schedule's previous run (or this is its first run): every finding is new.",
        )
    } else {
        (
            "Changes since the previous audit",
            "No earlier audit of this start URL is in the database: every finding is new.",
        )
    };
    let Some(prev) = previous else {
        return render(w, &ChangesStart { anchor: site.0, heading, previous: None, none_text })
            .and_then(|()| render(w, &SectionEnd));
    };
    let created = db.audit(prev.audit)?.map(|a| rfc3339(a.created_at)).unwrap_or_default();
    let counts = compare::count_with(reader, prev.site, site)?;
    let view = PrevView {
        audit: prev.audit.0,
        site: prev.site.0,
        status: prev.status.as_str(),
        created_at: created,
        new: counts.new,
        fixed: counts.fixed,
        remaining: counts.remaining,
    };
    render(w, &ChangesStart { anchor: site.0, heading, previous: Some(view), none_text: "" })?;
    change_lists(w, reader, prev.site, site, counts, Some(site))?;
    render(w, &SectionEnd)
}

/// The new, fixed and remaining tables of a site pair (remaining collapsed: it is usually the
/// longest and the least news).
pub(crate) fn change_lists<W: Write>(
    w: &mut W,
    reader: &Reader,
    old: SiteId,
    new: SiteId,
    counts: ChangeCounts,
    details_of: Option<SiteId>,
) -> Result<(), ReportError> {
    for (wanted, count, title) in [
        (Change::New, counts.new, "New findings"),
        (Change::Fixed, counts.fixed, "Fixed findings"),
        (Change::Remaining, counts.remaining, "Remaining findings"),
    ] {
        let start = FindingsStart {
            heading: Some(format!("{title} ({count})")),
            table_id: format!("chg-{}-{}", new, wanted.as_str()),
            count,
            collapsed: wanted == Change::Remaining,
        };
        findings_table(w, start, |w| {
            compare::changes_with(reader, old, new, |change, f| -> Result<(), ReportError> {
                if change == wanted { finding_row(w, reader, &f, details_of) } else { Ok(()) }
            })
        })?;
    }
    super::url_changes::write_url_changes(w, reader, old, new)
}

/// The "more" link of an issue group on a page that lists only part of it.
pub(crate) fn more_link(links: Links, health: &SiteHealth) -> Option<Local> {
    links.site(&health.site).filter(|l| !l.as_str().starts_with('#'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_store::LinkRow;

    #[test]
    fn link_counts_follow_the_link_kinds() {
        let all = [
            LinkKind::Anchor,
            LinkKind::Image,
            LinkKind::Script,
            LinkKind::Stylesheet,
            LinkKind::Icon,
            LinkKind::Iframe,
            LinkKind::Media,
            LinkKind::OtherLink,
            LinkKind::SitemapEntry,
            LinkKind::Canonical,
            LinkKind::PageLink,
            LinkKind::Preload,
        ];
        let row = |kind: LinkKind, internal: bool, nofollow: bool| LinkRow {
            from_url: "https://a.test/".to_owned(),
            to_url: "https://a.test/x".to_owned(),
            kind,
            nofollow,
            internal,
            text: None,
            rendered: false,
        };
        for k in all {
            let internal = count_links(&[row(k, true, false)]).internal;
            assert_eq!(internal == 1, k.is_navigation(), "{k:?}");
        }
        let c = count_links(&[
            row(LinkKind::Anchor, true, false),
            row(LinkKind::Anchor, false, true),
            row(LinkKind::Iframe, true, false),
            row(LinkKind::Image, true, false),
            row(LinkKind::Canonical, true, false),
            row(LinkKind::SitemapEntry, true, false),
        ]);
        assert_eq!((c.total, c.internal, c.external, c.resources, c.sitemap_entries, c.nofollow), (5, 2, 1, 1, 1, 1));
    }

    #[test]
    fn bands_and_labels() {
        assert_eq!(
            [band(None), band(Some(100)), band(Some(89)), band(Some(50)), band(Some(49))],
            ["band-none", "band-good", "band-fair", "band-poor", "band-bad"]
        );
        assert_eq!(family_label("security_headers"), "Security headers");
        assert_eq!(family_label("https"), "HTTPS");
        assert_eq!(family_label(""), "");
        assert_eq!(points(12.345), "12.3");
    }
}
