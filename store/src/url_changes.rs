//! Comparing two audits of a site URL by URL (issue 37, part 8): which pages were added and
//! removed, and for the pages of both which of their facts changed. Two audits compared only by
//! findings cannot say that a price, a title or a status changed; this can.
//!
//! The rules, documented for users in `docs/report-compare.md`:
//! - **Pages match by URL** (exact string, as stored). Only URLs of kind `page` are compared:
//!   resources, probes (the soft-404 path is new every audit), robots.txt and sitemaps are not.
//! - **added**: in NEW only; **removed**: in OLD only; **changed**: in both, with at least one
//!   fact different. A fact is compared as text, `None` when the page has none.
//! - **The facts** are [`FACTS`] (status, title, canonical, indexability, word count) and every
//!   extracted value (`extracted.NAME`, the union of both audits' rule names). The word count is
//!   compared only when both audits recorded one ([`BOTH_SIDES`]).
//!
//! Both sites' pages are read in URL order (the primary key's order) and merged, so a comparison
//! holds one page of each side in memory, however large the sites.

use crate::cursor::Reader;
use crate::{DbError, SiteSummary, int, sql_err};
use rusqlite::{Row, Rows};
use shoal_shared::ids::SiteId;
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::path::Path;

/// Whether a page could be indexed, from what the crawl recorded, as text: `indexable`, or `not
/// indexable: ` and why (no answer, a redirect, an HTTP error, `noindex` by meta robots or
/// X-Robots-Tag, as the crawler's own `noindex` finding judged it, or a canonical naming another
/// URL).
const INDEXABILITY: &str = "CASE
    WHEN p.status IS NULL THEN 'not indexable: no answer'
    WHEN p.status BETWEEN 300 AND 399 THEN 'not indexable: redirect'
    WHEN p.status <> 200 THEN 'not indexable: HTTP ' || p.status
    WHEN EXISTS (SELECT 1 FROM findings f WHERE f.site_id = p.site_id AND f.code = 'noindex' AND f.url = p.url)
        THEN 'not indexable: noindex'
    WHEN p.canonical IS NOT NULL AND p.canonical <> p.url THEN 'not indexable: canonicalised'
    ELSE 'indexable' END";

/// The facts compared: the name reports use and the SQL (over `pages p`) giving it as text. A
/// new fact is one line here.
pub const FACTS: &[(&str, &str)] = &[
    ("status", "COALESCE(CAST(p.status AS TEXT), p.error)"),
    ("title", "p.title"),
    ("canonical", "p.canonical"),
    ("indexability", INDEXABILITY),
    // Words of the main text (schema 9), on HTML pages only.
    ("word_count", "CAST(p.word_count AS TEXT)"),
];

/// Facts of [`FACTS`] compared only when both audits recorded one: pages audited before Shoal
/// stored word counts (schema 9) have none, and would otherwise all change in a comparison with a
/// later audit; a page that stops being an HTML page changes its status or content type anyway.
pub const BOTH_SIDES: &[&str] = &["word_count"];

/// One page of one side, as compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlFacts {
    /// Its URL.
    pub url: String,
    /// The value of each of [`FACTS`], in order.
    pub facts: Vec<Option<String>>,
    /// (rule name, value) of the extraction rules that found something.
    pub extracted: Vec<(String, String)>,
}

impl UrlFacts {
    /// The value of a fact by name (one of [`FACTS`]).
    #[must_use]
    pub fn fact(&self, name: &str) -> Option<&str> {
        let i = FACTS.iter().position(|(n, _)| *n == name)?;
        self.facts.get(i)?.as_deref()
    }

    /// The value an extraction rule found.
    #[must_use]
    pub fn extracted(&self, name: &str) -> Option<&str> {
        self.extracted.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// One fact of a page that differs between the audits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactChange {
    /// One of [`FACTS`], or `extracted.NAME`.
    pub fact: String,
    /// In the old audit.
    pub old: Option<String>,
    /// In the new audit.
    pub new: Option<String>,
}

/// What happened to one URL between two audits of a site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlChange {
    /// In the new audit only (its facts there).
    Added(UrlFacts),
    /// In the old audit only (its facts there).
    Removed(UrlFacts),
    /// In both, with these facts different.
    Changed {
        /// The URL.
        url: String,
        /// What changed, facts in [`FACTS`] order, then extracted values by name.
        changes: Vec<FactChange>,
    },
}

impl UrlChange {
    /// `added`, `removed` or `changed`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            UrlChange::Added(_) => "added",
            UrlChange::Removed(_) => "removed",
            UrlChange::Changed { .. } => "changed",
        }
    }
}

/// How many URLs were added, removed and changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UrlCounts {
    /// Pages only in the new audit.
    pub added: u64,
    /// Pages only in the old audit.
    pub removed: u64,
    /// Pages in both with a fact changed.
    pub changed: u64,
}

impl UrlCounts {
    /// Counts one change.
    pub fn add(&mut self, change: &UrlChange) {
        match change {
            UrlChange::Added(_) => self.added += 1,
            UrlChange::Removed(_) => self.removed += 1,
            UrlChange::Changed { .. } => self.changed += 1,
        }
    }

    /// The sum of several counts.
    #[must_use]
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a UrlCounts>) -> UrlCounts {
        all.into_iter().fold(UrlCounts::default(), |a, c| UrlCounts {
            added: a.added + c.added,
            removed: a.removed + c.removed,
            changed: a.changed + c.changed,
        })
    }
}

fn select() -> String {
    let facts: Vec<&str> = FACTS.iter().map(|(_, sql)| *sql).collect();
    format!(
        "SELECT p.url, p.extracted_json, {} FROM pages p WHERE p.site_id = ?1 AND p.kind = 'page' ORDER BY p.url",
        facts.join(", ")
    )
}

fn facts_of(r: &Row<'_>, path: &Path) -> Result<UrlFacts, DbError> {
    let op = "read pages to compare";
    let extracted: Option<String> = r.get(1).map_err(sql_err(path, op))?;
    let extracted = match extracted {
        Some(json) => serde_json::from_str(&json).map_err(|e| DbError::Corrupt {
            path: path.to_owned(),
            what: "pages.extracted_json",
            detail: e.to_string(),
        })?,
        None => Vec::new(),
    };
    Ok(UrlFacts {
        url: r.get(0).map_err(sql_err(path, op))?,
        facts: (0..FACTS.len()).map(|i| r.get(2 + i)).collect::<Result<_, _>>().map_err(sql_err(path, op))?,
        extracted,
    })
}

/// A site's pages in URL order, one at a time.
struct Side<'s> {
    rows: Rows<'s>,
    path: &'s Path,
    peeked: Option<UrlFacts>,
}

impl Side<'_> {
    fn peek(&mut self) -> Result<Option<&UrlFacts>, DbError> {
        if self.peeked.is_none() {
            self.peeked = match self.rows.next().map_err(sql_err(self.path, "read pages to compare"))? {
                Some(r) => Some(facts_of(r, self.path)?),
                None => None,
            };
        }
        Ok(self.peeked.as_ref())
    }

    fn take(&mut self) -> Result<Option<UrlFacts>, DbError> {
        self.peek()?;
        Ok(self.peeked.take())
    }
}

/// The facts of one URL that differ, in [`FACTS`] order, then extracted values by name.
#[must_use]
pub fn differences(old: &UrlFacts, new: &UrlFacts) -> Vec<FactChange> {
    let mut out: Vec<FactChange> = FACTS
        .iter()
        .zip(old.facts.iter().zip(&new.facts))
        .filter(|((name, _), (o, n))| o != n && !(BOTH_SIDES.contains(name) && (o.is_none() || n.is_none())))
        .map(|((name, _), (o, n))| FactChange { fact: (*name).to_owned(), old: o.clone(), new: n.clone() })
        .collect();
    let names: BTreeSet<&str> = old.extracted.iter().chain(&new.extracted).map(|(n, _)| n.as_str()).collect();
    for name in names {
        let (o, n) = (old.extracted(name), new.extracted(name));
        if o != n {
            out.push(FactChange {
                fact: format!("extracted.{name}"),
                old: o.map(str::to_owned),
                new: n.map(str::to_owned),
            });
        }
    }
    out
}

/// Calls `f` with every URL of the two sites that was added, removed or changed, in URL order.
///
/// # Errors
/// The first error of the database or of `f`.
pub fn url_changes_with<E, F>(reader: &Reader, old: SiteId, new: SiteId, mut f: F) -> Result<(), E>
where
    E: From<DbError>,
    F: FnMut(UrlChange) -> Result<(), E>,
{
    let (conn, path) = reader.parts();
    let sql = select();
    let op = "read pages to compare";
    let mut old_stmt = conn.prepare(&sql).map_err(sql_err(path, op))?;
    let mut new_stmt = conn.prepare(&sql).map_err(sql_err(path, op))?;
    let mut old_side = Side { rows: old_stmt.query([int(old.0)]).map_err(sql_err(path, op))?, path, peeked: None };
    let mut new_side = Side { rows: new_stmt.query([int(new.0)]).map_err(sql_err(path, op))?, path, peeked: None };
    loop {
        let order = match (old_side.peek()?, new_side.peek()?) {
            (None, None) => return Ok(()),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(a), Some(b)) => a.url.as_bytes().cmp(b.url.as_bytes()),
        };
        match order {
            Ordering::Less => {
                if let Some(page) = old_side.take()? {
                    f(UrlChange::Removed(page))?;
                }
            }
            Ordering::Greater => {
                if let Some(page) = new_side.take()? {
                    f(UrlChange::Added(page))?;
                }
            }
            Ordering::Equal => {
                if let (Some(o), Some(n)) = (old_side.take()?, new_side.take()?) {
                    let changes = differences(&o, &n);
                    if !changes.is_empty() {
                        f(UrlChange::Changed { url: n.url, changes })?;
                    }
                }
            }
        }
    }
}

/// Counts the added, removed and changed URLs of two sites.
///
/// # Errors
/// A read failure.
pub fn count_url_changes(reader: &Reader, old: SiteId, new: SiteId) -> Result<UrlCounts, DbError> {
    let mut counts = UrlCounts::default();
    url_changes_with(reader, old, new, |change| -> Result<(), DbError> {
        counts.add(&change);
        Ok(())
    })?;
    Ok(counts)
}

/// The added, removed and changed URLs over matched site pairs (two audits compared).
///
/// # Errors
/// A read failure.
pub fn count_pairs(reader: &Reader, pairs: &[(SiteSummary, SiteSummary)]) -> Result<UrlCounts, DbError> {
    let mut total = UrlCounts::default();
    for (old, new) in pairs {
        let counts = count_url_changes(reader, old.id, new.id)?;
        total = UrlCounts::sum([&total, &counts]);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(url: &str, facts: [Option<&str>; 5], extracted: &[(&str, &str)]) -> UrlFacts {
        UrlFacts {
            url: url.to_owned(),
            facts: facts.iter().map(|f| f.map(str::to_owned)).collect(),
            extracted: extracted.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect(),
        }
    }

    #[test]
    fn differences_list_facts_then_extracted_values() {
        let old =
            page("u", [Some("200"), Some("A"), None, Some("indexable"), Some("220")], &[("price", "1"), ("sku", "x")]);
        let new = page(
            "u",
            [Some("200"), Some("B"), None, Some("not indexable: noindex"), Some("180")],
            &[("price", "2"), ("gtin", "9")],
        );
        let got: Vec<(String, Option<String>, Option<String>)> =
            differences(&old, &new).into_iter().map(|c| (c.fact, c.old, c.new)).collect();
        let s = |v: &str| Some(v.to_owned());
        assert_eq!(
            got,
            [
                ("title".to_owned(), s("A"), s("B")),
                ("indexability".to_owned(), s("indexable"), s("not indexable: noindex")),
                ("word_count".to_owned(), s("220"), s("180")),
                ("extracted.gtin".to_owned(), None, s("9")),
                ("extracted.price".to_owned(), s("1"), s("2")),
                ("extracted.sku".to_owned(), s("x"), None),
            ]
        );
        assert!(differences(&old, &old).is_empty());
        assert_eq!(new.fact("indexability"), Some("not indexable: noindex"));
        assert_eq!(new.fact("word_count"), Some("180"));
    }

    #[test]
    fn a_word_count_only_one_audit_recorded_is_no_change() {
        let counted = page("u", [Some("200"), Some("A"), None, Some("indexable"), Some("220")], &[]);
        let before = page("u", [Some("200"), Some("A"), None, Some("indexable"), None], &[]);
        assert!(differences(&before, &counted).is_empty(), "an audit from before word counts");
        assert!(differences(&counted, &before).is_empty());
    }
}
