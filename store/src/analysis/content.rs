//! The site-level content rules (issue 37):
//!
//! - **`content_duplicate`**: pages whose main text hashes equal (the same words in the same
//!   order, case and punctuation aside), among the pages with a fingerprint (HTML pages that
//!   answered 200 and that search engines may index as themselves: the worker fingerprints no
//!   other) and at least one word. One finding per page; `detail` names the cluster
//!   (`"N pages with the same main text; cluster URL"`, URL its smallest), the same for every
//!   member so that a report can list clusters; `related` the other members (at most
//!   [`RELATED_CAP`]).
//! - **`content_near_duplicate`**: one page per distinct text (with at least
//!   [`MIN_NEAR_DUPLICATE_WORDS`] words), grouped by [`near_duplicate_clusters`] at the audit's
//!   `near_duplicate_percent`; a cluster is reported with the exact duplicates of its members.
//! - **`pagination_broken`**: a page whose `rel=next` or `rel=prev` target was fetched and did
//!   not answer 200 (`detail` `"next: URL answers 404"`); a target not fetched says nothing.
//!
//! Time and memory are linear in the site's pages: one pass reads each page's URL and three
//! numbers, the clustering is linear (see `shoal_shared::content`), and findings are written as
//! clusters are walked. The figure for 50,000 pages is in docs/design.md ("Content").

use super::{DbError, RELATED_CAP, Sink, sql_err};
use crate::{int, unbits};
use rusqlite::{Connection, OptionalExtension};
use shoal_shared::content::{
    ContentLimits, MIN_NEAR_DUPLICATE_WORDS, exact_clusters, max_distance, near_duplicate_clusters,
};
use shoal_shared::finding::Code;
use shoal_shared::ids::AuditId;
use std::collections::HashMap;
use std::path::Path;

/// Audits whose thresholds are kept at most; then the cache starts afresh.
const CACHED_AUDITS: usize = 64;

/// The content thresholds of the audits whose sites ended lately, read from their options.
#[derive(Debug, Default)]
pub struct LimitsCache {
    by_audit: HashMap<AuditId, ContentLimits>,
}

impl LimitsCache {
    /// The audit's content thresholds (`options_json` → `limits.content`); the defaults when the
    /// options have none (an audit started by an older Shoal, or a test's `{}`).
    pub(crate) fn get(&mut self, conn: &Connection, path: &Path, audit: AuditId) -> Result<ContentLimits, DbError> {
        if let Some(l) = self.by_audit.get(&audit) {
            return Ok(*l);
        }
        let json: Option<Option<String>> = conn
            .prepare_cached("SELECT json_extract(options_json, '$.limits.content') FROM audits WHERE id = ?1")
            .and_then(|mut s| s.query_row([int(audit.0)], |r| r.get(0)).optional())
            .map_err(sql_err(path, "read an audit's content thresholds"))?;
        let limits = json.flatten().and_then(|j| serde_json::from_str(&j).ok()).unwrap_or_default();
        if self.by_audit.len() >= CACHED_AUDITS {
            self.by_audit.clear();
        }
        self.by_audit.insert(audit, limits);
        Ok(limits)
    }

    /// Drops a deleted audit's thresholds.
    pub(crate) fn forget(&mut self, audit: AuditId) {
        self.by_audit.remove(&audit);
    }
}

/// One fingerprinted page.
struct Print {
    url: String,
    hash: u64,
    simhash: u64,
    words: u32,
}

pub(super) fn duplicates(sink: &Sink<'_>, limits: ContentLimits) -> Result<(), DbError> {
    let op = "read text fingerprints";
    let pages: Vec<Print> = sink
        .conn
        .prepare_cached(
            "SELECT url, text_hash, text_simhash, word_count FROM pages
             WHERE site_id = ?1 AND kind = 'page' AND status = 200 AND text_hash IS NOT NULL
               AND text_simhash IS NOT NULL AND word_count > 0
             ORDER BY url",
        )
        .and_then(|mut s| {
            s.query_map([sink.site], |r| {
                Ok(Print {
                    url: r.get(0)?,
                    hash: unbits(r.get(1)?),
                    simhash: unbits(r.get(2)?),
                    words: u32::try_from(r.get::<_, i64>(3)?).unwrap_or(u32::MAX),
                })
            })
            .and_then(Iterator::collect)
        })
        .map_err(sql_err(sink.path, op))?;
    if pages.len() < 2 {
        return Ok(());
    }
    let hashes: Vec<u64> = pages.iter().map(|p| p.hash).collect();
    let exact = exact_clusters(&hashes);
    // Each page's exact cluster, and one representative per distinct text.
    let mut cluster_of: HashMap<usize, usize> = HashMap::new();
    for (c, members) in exact.iter().enumerate() {
        for &m in members {
            cluster_of.insert(m, c);
        }
        emit_cluster(
            sink,
            Code::ContentDuplicate,
            &pages,
            members,
            &format!("{} pages with the same main text", members.len()),
        )?;
    }
    let reps: Vec<usize> = (0..pages.len())
        .filter(|&i| pages[i].words >= MIN_NEAR_DUPLICATE_WORDS)
        .filter(|i| cluster_of.get(i).is_none_or(|&c| exact[c][0] == *i))
        .collect();
    let prints: Vec<u64> = reps.iter().map(|&i| pages[i].simhash).collect();
    let percent = limits.near_duplicate_percent;
    for group in near_duplicate_clusters(&prints, max_distance(percent)) {
        let mut members: Vec<usize> = Vec::new();
        for r in group.into_iter().map(|g| reps[g]) {
            match cluster_of.get(&r) {
                Some(&c) => members.extend(&exact[c]),
                None => members.push(r),
            }
        }
        members.sort_unstable();
        let what = format!("{} pages at least {percent} % alike", members.len());
        emit_cluster(sink, Code::ContentNearDuplicate, &pages, &members, &what)?;
    }
    Ok(())
}

/// One finding per member (sorted indices into `pages`, which is in URL order): `detail` is
/// `what` and the cluster's first URL, `related` the other members.
fn emit_cluster(sink: &Sink<'_>, code: Code, pages: &[Print], members: &[usize], what: &str) -> Result<(), DbError> {
    let Some(&head) = members.first() else { return Ok(()) };
    let detail = format!("{what}; cluster {}", pages[head].url);
    // The first RELATED_CAP + 1 members, so that each has RELATED_CAP others to name.
    let named: Vec<&str> = members.iter().take(RELATED_CAP + 1).map(|&m| pages[m].url.as_str()).collect();
    for &m in members {
        let url = pages[m].url.as_str();
        let related: Vec<&str> = named.iter().copied().filter(|u| *u != url).take(RELATED_CAP).collect();
        sink.emit(code, url, &detail, &related)?;
    }
    Ok(())
}

/// A page, its pagination link (`next` or `prev`), the target, and what the target answered.
type PaginationRow = (String, String, String, Option<i64>, Option<String>);

pub(super) fn pagination(sink: &Sink<'_>) -> Result<(), DbError> {
    let rows: Vec<PaginationRow> = sink
        .conn
        .prepare_cached(
            "SELECT p.url, 'next', t.url, t.status, t.error FROM pages p
               JOIN pages t ON t.site_id = p.site_id AND t.url = p.rel_next
               WHERE p.site_id = ?1 AND p.rel_next IS NOT NULL AND (t.status IS NULL OR t.status <> 200)
             UNION ALL
             SELECT p.url, 'prev', t.url, t.status, t.error FROM pages p
               JOIN pages t ON t.site_id = p.site_id AND t.url = p.rel_prev
               WHERE p.site_id = ?1 AND p.rel_prev IS NOT NULL AND (t.status IS NULL OR t.status <> 200)",
        )
        .and_then(|mut s| {
            s.query_map([sink.site], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
                .and_then(Iterator::collect)
        })
        .map_err(sql_err(sink.path, "check pagination targets"))?;
    for (url, rel, target, status, error) in rows {
        let answer = match (status, error) {
            (Some(s), _) => s.to_string(),
            (None, Some(e)) => e,
            (None, None) => continue,
        };
        sink.emit(Code::PaginationBroken, &url, &format!("{rel}: {target} answers {answer}"), &[])?;
    }
    Ok(())
}
