//! Reading the audit database back: listings, per-site statistics, and row-by-row iteration for
//! reports that must not hold a 100,000-page site in memory.

use super::{AuditDb, AuditStatus, AuditSummary, DbError, SiteStatus, SiteSummary, int, sql_err, uint, unknown_value};
use rusqlite::{Connection, OptionalExtension, Row, params};
use shoal_shared::ai_crawlers::AiBlocked;
use shoal_shared::finding::{Code, Severity};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, FetchFailure, LinkKind, UrlKind};
use shoal_shared::time::UnixMs;
use std::collections::BTreeMap;
use std::path::Path;

/// Redirects are followed this far when working out a page's final URL (the crawler's own limit).
pub const FINAL_URL_MAX_HOPS: usize = 10;

/// One stored page row: everything recorded about one fetched URL except its links (read those
/// with [`AuditDb::links_from`] or [`AuditDb::for_each_link`]). The fields a
/// [`PageRecord`](shoal_shared::record::PageRecord) holds typed come back with the same types; an
/// unknown stored spelling is [`DbError::Corrupt`] naming the row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRow {
    /// The URL requested.
    pub url: String,
    /// What kind of URL it is (stored as its spelling: `page`, `resource`, `robots`, …).
    pub kind: UrlKind,
    /// HTTP status, if an answer came.
    pub status: Option<u16>,
    /// Why no answer came, or why it is incomplete.
    pub error: Option<FetchFailure>,
    /// For redirects, the resolved Location.
    pub redirect_to: Option<String>,
    /// Link depth from the start page.
    pub depth: u16,
    /// How it was found.
    pub found_via: Discovery,
    /// The page, sitemap or redirecting URL it was found from.
    pub found_from: Option<String>,
    /// Content-Type header.
    pub content_type: Option<String>,
    /// Body bytes read (decompressed).
    pub bytes: u64,
    /// Time to the end of the body.
    pub response_ms: u64,
    /// When the request started.
    pub fetched_at: UnixMs,
    /// `<title>`.
    pub title: Option<String>,
    /// Meta description.
    pub meta_description: Option<String>,
    /// h1 texts.
    pub h1: Vec<String>,
    /// rel=canonical.
    pub canonical: Option<String>,
    /// Meta robots directives.
    pub meta_robots: Vec<String>,
    /// X-Robots-Tag values.
    pub x_robots_tag: Vec<String>,
    /// (language, URL) hreflang pairs.
    pub hreflang: Vec<(String, String)>,
    /// Selected response headers.
    pub headers: Vec<(String, String)>,
    /// Words of the main text (HTML pages).
    pub word_count: Option<u32>,
    /// Schema.org types of the page's structured data.
    pub structured_types: Vec<String>,
    /// `rel=next` target.
    pub rel_next: Option<String>,
    /// `rel=prev` target.
    pub rel_prev: Option<String>,
    /// (rule name, value) of the audit's extraction rules that found something, in rule order.
    pub extracted: Vec<(String, String)>,
    /// The AI crawlers robots.txt blocks from the URL: on pages of the site; `None` on other kinds
    /// of URL and on rows written before schema 11.
    pub ai_blocked: Option<AiBlocked>,
}

impl PageRow {
    /// A 3xx answer with a usable Location: the rows the redirect rules follow.
    #[must_use]
    pub fn is_redirect(&self) -> bool {
        matches!(self.status, Some(300..=399)) && self.redirect_to.is_some()
    }
}

/// One stored link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkRow {
    /// The page it is on.
    pub from_url: String,
    /// Where it points.
    pub to_url: String,
    /// What kind of element it is on.
    pub kind: LinkKind,
    /// Not followed because of `rel=nofollow` or a nofollow page.
    pub nofollow: bool,
    /// Within the site's scope.
    pub internal: bool,
    /// Anchor text.
    pub text: Option<String>,
    /// Only the rendered page has it (the rendered crawl, `--render`): its HTML does not.
    pub rendered: bool,
}

/// One stored finding. `code` is a string because a file written by a newer Shoal may hold codes
/// this build does not know (a report still shows them); [`FindingRow::known_code`] parses it.
/// The severities are fixed (the column's CHECK allows three), so `severity` is typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingRow {
    /// Stable snake_case code.
    pub code: String,
    /// As stored when the finding was made.
    pub severity: Severity,
    /// The URL it is about.
    pub url: String,
    /// Specifics.
    pub detail: String,
    /// Other URLs involved.
    pub related: Vec<String>,
}

impl FindingRow {
    /// The code, if this build knows it.
    #[must_use]
    pub fn known_code(&self) -> Option<Code> {
        Code::parse(&self.code)
    }
}

/// Findings of a site by severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeverityCounts {
    /// `error` findings.
    pub errors: u64,
    /// `warning` findings.
    pub warnings: u64,
    /// `notice` findings.
    pub notices: u64,
}

/// Fetched URLs of a site by status class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusClasses {
    /// 200–299.
    pub s2xx: u64,
    /// 300–399.
    pub s3xx: u64,
    /// 400–499.
    pub s4xx: u64,
    /// 500–599.
    pub s5xx: u64,
    /// Any other status (1xx, or non-standard ones such as 999).
    pub other: u64,
    /// No HTTP answer at all (the row's `error` says why).
    pub failed: u64,
}

/// Aggregates over one site, computed in SQL so a report's summary needs no pass over the rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteStats {
    /// Findings by severity.
    pub severities: SeverityCounts,
    /// URLs by status class.
    pub status_classes: StatusClasses,
    /// URLs by kind, keyed by the [`UrlKind`] spelling (`page`, `resource`, …) so the map stays
    /// sorted the way the JSON report lists it.
    pub kinds: BTreeMap<String, u64>,
    /// All fetched URLs of the site.
    pub urls: u64,
}

fn corrupt(path: &Path, what: &'static str, detail: impl Into<String>) -> DbError {
    DbError::Corrupt { path: path.to_owned(), what, detail: detail.into() }
}

fn json_list<T: serde::de::DeserializeOwned>(path: &Path, what: &'static str, text: &str) -> Result<Vec<T>, DbError> {
    serde_json::from_str(text).map_err(|e| corrupt(path, what, e.to_string()))
}

pub(super) fn audits(conn: &Connection, path: &Path, only: Option<AuditId>) -> Result<Vec<AuditSummary>, DbError> {
    let op = "list audits";
    let mut stmt = conn
        .prepare_cached(
            "SELECT a.id, a.created_at_ms, a.finished_at_ms, a.status, a.options_json, COALESCE(t.sites, 0),
                    COALESCE(t.pages, 0), COALESCE(t.urls, 0), COALESCE(t.findings, 0), COALESCE(t.sites_done, 0),
                    a.reason
             FROM audits a LEFT JOIN audit_totals t ON t.audit_id = a.id
             WHERE ?1 IS NULL OR a.id = ?1 ORDER BY a.id",
        )
        .map_err(sql_err(path, op))?;
    let mut rows = stmt.query([only.map(|a| int(a.0))]).map_err(sql_err(path, op))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(sql_err(path, op))? {
        let get = |i: usize| r.get::<_, i64>(i).map(uint);
        let status: String = r.get(3).map_err(sql_err(path, op))?;
        let id = AuditId(get(0).map_err(sql_err(path, op))?);
        out.push(AuditSummary {
            id,
            created_at: UnixMs(get(1).map_err(sql_err(path, op))?),
            finished_at: r.get::<_, Option<i64>>(2).map_err(sql_err(path, op))?.map(|v| UnixMs(uint(v))),
            status: AuditStatus::parse(&status)
                .ok_or_else(|| unknown_value(path, "audits.status", format_args!("audit {id}"), &status))?,
            options_json: r.get(4).map_err(sql_err(path, op))?,
            sites: get(5).map_err(sql_err(path, op))?,
            pages: get(6).map_err(sql_err(path, op))?,
            urls: get(7).map_err(sql_err(path, op))?,
            findings: get(8).map_err(sql_err(path, op))?,
            sites_done: get(9).map_err(sql_err(path, op))?,
            reason: r.get(10).map_err(sql_err(path, op))?,
        });
    }
    Ok(out)
}

pub(crate) fn site_from_row(r: &Row<'_>, path: &Path) -> Result<SiteSummary, DbError> {
    let op = "read sites";
    let get = |i: usize| r.get::<_, i64>(i).map(uint).map_err(sql_err(path, op));
    let status: String = r.get(3).map_err(sql_err(path, op))?;
    let id = SiteId(get(0)?);
    Ok(SiteSummary {
        id,
        audit: AuditId(get(1)?),
        start_url: r.get(2).map_err(sql_err(path, op))?,
        status: SiteStatus::parse(&status)
            .ok_or_else(|| unknown_value(path, "sites.status", format_args!("site {id}"), &status))?,
        pages: get(4)?,
        urls: get(5)?,
        findings: get(6)?,
        done_at: r.get::<_, Option<i64>>(7).map_err(sql_err(path, op))?.map(|v| UnixMs(uint(v))),
    })
}

pub(crate) const SITE_COLUMNS: &str = "id, audit_id, start_url, status, pages, urls, findings, done_at_ms";

pub(super) fn sites(conn: &Connection, path: &Path, audit: AuditId) -> Result<Vec<SiteSummary>, DbError> {
    let op = "read sites";
    let mut stmt = conn
        .prepare_cached(&format!("SELECT {SITE_COLUMNS} FROM sites WHERE audit_id = ?1 ORDER BY id"))
        .map_err(sql_err(path, op))?;
    let mut rows = stmt.query([int(audit.0)]).map_err(sql_err(path, op))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(sql_err(path, op))? {
        out.push(site_from_row(r, path)?);
    }
    Ok(out)
}

/// A page of an audit's sites in id order: those after `after`, at most `limit`.
pub(super) fn site_page(
    conn: &Connection,
    path: &Path,
    audit: AuditId,
    after: Option<SiteId>,
    limit: usize,
) -> Result<Vec<SiteSummary>, DbError> {
    let op = "read sites";
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {SITE_COLUMNS} FROM sites WHERE audit_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3"
        ))
        .map_err(sql_err(path, op))?;
    let after = after.map_or(0, |s| int(s.0));
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut rows = stmt.query(rusqlite::params![int(audit.0), after, limit]).map_err(sql_err(path, op))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(sql_err(path, op))? {
        out.push(site_from_row(r, path)?);
    }
    Ok(out)
}

const PAGE_COLUMNS: &str = "url, kind, status, error, redirect_to, depth, found_via, found_from, content_type,
    bytes, response_ms, fetched_at_ms, title, meta_description, h1_json, canonical, meta_robots_json,
    x_robots_tag_json, hreflang_json, headers_json, word_count, structured_types_json, rel_next, rel_prev,
    extracted_json, ai_blocked";

/// A stored spelling read back as its enum: `parse` is the enum's own, `row` names the row for the
/// error.
pub(crate) fn spelled<T>(
    path: &Path,
    what: &'static str,
    row: impl std::fmt::Display,
    value: &str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<T, DbError> {
    parse(value).ok_or_else(|| unknown_value(path, what, row, value))
}

fn page_from_row(r: &Row<'_>, path: &Path) -> Result<PageRow, DbError> {
    let op = "read pages";
    let e = || sql_err(path, op);
    let text = |i: usize| r.get::<_, String>(i).map_err(sql_err(path, op));
    let small = |v: Option<i64>, what: &'static str| {
        v.map(|v| u16::try_from(v).map_err(|_| corrupt(path, what, v.to_string()))).transpose()
    };
    let url: String = r.get(0).map_err(e())?;
    let error: Option<String> = r.get(3).map_err(e())?;
    Ok(PageRow {
        kind: spelled(path, "pages.kind", format_args!("page {url}"), &text(1)?, UrlKind::parse)?,
        status: small(r.get(2).map_err(e())?, "pages.status")?,
        error: error
            .map(|v| spelled(path, "pages.error", format_args!("page {url}"), &v, FetchFailure::parse))
            .transpose()?,
        redirect_to: r.get(4).map_err(e())?,
        depth: small(Some(r.get(5).map_err(e())?), "pages.depth")?.unwrap_or_default(),
        found_via: spelled(path, "pages.found_via", format_args!("page {url}"), &text(6)?, Discovery::parse)?,
        found_from: r.get(7).map_err(e())?,
        content_type: r.get(8).map_err(e())?,
        bytes: uint(r.get(9).map_err(e())?),
        response_ms: uint(r.get(10).map_err(e())?),
        fetched_at: UnixMs(uint(r.get(11).map_err(e())?)),
        title: r.get(12).map_err(e())?,
        meta_description: r.get(13).map_err(e())?,
        h1: json_list(path, "pages.h1_json", &text(14)?)?,
        canonical: r.get(15).map_err(e())?,
        meta_robots: json_list(path, "pages.meta_robots_json", &text(16)?)?,
        x_robots_tag: json_list(path, "pages.x_robots_tag_json", &text(17)?)?,
        hreflang: json_list(path, "pages.hreflang_json", &text(18)?)?,
        headers: json_list(path, "pages.headers_json", &text(19)?)?,
        word_count: r.get::<_, Option<i64>>(20).map_err(e())?.map(|w| u32::try_from(w).unwrap_or(u32::MAX)),
        structured_types: json_list(path, "pages.structured_types_json", &text(21)?)?,
        rel_next: r.get(22).map_err(e())?,
        rel_prev: r.get(23).map_err(e())?,
        extracted: match r.get::<_, Option<String>>(24).map_err(e())? {
            Some(json) => json_list(path, "pages.extracted_json", &json)?,
            None => Vec::new(),
        },
        ai_blocked: r
            .get::<_, Option<i64>>(25)
            .map_err(e())?
            .map(|bits| AiBlocked::from_bits(u32::try_from(bits).unwrap_or_default())),
        url,
    })
}

/// A finding from the columns `code, severity, url, detail, related_json`.
pub(crate) fn finding_from_row(r: &Row<'_>, path: &Path, op: &'static str) -> Result<FindingRow, DbError> {
    let related: String = r.get(4).map_err(sql_err(path, op))?;
    let code: String = r.get(0).map_err(sql_err(path, op))?;
    let url: String = r.get(2).map_err(sql_err(path, op))?;
    let severity: String = r.get(1).map_err(sql_err(path, op))?;
    Ok(FindingRow {
        severity: spelled(path, "findings.severity", format_args!("{code} on {url}"), &severity, Severity::parse)?,
        code,
        url,
        detail: r.get(3).map_err(sql_err(path, op))?,
        related: json_list(path, "findings.related_json", &related)?,
    })
}

fn link_from_row(r: &Row<'_>, path: &Path, op: &'static str) -> Result<LinkRow, DbError> {
    let e = || sql_err(path, op);
    let from_url: String = r.get(0).map_err(e())?;
    let to_url: String = r.get(1).map_err(e())?;
    let kind: String = r.get(2).map_err(e())?;
    Ok(LinkRow {
        kind: spelled(path, "links.kind", format_args!("link {from_url} -> {to_url}"), &kind, LinkKind::parse)?,
        from_url,
        to_url,
        nofollow: r.get(3).map_err(e())?,
        internal: r.get(4).map_err(e())?,
        text: r.get(5).map_err(e())?,
        rendered: r.get(6).map_err(e())?,
    })
}

impl AuditDb {
    /// One site, or `None` if there is no such site.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure.
    pub fn site(&self, site: SiteId) -> Result<Option<SiteSummary>, DbError> {
        let path = &self.path;
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {SITE_COLUMNS} FROM sites WHERE id = ?1"))
            .map_err(sql_err(path, "read a site"))?;
        let mut rows = stmt.query([int(site.0)]).map_err(sql_err(path, "read a site"))?;
        match rows.next().map_err(sql_err(path, "read a site"))? {
            Some(r) => site_from_row(r, path).map(Some),
            None => Ok(None),
        }
    }

    /// Calls `f` with every page row of a site in URL order, one row in memory at a time.
    ///
    /// `f` may call other reading methods of `self` (SQLite allows several statements at once).
    ///
    /// # Errors
    /// The first error of the query or of `f`; iteration stops there.
    pub fn for_each_page<E, F>(&self, site: SiteId, mut f: F) -> Result<(), E>
    where
        E: From<DbError>,
        F: FnMut(PageRow) -> Result<(), E>,
    {
        let path = &self.path;
        let op = "read pages";
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {PAGE_COLUMNS} FROM pages WHERE site_id = ?1 ORDER BY url"))
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query([int(site.0)]).map_err(sql_err(path, op))?;
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            f(page_from_row(r, path)?)?;
        }
        Ok(())
    }

    /// One page row, or `None` if the URL was not fetched for this site.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure.
    pub fn page(&self, site: SiteId, url: &str) -> Result<Option<PageRow>, DbError> {
        let path = &self.path;
        let op = "read a page";
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {PAGE_COLUMNS} FROM pages WHERE site_id = ?1 AND url = ?2"))
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query(params![int(site.0), url]).map_err(sql_err(path, op))?;
        match rows.next().map_err(sql_err(path, op))? {
            Some(r) => page_from_row(r, path).map(Some),
            None => Ok(None),
        }
    }

    /// The links on one page, in document order. Bounded by the crawler's links-per-page cap.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn links_from(&self, site: SiteId, from_url: &str) -> Result<Vec<LinkRow>, DbError> {
        let path = &self.path;
        let op = "read a page's links";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT from_url, to_url, kind, nofollow, internal, text, rendered FROM links
                 WHERE site_id = ?1 AND from_url = ?2 ORDER BY position",
            )
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query(params![int(site.0), from_url]).map_err(sql_err(path, op))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            out.push(link_from_row(r, path, op)?);
        }
        Ok(out)
    }

    /// Calls `f` with every link of a site, ordered by source page then document order.
    ///
    /// # Errors
    /// The first error of the query or of `f`.
    pub fn for_each_link<E, F>(&self, site: SiteId, mut f: F) -> Result<(), E>
    where
        E: From<DbError>,
        F: FnMut(LinkRow) -> Result<(), E>,
    {
        let path = &self.path;
        let op = "read links";
        let mut stmt = self
            .conn
            .prepare(
                "SELECT from_url, to_url, kind, nofollow, internal, text, rendered FROM links
                 WHERE site_id = ?1 ORDER BY from_url, position",
            )
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query([int(site.0)]).map_err(sql_err(path, op))?;
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            f(link_from_row(r, path, op)?)?;
        }
        Ok(())
    }

    /// Calls `f` with every finding of a site, ordered by severity (errors first), code, URL,
    /// detail: the order reports show them in.
    ///
    /// # Errors
    /// The first error of the query or of `f`.
    pub fn for_each_finding<E, F>(&self, site: SiteId, mut f: F) -> Result<(), E>
    where
        E: From<DbError>,
        F: FnMut(FindingRow) -> Result<(), E>,
    {
        let path = &self.path;
        let op = "read findings";
        let mut stmt = self
            .conn
            .prepare(
                "SELECT code, severity, url, detail, related_json FROM findings WHERE site_id = ?1
                 ORDER BY CASE severity WHEN 'error' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END, code, url, detail",
            )
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query([int(site.0)]).map_err(sql_err(path, op))?;
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            f(finding_from_row(r, path, op)?)?;
        }
        Ok(())
    }

    /// Where a visitor following `url`'s redirects ends up, through the site's fetched rows.
    ///
    /// `Some(url)` itself when it is not a redirect (or was not fetched); the last URL reached
    /// otherwise, which may be a URL that was not fetched (another site, disallowed, over budget).
    /// `None` when the redirects loop or go on for more than [`FINAL_URL_MAX_HOPS`] hops: there is
    /// no final URL.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn final_url(&self, site: SiteId, url: &str) -> Result<Option<String>, DbError> {
        let path = &self.path;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT redirect_to FROM pages WHERE site_id = ?1 AND url = ?2
                 AND status BETWEEN 300 AND 399 AND redirect_to IS NOT NULL",
            )
            .map_err(sql_err(path, "follow redirects"))?;
        let mut chain = vec![url.to_owned()];
        loop {
            let current = chain.last().map_or(url, String::as_str);
            let next: Option<String> = stmt
                .query_row(params![int(site.0), current], |r| r.get(0))
                .optional()
                .map_err(sql_err(path, "follow redirects"))?;
            let Some(next) = next else {
                return Ok(chain.pop());
            };
            if chain.contains(&next) || chain.len() > FINAL_URL_MAX_HOPS {
                return Ok(None);
            }
            chain.push(next);
        }
    }

    /// Counts for a site's report summary.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn site_stats(&self, site: SiteId) -> Result<SiteStats, DbError> {
        let path = &self.path;
        let sid = int(site.0);
        let mut stats = SiteStats::default();
        let mut sev = self
            .conn
            .prepare_cached("SELECT severity, COUNT(*) FROM findings WHERE site_id = ?1 GROUP BY severity")
            .map_err(sql_err(path, "count findings"))?;
        let mut rows = sev.query([sid]).map_err(sql_err(path, "count findings"))?;
        while let Some(r) = rows.next().map_err(sql_err(path, "count findings"))? {
            let name: String = r.get(0).map_err(sql_err(path, "count findings"))?;
            let n = uint(r.get(1).map_err(sql_err(path, "count findings"))?);
            match spelled(path, "findings.severity", format_args!("site {site}"), &name, Severity::parse)? {
                Severity::Error => stats.severities.errors += n,
                Severity::Warning => stats.severities.warnings += n,
                Severity::Notice => stats.severities.notices += n,
            }
        }
        let mut classes = self
            .conn
            .prepare_cached(
                "SELECT CASE WHEN status IS NULL THEN 'failed'
                             WHEN status BETWEEN 200 AND 599 THEN (status / 100) || 'xx'
                             ELSE 'other' END AS class, COUNT(*)
                 FROM pages WHERE site_id = ?1 GROUP BY class",
            )
            .map_err(sql_err(path, "count statuses"))?;
        let mut rows = classes.query([sid]).map_err(sql_err(path, "count statuses"))?;
        while let Some(r) = rows.next().map_err(sql_err(path, "count statuses"))? {
            let class: String = r.get(0).map_err(sql_err(path, "count statuses"))?;
            let n = uint(r.get(1).map_err(sql_err(path, "count statuses"))?);
            let slot = match class.as_str() {
                "2xx" => &mut stats.status_classes.s2xx,
                "3xx" => &mut stats.status_classes.s3xx,
                "4xx" => &mut stats.status_classes.s4xx,
                "5xx" => &mut stats.status_classes.s5xx,
                "failed" => &mut stats.status_classes.failed,
                _ => &mut stats.status_classes.other,
            };
            *slot += n;
            stats.urls += n;
        }
        let mut kinds = self
            .conn
            .prepare_cached("SELECT kind, COUNT(*) FROM pages WHERE site_id = ?1 GROUP BY kind")
            .map_err(sql_err(path, "count kinds"))?;
        let mut rows = kinds.query([sid]).map_err(sql_err(path, "count kinds"))?;
        while let Some(r) = rows.next().map_err(sql_err(path, "count kinds"))? {
            let kind: String = r.get(0).map_err(sql_err(path, "count kinds"))?;
            let n = uint(r.get(1).map_err(sql_err(path, "count kinds"))?);
            let kind = spelled(path, "pages.kind", format_args!("site {site}"), &kind, UrlKind::parse)?;
            stats.kinds.insert(kind.as_str().to_owned(), n);
        }
        Ok(stats)
    }
}
