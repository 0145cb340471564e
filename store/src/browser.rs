//! The browser check's rows (`browser_pages`, schema version 6): written by the apply path from
//! [`Event::Browser`](shoal_shared::record::Event::Browser), read back for the reports, and the
//! choice of pages to open after a site's crawl.

use super::{AuditDb, DbError, int, sql_err, to_json};
use rusqlite::{Connection, Row, params};
use shoal_shared::browser::{BrowserPage, Consent, Keyboard, Vitals};
use shoal_shared::ids::{AuditId, SiteId};
use std::path::Path;

/// Stores one page, replacing what an earlier delivery of it stored (applying is idempotent).
pub(super) fn store(conn: &Connection, path: &Path, p: &BrowserPage) -> Result<(), DbError> {
    let v = &p.vitals;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO browser_pages (site_id, url, final_url, status, error, lcp_ms, cls_milli, inp_ms,
            tbt_ms, fcp_ms, ttfb_ms, resources_json, third_party_json, blocked_json, axe_json, keyboard_json,
            consent_json, desktop_jpeg, phone_jpeg, rendered_json, robots_blocked_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
    )
    .and_then(|mut s| {
        s.execute(params![
            int(p.site.0),
            p.url,
            p.final_url,
            p.status,
            p.error,
            v.lcp_ms,
            v.cls_milli,
            v.inp_ms,
            v.tbt_ms,
            v.fcp_ms,
            v.ttfb_ms,
            to_json(&p.resources),
            to_json(&p.third_party_hosts),
            to_json(&p.blocked),
            to_json(&p.axe),
            to_json(&p.keyboard),
            to_json(&p.consent),
            p.desktop_jpeg,
            p.phone_jpeg,
            p.rendered.as_ref().map(to_json),
            to_json(&p.robots_blocked),
        ])
    })
    .map_err(sql_err(path, "store a browser page"))?;
    Ok(())
}

/// A JSON column; one that does not parse is an error naming the column, not an empty value.
fn json<T: serde::de::DeserializeOwned>(r: &Row<'_>, i: usize) -> rusqlite::Result<T> {
    let text: String = r.get(i)?;
    serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e)))
}

fn row(audit: AuditId, site: SiteId, r: &Row<'_>) -> rusqlite::Result<BrowserPage> {
    Ok(BrowserPage {
        audit,
        site,
        url: r.get(0)?,
        final_url: r.get(1)?,
        status: r.get(2)?,
        error: r.get(3)?,
        vitals: Vitals {
            lcp_ms: r.get(4)?,
            cls_milli: r.get(5)?,
            inp_ms: r.get(6)?,
            tbt_ms: r.get(7)?,
            fcp_ms: r.get(8)?,
            ttfb_ms: r.get(9)?,
        },
        resources: json(r, 10)?,
        third_party_hosts: json(r, 11)?,
        blocked: json(r, 12)?,
        axe: json(r, 13)?,
        keyboard: json::<Keyboard>(r, 14)?,
        consent: json::<Consent>(r, 15)?,
        desktop_jpeg: r.get(16)?,
        phone_jpeg: r.get(17)?,
        rendered: r.get::<_, Option<String>>(18)?.map(|_| json(r, 18)).transpose()?,
        robots_blocked: json(r, 19)?,
        // Not a column: such a page's `error` says how much memory it took, and its finding
        // (`browser_memory_exceeded`) is stored with the audit's other findings.
        memory_exceeded_mib: None,
    })
}

impl AuditDb {
    /// What the browser check saw on the site's pages, by URL, screenshots included.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn browser_pages(&self, audit: AuditId, site: SiteId) -> Result<Vec<BrowserPage>, DbError> {
        let path = self.path();
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT url, final_url, status, error, lcp_ms, cls_milli, inp_ms, tbt_ms, fcp_ms, ttfb_ms,
                    resources_json, third_party_json, blocked_json, axe_json, keyboard_json, consent_json,
                    desktop_jpeg, phone_jpeg, rendered_json, robots_blocked_json
                 FROM browser_pages WHERE site_id = ?1 ORDER BY url",
            )
            .map_err(sql_err(path, "prepare browser pages"))?;
        let rows =
            stmt.query_map([int(site.0)], |r| row(audit, site, r)).map_err(sql_err(path, "read browser pages"))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(sql_err(path, "read a browser page"))
    }

    /// The pages the browser check opens for a site after its crawl, at most `n`: its start page
    /// (if it was crawled: robots.txt let us fetch it), then the pages with the most inbound
    /// internal links (from other pages) among those crawled with status 200 and HTML. None when
    /// the start page was not crawled.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn browser_targets(&self, site: SiteId, n: usize) -> Result<Vec<String>, DbError> {
        let path = self.path();
        if n == 0 {
            return Ok(Vec::new());
        }
        let start: Option<String> = self
            .conn
            .prepare_cached(
                "SELECT s.start_url FROM sites s JOIN pages p ON p.site_id = s.id AND p.url = s.start_url
                 WHERE s.id = ?1 AND p.status IS NOT NULL",
            )
            .and_then(|mut s| {
                let mut rows = s.query([int(site.0)])?;
                rows.next()?.map(|r| r.get(0)).transpose()
            })
            .map_err(sql_err(path, "look up the start page"))?;
        let Some(start) = start else { return Ok(Vec::new()) };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT p.url FROM pages p
                 JOIN links l ON l.site_id = p.site_id AND l.to_url = p.url AND l.internal = 1 AND l.from_url <> p.url
                 WHERE p.site_id = ?1 AND p.kind = 'page' AND p.status = 200 AND p.url <> ?2
                   AND lower(p.content_type) LIKE 'text/html%'
                 GROUP BY p.url ORDER BY COUNT(DISTINCT l.from_url) DESC, p.url LIMIT ?3",
            )
            .map_err(sql_err(path, "prepare browser targets"))?;
        let limit = i64::try_from(n - 1).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![int(site.0), start, limit], |r| r.get::<_, String>(0))
            .map_err(sql_err(path, "choose browser pages"))?;
        let mut out = vec![start];
        for r in rows {
            out.push(r.map_err(sql_err(path, "choose browser pages"))?);
        }
        Ok(out)
    }
}
