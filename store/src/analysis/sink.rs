//! Where the site analysis's findings go ([`Sink`]), and the per-site copy of the links the rules
//! look up by target or kind. Below every rule family (the ones in `analysis`, `crate::hreflang`,
//! `crate::ai_crawlers`), so they write through it without importing the analysis that runs them.

use crate::{DbError, sql_err, to_json};
use rusqlite::{Connection, params};
use shoal_shared::finding::Code;
use std::path::Path;

/// Where analysis findings go: upserted as `origin = 'analysis'`, clearing `stale`. The rule
/// families kept in modules of their own (`crate::hreflang`, `crate::ai_crawlers`) write through it too.
pub(crate) struct Sink<'a> {
    pub(crate) conn: &'a Connection,
    pub(crate) path: &'a Path,
    pub(crate) site: i64,
    /// `temp.site_links` holds this site's links (see [`Sink::links`]).
    links_copied: std::cell::Cell<bool>,
}

impl<'a> Sink<'a> {
    /// The sink of one site's analysis; makes sure `temp.site_links` exists (empty) before any
    /// statement that names it is prepared.
    pub(crate) fn new(conn: &'a Connection, path: &'a Path, site: i64) -> Result<Self, DbError> {
        create_site_links(conn, path)?;
        Ok(Sink { conn, path, site, links_copied: std::cell::Cell::new(false) })
    }

    /// Empties the site's link copy if a rule made one, so the table holds one site at a time.
    pub(crate) fn empty_links(&self) -> Result<(), DbError> {
        if self.links_copied.get() {
            self.conn
                .prepare_cached("DELETE FROM temp.site_links")
                .and_then(|mut s| s.execute([]))
                .map_err(sql_err(self.path, "empty the site's link copy"))?;
        }
        Ok(())
    }

    /// Copies the site's links into `temp.site_links` the first time a rule needs them. A rule
    /// asks only when it has something to look up (a broken URL, a redirect, a sitemap entry, a
    /// canonical): on a healthy site the copy, three B-tree inserts per link and as many deletes,
    /// was most of the analysis.
    pub(crate) fn links(&self) -> Result<(), DbError> {
        if !self.links_copied.get() {
            copy_site_links(self.conn, self.path, self.site)?;
            self.links_copied.set(true);
        }
        Ok(())
    }

    /// Whether the site has a row for which `sql` (one `?1`, the site) finds one.
    pub(crate) fn any(&self, sql: &str) -> Result<bool, DbError> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut s| s.query_row([self.site], |r| r.get(0)))
            .map_err(sql_err(self.path, "check what the analysis has to look at"))
    }

    pub(crate) fn emit(&self, code: Code, url: &str, detail: &str, related: &[&str]) -> Result<(), DbError> {
        self.conn
            .prepare_cached(
                "INSERT INTO findings (site_id, code, severity, url, detail, related_json, origin, stale)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'analysis', 0)
                 ON CONFLICT (site_id, code, url, detail) DO UPDATE
                    SET related_json = excluded.related_json, stale = 0
                    WHERE findings.origin = 'analysis'",
            )
            .and_then(|mut s| {
                s.execute(params![self.site, code.as_str(), code.severity().as_str(), url, detail, to_json(related),])
            })
            .map(drop)
            .map_err(sql_err(self.path, "store an analysis finding"))
    }
}

/// `temp.site_links`, indexed by target and by kind: what the rules below look links up by. Filled
/// for one site at a time ([`Sink::links`]), in memory or a temporary file, never written to the
/// audit database or its log. Exists (empty) before any statement that names it is prepared.
fn create_site_links(conn: &Connection, path: &Path) -> Result<(), DbError> {
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS site_links (
             from_url TEXT NOT NULL, to_url TEXT NOT NULL, kind TEXT NOT NULL, internal INTEGER NOT NULL);
         CREATE INDEX IF NOT EXISTS temp.site_links_by_target ON site_links (to_url, internal);
         CREATE INDEX IF NOT EXISTS temp.site_links_by_kind ON site_links (kind, to_url);",
    )
    .map_err(sql_err(path, "create the site's link copy"))
}

/// Copies the site's links into `temp.site_links`.
fn copy_site_links(conn: &Connection, path: &Path, site: i64) -> Result<(), DbError> {
    conn.prepare_cached(
        "INSERT INTO temp.site_links (from_url, to_url, kind, internal)
         SELECT from_url, to_url, kind, internal FROM main.links WHERE site_id = ?1",
    )
    .and_then(|mut s| s.execute([site]))
    .map(drop)
    .map_err(sql_err(path, "copy the site's links"))
}
