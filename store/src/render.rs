//! The rendered crawl's rows (`rendered_pages`, `sites.render_json`, `links.rendered`; schema
//! version 16, issue 38): each page queued for rendering and what its render found, the
//! decision taken for the site, and the links only the rendered page has, in the link graph.
//!
//! The coordinator plans each round here ([`AuditDb::plan_render`]): which pages to render next,
//! and under `auto` the decision from the start page's two versions
//! ([`shoal_shared::render::decide`]). A page is queued once per audit: its row is written when it
//! is queued (`queued = 1`) and completed by its [`Event::Render`] (`queued = 0`), so a round
//! never queues a page again, even when its task was dropped (its lane ended) or given up.
//!
//! [`Event::Render`]: shoal_shared::record::Event::Render

use super::{AuditDb, DbError, int, sql_err, to_json};
use rusqlite::{Connection, OptionalExtension, Row, params};
use shoal_shared::browser::{Rendered, RenderedPage};
use shoal_shared::ids::SiteId;
use shoal_shared::render::{RawFacts, RenderDecision, RenderMode};
use std::path::Path;

/// Rendered links are stored after the page's own links: their positions start here, so a page's
/// raw links (positions from 0) and its rendered-only links never share a key.
const RENDERED_POSITION: u64 = 1 << 32;

/// One page of the next round: its URL and link depth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderTarget {
    pub url: String,
    pub depth: u16,
}

/// What the site's rendering looks like so far, for its report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenderSummary {
    /// The decision (`None`: the site was not rendered, `--render never`).
    pub decision: Option<RenderDecision>,
    /// Pages queued for rendering.
    pub queued: u32,
    /// Pages rendered.
    pub rendered: u32,
    /// Pages whose render failed.
    pub failed: u32,
    /// Wall time spent rendering, all pages together (ms).
    pub render_ms: u64,
    /// Requests the renders made (cache hits not counted).
    pub requests: u64,
    /// Links found only on rendered pages (in the link graph with `rendered = 1`).
    pub rendered_links: u32,
}

/// One page's render, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedRow {
    pub url: String,
    /// Still queued: its task never completed (dropped with its lane, or given up).
    pub queued: bool,
    pub final_url: Option<String>,
    pub status: Option<u16>,
    pub error: Option<String>,
    pub rendered: Option<Rendered>,
    pub render_ms: Option<u32>,
    pub requests: Option<u32>,
    pub robots_blocked: Vec<String>,
}

/// Stores one render, replacing what an earlier delivery stored, and puts the links its page
/// shows only after rendering into the link graph (`links.rendered = 1`).
pub(super) fn store(conn: &Connection, path: &Path, r: &RenderedPage) -> Result<(), DbError> {
    let site = int(r.site.0);
    conn.prepare_cached(
        "INSERT INTO rendered_pages (site_id, url, depth, queued, final_url, status, error, rendered_json, render_ms,
            requests, bytes, robots_blocked_json, blocked_json)
         VALUES (?1, ?2, 0, 0, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
         ON CONFLICT (site_id, url) DO UPDATE SET queued = 0, final_url = ?3, status = ?4, error = ?5,
            rendered_json = ?6, render_ms = ?7, requests = ?8, bytes = ?9, robots_blocked_json = ?10,
            blocked_json = ?11",
    )
    .and_then(|mut s| {
        s.execute(params![
            site,
            r.url,
            r.final_url,
            r.status,
            r.error,
            r.rendered.as_ref().map(to_json),
            r.render_ms,
            r.requests,
            int(r.bytes),
            to_json(&r.robots_blocked),
            to_json(&r.blocked),
        ])
    })
    .map_err(sql_err(path, "store a rendered page"))?;
    conn.prepare_cached("DELETE FROM links WHERE site_id = ?1 AND from_url = ?2 AND rendered = 1")
        .and_then(|mut s| s.execute(params![site, r.url]))
        .map_err(sql_err(path, "replace a rendered page's links"))?;
    // Only a page the crawl stored has a place in the link graph (its links hang off its row).
    let crawled: bool = conn
        .prepare_cached("SELECT 1 FROM pages WHERE site_id = ?1 AND url = ?2")
        .and_then(|mut s| s.query_row(params![site, r.url], |_| Ok(())).optional())
        .map_err(sql_err(path, "look up a rendered page's row"))?
        .is_some();
    if !crawled || r.rendered.is_none() {
        return Ok(());
    }
    let raw = raw_links(conn, path, r.site, &r.url)?;
    let mut insert = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO links (site_id, from_url, position, to_url, kind, nofollow, internal, text, rendered)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1)",
        )
        .map_err(sql_err(path, "prepare rendered links"))?;
    let mut seen = std::collections::HashSet::new();
    for (i, link) in r.links.iter().enumerate() {
        if link.url == r.url || raw.contains(&link.url) || !seen.insert(link.url.as_str()) {
            continue;
        }
        let position = RENDERED_POSITION + u64::try_from(i).unwrap_or(u64::MAX >> 1);
        insert
            .execute(params![
                site,
                r.url,
                int(position),
                link.url,
                link.kind.as_str(),
                link.nofollow,
                link.internal,
                link.text
            ])
            .map_err(sql_err(path, "store a rendered link"))?;
    }
    Ok(())
}

/// Every link target of the page's raw row (not the rendered ones).
pub(crate) fn raw_links(
    conn: &Connection,
    path: &Path,
    site: SiteId,
    url: &str,
) -> Result<std::collections::HashSet<String>, DbError> {
    let op = "read a page's links";
    let mut stmt = conn
        .prepare_cached("SELECT to_url FROM links WHERE site_id = ?1 AND from_url = ?2 AND rendered = 0")
        .map_err(sql_err(path, op))?;
    let rows = stmt.query_map(params![int(site.0), url], |r| r.get(0)).map_err(sql_err(path, op))?;
    rows.collect::<Result<_, _>>().map_err(sql_err(path, op))
}

/// A JSON column; one that does not parse is an error naming the column.
fn json<T: serde::de::DeserializeOwned>(r: &Row<'_>, i: usize) -> rusqlite::Result<T> {
    let text: String = r.get(i)?;
    serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e)))
}

impl AuditDb {
    /// The site's next round of the rendered crawl under `mode` with at most `budget` rendered
    /// pages per site, in one transaction: decides (`auto`: from the start page's render, once it
    /// exists; `always` at once), records the decision, marks the chosen pages queued and returns
    /// them. Empty when nothing is left to render: the site's rendering is over.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a database failure, [`DbError::Corrupt`] for a stored decision or
    /// render that does not read.
    pub fn plan_render(&mut self, site: SiteId, mode: RenderMode, budget: u32) -> Result<Vec<RenderTarget>, DbError> {
        let path = self.path.clone();
        let tx = self.conn.transaction().map_err(sql_err(&path, "begin a render plan"))?;
        let targets = plan(&tx, &path, site, mode, budget)?;
        tx.commit().map_err(sql_err(&path, "commit a render plan"))?;
        Ok(targets)
    }

    /// The site's rendering so far (`None` in `decision` for a site that was not rendered).
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn render_summary(&self, site: SiteId) -> Result<RenderSummary, DbError> {
        let path = self.path();
        let decision = decision(&self.conn, path, site)?;
        let (queued, rendered, failed, render_ms, requests): (i64, i64, i64, i64, i64) = self
            .conn
            .prepare_cached(
                "SELECT COUNT(*), COALESCE(SUM(queued = 0 AND error IS NULL), 0), COALESCE(SUM(error IS NOT NULL), 0),
                        COALESCE(SUM(render_ms), 0), COALESCE(SUM(requests), 0)
                 FROM rendered_pages WHERE site_id = ?1",
            )
            .and_then(|mut s| {
                s.query_row([int(site.0)], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            })
            .map_err(sql_err(path, "sum a site's renders"))?;
        let rendered_links: i64 = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM links WHERE site_id = ?1 AND rendered = 1")
            .and_then(|mut s| s.query_row([int(site.0)], |r| r.get(0)))
            .map_err(sql_err(path, "count rendered links"))?;
        let n = |v: i64| u32::try_from(v).unwrap_or(u32::MAX);
        Ok(RenderSummary {
            decision,
            queued: n(queued),
            rendered: n(rendered),
            failed: n(failed),
            render_ms: super::uint(render_ms),
            requests: super::uint(requests),
            rendered_links: n(rendered_links),
        })
    }

    /// Every page queued for rendering on the site, by URL, with what its render found.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure, or a stored column that does not read.
    pub fn rendered_pages(&self, site: SiteId) -> Result<Vec<RenderedRow>, DbError> {
        let path = self.path();
        let op = "read rendered pages";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT url, queued, final_url, status, error, rendered_json, render_ms, requests, robots_blocked_json
                 FROM rendered_pages WHERE site_id = ?1 ORDER BY url",
            )
            .map_err(sql_err(path, op))?;
        let rows = stmt
            .query_map([int(site.0)], |r| {
                Ok(RenderedRow {
                    url: r.get(0)?,
                    queued: r.get(1)?,
                    final_url: r.get(2)?,
                    status: r.get(3)?,
                    error: r.get(4)?,
                    rendered: r.get::<_, Option<String>>(5)?.map(|_| json(r, 5)).transpose()?,
                    render_ms: r.get(6)?,
                    requests: r.get(7)?,
                    robots_blocked: json(r, 8)?,
                })
            })
            .map_err(sql_err(path, op))?;
        rows.collect::<Result<_, _>>().map_err(sql_err(path, op))
    }
}

fn decision(conn: &Connection, path: &Path, site: SiteId) -> Result<Option<RenderDecision>, DbError> {
    let text: Option<String> = conn
        .prepare_cached("SELECT render_json FROM sites WHERE id = ?1")
        .and_then(|mut s| s.query_row([int(site.0)], |r| r.get(0)).optional())
        .map_err(sql_err(path, "read a site's render decision"))?
        .flatten();
    text.map(|t| {
        serde_json::from_str(&t).map_err(|e| DbError::Corrupt {
            path: path.to_owned(),
            what: "sites.render_json",
            detail: format!("site {site}: {e}"),
        })
    })
    .transpose()
}

fn set_decision(conn: &Connection, path: &Path, site: SiteId, d: &RenderDecision) -> Result<(), DbError> {
    conn.prepare_cached("UPDATE sites SET render_json = ?2 WHERE id = ?1")
        .and_then(|mut s| s.execute(params![int(site.0), to_json(d)]))
        .map_err(sql_err(path, "record a site's render decision"))?;
    Ok(())
}

/// The start page's render under `auto`: `Ok(None)` while it is not queued yet, and what it says
/// once its render (or its failure) is in.
enum StartRender {
    /// Not queued yet: its URL and depth, when the crawl fetched it as an HTML page.
    NotQueued(Option<RenderTarget>),
    /// Queued, no result yet (its task was dropped or given up).
    Lost,
    Failed(String),
    Done(Box<(RawFacts, Rendered)>),
}

/// The start page's row as [`start_render`] reads it: its URL, its crawl's depth and word count
/// (when crawled as an HTML page), and its render's state, error and facts.
struct StartRow {
    url: String,
    depth: Option<i64>,
    words: Option<u32>,
    queued: Option<bool>,
    error: Option<String>,
    rendered: Option<String>,
}

fn start_render(conn: &Connection, path: &Path, site: SiteId) -> Result<StartRender, DbError> {
    let op = "read the start page's render";
    let row: Option<StartRow> = conn
        .prepare_cached(
            "SELECT s.start_url, p.depth, p.word_count, r.queued, r.error, r.rendered_json
             FROM sites s
             LEFT JOIN pages p ON p.site_id = s.id AND p.url = s.start_url AND p.kind = 'page' AND p.status = 200
                AND lower(p.content_type) LIKE 'text/html%'
             LEFT JOIN rendered_pages r ON r.site_id = s.id AND r.url = s.start_url
             WHERE s.id = ?1",
        )
        .and_then(|mut s| {
            s.query_row([int(site.0)], |r| {
                Ok(StartRow {
                    url: r.get(0)?,
                    depth: r.get(1)?,
                    words: r.get(2)?,
                    queued: r.get(3)?,
                    error: r.get(4)?,
                    rendered: r.get(5)?,
                })
            })
            .optional()
        })
        .map_err(sql_err(path, op))?;
    let Some(StartRow { url, depth, words, queued, error, rendered }) = row else {
        return Ok(StartRender::NotQueued(None));
    };
    match (queued, error, rendered) {
        (None, ..) => {
            Ok(StartRender::NotQueued(depth.map(|d| RenderTarget { url, depth: u16::try_from(d).unwrap_or(u16::MAX) })))
        }
        (Some(true), ..) => Ok(StartRender::Lost),
        (Some(false), Some(e), _) => Ok(StartRender::Failed(e)),
        (Some(false), None, None) => Ok(StartRender::Failed("its DOM could not be read".to_owned())),
        (Some(false), None, Some(text)) => {
            let rendered: Rendered = serde_json::from_str(&text).map_err(|e| DbError::Corrupt {
                path: path.to_owned(),
                what: "rendered_pages.rendered_json",
                detail: format!("{url}: {e}"),
            })?;
            let links = raw_links(conn, path, site, &url)?.into_iter().collect();
            Ok(StartRender::Done(Box::new((RawFacts { url, links, words: words.unwrap_or(0) }, rendered))))
        }
    }
}

fn plan(
    conn: &Connection,
    path: &Path,
    site: SiteId,
    mode: RenderMode,
    budget: u32,
) -> Result<Vec<RenderTarget>, DbError> {
    if !shoal_shared::render::renders(mode, budget) {
        return Ok(Vec::new());
    }
    let mut decided = decision(conn, path, site)?;
    if decided.is_none() && mode == RenderMode::Always {
        decided = Some(RenderDecision::Always);
        set_decision(conn, path, site, &RenderDecision::Always)?;
    }
    if decided.is_none() {
        // auto: the start page first, then the decision from its two versions.
        let d = match start_render(conn, path, site)? {
            StartRender::NotQueued(Some(start)) => {
                mark_queued(conn, path, site, std::slice::from_ref(&start))?;
                return Ok(vec![start]);
            }
            StartRender::NotQueued(None) => RenderDecision::NotRendered {
                reason: "the start page was not crawled as an HTML page (robots.txt, an error or a redirect)"
                    .to_owned(),
            },
            StartRender::Lost => {
                RenderDecision::NotRendered { reason: "the start page's render never completed".to_owned() }
            }
            StartRender::Failed(e) => {
                RenderDecision::NotRendered { reason: format!("the start page's render failed: {e}") }
            }
            StartRender::Done(both) => shoal_shared::render::decide(&both.0, &both.1),
        };
        set_decision(conn, path, site, &d)?;
        decided = Some(d);
    }
    if !decided.as_ref().is_some_and(RenderDecision::renders_site) {
        return Ok(Vec::new());
    }
    let used: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM rendered_pages WHERE site_id = ?1")
        .and_then(|mut s| s.query_row([int(site.0)], |r| r.get(0)))
        .map_err(sql_err(path, "count a site's renders"))?;
    let left = i64::from(budget) - used;
    if left <= 0 {
        return Ok(Vec::new());
    }
    let op = "choose pages to render";
    let mut stmt = conn
        .prepare_cached(
            "SELECT p.url, p.depth FROM pages p
             WHERE p.site_id = ?1 AND p.kind = 'page' AND p.status = 200 AND lower(p.content_type) LIKE 'text/html%'
               AND NOT EXISTS (SELECT 1 FROM rendered_pages r WHERE r.site_id = p.site_id AND r.url = p.url)
             ORDER BY p.depth, p.url LIMIT ?2",
        )
        .map_err(sql_err(path, op))?;
    let targets = stmt
        .query_map(params![int(site.0), left], |r| {
            Ok(RenderTarget { url: r.get(0)?, depth: u16::try_from(r.get::<_, i64>(1)?).unwrap_or(u16::MAX) })
        })
        .map_err(sql_err(path, op))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(sql_err(path, op))?;
    mark_queued(conn, path, site, &targets)?;
    Ok(targets)
}

fn mark_queued(conn: &Connection, path: &Path, site: SiteId, targets: &[RenderTarget]) -> Result<(), DbError> {
    let mut insert = conn
        .prepare_cached("INSERT OR IGNORE INTO rendered_pages (site_id, url, depth, queued) VALUES (?1, ?2, ?3, 1)")
        .map_err(sql_err(path, "prepare queued renders"))?;
    for t in targets {
        insert.execute(params![int(site.0), t.url, t.depth]).map_err(sql_err(path, "queue a render"))?;
    }
    Ok(())
}
