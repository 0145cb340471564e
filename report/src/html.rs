//! The HTML report (`shoal report --format html`): one self-contained file a site owner can open
//! offline, with a summary, charts, sortable tables and a section per fetched URL.
//!
//! How it is built, and why:
//! - **Streamed.** askama renders a template to a string, so the report is a sequence of small
//!   fragments (one block of `templates/report/report.html` each: a head, a site header with its
//!   charts, one row per finding, one row per page, one detail per URL, a footer) written to the
//!   output as they are rendered, rows straight from database cursors. A 100,000-page audit needs
//!   memory for one page and its links, like the JSON report.
//! - **Charts are SVG drawn here** from aggregate counts (SQL `GROUP BY`, no pass over the rows); no
//!   chart library, no network, nothing to load.
//! - **Crawled text is untrusted.** askama escapes every value (`<`, `>`, `&`, `"`, `'`); nothing
//!   crawled is ever marked safe. Only http(s) URLs become links (a `javascript:` canonical is shown
//!   as text). A Content-Security-Policy meta element forbids every load and every script and
//!   style but the report's own, allowed by hash ([`csp`]).
//! - **Changes since the previous audit**: when the database holds an earlier audit of the same
//!   start URL, each site gets the new, fixed and remaining findings against the latest one (rules
//!   in [`compare`](super::compare)).

pub(super) mod csp;
mod domain;
mod svg;
mod view;

use super::compare::{self, Change};
use super::{ReportError, generator, rfc3339};
use askama::Template;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::LinkKind;
use shoal_shared::time::UnixMs;
use shoal_store::compare::{ChangeCounts, Comparison, SitePairs};
use shoal_store::cursor::{DEPTH_BARS, Previous, RESPONSE_BUCKETS_MS, Reader};
use shoal_store::{AuditDb, AuditSummary, DbError, FindingRow, LinkRow, PageRow, SiteStats, SiteSummary};
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use svg::{Bar, palette};
use view::{
    AuditSummaryView, ChangesStart, Chart, CompareSummary, DetailsStart, FindingRowView, FindingsSection,
    FindingsStart, Foot, Head, LinkCounts, PageRowView, PagesStart, PrevView, ScheduleChanges, ScheduleDelta,
    SectionEnd, SiteLine, SiteStart, SitesDelta, TableEnd, UrlDetail, UrlFinding, UrlView,
};

/// Output buffer: fragments are small, so batch them into large writes.
const BUFFER: usize = 256 * 1024;

/// Writes the HTML report of one audit to `out`, streaming.
///
/// Reads through `db` and a second, read-only connection to the same file (for aggregates and
/// findings in URL order), so `db` must be on disk, not `:memory:`.
///
/// # Errors
/// [`ReportError::UnknownAudit`], [`ReportError::Db`] on a read failure, [`ReportError::Write`] if
/// `out` fails (it then holds an incomplete document).
pub fn write_html(db: &AuditDb, audit: AuditId, out: &mut dyn Write) -> Result<(), ReportError> {
    let summary = db.audit(audit)?.ok_or(ReportError::UnknownAudit { audit })?;
    let reader = Reader::open(db)?;
    let sites = db.site_counts(audit)?;
    let stats = sites.iter().map(|s| db.site_stats(s.id)).collect::<Result<Vec<_>, DbError>>()?;
    let mut w = BufWriter::with_capacity(BUFFER, out);
    let title = format!("Shoal audit {audit}: report");
    head(&mut w, &title)?;
    let scheduled = schedule_changes(&mut w, db, audit)?;
    render(&mut w, &audit_summary(&summary, &sites, &stats))?;
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (site, stats) in sites.iter().zip(&stats) {
        let nth = seen.entry(site.start_url.as_str()).or_default();
        let baseline = match &scheduled {
            Some(runs) => Baseline::Schedule(runs),
            None => Baseline::Latest { nth: *nth },
        };
        write_site(&mut w, db, &reader, &summary, site, stats, baseline)?;
        *nth += 1;
    }
    render(&mut w, &Foot { generator: &generator(), script: csp::SCRIPT })?;
    w.flush()?;
    Ok(())
}

/// Writes an HTML page comparing audit `old` with audit `new` (the HTML twin of
/// [`write_compare_json`](super::write_compare_json)): totals, added and removed sites, and per
/// site the new, fixed and remaining findings.
///
/// # Errors
/// As [`write_compare_json`](super::write_compare_json).
pub fn write_compare_html(db: &AuditDb, old: AuditId, new: AuditId, out: &mut dyn Write) -> Result<(), ReportError> {
    let Comparison { pairs, counts } = shoal_store::compare::compare(db, old, new).map_err(compare::unknown_audit)?;
    let old_audit = db.audit(old)?.ok_or(ReportError::UnknownAudit { audit: old })?;
    let new_audit = db.audit(new)?.ok_or(ReportError::UnknownAudit { audit: new })?;
    let reader = Reader::open(db)?;
    let mut w = BufWriter::with_capacity(BUFFER, out);
    head(&mut w, &format!("Shoal: changes from audit {old} to audit {new}"))?;
    render(
        &mut w,
        &CompareSummary {
            old_audit: old.0,
            old_status: old_audit.status.as_str(),
            old_created: rfc3339(old_audit.created_at),
            new_audit: new.0,
            new_status: new_audit.status.as_str(),
            new_created: rfc3339(new_audit.created_at),
            new: counts.iter().map(|c| c.new).sum(),
            fixed: counts.iter().map(|c| c.fixed).sum(),
            remaining: counts.iter().map(|c| c.remaining).sum(),
        },
    )?;
    sites_delta(&mut w, old, new, &pairs)?;
    for ((o, n), c) in pairs.both.iter().zip(&counts) {
        let prev = PrevView {
            audit: old.0,
            site: o.id.0,
            status: o.status.as_str(),
            created_at: rfc3339(old_audit.created_at),
            new: c.new,
            fixed: c.fixed,
            remaining: c.remaining,
        };
        let heading = format!("{} (site {} → site {})", n.start_url, o.id, n.id);
        render(&mut w, &ChangesStart { anchor: n.id.0, heading: &heading, previous: Some(prev), none_text: "" })?;
        change_lists(&mut w, &reader, o.id, n.id, *c, None)?;
        render(&mut w, &SectionEnd)?;
    }
    render(&mut w, &Foot { generator: &generator(), script: csp::SCRIPT })?;
    w.flush()?;
    Ok(())
}

fn render<W: Write, T: Template>(w: &mut W, t: &T) -> Result<(), ReportError> {
    Template::write_into(t, w).map_err(|source| ReportError::Write { source })
}

fn head<W: Write>(w: &mut W, title: &str) -> Result<(), ReportError> {
    let policy = csp::policy();
    let written_at = rfc3339(UnixMs::from(std::time::SystemTime::now()));
    render(w, &Head { csp: &policy, generator: &generator(), title, written_at: &written_at, style: csp::STYLE })
}

/// `url` as a link target if it is an absolute http(s) URL; anything else (`javascript:`, `data:`,
/// relative or unparsable text) is shown as text only.
fn href(url: &str) -> Option<&str> {
    let parsed = url::Url::parse(url).ok()?;
    matches!(parsed.scheme(), "http" | "https").then_some(url)
}

fn url_view(url: &str) -> UrlView<'_> {
    UrlView { text: url, href: href(url) }
}

/// The id of a URL's details section: site id and a 64-bit FNV-1a hash of the URL. Computable from
/// the URL alone, so a finding can link to its page without a table of every page in memory.
fn anchor(site: SiteId, url: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in url.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("u{}-{h:016x}", site.0)
}

/// Bytes in a unit a reader takes in at a glance.
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1000.0;
    let mut unit = 0;
    while v >= 1000.0 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

fn status_text(p: &PageRow) -> String {
    match (p.status, p.error.as_deref()) {
        (Some(s), _) => s.to_string(),
        (None, Some(e)) => format!("failed: {e}"),
        (None, None) => "failed".to_owned(),
    }
}

fn severity_rank(s: &str) -> u8 {
    match s {
        "error" => 0,
        "warning" => 1,
        _ => 2,
    }
}

fn audit_summary(a: &AuditSummary, sites: &[SiteSummary], stats: &[SiteStats]) -> AuditSummaryView {
    let options = serde_json::from_str::<serde_json::Value>(&a.options_json)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| a.options_json.clone());
    AuditSummaryView {
        audit_id: a.id.0,
        status: a.status.as_str(),
        created_at: rfc3339(a.created_at),
        finished_at: a.finished_at.map(rfc3339),
        sites: sites
            .iter()
            .zip(stats)
            .map(|(s, st)| SiteLine {
                id: s.id.0,
                start_url: s.start_url.clone(),
                status: s.status.as_str(),
                pages: s.pages,
                urls: s.urls,
                errors: st.severities.errors,
                warnings: st.severities.warnings,
                notices: st.severities.notices,
            })
            .collect(),
        pages: a.pages,
        urls: a.urls,
        errors: stats.iter().map(|s| s.severities.errors).sum(),
        warnings: stats.iter().map(|s| s.severities.warnings).sum(),
        notices: stats.iter().map(|s| s.severities.notices).sum(),
        options,
    }
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

fn write_site<W: Write>(
    w: &mut W,
    db: &AuditDb,
    reader: &Reader,
    audit: &AuditSummary,
    site: &SiteSummary,
    stats: &SiteStats,
    baseline: Baseline<'_>,
) -> Result<(), ReportError> {
    render(
        w,
        &SiteStart {
            id: site.id.0,
            start_url: &site.start_url,
            start_href: href(&site.start_url),
            status: site.status.as_str(),
            done_at: site.done_at.map(rfc3339),
            pages: site.pages,
            urls: stats.urls,
            charts: charts(reader, site.id, stats)?,
        },
    )?;
    changes_since_previous(w, db, reader, audit.id, site, baseline)?;

    render(w, &FindingsSection { site: site.id.0 })?;
    let total = stats.severities.errors + stats.severities.warnings + stats.severities.notices;
    let table_id = format!("findings-t-{}", site.id);
    findings_table(w, FindingsStart { heading: None, table_id, count: total, collapsed: false }, |w| {
        db.for_each_finding(site.id, |f| finding_row(w, reader, &f, Some(site.id)))
    })?;
    render(w, &SectionEnd)?;
    domain::write_domain_section(w, db, reader, site)?;

    render(w, &PagesStart { site: site.id.0, count: stats.urls })?;
    db.for_each_page(site.id, |p| -> Result<(), ReportError> {
        let a = anchor(site.id, &p.url);
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
                found_via: &p.found_via,
                title: p.title.as_deref(),
                response_ms: p.response_ms,
                bytes: p.bytes,
                bytes_text: &bytes_text,
            },
        )
    })?;
    render(w, &TableEnd { open_table: true, collapsed: false })?;
    render(w, &SectionEnd)?;

    render(w, &DetailsStart { site: site.id.0 })?;
    let mut stmt = reader.by_url()?;
    let mut findings = reader.cursor(&mut stmt, site.id)?;
    db.for_each_page(site.id, |p| -> Result<(), ReportError> {
        let on_url = findings.take_url(&p.url)?;
        let links = db.links_from(site.id, &p.url)?;
        let final_url = if p.is_redirect() { db.final_url(site.id, &p.url)? } else { None };
        url_detail(w, site.id, &p, &links, final_url.as_deref(), &on_url)
    })?;
    render(w, &SectionEnd)?;
    render(w, &SectionEnd)
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
            kind: &p.kind,
            status: &status,
            found_via: &p.found_via,
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
                    severity: f.severity.clone(),
                    code: f.code.clone(),
                    message: f.known_code().map_or("", |c| c.message()),
                    detail: f.detail.clone(),
                })
                .collect(),
        },
    )
}

/// Counts a page's links for its details. The canonical link is shown on its own, not counted;
/// sitemap entries (the links of a sitemap's record) are counted apart from resources.
fn count_links(links: &[LinkRow]) -> LinkCounts {
    let mut counts = LinkCounts::default();
    for l in links {
        let slot = match (l.kind.as_str(), l.internal) {
            (k, _) if k == LinkKind::Canonical.as_str() => continue,
            (k, _) if k == LinkKind::SitemapEntry.as_str() => &mut counts.sitemap_entries,
            (k, true) if is_navigation(k) => &mut counts.internal,
            (k, false) if is_navigation(k) => &mut counts.external,
            _ => &mut counts.resources,
        };
        *slot += 1;
        counts.total += 1;
        counts.nofollow += u64::from(l.nofollow);
    }
    counts
}

/// [`LinkKind::is_navigation`] for a stored kind spelling.
fn is_navigation(kind: &str) -> bool {
    kind == LinkKind::Anchor.as_str() || kind == LinkKind::Iframe.as_str() || kind == LinkKind::PageLink.as_str()
}

/// Writes a findings table: its start, the rows `rows` writes, its end.
fn findings_table<W: Write>(
    w: &mut W,
    start: FindingsStart,
    rows: impl FnOnce(&mut W) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let (open_table, collapsed) = (start.count > 0, start.collapsed);
    render(w, &start)?;
    if open_table {
        rows(w)?;
    }
    render(w, &TableEnd { open_table, collapsed })
}

/// One finding row; the URL links to its details section when `details_of` has that page.
fn finding_row<W: Write>(
    w: &mut W,
    reader: &Reader,
    f: &FindingRow,
    details_of: Option<SiteId>,
) -> Result<(), ReportError> {
    let code = f.known_code();
    let anchor = match details_of {
        Some(site) if reader.has_page(site, &f.url)? => Some(anchor(site, &f.url)),
        _ => None,
    };
    render(
        w,
        &FindingRowView {
            severity: &f.severity,
            rank: severity_rank(&f.severity),
            code: &f.code,
            family: code.map_or("unknown", |c| c.family()),
            message: code.map_or("", |c| c.message()),
            url: &f.url,
            href: href(&f.url),
            anchor,
            detail: &f.detail,
            related: f.related.iter().map(|u| url_view(u)).collect(),
        },
    )
}

/// For an audit a schedule started, the section at the top of the report: what changed since the
/// schedule's previous run, or that this is its first run. Returns each site's partner in the
/// previous run (empty for a first run), which the sites' own "changes" sections then use; `None`
/// for a submitted audit.
fn schedule_changes<W: Write>(
    w: &mut W,
    db: &AuditDb,
    audit: AuditId,
) -> Result<Option<HashMap<SiteId, Previous>>, ReportError> {
    let Some(run) = db.scheduled_run(audit)? else { return Ok(None) };
    let name = run.name.unwrap_or_else(|| "(removed since)".to_owned());
    let Some(previous) = run.previous else {
        render(w, &ScheduleChanges { schedule: run.schedule.0, name: &name, previous: None })?;
        return Ok(Some(HashMap::new()));
    };
    let Comparison { pairs, counts } =
        shoal_store::compare::compare(db, previous, audit).map_err(compare::unknown_audit)?;
    let old = db.audit(previous)?.ok_or(ReportError::UnknownAudit { audit: previous })?;
    let totals = ChangeCounts::sum(&counts);
    let view = ScheduleDelta {
        audit: previous.0,
        status: old.status.as_str(),
        created_at: rfc3339(old.created_at),
        new: totals.new,
        fixed: totals.fixed,
        remaining: totals.remaining,
        added: pairs.added.len(),
        removed: pairs.removed.len(),
    };
    render(w, &ScheduleChanges { schedule: run.schedule.0, name: &name, previous: Some(view) })?;
    Ok(Some(
        pairs
            .both
            .into_iter()
            .map(|(o, n)| (n.id, Previous { audit: previous, site: o.id, status: o.status }))
            .collect(),
    ))
}

/// What a site's "changes" section compares with.
#[derive(Debug, Clone, Copy)]
enum Baseline<'a> {
    /// The latest earlier audit of the same start URL (its `nth` site with that URL).
    Latest { nth: usize },
    /// The schedule's previous run: each site's partner there, by site id.
    Schedule(&'a HashMap<SiteId, Previous>),
}

/// The "Changes since the previous audit" section of a site.
fn changes_since_previous<W: Write>(
    w: &mut W,
    db: &AuditDb,
    reader: &Reader,
    audit: AuditId,
    site: &SiteSummary,
    baseline: Baseline<'_>,
) -> Result<(), ReportError> {
    let (heading, prev, none_text) = match baseline {
        Baseline::Schedule(runs) => (
            "Changes since the schedule's previous run",
            runs.get(&site.id).cloned(),
            "This start URL was not in the schedule's previous run (or this is its first run): every finding is new.",
        ),
        Baseline::Latest { nth } => (
            "Changes since the previous audit",
            reader.previous_site(audit, &site.start_url, nth)?,
            "No earlier audit of this start URL is in the database: every finding is new.",
        ),
    };
    let Some(prev) = prev else {
        return render(w, &ChangesStart { anchor: site.id.0, heading, previous: None, none_text })
            .and_then(|()| render(w, &SectionEnd));
    };
    let created = db.audit(prev.audit)?.map(|a| rfc3339(a.created_at)).unwrap_or_default();
    let counts = compare::count_with(reader, prev.site, site.id)?;
    let view = PrevView {
        audit: prev.audit.0,
        site: prev.site.0,
        status: prev.status.as_str(),
        created_at: created,
        new: counts.new,
        fixed: counts.fixed,
        remaining: counts.remaining,
    };
    render(w, &ChangesStart { anchor: site.id.0, heading, previous: Some(view), none_text: "" })?;
    change_lists(w, reader, prev.site, site.id, counts, Some(site.id))?;
    render(w, &SectionEnd)
}

/// The new, fixed and remaining tables of a site pair (remaining collapsed: it is usually the
/// longest and the least news).
fn change_lists<W: Write>(
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
    Ok(())
}

fn sites_delta<W: Write>(w: &mut W, old: AuditId, new: AuditId, pairs: &SitePairs) -> Result<(), ReportError> {
    render(
        w,
        &SitesDelta {
            old_audit: old.0,
            new_audit: new.0,
            paired: pairs.both.len(),
            added: pairs.added.iter().map(|s| url_view(&s.start_url)).collect(),
            removed: pairs.removed.iter().map(|s| url_view(&s.start_url)).collect(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_become_links() {
        assert_eq!(href("https://example.test/a?b=1&c=\"x\""), Some("https://example.test/a?b=1&c=\"x\""));
        assert_eq!(href("http://example.test/"), Some("http://example.test/"));
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            " javascript:alert(1)",
            "data:text/html,x",
            "/relative",
            "vbscript:x",
            "",
        ] {
            assert_eq!(href(bad), None, "{bad}");
        }
    }

    #[test]
    fn anchors_are_stable_and_plain() {
        let a = anchor(SiteId(3), "https://example.test/\"><script>");
        assert_eq!(a, anchor(SiteId(3), "https://example.test/\"><script>"));
        assert!(a.starts_with("u3-") && a[3..].chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, anchor(SiteId(3), "https://example.test/"));
    }

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
        for k in all {
            assert_eq!(is_navigation(k.as_str()), k.is_navigation(), "{k:?}");
        }
        let row = |kind: LinkKind, internal: bool, nofollow: bool| LinkRow {
            from_url: "https://a.test/".to_owned(),
            to_url: "https://a.test/x".to_owned(),
            kind: kind.as_str().to_owned(),
            nofollow,
            internal,
            text: None,
        };
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
    fn sizes_read_at_a_glance() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(2048), "2.0 KB");
        assert_eq!(human_bytes(5_300_000), "5.3 MB");
    }

    #[test]
    fn templates_mark_nothing_safe() {
        let t = include_str!("../templates/report/report.html");
        assert!(!t.contains("|safe") && !t.contains("| safe"), "crawled text must never be marked safe");
    }
}
