//! Writing one batch of worker events inside the caller's transaction.

use super::{DbError, analysis, int, sql_err, to_json, uint};
use rusqlite::{Connection, OptionalExtension, params};
use shoal_shared::finding::Finding;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Event, PageRecord, UrlKind};
use shoal_shared::time::UnixMs;
use std::collections::HashMap;
use std::path::Path;

/// Counter changes for one site, written once at the end of the batch instead of once per event.
#[derive(Debug, Default, Clone, Copy)]
struct Delta {
    pages: i64,
    urls: i64,
    findings: i64,
}

/// One batch being applied: the sites already checked and the counter changes so far.
#[derive(Debug)]
pub(super) struct Batch<'a> {
    conn: &'a Connection,
    path: &'a Path,
    limits: &'a mut analysis::LimitsCache,
    known: HashMap<SiteId, AuditId>,
    deltas: HashMap<SiteId, Delta>,
    /// The other sites of each site's audit under its registrable domain, read once per batch.
    same_domain: HashMap<SiteId, Vec<SiteId>>,
}

const INSERT_PAGE: &str = "INSERT INTO pages (site_id, url, kind, status, error, redirect_to, depth, found_via,
    found_from, content_type, bytes, response_ms, fetched_at_ms, title, meta_description, h1_json, canonical,
    meta_robots_json, x_robots_tag_json, hreflang_json, headers_json, word_count, text_hash, text_simhash,
    structured_types_json, rel_next, rel_prev, extracted_json, ai_blocked)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21,
        ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29)
    ON CONFLICT (site_id, url) DO NOTHING";

const UPDATE_PAGE: &str = "UPDATE pages SET kind = ?3, status = ?4, error = ?5, redirect_to = ?6, depth = ?7,
    found_via = ?8, found_from = ?9, content_type = ?10, bytes = ?11, response_ms = ?12, fetched_at_ms = ?13,
    title = ?14, meta_description = ?15, h1_json = ?16, canonical = ?17, meta_robots_json = ?18,
    x_robots_tag_json = ?19, hreflang_json = ?20, headers_json = ?21, word_count = ?22, text_hash = ?23,
    text_simhash = ?24, structured_types_json = ?25, rel_next = ?26, rel_prev = ?27, extracted_json = ?28,
    ai_blocked = ?29
    WHERE site_id = ?1 AND url = ?2";

impl<'a> Batch<'a> {
    pub(super) fn new(conn: &'a Connection, path: &'a Path, limits: &'a mut analysis::LimitsCache) -> Batch<'a> {
        Batch { conn, path, limits, known: HashMap::new(), deltas: HashMap::new(), same_domain: HashMap::new() }
    }

    /// Applies every event in order, then writes the counters.
    pub(super) fn run(mut self, events: &[Event], now: UnixMs) -> Result<(), DbError> {
        for event in events {
            match event {
                Event::Page(page) => self.page(page)?,
                Event::Finding(finding) => self.finding(finding)?,
                Event::SiteDone { audit, site } => self.site_done(*audit, *site, now)?,
                Event::Browser(page) => {
                    self.check_site(page.audit, page.site)?;
                    super::browser::store(self.conn, self.path, page)?;
                }
                Event::Render(page) => {
                    self.check_site(page.audit, page.site)?;
                    super::render::store(self.conn, self.path, page)?;
                }
                // The coordinator queues the site's browser pages; nothing to store.
                Event::CrawlDone { audit, site } => self.check_site(*audit, *site)?,
            }
        }
        let mut update = self
            .conn
            .prepare_cached(
                "UPDATE sites SET pages = pages + ?2, urls = urls + ?3, findings = findings + ?4 WHERE id = ?1",
            )
            .map_err(sql_err(self.path, "prepare counter update"))?;
        for (site, d) in &self.deltas {
            update
                .execute(params![int(site.0), d.pages, d.urls, d.findings])
                .map_err(sql_err(self.path, "update site counters"))?;
        }
        Ok(())
    }

    /// Checks that the site exists and belongs to the audit the event names (once per batch).
    fn check_site(&mut self, audit: AuditId, site: SiteId) -> Result<(), DbError> {
        let actual = match self.known.get(&site) {
            Some(a) => *a,
            None => {
                let found: Option<i64> = self
                    .conn
                    .prepare_cached("SELECT audit_id FROM sites WHERE id = ?1")
                    .and_then(|mut s| s.query_row([int(site.0)], |r| r.get(0)).optional())
                    .map_err(sql_err(self.path, "look up a site"))?;
                let Some(a) = found else {
                    return Err(DbError::UnknownSite { path: self.path.to_owned(), site });
                };
                let a = AuditId(uint(a));
                self.known.insert(site, a);
                a
            }
        };
        if actual != audit {
            return Err(DbError::SiteAuditMismatch { path: self.path.to_owned(), site, claimed: audit, actual });
        }
        Ok(())
    }

    /// Upserts the page row and replaces its links.
    fn page(&mut self, p: &PageRecord) -> Result<(), DbError> {
        self.check_site(p.audit, p.site)?;
        let path = self.path;
        let site = int(p.site.0);
        // The page's own alternates, its <link>s and then its Link header's (what reports show).
        let own: Vec<&(String, String)> = p.hreflang.iter().chain(&p.hreflang_header).collect();
        let (h1, robots, xrt, hreflang, headers, types) = (
            to_json(&p.h1),
            to_json(&p.meta_robots),
            to_json(&p.x_robots_tag),
            to_json(&own),
            to_json(&p.headers),
            to_json(&p.structured_types),
        );
        let extracted = (!p.extracted.is_empty()).then(|| to_json(&p.extracted));
        let values = params![
            site,
            p.url,
            p.kind.as_str(),
            p.status,
            p.error.map(|e| e.as_str()),
            p.redirect_to,
            p.depth,
            p.found_via.as_str(),
            p.found_from,
            p.content_type,
            int(p.bytes),
            int(p.response_ms),
            int(p.fetched_at.0),
            p.title,
            p.meta_description,
            h1,
            p.canonical,
            robots,
            xrt,
            hreflang,
            headers,
            p.word_count,
            p.text_hash.map(super::bits),
            p.text_simhash.map(super::bits),
            types,
            p.rel_next,
            p.rel_prev,
            extracted,
            p.ai_blocked.map(|b| i64::from(b.bits())),
        ];
        // Most pages are new: the insert is tried first, and only a page stored before is read
        // (its kind, for the counters) and updated.
        let inserted = self
            .conn
            .prepare_cached(INSERT_PAGE)
            .and_then(|mut s| s.execute(values))
            .map_err(sql_err(path, "store a page"))?;
        let old_kind: Option<String> = if inserted == 1 {
            None
        } else {
            let kind: Option<String> = self
                .conn
                .prepare_cached("SELECT kind FROM pages WHERE site_id = ?1 AND url = ?2")
                .and_then(|mut s| s.query_row(params![site, p.url], |r| r.get(0)).optional())
                .map_err(sql_err(path, "look up a page"))?;
            // A URL crawled as a page keeps its page row, whatever else is learned of it later: a
            // resource check of the same URL (an `<img>` of a URL also linked) can complete after
            // the page's own fetch (two leases, two workers, either order), and must not replace
            // the page's title, headings and links with a HEAD's nothing.
            if kind.as_deref().and_then(UrlKind::parse) == Some(UrlKind::Page) && p.kind != UrlKind::Page {
                return Ok(());
            }
            self.conn
                .prepare_cached(UPDATE_PAGE)
                .and_then(|mut s| s.execute(values))
                .map_err(sql_err(path, "store a page"))?;
            kind
        };

        if old_kind.is_some() {
            self.conn
                .prepare_cached("DELETE FROM links WHERE site_id = ?1 AND from_url = ?2 AND rendered = 0")
                .and_then(|mut s| s.execute(params![site, p.url]))
                .map_err(sql_err(path, "replace a page's links"))?;
        }
        super::hreflang::store(self.conn, path, p, old_kind.is_some())?;
        let mut insert = self
            .conn
            .prepare_cached(
                "INSERT INTO links (site_id, from_url, position, to_url, kind, nofollow, internal, text)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .map_err(sql_err(path, "prepare link insert"))?;
        for (i, link) in p.links.iter().enumerate() {
            insert
                .execute(params![
                    site,
                    p.url,
                    int(u64::try_from(i).unwrap_or(u64::MAX)),
                    link.url,
                    link.kind.as_str(),
                    link.nofollow,
                    link.internal,
                    link.text,
                ])
                .map_err(sql_err(path, "store a link"))?;
        }

        let delta = self.deltas.entry(p.site).or_default();
        let was_page = old_kind.as_deref().and_then(UrlKind::parse) == Some(UrlKind::Page);
        let is_page = p.kind == UrlKind::Page;
        delta.pages += i64::from(is_page) - i64::from(was_page);
        delta.urls += i64::from(old_kind.is_none());
        Ok(())
    }

    /// Inserts a worker finding unless the same one is already stored; a
    /// [`domain_wide`](Finding::domain_wide) one also for every other site of the audit under
    /// the same registrable domain (its checks ran once, with this site).
    fn finding(&mut self, f: &Finding) -> Result<(), DbError> {
        self.check_site(f.audit, f.site)?;
        self.insert_finding(f.site, f)?;
        if f.domain_wide {
            for site in self.same_domain(f.site)? {
                self.insert_finding(site, f)?;
            }
        }
        Ok(())
    }

    fn insert_finding(&mut self, site: SiteId, f: &Finding) -> Result<(), DbError> {
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO findings (site_id, code, severity, url, detail, related_json, origin)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'worker')",
            )
            .and_then(|mut s| {
                s.execute(params![
                    int(site.0),
                    f.code.as_str(),
                    f.severity().as_str(),
                    f.url,
                    f.detail,
                    to_json(&f.related),
                ])
            })
            .map_err(sql_err(self.path, "store a finding"))?;
        self.deltas.entry(site).or_default().findings += i64::try_from(inserted).unwrap_or(0);
        Ok(())
    }

    /// The other sites of `site`'s audit whose start host has its registrable domain (by the
    /// `sites_by_domain` index); none for a site without one.
    fn same_domain(&mut self, site: SiteId) -> Result<Vec<SiteId>, DbError> {
        if let Some(sites) = self.same_domain.get(&site) {
            return Ok(sites.clone());
        }
        let sites: Vec<SiteId> = self
            .conn
            .prepare_cached(
                "SELECT o.id FROM sites s JOIN sites o ON o.audit_id = s.audit_id AND o.domain = s.domain
                 WHERE s.id = ?1 AND o.id <> s.id ORDER BY o.id",
            )
            .and_then(|mut s| {
                s.query_map([int(site.0)], |r| r.get::<_, i64>(0))?.map(|r| r.map(|id| SiteId(uint(id)))).collect()
            })
            .map_err(sql_err(self.path, "read the sites of a domain"))?;
        self.same_domain.insert(site, sites.clone());
        Ok(sites)
    }

    /// Runs the site-level analysis, marks the site done and recounts its rows exactly.
    fn site_done(&mut self, audit: AuditId, site: SiteId, now: UnixMs) -> Result<(), DbError> {
        self.check_site(audit, site)?;
        let limits = self.limits.get(self.conn, self.path, audit)?;
        analysis::analyse_site(self.conn, self.path, audit, site, limits)?;
        self.conn
            .prepare_cached(
                "UPDATE sites SET status = 'done', done_at_ms = COALESCE(done_at_ms, ?2),
                    pages = (SELECT COUNT(*) FROM pages WHERE site_id = ?1 AND kind = 'page'),
                    urls = (SELECT COUNT(*) FROM pages WHERE site_id = ?1),
                    findings = (SELECT COUNT(*) FROM findings WHERE site_id = ?1)
                 WHERE id = ?1",
            )
            .and_then(|mut s| s.execute(params![int(site.0), int(now.0)]))
            .map_err(sql_err(self.path, "mark a site done"))?;
        // The recount includes everything this batch wrote for the site so far.
        self.deltas.remove(&site);
        Ok(())
    }
}
