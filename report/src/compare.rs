//! Comparing two audits: which findings are new, fixed or remaining, per site
//! (`shoal report --compare OLD NEW`, and the "Changes since the previous audit" section of the
//! HTML report).
//!
//! The rules, documented for users in `docs/report-compare.md`:
//! - **Sites match by start URL** (exact string, as stored). A start URL listed more than once in an
//!   audit is paired in site-id order: the first with the first, and so on. Sites with no partner are
//!   listed as added (only in NEW) or removed (only in OLD).
//! - **Findings match by `(code, url, detail)`**, the same key the database keeps findings unique
//!   by. `new`: in NEW, not in OLD. `fixed`: in OLD, not in NEW. `remaining`: in both (shown as
//!   NEW has it: severity and related URLs may have changed). A finding whose detail changed (a 404
//!   that is now a 500) is one fixed and one new finding: the problem is not the same.
//!
//! Both sites' findings are read in `(code, url, detail)` order and merged, so a comparison holds one
//! finding of each side in memory, however large the sites.

use super::{ReportError, generator, rfc3339};
use serde::Serialize;
use shoal_store::cursor::{FindingCursor, Reader};
use shoal_store::{AuditDb, AuditSummary, DbError, FindingRow, SiteSummary};

use super::json::{FindingJson, key as key_json, value};
use shoal_shared::ids::{AuditId, SiteId};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};

/// The `schema` value of every comparison document of this shape (`docs/report-compare.md`).
/// Within v1 fields may be added, never removed or renamed.
pub const COMPARE_SCHEMA: &str = "shoal.compare/v1";

/// What happened to a finding between two audits of a site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Change {
    /// In the new audit only: something broke, or is now checked.
    New,
    /// In the old audit only: fixed (or no longer reached by the crawl).
    Fixed,
    /// In both.
    Remaining,
}

impl Change {
    /// The stable spelling used in JSON keys and the HTML report.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            Change::New => "new",
            Change::Fixed => "fixed",
            Change::Remaining => "remaining",
        }
    }
}

/// How many findings of a site pair are new, fixed and remaining.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChangeCounts {
    /// In the new audit only.
    pub new: u64,
    /// In the old audit only.
    pub fixed: u64,
    /// In both.
    pub remaining: u64,
}

impl ChangeCounts {
    fn add(&mut self, change: Change) {
        match change {
            Change::New => self.new += 1,
            Change::Fixed => self.fixed += 1,
            Change::Remaining => self.remaining += 1,
        }
    }
}

/// The sites of two audits, matched by start URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitePairs {
    /// `(old, new)` for every start URL in both audits, in the new audit's site order.
    pub both: Vec<(SiteSummary, SiteSummary)>,
    /// Sites only in the new audit, in site order.
    pub added: Vec<SiteSummary>,
    /// Sites only in the old audit, in site order.
    pub removed: Vec<SiteSummary>,
}

/// Matches the sites of `old` and `new` by start URL (see the module doc for duplicates).
///
/// # Errors
/// [`ReportError::UnknownAudit`] for either id, [`ReportError::Db`] on a read failure.
pub fn pair_sites(db: &AuditDb, old: AuditId, new: AuditId) -> Result<SitePairs, ReportError> {
    for audit in [old, new] {
        if db.audit(audit)?.is_none() {
            return Err(ReportError::UnknownAudit { audit });
        }
    }
    let mut old_by_url: BTreeMap<String, std::collections::VecDeque<SiteSummary>> = BTreeMap::new();
    for site in db.site_counts(old)? {
        old_by_url.entry(site.start_url.clone()).or_default().push_back(site);
    }
    let mut pairs = SitePairs { both: Vec::new(), added: Vec::new(), removed: Vec::new() };
    for site in db.site_counts(new)? {
        match old_by_url.get_mut(&site.start_url).and_then(std::collections::VecDeque::pop_front) {
            Some(o) => pairs.both.push((o, site)),
            None => pairs.added.push(site),
        }
    }
    pairs.removed = old_by_url.into_values().flatten().collect();
    pairs.removed.sort_by_key(|s| s.id);
    Ok(pairs)
}

fn key(f: &FindingRow) -> (&str, &str, &str) {
    (&f.code, &f.url, &f.detail)
}

/// Merges two cursors in `(code, url, detail)` order (see [`Reader::by_key`]).
pub(crate) fn merge<E, F>(old: &mut FindingCursor<'_>, new: &mut FindingCursor<'_>, mut f: F) -> Result<(), E>
where
    E: From<DbError>,
    F: FnMut(Change, FindingRow) -> Result<(), E>,
{
    loop {
        let order = match (old.peek()?, new.peek()?) {
            (None, None) => return Ok(()),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(a), Some(b)) => key(a).cmp(&key(b)),
        };
        match order {
            Ordering::Less => {
                if let Some(row) = old.next_row()? {
                    f(Change::Fixed, row)?;
                }
            }
            Ordering::Greater => {
                if let Some(row) = new.next_row()? {
                    f(Change::New, row)?;
                }
            }
            Ordering::Equal => {
                old.next_row()?;
                if let Some(row) = new.next_row()? {
                    f(Change::Remaining, row)?;
                }
            }
        }
    }
}

/// Calls `f` for each finding of two sites with what changed, in `(code, url, detail)` order:
/// `Fixed` with the old site's row, `New` and `Remaining` with the new site's.
pub(crate) fn changes_with<E, F>(reader: &Reader, old: SiteId, new: SiteId, f: F) -> Result<(), E>
where
    E: From<DbError>,
    F: FnMut(Change, FindingRow) -> Result<(), E>,
{
    let mut old_stmt = reader.by_key()?;
    let mut new_stmt = reader.by_key()?;
    let mut old_rows = reader.cursor(&mut old_stmt, old)?;
    let mut new_rows = reader.cursor(&mut new_stmt, new)?;
    merge(&mut old_rows, &mut new_rows, f)
}

/// Counts new, fixed and remaining findings between two sites.
pub(crate) fn count_with(reader: &Reader, old: SiteId, new: SiteId) -> Result<ChangeCounts, DbError> {
    let mut counts = ChangeCounts::default();
    changes_with(reader, old, new, |change, _| -> Result<(), DbError> {
        counts.add(change);
        Ok(())
    })?;
    Ok(counts)
}

/// Calls `f` with every finding of the two sites and what changed, streaming (one finding of each
/// site in memory). `old` and `new` may belong to any audits, usually two audits of one start URL.
///
/// Reads through a second, read-only connection to the database file, so `db` must be on disk.
///
/// # Errors
/// The first error of the database or of `f`.
pub fn for_each_change<E, F>(db: &AuditDb, old: SiteId, new: SiteId, f: F) -> Result<(), E>
where
    E: From<DbError>,
    F: FnMut(Change, FindingRow) -> Result<(), E>,
{
    let reader = Reader::open(db)?;
    changes_with(&reader, old, new, f)
}

#[derive(Serialize)]
struct AuditJson<'a> {
    id: u64,
    created_at: String,
    created_at_ms: u64,
    finished_at: Option<String>,
    finished_at_ms: Option<u64>,
    status: &'a str,
}

impl AuditJson<'_> {
    fn of(a: &AuditSummary) -> AuditJson<'static> {
        AuditJson {
            id: a.id.0,
            created_at: rfc3339(a.created_at),
            created_at_ms: a.created_at.0,
            finished_at: a.finished_at.map(rfc3339),
            finished_at_ms: a.finished_at.map(|t| t.0),
            status: a.status.as_str(),
        }
    }
}

#[derive(Serialize)]
struct CountsJson {
    new: u64,
    fixed: u64,
    remaining: u64,
}

impl From<ChangeCounts> for CountsJson {
    fn from(c: ChangeCounts) -> CountsJson {
        CountsJson { new: c.new, fixed: c.fixed, remaining: c.remaining }
    }
}

#[derive(Serialize)]
struct TotalsJson {
    sites: usize,
    added_sites: usize,
    removed_sites: usize,
    new: u64,
    fixed: u64,
    remaining: u64,
}

#[derive(Serialize)]
struct SiteRefJson<'a> {
    id: u64,
    start_url: &'a str,
    status: &'a str,
}

fn site_ref(s: &SiteSummary) -> SiteRefJson<'_> {
    SiteRefJson { id: s.id.0, start_url: &s.start_url, status: s.status.as_str() }
}

/// Writes the `shoal.compare/v1` document comparing audit `old` with audit `new` to `out`
/// (compact JSON and a newline; shape in `docs/report-compare.md`), streaming finding by finding.
///
/// Reads through a second, read-only connection to the database file, so `db` must be on disk.
///
/// # Errors
/// [`ReportError::UnknownAudit`] for either id, [`ReportError::Db`] on a read failure,
/// [`ReportError::Write`] if `out` fails (it then holds an incomplete document).
pub fn write_compare_json(db: &AuditDb, old: AuditId, new: AuditId, out: &mut dyn Write) -> Result<(), ReportError> {
    let pairs = pair_sites(db, old, new)?;
    let old_audit = db.audit(old)?.ok_or(ReportError::UnknownAudit { audit: old })?;
    let new_audit = db.audit(new)?.ok_or(ReportError::UnknownAudit { audit: new })?;
    let reader = Reader::open(db)?;
    let counts =
        pairs.both.iter().map(|(o, n)| count_with(&reader, o.id, n.id)).collect::<Result<Vec<_>, DbError>>()?;
    let totals = TotalsJson {
        sites: pairs.both.len(),
        added_sites: pairs.added.len(),
        removed_sites: pairs.removed.len(),
        new: counts.iter().map(|c| c.new).sum(),
        fixed: counts.iter().map(|c| c.fixed).sum(),
        remaining: counts.iter().map(|c| c.remaining).sum(),
    };

    let mut w = BufWriter::new(out);
    w.write_all(b"{")?;
    key_json(&mut w, true, "schema")?;
    value(&mut w, COMPARE_SCHEMA)?;
    key_json(&mut w, false, "generator")?;
    value(&mut w, &generator())?;
    key_json(&mut w, false, "match")?;
    value(&mut w, &serde_json::json!({"sites": "start_url", "findings": ["code", "url", "detail"]}))?;
    key_json(&mut w, false, "old")?;
    value(&mut w, &AuditJson::of(&old_audit))?;
    key_json(&mut w, false, "new")?;
    value(&mut w, &AuditJson::of(&new_audit))?;
    key_json(&mut w, false, "summary")?;
    value(&mut w, &totals)?;
    key_json(&mut w, false, "added_sites")?;
    value(&mut w, &pairs.added.iter().map(site_ref).collect::<Vec<_>>())?;
    key_json(&mut w, false, "removed_sites")?;
    value(&mut w, &pairs.removed.iter().map(site_ref).collect::<Vec<_>>())?;
    key_json(&mut w, false, "sites")?;
    w.write_all(b"[")?;
    for (i, ((o, n), c)) in pairs.both.iter().zip(&counts).enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        w.write_all(b"{")?;
        key_json(&mut w, true, "start_url")?;
        value(&mut w, &n.start_url)?;
        key_json(&mut w, false, "old_site")?;
        value(&mut w, &site_ref(o))?;
        key_json(&mut w, false, "new_site")?;
        value(&mut w, &site_ref(n))?;
        key_json(&mut w, false, "summary")?;
        value(&mut w, &CountsJson::from(*c))?;
        for wanted in [Change::New, Change::Fixed, Change::Remaining] {
            key_json(&mut w, false, wanted.as_str())?;
            w.write_all(b"[")?;
            let mut first = true;
            changes_with(&reader, o.id, n.id, |change, f| -> Result<(), ReportError> {
                if change != wanted {
                    return Ok(());
                }
                if !std::mem::take(&mut first) {
                    w.write_all(b",")?;
                }
                value(&mut w, &FindingJson::of(&f))
            })?;
            w.write_all(b"]")?;
        }
        w.write_all(b"}")?;
    }
    w.write_all(b"]}\n")?;
    w.flush()?;
    Ok(())
}
