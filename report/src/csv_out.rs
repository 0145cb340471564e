//! CSV reports: `pages.csv`, `links.csv`, `findings.csv`, one row per stored row, streamed; and
//! `issues.csv` (one row per site and code: the grouped issues) and `sites.csv` (one row per site:
//! its score and trend), for spreadsheets and other tools that rank sites; `extracted.csv` (one row
//! per page and extraction rule that found something) and `ai_crawlers.csv` (one row per site,
//! host and AI crawler).

use super::{ReportError, rfc3339};
use crate::issues::audit_health;
use shoal_shared::ids::AuditId;
use shoal_store::AuditDb;
use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};

/// The files [`write_csv`] writes, in order.
pub const CSV_FILES: [&str; 7] =
    ["pages.csv", "links.csv", "findings.csv", "issues.csv", "sites.csv", "extracted.csv", "ai_crawlers.csv"];

const EXTRACTED_HEADER: &[&str] = &["site_id", "url", "name", "value"];

const AI_CRAWLERS_HEADER: &[&str] =
    &["site_id", "host", "token", "operator", "purpose", "verdict", "pages", "blocked_pages", "start_page"];

const PAGES_HEADER: &[&str] = &[
    "site_id",
    "url",
    "final_url",
    "kind",
    "status",
    "error",
    "redirect_to",
    "depth",
    "found_via",
    "found_from",
    "content_type",
    "bytes",
    "response_ms",
    "fetched_at",
    "title",
    "meta_description",
    "h1",
    "h1_count",
    "canonical",
    "meta_robots",
    "x_robots_tag",
    "hreflang",
    "word_count",
    "structured_data_types",
];

const LINKS_HEADER: &[&str] = &["site_id", "from_url", "to_url", "kind", "nofollow", "internal", "text"];

const FINDINGS_HEADER: &[&str] = &["site_id", "code", "severity", "family", "url", "detail", "related", "message"];

const ISSUES_HEADER: &[&str] =
    &["site_id", "start_url", "code", "severity", "family", "scope", "urls", "findings", "impact", "message", "fix"];

const SITES_HEADER: &[&str] = &[
    "site_id",
    "start_url",
    "status",
    "score",
    "previous_audit",
    "previous_score",
    "trend",
    "errors",
    "warnings",
    "notices",
    "pages",
    "answered_pages",
    "top_issue",
];

/// Separates the values of list columns (h1s, robots directives, related URLs) within one cell.
const LIST_SEPARATOR: &str = " | ";

/// Defuses a cell a spreadsheet would evaluate as a formula (`=`, `+`, `-`, `@`, tab, CR at the
/// start) by prefixing `'`, the OWASP advice for CSV injection. Crawled titles and link texts are
/// written by strangers; opening the report must not run them.
fn cell(s: &str) -> Cow<'_, str> {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) { Cow::Owned(format!("'{s}")) } else { Cow::Borrowed(s) }
}

fn opt(s: Option<&str>) -> Cow<'_, str> {
    s.map_or(Cow::Borrowed(""), cell)
}

fn list(items: &[String]) -> String {
    cell(&items.join(LIST_SEPARATOR)).into_owned()
}

/// One CSV file being written, remembering its path for error messages.
struct Sheet {
    path: PathBuf,
    w: csv::Writer<File>,
}

impl Sheet {
    fn create(dir: &Path, name: &str, header: &[&str]) -> Result<Sheet, ReportError> {
        let path = dir.join(name);
        let w = csv::Writer::from_path(&path).map_err(|source| ReportError::Csv { path: path.clone(), source })?;
        let mut sheet = Sheet { path, w };
        let header: Vec<Cow<'_, str>> = header.iter().map(|h| Cow::Borrowed(*h)).collect();
        sheet.row(&header)?;
        Ok(sheet)
    }

    fn row(&mut self, cells: &[Cow<'_, str>]) -> Result<(), ReportError> {
        self.w
            .write_record(cells.iter().map(|c| c.as_bytes()))
            .map_err(|source| ReportError::Csv { path: self.path.clone(), source })
    }

    fn finish(mut self) -> Result<PathBuf, ReportError> {
        self.w.flush().map_err(|source| ReportError::File { path: self.path.clone(), source })?;
        Ok(self.path)
    }
}

/// Writes `pages.csv`, `links.csv` and `findings.csv` for one audit into `dir` (created if
/// missing, files replaced), streaming row by row. Every file has a header row and a `site_id`
/// column; list values are joined with `" | "`; empty cells mean "none". Returns the paths written.
///
/// # Errors
/// [`ReportError::UnknownAudit`], [`ReportError::Db`] on a read failure, [`ReportError::File`] /
/// [`ReportError::Csv`] naming the file that could not be written.
pub fn write_csv(db: &AuditDb, audit: AuditId, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    if db.audit(audit)?.is_none() {
        return Err(ReportError::UnknownAudit { audit });
    }
    std::fs::create_dir_all(dir).map_err(|source| ReportError::File { path: dir.to_owned(), source })?;
    let sites = db.site_counts(audit)?;

    let mut pages = Sheet::create(dir, CSV_FILES[0], PAGES_HEADER)?;
    for site in &sites {
        let id = site.id.0.to_string();
        db.for_each_page(site.id, |p| -> Result<(), ReportError> {
            let final_url =
                if p.is_redirect() { db.final_url(site.id, &p.url)?.unwrap_or_default() } else { p.url.clone() };
            pages.row(&[
                Cow::Borrowed(id.as_str()),
                cell(&p.url),
                cell(&final_url),
                cell(p.kind.as_str()),
                Cow::Owned(p.status.map(|s| s.to_string()).unwrap_or_default()),
                opt(p.error.map(|e| e.as_str())),
                opt(p.redirect_to.as_deref()),
                Cow::Owned(p.depth.to_string()),
                cell(p.found_via.as_str()),
                opt(p.found_from.as_deref()),
                opt(p.content_type.as_deref()),
                Cow::Owned(p.bytes.to_string()),
                Cow::Owned(p.response_ms.to_string()),
                Cow::Owned(rfc3339(p.fetched_at)),
                opt(p.title.as_deref()),
                opt(p.meta_description.as_deref()),
                Cow::Owned(list(&p.h1)),
                Cow::Owned(p.h1.len().to_string()),
                opt(p.canonical.as_deref()),
                Cow::Owned(list(&p.meta_robots)),
                Cow::Owned(list(&p.x_robots_tag)),
                Cow::Owned(list(&p.hreflang.iter().map(|(lang, url)| format!("{lang} {url}")).collect::<Vec<_>>())),
                Cow::Owned(p.word_count.map(|w| w.to_string()).unwrap_or_default()),
                Cow::Owned(list(&p.structured_types)),
            ])
        })?;
    }
    let mut written = vec![pages.finish()?];

    let mut links = Sheet::create(dir, CSV_FILES[1], LINKS_HEADER)?;
    for site in &sites {
        let id = site.id.0.to_string();
        db.for_each_link(site.id, |l| -> Result<(), ReportError> {
            links.row(&[
                Cow::Borrowed(id.as_str()),
                cell(&l.from_url),
                cell(&l.to_url),
                cell(l.kind.as_str()),
                Cow::Borrowed(if l.nofollow { "true" } else { "false" }),
                Cow::Borrowed(if l.internal { "true" } else { "false" }),
                opt(l.text.as_deref()),
            ])
        })?;
    }
    written.push(links.finish()?);

    let mut findings = Sheet::create(dir, CSV_FILES[2], FINDINGS_HEADER)?;
    for site in &sites {
        let id = site.id.0.to_string();
        db.for_each_finding(site.id, |f| -> Result<(), ReportError> {
            let code = f.known_code();
            findings.row(&[
                Cow::Borrowed(id.as_str()),
                cell(&f.code),
                cell(f.severity.as_str()),
                Cow::Borrowed(code.map_or("", |c| c.family())),
                cell(&f.url),
                cell(&f.detail),
                Cow::Owned(list(&f.related)),
                Cow::Borrowed(code.map_or("", |c| c.message())),
            ])
        })?;
    }
    written.push(findings.finish()?);

    let health = audit_health(db, audit)?;
    let mut issues = Sheet::create(dir, CSV_FILES[3], ISSUES_HEADER)?;
    for h in &health {
        let id = h.site.id.0.to_string();
        for g in &h.groups {
            issues.row(&[
                Cow::Borrowed(id.as_str()),
                cell(&h.site.start_url),
                cell(&g.code),
                Cow::Borrowed(g.severity.as_str()),
                Cow::Borrowed(g.family),
                Cow::Borrowed(g.scope.as_str()),
                Cow::Owned(g.urls.to_string()),
                Cow::Owned(g.findings.to_string()),
                Cow::Owned(format!("{:.1}", g.impact)),
                Cow::Borrowed(g.message().unwrap_or("")),
                Cow::Owned(g.fix().unwrap_or_default()),
            ])?;
        }
    }
    written.push(issues.finish()?);

    let mut sites = Sheet::create(dir, CSV_FILES[4], SITES_HEADER)?;
    let num = |n: Option<u8>| Cow::Owned(n.map(|n| n.to_string()).unwrap_or_default());
    for h in &health {
        let earlier = h.earlier.as_ref();
        sites.row(&[
            Cow::Owned(h.site.id.0.to_string()),
            cell(&h.site.start_url),
            Cow::Borrowed(h.site.status.as_str()),
            num(h.score.map(|s| s.get())),
            Cow::Owned(earlier.map(|e| e.previous.audit.0.to_string()).unwrap_or_default()),
            num(earlier.and_then(|e| e.score).map(|s| s.get())),
            // A number of ours, not crawled text: written as is (a negative trend is `-3`).
            Cow::Owned(h.trend().map(|t| t.to_string()).unwrap_or_default()),
            Cow::Owned(h.counts.errors.to_string()),
            Cow::Owned(h.counts.warnings.to_string()),
            Cow::Owned(h.counts.notices.to_string()),
            Cow::Owned(h.site.pages.to_string()),
            Cow::Owned(h.answered.to_string()),
            opt(h.groups.first().map(|g| g.code.as_str())),
        ])?;
    }
    written.push(sites.finish()?);

    let sites = db.site_counts(audit)?;
    let mut extracted = Sheet::create(dir, CSV_FILES[5], EXTRACTED_HEADER)?;
    for site in &sites {
        let id = site.id.0.to_string();
        db.for_each_page(site.id, |p| -> Result<(), ReportError> {
            for (name, value) in &p.extracted {
                extracted.row(&[Cow::Borrowed(id.as_str()), cell(&p.url), cell(name), cell(value)])?;
            }
            Ok(())
        })?;
    }
    written.push(extracted.finish()?);

    let mut ai = Sheet::create(dir, CSV_FILES[6], AI_CRAWLERS_HEADER)?;
    for site in &sites {
        let id = site.id.0.to_string();
        for r in db.ai_crawlers(site.id)? {
            ai.row(&[
                Cow::Borrowed(id.as_str()),
                cell(&r.host),
                Cow::Borrowed(r.crawler.token),
                Cow::Borrowed(r.crawler.operator),
                Cow::Borrowed(r.crawler.purpose.as_str()),
                Cow::Borrowed(r.verdict.as_str()),
                Cow::Owned(r.pages.to_string()),
                Cow::Owned(r.blocked.to_string()),
                Cow::Borrowed(r.start_blocked.map_or("", |b| if b { "blocked" } else { "allowed" })),
            ])?;
        }
    }
    written.push(ai.finish()?);
    Ok(written)
}
