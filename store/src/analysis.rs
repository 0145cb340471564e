//! Site-level analysis: findings that need every page of a site, computed once the site is done.
//!
//! Per-page findings (missing title, noindex, …) come from the workers as `Finding` events; the
//! codes here can only be decided by looking across pages, so the database computes them when the
//! site's `SiteDone` event is applied, inside the same transaction:
//!
//! - **`broken_internal_link` / `broken_resource`**: a URL of the site (any kind except `robots`
//!   and `probe_*`) answering `>= 400`, or not answering at all (no status, an error), that at
//!   least one crawled page links to with an internal link. `url` is the broken URL, `detail` its
//!   status (`"404"`) or error (`"timeout"`), `related` the linking pages (sorted, distinct, at most
//!   [`RELATED_CAP`]). It is `broken_resource` when every link to it is of a resource kind
//!   ([`RESOURCE_LINK_KINDS`]), `broken_internal_link` otherwise.
//! - **`redirect_chain` / `redirect_loop`**: for each redirecting URL (3xx with a `redirect_to`)
//!   that is a start URL or linked to, follow `redirect_to` through the site's `pages` rows. More
//!   than one hop before a non-redirect (or a URL that was not fetched) is a chain: `detail` is
//!   `"N hops"`, `related` the chain from the first URL to the last. Coming back to a URL already in
//!   the chain is a loop: `related` is the chain ending with the repeated URL. Chains are reported
//!   from their head: URLs that are not themselves the target of a crawled redirect go first, and a
//!   URL already inside a reported chain starts no report of its own (so `a → b → c` with `a` and
//!   `b` both linked is reported once, from `a`; a loop nobody redirects into is reported from its
//!   smallest linked URL).
//! - **`title_duplicate` / `description_duplicate`**: HTML pages (kind `page`, status 200,
//!   `text/html` or `application/xhtml+xml`) sharing exactly the same non-blank title or meta
//!   description: one finding per page, `detail` the shared value (first
//!   [`DUPLICATE_DETAIL_CHARS`] characters), `related` the other pages (sorted, at most
//!   [`RELATED_CAP`]).
//!
//! - **hreflang** (`hreflang_*`): each page's set of alternates, the alternates' answers and their
//!   return links, in `crate::hreflang` (its own family, its own table).
//!
//! - **`content_duplicate` / `content_near_duplicate` / `pagination_broken`**: see `analysis/content.rs`
//!   (the main text's fingerprints, and what `rel=next` / `rel=prev` targets answered).
//!
//! The crawl stores links clustered by their source page only; the rules that look links up by
//! target or kind read a per-site copy, `temp.site_links`, indexed once when the site ends
//! (migration 5 explains why), and only if a rule has something to look up there (a broken URL, a
//! redirect, a sitemap entry, a canonical). It is emptied again afterwards, so it holds one site
//! at a time.
//!
//! - **`ai_crawlers_inconsistent`**: see [`crate::ai_crawlers`].
//!
//! - **raw against rendered** (`rendered_*`): the pages the browser check opened, their HTML's
//!   facts against their rendered DOM's, in [`rendered`].
//!
//! Idempotent: the findings this module wrote before for the site (`origin = 'analysis'`) are
//! marked stale, the ones produced again are kept with their ids (their `related` refreshed), and
//! the rest are deleted. A finding a worker already reported with the same key is left alone.

use super::{DbError, int, sql_err};
use rusqlite::{Connection, params};
use shoal_shared::finding::Code;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::LinkKind;
use std::collections::{HashMap, HashSet};
use std::path::Path;

mod content;
pub mod rendered;
pub(crate) mod sink;
pub use content::LimitsCache;
use shoal_shared::content::ContentLimits;
use sink::Sink;

/// At most this many URLs in a finding's `related` list, so one finding stays small on a site
/// where thousands of pages link to the same broken URL.
pub const RELATED_CAP: usize = 100;

/// Duplicate titles and descriptions are quoted in `detail` up to this many characters.
pub const DUPLICATE_DETAIL_CHARS: usize = 200;

/// Link kinds that load a resource rather than navigate: a broken URL reached only through these is
/// a `broken_resource`.
pub const RESOURCE_LINK_KINDS: [LinkKind; 8] = [
    LinkKind::Image,
    LinkKind::Script,
    LinkKind::Stylesheet,
    LinkKind::Icon,
    LinkKind::Media,
    LinkKind::Preload,
    LinkKind::Font,
    LinkKind::CssImage,
];

/// Redirects are followed at most this far (the crawler itself stops after 10 hops).
const MAX_FOLLOW: usize = 64;

/// Runs every site-level rule for one site; see the module documentation.
pub(super) fn analyse_site(
    conn: &Connection,
    path: &Path,
    audit: AuditId,
    site: SiteId,
    limits: ContentLimits,
) -> Result<(), DbError> {
    let sink = Sink::new(conn, path, int(site.0))?;
    conn.prepare_cached("UPDATE findings SET stale = 1 WHERE site_id = ?1 AND origin = 'analysis'")
        .and_then(|mut s| s.execute([sink.site]))
        .map_err(sql_err(path, "mark earlier analysis findings"))?;
    broken_links(&sink)?;
    redirects(&sink)?;
    duplicates(&sink, "title", Code::TitleDuplicate)?;
    duplicates(&sink, "meta_description", Code::DescriptionDuplicate)?;
    indexing(&sink)?;
    broken_external(&sink)?;
    crate::hreflang::analyse(&sink)?;
    content::duplicates(&sink, limits)?;
    content::pagination(&sink)?;
    super::ai_crawlers::analyse(&sink, site)?;
    rendered::analyse(&sink)?;
    let removed = conn
        .prepare_cached("DELETE FROM findings WHERE site_id = ?1 AND origin = 'analysis' AND stale = 1")
        .and_then(|mut s| s.execute([sink.site]))
        .map_err(sql_err(path, "remove outdated analysis findings"))?;
    sink.empty_links()?;
    tracing::debug!(audit = %audit, site = %site, removed, "site analysis done");
    Ok(())
}

/// A URL of the site that is broken: answered `>= 400` or not at all (columns of `pages p`).
const BROKEN_PAGE: &str = "p.kind <> 'robots' AND p.kind NOT GLOB 'probe_*'
    AND (p.status >= 400 OR (p.status IS NULL AND p.error IS NOT NULL))";

fn broken_links(sink: &Sink<'_>) -> Result<(), DbError> {
    let path = sink.path;
    if !sink.any(&format!("SELECT EXISTS (SELECT 1 FROM pages p WHERE p.site_id = ?1 AND {BROKEN_PAGE})"))? {
        return Ok(());
    }
    sink.links()?;
    let mut broken = sink
        .conn
        .prepare_cached(&format!(
            "SELECT p.url, p.status, p.error FROM pages p
             WHERE p.site_id = ?1 AND {BROKEN_PAGE}
               AND EXISTS (SELECT 1 FROM temp.site_links l WHERE l.to_url = p.url AND l.internal = 1
                           AND l.kind NOT IN ('sitemap_entry', 'canonical'))
             ORDER BY p.url"
        ))
        .map_err(sql_err(path, "prepare broken link query"))?;
    let mut rows = broken.query([sink.site]).map_err(sql_err(path, "find broken URLs"))?;
    let mut linking = sink
        .conn
        .prepare_cached(
            "SELECT DISTINCT from_url FROM temp.site_links INDEXED BY site_links_by_target
             WHERE to_url = ?1 AND internal = 1 AND kind NOT IN ('sitemap_entry', 'canonical')
             ORDER BY from_url LIMIT ?2",
        )
        .map_err(sql_err(path, "prepare linking pages query"))?;
    let mut kinds = sink
        .conn
        .prepare_cached(
            "SELECT DISTINCT kind FROM temp.site_links INDEXED BY site_links_by_target
             WHERE to_url = ?1 AND internal = 1 AND kind NOT IN ('sitemap_entry', 'canonical')",
        )
        .map_err(sql_err(path, "prepare link kinds query"))?;
    let cap = int(u64::try_from(RELATED_CAP).unwrap_or(u64::MAX));
    while let Some(row) = rows.next().map_err(sql_err(path, "read broken URLs"))? {
        let url: String = row.get(0).map_err(sql_err(path, "read broken URLs"))?;
        let status: Option<i64> = row.get(1).map_err(sql_err(path, "read broken URLs"))?;
        let error: Option<String> = row.get(2).map_err(sql_err(path, "read broken URLs"))?;
        let detail = match (status, error) {
            (Some(s), _) => s.to_string(),
            (None, Some(e)) => e,
            (None, None) => continue,
        };
        let from: Vec<String> = linking
            .query_map(params![url, cap], |r| r.get(0))
            .and_then(Iterator::collect)
            .map_err(sql_err(path, "find linking pages"))?;
        let link_kinds: Vec<String> = kinds
            .query_map([&url], |r| r.get(0))
            .and_then(Iterator::collect)
            .map_err(sql_err(path, "find link kinds"))?;
        let resource_only = link_kinds.iter().all(|k| RESOURCE_LINK_KINDS.iter().any(|r| r.as_str() == k));
        let code = if resource_only { Code::BrokenResource } else { Code::BrokenInternalLink };
        let related: Vec<&str> = from.iter().map(String::as_str).collect();
        sink.emit(code, &url, &detail, &related)?;
    }
    Ok(())
}

/// What following a URL's redirects found.
struct Walk {
    /// The first URL, every hop, and (for a loop) the repeated URL.
    chain: Vec<String>,
    looped: bool,
}

fn follow(redirects: &HashMap<String, String>, start: &str) -> Walk {
    let mut chain = vec![start.to_owned()];
    let mut seen: HashSet<&str> = HashSet::from([start]);
    let mut current = start;
    while let Some(next) = redirects.get(current) {
        chain.push(next.clone());
        if !seen.insert(next) {
            return Walk { chain, looped: true };
        }
        if chain.len() > MAX_FOLLOW {
            break;
        }
        current = next;
    }
    Walk { chain, looped: false }
}

fn redirects(sink: &Sink<'_>) -> Result<(), DbError> {
    let path = sink.path;
    const REDIRECT: &str = "status BETWEEN 300 AND 399 AND redirect_to IS NOT NULL";
    let map: HashMap<String, String> = sink
        .conn
        .prepare_cached(&format!("SELECT url, redirect_to FROM pages WHERE site_id = ?1 AND {REDIRECT}"))
        .and_then(|mut s| s.query_map([sink.site], |r| Ok((r.get(0)?, r.get(1)?))).and_then(Iterator::collect))
        .map_err(sql_err(path, "read redirects"))?;
    if map.is_empty() {
        return Ok(());
    }
    sink.links()?;
    let candidates: Vec<String> = sink
        .conn
        .prepare_cached(&format!(
            "SELECT p.url FROM pages p WHERE p.site_id = ?1 AND {REDIRECT}
               AND (p.found_via = 'start'
                    OR p.url IN (SELECT start_url FROM sites WHERE id = ?1)
                    OR EXISTS (SELECT 1 FROM temp.site_links l WHERE l.to_url = p.url AND l.internal = 1))
             ORDER BY p.url"
        ))
        .and_then(|mut s| s.query_map([sink.site], |r| r.get(0)).and_then(Iterator::collect))
        .map_err(sql_err(path, "find linked redirects"))?;
    let targets: HashSet<&str> = map.values().map(String::as_str).collect();
    let (heads, inner): (Vec<&String>, Vec<&String>) = candidates.iter().partition(|c| !targets.contains(c.as_str()));
    let mut covered: HashSet<String> = HashSet::new();
    for start in heads.into_iter().chain(inner) {
        if covered.contains(start) {
            continue;
        }
        let walk = follow(&map, start);
        let hops = walk.chain.len() - 1;
        let code = if walk.looped {
            Code::RedirectLoop
        } else if hops > 1 {
            Code::RedirectChain
        } else {
            continue;
        };
        let related: Vec<&str> = walk.chain.iter().map(String::as_str).take(RELATED_CAP).collect();
        sink.emit(code, start, &format!("{hops} hops"), &related)?;
        covered.extend(walk.chain);
    }
    Ok(())
}

/// Pages whose titles and descriptions are compared: fetched HTML pages that answered 200.
const DUPLICATE_ELIGIBLE: &str = "kind = 'page' AND status = 200
    AND (content_type LIKE 'text/html%' OR content_type LIKE 'application/xhtml+xml%')";

/// `column` is one of our own column names, never input. One pass over the site's eligible pages
/// in (value, URL) order: no index on the column is needed (a crawl does not maintain one), and a
/// value shared by 100,000 pages is never held as one list, only its first `RELATED_CAP + 1` pages.
fn duplicates(sink: &Sink<'_>, column: &'static str, code: Code) -> Result<(), DbError> {
    let path = sink.path;
    let op = "read duplicates";
    let mut stmt = sink
        .conn
        .prepare_cached(&format!(
            "SELECT {column}, url FROM pages WHERE site_id = ?1 AND {DUPLICATE_ELIGIBLE} AND trim({column}) <> ''
             ORDER BY {column}, url"
        ))
        .map_err(sql_err(path, "prepare duplicate query"))?;
    let mut rows = stmt.query([sink.site]).map_err(sql_err(path, op))?;
    let mut group: Option<Duplicates> = None;
    while let Some(row) = rows.next().map_err(sql_err(path, op))? {
        let value: String = row.get(0).map_err(sql_err(path, op))?;
        let url: String = row.get(1).map_err(sql_err(path, op))?;
        match &mut group {
            Some(g) if g.value == value => g.add(sink, code, url)?,
            _ => {
                if let Some(g) = group.take() {
                    g.finish(sink, code)?;
                }
                group = Some(Duplicates { value, head: vec![url], flushed: false });
            }
        }
    }
    match group {
        Some(g) => g.finish(sink, code),
        None => Ok(()),
    }
}

/// The pages sharing one value, as they stream in URL order: the first `RELATED_CAP + 1` are kept
/// (enough to give every member `RELATED_CAP` others); past them each page is reported at once.
struct Duplicates {
    value: String,
    head: Vec<String>,
    /// The head's findings are written (the group outgrew it).
    flushed: bool,
}

impl Duplicates {
    fn detail(&self) -> String {
        self.value.chars().take(DUPLICATE_DETAIL_CHARS).collect()
    }

    fn related<'a>(&'a self, url: &str) -> Vec<&'a str> {
        self.head.iter().map(String::as_str).filter(|u| *u != url).take(RELATED_CAP).collect()
    }

    fn add(&mut self, sink: &Sink<'_>, code: Code, url: String) -> Result<(), DbError> {
        if self.head.len() <= RELATED_CAP {
            self.head.push(url);
            return Ok(());
        }
        if !self.flushed {
            self.flush(sink, code)?;
        }
        sink.emit(code, &url, &self.detail(), &self.related(&url))
    }

    fn flush(&mut self, sink: &Sink<'_>, code: Code) -> Result<(), DbError> {
        let detail = self.detail();
        for url in &self.head {
            sink.emit(code, url, &detail, &self.related(url))?;
        }
        self.flushed = true;
        Ok(())
    }

    fn finish(mut self, sink: &Sink<'_>, code: Code) -> Result<(), DbError> {
        if !self.flushed && self.head.len() > 1 {
            self.flush(sink, code)?;
        }
        Ok(())
    }
}

/// One rule of [`indexing`]: a query returning (url, detail) rows for the site in `?1`.
struct Rule {
    code: Code,
    sql: &'static str,
}

/// Sitemap coverage, orphans, deep pages and canonical targets, each one SQL query over what was
/// crawled (sitemap `<loc>`s and canonicals are recorded as links of kinds `sitemap_entry` and
/// `canonical`). The rules about sitemap entries start from those links (`CROSS JOIN` fixes the
/// order, as the canonical rules' plans already did): the planner, having no statistics, chose to
/// read every page of the site and probe the links for each, on sites that mostly have few
/// sitemap entries or none.
const INDEXING_RULES: &[Rule] = &[
    Rule {
        code: Code::SitemapUrlError,
        sql: "SELECT DISTINCT p.url, COALESCE(CAST(p.status AS TEXT), p.error) FROM temp.site_links l INDEXED BY site_links_by_kind
              CROSS JOIN pages p ON p.site_id = ?1 AND p.url = l.to_url
              WHERE l.kind = 'sitemap_entry'
                AND (p.status >= 400 OR (p.status IS NULL AND p.error IS NOT NULL))",
    },
    Rule {
        code: Code::SitemapUrlRedirect,
        sql: "SELECT DISTINCT p.url, 'redirects to ' || p.redirect_to FROM temp.site_links l INDEXED BY site_links_by_kind
              CROSS JOIN pages p ON p.site_id = ?1 AND p.url = l.to_url
              WHERE l.kind = 'sitemap_entry' AND p.status BETWEEN 300 AND 399",
    },
    Rule {
        code: Code::SitemapUrlNoindex,
        sql: "SELECT DISTINCT p.url, 'noindex' FROM temp.site_links l INDEXED BY site_links_by_kind
              CROSS JOIN pages p ON p.site_id = ?1 AND p.url = l.to_url
              WHERE l.kind = 'sitemap_entry' AND p.status BETWEEN 200 AND 299
                AND (p.meta_robots_json LIKE '%noindex%' OR p.meta_robots_json LIKE '%\"none\"%'
                     OR lower(p.x_robots_tag_json) LIKE '%noindex%')",
    },
    Rule {
        code: Code::OrphanPage,
        sql: "SELECT p.url, 'listed in a sitemap, linked from no crawled page' FROM pages p
              WHERE p.site_id = ?1 AND p.kind = 'page' AND p.found_via = 'sitemap' AND p.status BETWEEN 200 AND 299
                AND NOT EXISTS (SELECT 1 FROM temp.site_links l WHERE l.to_url = p.url
                                AND l.kind IN ('anchor', 'iframe', 'page_link') AND l.from_url <> p.url)",
    },
    Rule {
        code: Code::DeepPage,
        sql: "SELECT p.url, 'depth ' || p.depth FROM pages p
              WHERE p.site_id = ?1 AND p.kind = 'page' AND p.depth >= 4 AND p.found_via = 'link'
                AND p.status BETWEEN 200 AND 299",
    },
    Rule {
        code: Code::CanonicalBroken,
        sql: "SELECT DISTINCT l.from_url, l.to_url || ' answers ' || COALESCE(CAST(p.status AS TEXT), p.error)
              FROM temp.site_links l INDEXED BY site_links_by_kind
              JOIN pages p ON p.site_id = ?1 AND p.url = l.to_url
              WHERE l.kind = 'canonical'
                AND (p.status >= 400 OR (p.status IS NULL AND p.error IS NOT NULL))",
    },
    Rule {
        code: Code::CanonicalRedirect,
        sql: "SELECT DISTINCT l.from_url, l.to_url || ' redirects to ' || p.redirect_to
              FROM temp.site_links l INDEXED BY site_links_by_kind
              JOIN pages p ON p.site_id = ?1 AND p.url = l.to_url
              WHERE l.kind = 'canonical' AND p.status BETWEEN 300 AND 399",
    },
];

fn indexing(sink: &Sink<'_>) -> Result<(), DbError> {
    // Every rule but the deep pages' reads sitemap entries, canonicals or pages found in a sitemap.
    let links_matter = sink.any(
        "SELECT EXISTS (SELECT 1 FROM links WHERE site_id = ?1 AND kind IN ('sitemap_entry', 'canonical'))
             OR EXISTS (SELECT 1 FROM pages WHERE site_id = ?1 AND found_via = 'sitemap')",
    )?;
    if links_matter {
        sink.links()?;
    }
    for rule in INDEXING_RULES.iter().filter(|r| links_matter || r.code == Code::DeepPage) {
        let rows: Vec<(String, Option<String>)> = sink
            .conn
            .prepare_cached(rule.sql)
            .and_then(|mut s| s.query_map([sink.site], |r| Ok((r.get(0)?, r.get(1)?))).and_then(Iterator::collect))
            .map_err(sql_err(sink.path, "run an indexing rule"))?;
        for (url, detail) in rows {
            sink.emit(rule.code, &url, detail.as_deref().unwrap_or(""), &[])?;
        }
    }
    Ok(())
}

/// Links to other sites whose check answered an error (or got no answer), with the pages linking
/// to them.
fn broken_external(sink: &Sink<'_>) -> Result<(), DbError> {
    let path = sink.path;
    // Link checks that were redirected, target → the URLs that redirected there: a broken target
    // is reported on the URL the site links to (the one its owner can fix).
    let mut redirected_from: HashMap<String, Vec<String>> = HashMap::new();
    let hops: Vec<(String, String)> = sink
        .conn
        .prepare_cached(
            "SELECT url, redirect_to FROM pages WHERE site_id = ?1 AND kind = 'external'
               AND status BETWEEN 300 AND 399 AND redirect_to IS NOT NULL",
        )
        .and_then(|mut s| s.query_map([sink.site], |r| Ok((r.get(0)?, r.get(1)?))).and_then(Iterator::collect))
        .map_err(sql_err(path, "read redirected link checks"))?;
    for (from, to) in hops {
        redirected_from.entry(to).or_default().push(from);
    }
    let broken: Vec<(String, String)> = sink
        .conn
        .prepare_cached(
            "SELECT p.url, COALESCE(CAST(p.status AS TEXT), p.error) FROM pages p
             WHERE p.site_id = ?1 AND p.kind = 'external'
               AND (p.status >= 400 OR (p.status IS NULL AND p.error IS NOT NULL))
             ORDER BY p.url",
        )
        .and_then(|mut s| s.query_map([sink.site], |r| Ok((r.get(0)?, r.get(1)?))).and_then(Iterator::collect))
        .map_err(sql_err(path, "find broken external links"))?;
    if broken.is_empty() {
        return Ok(());
    }
    sink.links()?;
    let cap = int(u64::try_from(RELATED_CAP).unwrap_or(u64::MAX));
    let linking = |url: &str| -> Result<Vec<String>, DbError> {
        sink.conn
            .prepare_cached(
                "SELECT DISTINCT from_url FROM temp.site_links INDEXED BY site_links_by_target
                 WHERE to_url = ?1 AND internal = 0 ORDER BY from_url LIMIT ?2",
            )
            .and_then(|mut s| s.query_map(params![url, cap], |r| r.get(0)).and_then(Iterator::collect))
            .map_err(sql_err(path, "find pages linking out"))
    };
    for (url, detail) in broken {
        let heads = chain_heads(&redirected_from, &url);
        let mut reported = false;
        for head in &heads {
            let from = linking(head)?;
            if from.is_empty() {
                continue;
            }
            let detail = if head == &url { detail.clone() } else { format!("{detail} after redirects to {url}") };
            let related: Vec<&str> = from.iter().map(String::as_str).collect();
            sink.emit(Code::BrokenExternalLink, head, &detail, &related)?;
            reported = true;
        }
        if !reported {
            let from = linking(&url)?;
            let related: Vec<&str> = from.iter().map(String::as_str).collect();
            sink.emit(Code::BrokenExternalLink, &url, &detail, &related)?;
        }
    }
    Ok(())
}

/// `url` and every URL whose redirects lead to it, walking the redirects backwards, at most
/// [`MAX_FOLLOW`] steps.
fn chain_heads(redirected_from: &HashMap<String, Vec<String>>, url: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut seen: HashSet<String> = HashSet::from([url.to_owned()]);
    let mut todo = vec![url.to_owned()];
    for _ in 0..MAX_FOLLOW {
        let Some(u) = todo.pop() else { break };
        for f in redirected_from.get(&u).into_iter().flatten() {
            if seen.insert(f.clone()) {
                todo.push(f.clone());
            }
        }
        heads.push(u);
    }
    heads
}
