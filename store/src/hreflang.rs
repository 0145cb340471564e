//! hreflang in the audit database (issue 37): the alternates every record stated (table
//! `hreflang`, schema version 10), and the site-level rules that judge them once the site is done.
//!
//! A page's set is everything stated about it: its `<link>` elements (`html`), its `Link` header
//! (`header`) and the `<xhtml:link>`s of any sitemap entry whose `<loc>` it is (`sitemap`).
//!
//! - **The set's own rules** (`shoal_shared::hreflang::judge_set`): `hreflang_invalid_code`,
//!   `hreflang_conflict`, `hreflang_self_missing`, `hreflang_x_default_missing`, on the page.
//! - **The alternates' answers**, for alternates that were crawled (on the site, allowed, within
//!   the budgets): `hreflang_target_error` (4xx, 5xx, no answer), `hreflang_target_redirect`,
//!   `hreflang_target_noindex`, `hreflang_target_canonicalised` (its canonical names another
//!   URL: the `canonical` link record the worker keeps only then), each on the page with the
//!   alternate as `related`.
//! - **Return links**: an alternate that answers 200 and has none of the problems above must
//!   name the page back in its own set, or the page gets `hreflang_return_missing`.
//!
//! Details start with the alternate's URL (or the value at fault): that is the finding's identity
//! when two audits are compared (`Code::identity`). Bounded: a page's set is judged from at most
//! [`MAX_SET`] rows, and every rule reads each row once.

use super::analysis::sink::Sink;
use super::{DbError, int, sql_err};
use rusqlite::{Connection, params};
use shoal_shared::finding::Code;
use shoal_shared::hreflang::judge_set;
use shoal_shared::record::PageRecord;
use std::path::Path;

/// Rows of one page's set judged at most (a page reads 1,000 `<link>`s and 1,000 header
/// alternates; sitemaps may add more).
pub const MAX_SET: usize = 10_000;

/// Replaces the rows `p` stated (a record delivered again states them anew).
pub(super) fn store(conn: &Connection, path: &Path, p: &PageRecord, replaced: bool) -> Result<(), DbError> {
    let site = int(p.site.0);
    if replaced {
        conn.prepare_cached("DELETE FROM hreflang WHERE site_id = ?1 AND found_in = ?2")
            .and_then(|mut s| s.execute(params![site, p.url]))
            .map_err(sql_err(path, "replace a record's hreflang rows"))?;
    }
    let rows = p
        .hreflang
        .iter()
        .map(|(lang, target)| (p.url.as_str(), "html", lang, target))
        .chain(p.hreflang_header.iter().map(|(lang, target)| (p.url.as_str(), "header", lang, target)))
        .chain(p.sitemap_hreflang.iter().flat_map(|entry| {
            entry.alternates.iter().map(|(lang, target)| (entry.page.as_str(), "sitemap", lang, target))
        }));
    let mut insert = None;
    for (i, (page, source, lang, target)) in rows.enumerate() {
        let stmt = match &mut insert {
            Some(s) => s,
            None => insert.insert(
                conn.prepare_cached(
                    "INSERT OR REPLACE INTO hreflang (site_id, found_in, position, page_url, source, lang, target)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(sql_err(path, "prepare hreflang insert"))?,
            ),
        };
        let position = int(u64::try_from(i).unwrap_or(u64::MAX));
        stmt.execute(params![site, p.url, position, page, source, lang, target])
            .map_err(sql_err(path, "store an hreflang row"))?;
    }
    Ok(())
}

/// Runs the rules of the module documentation for the sink's site.
pub(super) fn analyse(sink: &Sink<'_>) -> Result<(), DbError> {
    if !sink.any("SELECT EXISTS (SELECT 1 FROM hreflang WHERE site_id = ?1)")? {
        return Ok(());
    }
    sets(sink)?;
    copy_site_rows(sink)?;
    let result = targets(sink);
    sink.conn
        .prepare_cached("DELETE FROM temp.site_hreflang")
        .and_then(|mut s| s.execute([]))
        .map_err(sql_err(sink.path, "empty the site's hreflang copy"))?;
    result
}

/// Each page's set, streamed in page order.
fn sets(sink: &Sink<'_>) -> Result<(), DbError> {
    let (path, op) = (sink.path, "read hreflang sets");
    let mut stmt = sink
        .conn
        .prepare_cached(
            "SELECT page_url, lang, target FROM hreflang WHERE site_id = ?1 ORDER BY page_url, found_in, position",
        )
        .map_err(sql_err(path, op))?;
    let mut rows = stmt.query([sink.site]).map_err(sql_err(path, op))?;
    let mut page: Option<String> = None;
    let mut entries: Vec<(String, String)> = Vec::new();
    while let Some(row) = rows.next().map_err(sql_err(path, op))? {
        let url: String = row.get(0).map_err(sql_err(path, op))?;
        if page.as_deref() != Some(url.as_str()) {
            if let Some(done) = page.take() {
                judge(sink, &done, &entries)?;
            }
            entries.clear();
            page = Some(url);
        }
        if entries.len() < MAX_SET {
            entries.push((row.get(1).map_err(sql_err(path, op))?, row.get(2).map_err(sql_err(path, op))?));
        }
    }
    match page {
        Some(done) => judge(sink, &done, &entries),
        None => Ok(()),
    }
}

fn judge(sink: &Sink<'_>, page: &str, entries: &[(String, String)]) -> Result<(), DbError> {
    for f in judge_set(page, entries) {
        let related: Vec<&str> = f.related.iter().map(String::as_str).collect();
        sink.emit(f.code, page, &f.detail, &related)?;
    }
    Ok(())
}

/// The site's rows, indexed by page and by target, in a temporary table (never written to the
/// audit database or its log).
fn copy_site_rows(sink: &Sink<'_>) -> Result<(), DbError> {
    sink.conn
        .execute_batch(
            "CREATE TEMP TABLE IF NOT EXISTS site_hreflang (page_url TEXT NOT NULL, lang TEXT NOT NULL, target TEXT NOT NULL);
             CREATE INDEX IF NOT EXISTS temp.site_hreflang_by_page ON site_hreflang (page_url, target);",
        )
        .map_err(sql_err(sink.path, "create the site's hreflang copy"))?;
    sink.conn
        .prepare_cached(
            "INSERT INTO temp.site_hreflang (page_url, lang, target)
             SELECT page_url, lang, target FROM main.hreflang WHERE site_id = ?1",
        )
        .and_then(|mut s| s.execute([sink.site]))
        .map(drop)
        .map_err(sql_err(sink.path, "copy the site's hreflang rows"))
}

/// One crawled alternate of a page, as the pages table has it.
struct Target {
    page: String,
    lang: String,
    url: String,
    status: Option<i64>,
    error: Option<String>,
    redirect_to: Option<String>,
    /// Its canonical when the worker found it names another URL (a `canonical` link record: the
    /// crawler's own normalisation and `--strip-query` already applied).
    canonical_elsewhere: Option<String>,
    noindex: bool,
}

impl Target {
    /// The finding the alternate's answer calls for, if any (with its detail's tail).
    fn problem(&self) -> Option<(Code, String)> {
        match (self.status, &self.error) {
            (Some(s), _) if s >= 400 => Some((Code::HreflangTargetError, format!("answers {s}"))),
            (None, Some(e)) => Some((Code::HreflangTargetError, format!("gets no answer ({e})"))),
            (Some(300..=399), _) => Some((
                Code::HreflangTargetRedirect,
                format!("redirects to {}", self.redirect_to.as_deref().unwrap_or("nowhere")),
            )),
            (Some(200..=299), _) if self.noindex => Some((Code::HreflangTargetNoindex, "is noindex".to_owned())),
            (Some(200..=299), _) => self
                .canonical_elsewhere
                .as_ref()
                .map(|c| (Code::HreflangTargetCanonicalised, format!("declares {c} as its canonical"))),
            _ => None,
        }
    }
}

/// The alternates' answers and return links, streamed (a site's rows are never all in memory).
fn targets(sink: &Sink<'_>) -> Result<(), DbError> {
    let (path, op) = (sink.path, "read crawled hreflang alternates");
    let mut stmt = sink
        .conn
        .prepare_cached(
            "SELECT DISTINCT h.page_url, h.lang, h.target, p.status, p.error, p.redirect_to,
                    (SELECT l.to_url FROM links l WHERE l.site_id = ?1 AND l.from_url = h.target
                       AND l.kind = 'canonical' LIMIT 1),
                    (p.meta_robots_json LIKE '%noindex%' OR p.meta_robots_json LIKE '%\"none\"%'
                     OR lower(p.x_robots_tag_json) LIKE '%noindex%')
             FROM temp.site_hreflang h JOIN pages p ON p.site_id = ?1 AND p.url = h.target
             WHERE h.target <> h.page_url
             ORDER BY h.page_url, h.target, h.lang",
        )
        .map_err(sql_err(path, op))?;
    let mut rows = stmt.query([sink.site]).map_err(sql_err(path, op))?;
    let mut returns = sink
        .conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM temp.site_hreflang WHERE page_url = ?1 AND target = ?2)")
        .map_err(sql_err(path, "prepare the return link query"))?;
    while let Some(r) = rows.next().map_err(sql_err(path, op))? {
        let read = |r: &rusqlite::Row<'_>| -> rusqlite::Result<Target> {
            Ok(Target {
                page: r.get(0)?,
                lang: r.get(1)?,
                url: r.get(2)?,
                status: r.get(3)?,
                error: r.get(4)?,
                redirect_to: r.get(5)?,
                canonical_elsewhere: r.get(6)?,
                noindex: r.get(7)?,
            })
        };
        let t = read(r).map_err(sql_err(path, op))?;
        let lang: String = t.lang.chars().take(40).collect();
        let (code, tail) = match t.problem() {
            Some(problem) => problem,
            None if matches!(t.status, Some(200..=299)) => {
                let back: bool = returns
                    .query_row(params![t.url, t.page], |r| r.get(0))
                    .map_err(sql_err(path, "find return links"))?;
                if back {
                    continue;
                }
                (Code::HreflangReturnMissing, "does not name this page among its alternates".to_owned())
            }
            None => continue,
        };
        sink.emit(code, &t.page, &format!("{} ({lang}) {tail}", t.url), &[t.url.as_str()])?;
    }
    Ok(())
}
