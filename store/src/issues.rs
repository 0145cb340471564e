//! Reading findings as issues: grouped by code per site, their URLs page by page, and the facts
//! the batch overview groups sites by (start page's `Server` header, WordPress, the same failing
//! external URL), plus each site's partner in an earlier audit for score trends.
//!
//! Everything here is an aggregate SQL can compute along an index, so the overview of an audit of
//! 10,000 sites reads one row per (site, code) instead of every finding:
//! - `(site_id, code, url, detail)` (the findings' unique index) gives the groups, their distinct
//!   URLs and one group's findings in URL order without a sort;
//! - `sites_by_audit` and `pages_by_kind` find a site's rows of a kind.
//!
//! No new table or column: the overview is computed from what every audit database already holds,
//! which is also what keeps a health score the same for the same data (see the report crate).

use crate::cursor::Previous;
use crate::read::finding_from_row;
use crate::{AuditDb, DbError, FindingRow, SiteStatus, int, sql_err, uint};
use rusqlite::{Row, params};
use shoal_shared::finding::Severity;
use shoal_shared::ids::{AuditId, SiteId};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The findings of one code on one site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueCount {
    /// The site.
    pub site: SiteId,
    /// The code as stored (a newer Shoal may have written codes this build does not know).
    pub code: String,
    /// The worst severity stored for the code on this site (normally every finding of a code has
    /// the same one).
    pub severity: Severity,
    /// Distinct URLs with a finding of this code.
    pub urls: u64,
    /// Findings of this code (one URL can have several, e.g. `invalid_link`).
    pub findings: u64,
}

/// Parses a stored severity (the column's CHECK allows only these three).
fn severity(path: &Path, s: &str) -> Result<Severity, DbError> {
    match s {
        "error" => Ok(Severity::Error),
        "warning" => Ok(Severity::Warning),
        "notice" => Ok(Severity::Notice),
        other => Err(DbError::Corrupt { path: path.to_owned(), what: "findings.severity", detail: other.to_owned() }),
    }
}

/// The worst stored severity first: `MIN` over this orders error < warning < notice.
const RANK: &str = "MIN(CASE f.severity WHEN 'error' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END)";

fn issue_from_row(r: &Row<'_>, path: &Path) -> Result<IssueCount, DbError> {
    let op = "read issue counts";
    let rank: i64 = r.get(2).map_err(sql_err(path, op))?;
    let sev = match rank {
        0 => "error",
        1 => "warning",
        _ => "notice",
    };
    Ok(IssueCount {
        site: SiteId(uint(r.get(0).map_err(sql_err(path, op))?)),
        code: r.get(1).map_err(sql_err(path, op))?,
        severity: severity(path, sev)?,
        urls: uint(r.get(3).map_err(sql_err(path, op))?),
        findings: uint(r.get(4).map_err(sql_err(path, op))?),
    })
}

/// Kinds of the WordPress probes, which the crawler sends only to sites that look like WordPress.
const WORDPRESS_PROBES: &str = "('probe_wp_json', 'probe_wp_xmlrpc', 'probe_wp_uploads', 'probe_wp_p1')";

impl AuditDb {
    /// Every site's findings of an audit grouped by code, ordered by site then code.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure.
    pub fn issue_counts(&self, audit: AuditId) -> Result<Vec<IssueCount>, DbError> {
        self.issue_rows(
            "FROM sites s JOIN findings f ON f.site_id = s.id
             WHERE s.audit_id = ?1 GROUP BY f.site_id, f.code ORDER BY f.site_id, f.code",
            int(audit.0),
        )
    }

    /// One site's findings grouped by code, ordered by code.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure.
    pub fn site_issue_counts(&self, site: SiteId) -> Result<Vec<IssueCount>, DbError> {
        self.issue_rows("FROM findings f WHERE f.site_id = ?1 GROUP BY f.code ORDER BY f.code", int(site.0))
    }

    /// Issue counts selected by `rest` (the query after its column list) for the id `param`.
    fn issue_rows(&self, rest: &str, param: i64) -> Result<Vec<IssueCount>, DbError> {
        let path = &self.path;
        let op = "read issue counts";
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT f.site_id, f.code, {RANK}, COUNT(DISTINCT f.url), COUNT(*) {rest}"))
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query([param]).map_err(sql_err(path, op))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            out.push(issue_from_row(r, path)?);
        }
        Ok(out)
    }

    /// Calls `f` with the findings of one code on one site in URL (then detail) order, starting at
    /// the `offset`-th and at most `limit` of them: one page of an issue group's URLs, read along
    /// the findings' unique index.
    ///
    /// # Errors
    /// The first error of the query or of `f`.
    pub fn for_each_issue_finding<E, F>(
        &self,
        site: SiteId,
        code: &str,
        offset: u64,
        limit: u64,
        mut f: F,
    ) -> Result<(), E>
    where
        E: From<DbError>,
        F: FnMut(FindingRow) -> Result<(), E>,
    {
        let path = &self.path;
        let op = "read an issue's findings";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT code, severity, url, detail, related_json FROM findings
                 WHERE site_id = ?1 AND code = ?2 ORDER BY url, detail LIMIT ?3 OFFSET ?4",
            )
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query(params![int(site.0), code, int(limit), int(offset)]).map_err(sql_err(path, op))?;
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            f(finding_from_row(r, path, op)?)?;
        }
        Ok(())
    }

    /// Per site of an audit, its pages (kind `page`) that answered 2xx: a site without any was not
    /// crawled at all (unreachable, robots.txt, a redirect away) and gets no health score. Sites
    /// with none are absent from the map.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn answered_pages(&self, audit: AuditId) -> Result<HashMap<SiteId, u64>, DbError> {
        let path = &self.path;
        let op = "count answered pages";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT p.site_id, COUNT(*) FROM sites s JOIN pages p ON p.site_id = s.id AND p.kind = 'page'
                 WHERE s.audit_id = ?1 AND p.status BETWEEN 200 AND 299 GROUP BY p.site_id",
            )
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query([int(audit.0)]).map_err(sql_err(path, op))?;
        let mut out = HashMap::new();
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            out.insert(SiteId(uint(r.get(0).map_err(sql_err(path, op))?)), uint(r.get(1).map_err(sql_err(path, op))?));
        }
        Ok(out)
    }

    /// [`answered_pages`](AuditDb::answered_pages) for one site.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn site_answered_pages(&self, site: SiteId) -> Result<u64, DbError> {
        self.conn
            .prepare_cached(
                "SELECT COUNT(*) FROM pages WHERE site_id = ?1 AND kind = 'page' AND status BETWEEN 200 AND 299",
            )
            .and_then(|mut s| s.query_row([int(site.0)], |r| r.get::<_, i64>(0)))
            .map(uint)
            .map_err(sql_err(&self.path, "count answered pages"))
    }

    /// Each site of `audit` paired with the site of the same start URL in the latest earlier audit
    /// that has that start URL (the `nth` with the `nth` when an audit lists it several times),
    /// the rule of [`Reader::previous_site`](crate::cursor::Reader::previous_site), for all sites
    /// at once. Sites without an earlier audit are absent.
    ///
    /// Earlier audits are read newest first, one site list each, until every start URL is paired
    /// or none is left: a recurring audit is paired by reading the one before it.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure.
    pub fn previous_sites(&self, audit: AuditId) -> Result<HashMap<SiteId, Previous>, DbError> {
        let mut wanted: BTreeMap<String, Vec<SiteId>> = BTreeMap::new();
        for s in self.site_counts(audit)? {
            wanted.entry(s.start_url).or_default().push(s.id);
        }
        let earlier: Vec<i64> = self
            .conn
            .prepare_cached("SELECT id FROM audits WHERE id < ?1 ORDER BY id DESC")
            .and_then(|mut s| s.query_map([int(audit.0)], |r| r.get(0)).and_then(Iterator::collect))
            .map_err(sql_err(&self.path, "list earlier audits"))?;
        let mut out = HashMap::new();
        for id in earlier {
            if wanted.is_empty() {
                break;
            }
            let before = AuditId(uint(id));
            let mut theirs: BTreeMap<String, Vec<(SiteId, SiteStatus)>> = BTreeMap::new();
            for s in self.site_counts(before)? {
                if wanted.contains_key(&s.start_url) {
                    theirs.entry(s.start_url).or_default().push((s.id, s.status));
                }
            }
            for (url, old) in theirs {
                for (new, (site, status)) in wanted.remove(&url).unwrap_or_default().into_iter().zip(old) {
                    out.insert(new, Previous { audit: before, site, status });
                }
            }
        }
        Ok(out)
    }

    /// The `Server` header each site's start page answered with, for sites that sent one.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure.
    pub fn start_servers(&self, audit: AuditId) -> Result<Vec<(SiteId, String)>, DbError> {
        let path = &self.path;
        let op = "read start pages' headers";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.id, p.headers_json FROM sites s JOIN pages p ON p.site_id = s.id AND p.url = s.start_url
                 WHERE s.audit_id = ?1 ORDER BY s.id",
            )
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query([int(audit.0)]).map_err(sql_err(path, op))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            let site = SiteId(uint(r.get(0).map_err(sql_err(path, op))?));
            let json: String = r.get(1).map_err(sql_err(path, op))?;
            let headers: Vec<(String, String)> = serde_json::from_str(&json).map_err(|e| DbError::Corrupt {
                path: path.clone(),
                what: "pages.headers_json",
                detail: e.to_string(),
            })?;
            if let Some((_, v)) = headers.into_iter().find(|(n, v)| n == "server" && !v.trim().is_empty()) {
                out.push((site, v.trim().to_owned()));
            }
        }
        Ok(out)
    }

    /// The sites of an audit that looked like WordPress to the crawler (it sent them the WordPress
    /// probes, SPEC §2), in id order.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn wordpress_sites(&self, audit: AuditId) -> Result<Vec<SiteId>, DbError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT s.id FROM sites s WHERE s.audit_id = ?1 AND EXISTS
                    (SELECT 1 FROM pages p WHERE p.site_id = s.id AND p.kind IN {WORDPRESS_PROBES})
                 ORDER BY s.id"
            ))
            .and_then(|mut s| s.query_map([int(audit.0)], |r| r.get::<_, i64>(0)).and_then(Iterator::collect))
            .map(|ids: Vec<i64>| ids.into_iter().map(|i| SiteId(uint(i))).collect())
            .map_err(sql_err(&self.path, "find WordPress sites"))
    }

    /// The URLs of one code's findings on every site of an audit, as `(site, url)` in site then
    /// URL order (distinct per site): what finds one failing external URL behind many sites'
    /// findings.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn code_urls(&self, audit: AuditId, code: &str) -> Result<Vec<(SiteId, String)>, DbError> {
        self.conn
            .prepare_cached(
                "SELECT DISTINCT f.site_id, f.url FROM sites s JOIN findings f ON f.site_id = s.id AND f.code = ?2
                 WHERE s.audit_id = ?1 ORDER BY f.site_id, f.url",
            )
            .and_then(|mut s| {
                s.query_map(params![int(audit.0), code], |r| Ok((SiteId(uint(r.get(0)?)), r.get(1)?)))
                    .and_then(Iterator::collect)
            })
            .map_err(sql_err(&self.path, "read a code's URLs"))
    }
}
