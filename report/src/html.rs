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
mod base;
mod browser;
pub(crate) mod compare_page;
mod content;
pub(super) mod csp;
mod data;
mod domain;
mod extracted;
pub mod links;
mod overview;
mod render;
mod site;
mod svg;
mod url_changes;
mod view;
mod view_issues;

use super::{ReportError, generator};
use crate::branding::Branding;
use crate::causes;
use crate::issues::{SiteHealth, across_sites, audit_health, baselines, site_health};
use base::{BUFFER, head, render};
pub use compare_page::write_compare_html;
use links::Links;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_store::cursor::Reader;
use shoal_store::{AuditDb, AuditSummary};
use site::Depth;
use std::io::{BufWriter, Write};
pub(crate) use svg::escape as escape_markup;
use view::{BackLink, Foot, SectionEnd, TableEnd};
use view_issues::IssueEnd;

pub use overview::MAX_SITE_ROWS;

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

#[cfg(test)]
mod tests {
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
