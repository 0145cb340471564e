//! Comparing two audits in the database: which findings are new, fixed or remaining, per site.
//! The reports (`shoal report --compare`, the HTML report's "changes" sections, a scheduled run's
//! `changes`) and the coordinator's run notifications all count with these functions, so they
//! cannot disagree.
//!
//! The rules, documented for users in `docs/report-compare.md`:
//! - **Sites match by start URL** (exact string, as stored). A start URL listed more than once in an
//!   audit is paired in site-id order: the first with the first, and so on. Sites with no partner are
//!   listed as added (only in NEW) or removed (only in OLD).
//! - **Findings match by code, URL and a stable key per code** ([`Code::identity`]): the detail's
//!   numbers ("1234 ms", "9 days left") are not part of it, so an unchanged problem stays
//!   `remaining` from one audit to the next whatever it measured; only where a detail names which
//!   thing is wrong (an invalid link's href) is it the key. `new`: in NEW, not in OLD. `fixed`: in
//!   OLD, not in NEW. `remaining`: in both (shown as NEW has it: its detail, severity and related
//!   URLs may have changed). A broken link that answered 404 and now 500 is still one broken link.
//!
//! Both sites' findings are read in `(code, url, detail)` order and merged, so a comparison holds one
//! finding of each side in memory, however large the sites.

use crate::cursor::{FindingCursor, Reader};
use crate::{AuditDb, DbError, FindingRow, SiteSummary};
use shoal_shared::finding::Code;
use shoal_shared::ids::{AuditId, SiteId};
use std::cmp::Ordering;
use std::collections::{BTreeMap, VecDeque};

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

/// How many findings of a site pair (or of two audits) are new, fixed and remaining.
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

    /// The sum of several counts.
    #[must_use]
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a ChangeCounts>) -> ChangeCounts {
        all.into_iter().fold(ChangeCounts::default(), |a, c| ChangeCounts {
            new: a.new + c.new,
            fixed: a.fixed + c.fixed,
            remaining: a.remaining + c.remaining,
        })
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

/// Two audits compared: the site pairs and the counts of each pair, in the same order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// The sites, matched.
    pub pairs: SitePairs,
    /// One count per entry of `pairs.both`.
    pub counts: Vec<ChangeCounts>,
}

impl Comparison {
    /// The counts over every matched site.
    #[must_use]
    pub fn totals(&self) -> ChangeCounts {
        ChangeCounts::sum(&self.counts)
    }
}

/// Matches the sites of `old` and `new` by start URL (see the module doc for duplicates).
///
/// # Errors
/// [`DbError::UnknownAudit`] for either id, [`DbError::Sql`] on a read failure.
pub fn pair_sites(db: &AuditDb, old: AuditId, new: AuditId) -> Result<SitePairs, DbError> {
    for audit in [old, new] {
        if db.audit(audit)?.is_none() {
            return Err(DbError::UnknownAudit { path: db.path().to_owned(), audit });
        }
    }
    let mut old_by_url: BTreeMap<String, VecDeque<SiteSummary>> = BTreeMap::new();
    for site in db.site_counts(old)? {
        old_by_url.entry(site.start_url.clone()).or_default().push_back(site);
    }
    let mut pairs = SitePairs { both: Vec::new(), added: Vec::new(), removed: Vec::new() };
    for site in db.site_counts(new)? {
        match old_by_url.get_mut(&site.start_url).and_then(VecDeque::pop_front) {
            Some(o) => pairs.both.push((o, site)),
            None => pairs.added.push(site),
        }
    }
    pairs.removed = old_by_url.into_values().flatten().collect();
    pairs.removed.sort_by_key(|s| s.id);
    Ok(pairs)
}

/// Compares audit `old` with audit `new`: the site pairs and their counts.
///
/// Reads through a second, read-only connection to the database file, so `db` must be on disk.
///
/// # Errors
/// As [`pair_sites`], and [`DbError::Open`] if the file cannot be opened again.
pub fn compare(db: &AuditDb, old: AuditId, new: AuditId) -> Result<Comparison, DbError> {
    let pairs = pair_sites(db, old, new)?;
    let reader = Reader::open(db)?;
    let counts = pairs.both.iter().map(|(o, n)| count_with(&reader, o.id, n.id)).collect::<Result<Vec<_>, _>>()?;
    Ok(Comparison { pairs, counts })
}

/// A finding's identity across audits: its code, and the URL and key [`Code::identity`] keeps. The
/// cursors read `(code, url, detail)` order, which is this key's order too: within one code the
/// key is either the detail or empty, and a code whose URL it shortens (the soft-404 probe) has
/// one finding per site.
fn key(f: &FindingRow) -> (&str, &str, &str) {
    match Code::parse(&f.code) {
        Some(code) => {
            let (url, detail) = code.identity(&f.url, &f.detail);
            (&f.code, url, detail)
        }
        None => (&f.code, &f.url, &f.detail),
    }
}

/// Merges two cursors in `(code, url, detail)` order (see [`Reader::by_key`]), matching findings
/// by their identity ([`Code::identity`]).
///
/// # Errors
/// The first error of the database or of `f`.
pub fn merge<E, F>(old: &mut FindingCursor<'_>, new: &mut FindingCursor<'_>, mut f: F) -> Result<(), E>
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
///
/// # Errors
/// The first error of the database or of `f`.
pub fn changes_with<E, F>(reader: &Reader, old: SiteId, new: SiteId, f: F) -> Result<(), E>
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
///
/// # Errors
/// A read failure.
pub fn count_with(reader: &Reader, old: SiteId, new: SiteId) -> Result<ChangeCounts, DbError> {
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
