//! The HTML reports: the batch overview (an audit's first page), one report per site, the page of
//! one issue across sites and of one issue group's URLs, and comparisons. Every page is one
//! self-contained document that opens offline; the same pages are written as one file, as a
//! directory ([`crate::per_site`]) and served by the coordinator's dashboard, which differ only in
//! where their links point ([`Links`]). Layout and rules for users: `docs/report-html.md`.
//!
//! How they are built, and why:
//! - **Issues, not rows.** A site's findings are shown grouped by code and ranked by impact
//!   ([`crate::issues`], [`crate::score`]), each group with why it matters, how to fix it and its
//!   URLs. The overview is written from per-(site, code) aggregates and stays small for 10,000
//!   sites; a site's report grows with the site.
//! - **Streamed.** askama renders a template to a string, so a page is a sequence of small
//!   fragments (one template block each) written as they are rendered, rows straight from database
//!   cursors: memory holds one page row, or one site of the overview, at a time.
//! - **Charts are SVG drawn here** from aggregate counts; no chart library, nothing to load.
//! - **Crawled text is untrusted.** askama escapes every value; nothing crawled is ever marked
//!   safe. Only http(s) URLs become links to the web, and our own links are built from ids and
//!   names reduced to a safe alphabet ([`links::Local`]). A Content-Security-Policy meta element
//!   forbids every load and every script and style but the page's own, allowed by hash ([`csp`]).

mod ai_crawlers;
mod browser;
pub(crate) mod compare_page;
mod content;
pub(super) mod csp;
mod data;
mod domain;
mod extracted;
pub mod links;
mod overview;
mod site;
mod svg;
mod url_changes;
mod view;
mod view_issues;

use super::{ReportError, generator, rfc3339};
use crate::branding::Branding;
use crate::causes;
use crate::issues::{SiteHealth, across_sites, audit_health, baselines, site_health};
use askama::Template;
pub use compare_page::write_compare_html;
pub(crate) use csp::base64;
use links::Links;
use shoal_shared::finding::Severity;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::time::UnixMs;
use shoal_store::cursor::Reader;
use shoal_store::{AuditDb, AuditSummary, PageRow};
use site::Depth;
use std::io::{BufWriter, Write};
pub(crate) use svg::escape as escape_markup;
use view::{BackLink, Foot, Head, SectionEnd, TableEnd, UrlView};
use view_issues::IssueEnd;

pub use overview::MAX_SITE_ROWS;

/// Output buffer: fragments are small, so batch them into large writes.
const BUFFER: usize = 256 * 1024;

/// An audit with at most this many sites gets each site's issues below the overview in the
/// one-file HTML report; larger audits get the overview only (each site's report: `--site`,
/// `--per-site`, the dashboard).
pub const INLINE_SITES: usize = 25;

/// URLs per issue group in a site's section of the one-file report.
pub const INLINE_URLS_PER_ISSUE: u64 = 100;

/// URLs per page of an issue group on the dashboard.
pub const ISSUE_PAGE_URLS: u64 = 500;

/// How an HTML page is written: who prepared it and where its sibling pages are.
#[derive(Debug, Clone, Copy)]
pub struct HtmlOptions<'a> {
    /// The operator's name and logo.
    pub branding: &'a Branding,
    /// Where the other pages are.
    pub links: Links,
}

/// Writes the HTML report of one audit to `out` as one file, unbranded: see [`write_html_with`].
///
/// # Errors
/// As [`write_html_with`].
pub fn write_html(db: &AuditDb, audit: AuditId, out: &mut dyn Write) -> Result<(), ReportError> {
    write_html_with(db, audit, &Branding::default(), out)
}

/// Writes the HTML report of one audit as one self-contained file: for an audit of one site, that
/// site's full report; otherwise the overview, followed by each site's health and issues when the
/// audit has at most [`INLINE_SITES`] sites.
///
/// Reads through `db` and a second, read-only connection to the same file, so `db` must be on
/// disk, not `:memory:`.
///
/// # Errors
/// [`ReportError::UnknownAudit`], [`ReportError::Db`] on a read failure, [`ReportError::Write`] if
/// `out` fails (it then holds an incomplete document).
pub fn write_html_with(
    db: &AuditDb,
    audit: AuditId,
    branding: &Branding,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let summary = db.audit(audit)?.ok_or(ReportError::UnknownAudit { audit })?;
    let sites = audit_health(db, audit)?;
    let reader = Reader::open(db)?;
    let mut w = BufWriter::with_capacity(BUFFER, out);
    if let [only] = sites.as_slice() {
        let title = format!("Site audit: {}", only.site.start_url);
        head(&mut w, &title, branding, None)?;
        compare_page::schedule_changes(&mut w, db, audit)?;
        site::write_site(&mut w, db, &reader, only, Depth::Full, Links::SingleFile { inline: false }, &summary)?;
    } else {
        let inline = sites.len() <= INLINE_SITES;
        let links = Links::SingleFile { inline };
        write_overview_body(&mut w, db, &summary, &sites, branding, links)?;
        if inline {
            for h in &sites {
                let depth = Depth::Compact { urls_per_issue: INLINE_URLS_PER_ISSUE };
                site::write_site(&mut w, db, &reader, h, depth, links, &summary)?;
            }
        }
    }
    finish_page(w)
}

/// Writes the batch overview of an audit (its first page) with links as `opts` says.
///
/// # Errors
/// As [`write_html_with`].
pub fn write_overview_html(
    db: &AuditDb,
    audit: AuditId,
    opts: HtmlOptions<'_>,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let summary = db.audit(audit)?.ok_or(ReportError::UnknownAudit { audit })?;
    let sites = audit_health(db, audit)?;
    let mut w = BufWriter::with_capacity(BUFFER, out);
    write_overview_body(&mut w, db, &summary, &sites, opts.branding, opts.links)?;
    finish_page(w)
}

/// The overview from an audit's health, for [`write_overview_html`] and [`crate::per_site`].
pub(crate) fn write_overview_body<W: Write>(
    w: &mut W,
    db: &AuditDb,
    summary: &AuditSummary,
    sites: &[SiteHealth],
    branding: &Branding,
    links: Links,
) -> Result<(), ReportError> {
    let title = format!("Audit {}: {} site{}", summary.id, sites.len(), if sites.len() == 1 { "" } else { "s" });
    head(w, &title, branding, None)?;
    compare_page::schedule_changes(w, db, summary.id)?;
    overview::summary(w, summary, sites, links)?;
    overview::across(w, &across_sites(sites), sites.len(), links)?;
    overview::causes(w, &causes::causes(db, summary.id, sites)?, sites, links)?;
    overview::rankings_and_sites(w, sites, links)
}

/// Writes one site's full report: health and trend, every issue group with all its URLs, the
/// changes since the audit it is compared with, charts, every fetched URL and its details.
///
/// # Errors
/// [`ReportError::UnknownSite`], and as [`write_html_with`].
pub fn write_site_html(
    db: &AuditDb,
    site: SiteId,
    opts: HtmlOptions<'_>,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let summary = db.site(site)?.ok_or(ReportError::UnknownSite { site })?;
    let audit = db.audit(summary.audit)?.ok_or(ReportError::UnknownAudit { audit: summary.audit })?;
    let base = baselines(db, summary.audit)?;
    let health = site_health(db, summary, base.get(&site))?;
    write_site_health_html(db, &audit, &health, opts, out)
}

/// [`write_site_html`] for a site whose health is already known (the directory writer has every
/// site's from the overview).
pub(crate) fn write_site_health_html(
    db: &AuditDb,
    audit: &AuditSummary,
    health: &SiteHealth,
    opts: HtmlOptions<'_>,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let reader = Reader::open(db)?;
    let mut w = BufWriter::with_capacity(BUFFER, out);
    let title = format!("Site audit: {}", health.site.start_url);
    head(&mut w, &title, opts.branding, back_to_overview(opts.links, audit.id))?;
    site::write_site(&mut w, db, &reader, health, Depth::Full, opts.links, audit)?;
    finish_page(w)
}

/// Writes the page of one code across the sites of an audit: why it matters, how to fix it, and
/// every site that has it, the most URLs first.
///
/// # Errors
/// [`ReportError::UnknownIssue`] when no site of the audit has the code, and as
/// [`write_html_with`].
pub fn write_issue_sites_html(
    db: &AuditDb,
    audit: AuditId,
    code: &str,
    opts: HtmlOptions<'_>,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    db.audit(audit)?.ok_or(ReportError::UnknownAudit { audit })?;
    let sites = audit_health(db, audit)?;
    write_issue_sites_body(&sites, audit, code, opts, out)
}

/// [`write_issue_sites_html`] from an audit's health.
pub(crate) fn write_issue_sites_body(
    sites: &[SiteHealth],
    audit: AuditId,
    code: &str,
    opts: HtmlOptions<'_>,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let mut buf = Vec::new();
    if !overview::issue_sites(&mut buf, code, sites, opts.links)? {
        return Err(ReportError::UnknownIssue { code: code.to_owned() });
    }
    let mut w = BufWriter::with_capacity(BUFFER, out);
    let title = format!("Audit {audit}: {code}");
    head(&mut w, &title, opts.branding, back_to_overview(opts.links, audit))?;
    w.write_all(&buf)?;
    render(&mut w, &TableEnd { open_table: true, collapsed: false })?;
    render(&mut w, &SectionEnd)?;
    finish_page(w)
}

/// Writes one page (1-based, [`ISSUE_PAGE_URLS`] URLs each) of a site's issue group: what the
/// dashboard shows for a group too large for one page.
///
/// # Errors
/// [`ReportError::UnknownSite`], [`ReportError::UnknownIssue`] when the site has no finding of
/// the code, and as [`write_html_with`].
pub fn write_issue_urls_html(
    db: &AuditDb,
    site: SiteId,
    code: &str,
    page: u64,
    opts: HtmlOptions<'_>,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let summary = db.site(site)?.ok_or(ReportError::UnknownSite { site })?;
    let health = site_health(db, summary, None)?;
    let group = health
        .groups
        .iter()
        .find(|g| g.code == code)
        .ok_or_else(|| ReportError::UnknownIssue { code: code.to_owned() })?;
    let pages = group.findings.div_ceil(ISSUE_PAGE_URLS).max(1);
    let page = page.clamp(1, pages);
    let offset = (page - 1) * ISSUE_PAGE_URLS;
    let reader = Reader::open(db)?;
    let mut w = BufWriter::with_capacity(BUFFER, out);
    let title = format!("{} on {}: page {page} of {pages}", group.code, health.site.start_url);
    let back = opts.links.site(&health.site).map(|href| BackLink { href, text: health.site.start_url.clone() });
    head(&mut w, &title, opts.branding, back)?;
    site::issue_start(&mut w, site, group, true, false)?;
    site::issue_rows(&mut w, db, &reader, site, &group.code, offset, ISSUE_PAGE_URLS)?;
    let shown = ISSUE_PAGE_URLS.min(group.findings - offset.min(group.findings));
    render(
        &mut w,
        &IssueEnd {
            shown,
            total: group.findings,
            more: None,
            more_text: format!("findings {} to {}", offset + 1, offset + shown),
            prev: (page > 1).then(|| opts.links.site_issue(site, &group.code, page - 2)).flatten(),
            next: (page < pages).then(|| opts.links.site_issue(site, &group.code, page)).flatten(),
        },
    )?;
    finish_page(w)
}

/// The "back to all sites" link of a page below the overview.
fn back_to_overview(links: Links, audit: AuditId) -> Option<BackLink> {
    links.overview().map(|href| BackLink { href, text: format!("All sites of audit {audit}") })
}

pub(crate) fn finish_page<W: Write>(mut w: BufWriter<W>) -> Result<(), ReportError> {
    render(&mut w, &Foot { generator: &generator(), script: csp::SCRIPT })?;
    w.flush()?;
    Ok(())
}

fn render<W: Write, T: Template>(w: &mut W, t: &T) -> Result<(), ReportError> {
    Template::write_into(t, w).map_err(|source| ReportError::Write { source })
}

fn head<W: Write>(w: &mut W, title: &str, branding: &Branding, back: Option<BackLink>) -> Result<(), ReportError> {
    // data: images: the operator's logo and the browser check's screenshots (nothing from the
    // network either way).
    let policy = csp::policy(true);
    let written_at = rfc3339(UnixMs::from(std::time::SystemTime::now()));
    render(
        w,
        &Head {
            csp: &policy,
            generator: &generator(),
            title,
            written_at: &written_at,
            style: csp::STYLE,
            operator: branding.operator(),
            logo: branding.logo().map(|l| l.data_url()),
            back,
        },
    )
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

/// A finding's related URLs as shown.
fn related_views(urls: &[String]) -> Vec<UrlView<'_>> {
    urls.iter().map(|u| url_view(u)).collect()
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
    match (p.status, p.error) {
        (Some(s), _) => s.to_string(),
        (None, Some(e)) => format!("failed: {e}"),
        (None, None) => "failed".to_owned(),
    }
}

fn severity_rank(s: Severity) -> u8 {
    match s {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Notice => 2,
    }
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
    fn sizes_read_at_a_glance() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(2048), "2.0 KB");
        assert_eq!(human_bytes(5_300_000), "5.3 MB");
    }

    #[test]
    fn templates_mark_nothing_safe() {
        for t in [
            include_str!("../templates/report/report.html"),
            include_str!("../templates/report/issues.html"),
            include_str!("../templates/report/overview.html"),
            include_str!("../templates/report/macros.html"),
        ] {
            assert!(!t.contains("|safe") && !t.contains("| safe"), "crawled text must never be marked safe");
        }
    }
}
