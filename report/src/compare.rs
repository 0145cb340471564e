//! Comparing two audits in a document: `shoal report --compare OLD NEW` as JSON
//! ([`write_compare_json`]; the HTML twin is in [`crate::html`]).
//!
//! The matching itself (sites by start URL, findings by their identity: code, URL and a stable
//! key; streamed merges) is the audit database's ([`shoal_store::compare`]), shared with the
//! coordinator's run notifications; the rules are documented for users in
//! `docs/report-compare.md`.

use super::{ReportError, rfc3339};
use serde::Serialize;
use shoal_store::compare::{self as core, ChangeCounts, SitePairs};
use shoal_store::cursor::Reader;
use shoal_store::{AuditDb, AuditSummary, DbError, SiteSummary};

use super::json_doc::{FindingJson, key as key_json, open_document, value};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_store::url_changes::{FACTS, UrlChange, UrlCounts, UrlFacts, url_changes_with};
use std::io::{BufWriter, Write};

pub use shoal_store::compare::{Change, changes_with, count_with, for_each_change};

/// The `schema` value of every comparison document of this shape (`docs/report-compare.md`).
/// Within v1 fields may be added, never removed or renamed.
pub const COMPARE_SCHEMA: &str = "shoal.compare/v1";

/// Matches the sites of `old` and `new` by start URL ([`shoal_store::compare::pair_sites`]).
///
/// # Errors
/// [`ReportError::UnknownAudit`] for either id, [`ReportError::Db`] on a read failure.
pub fn pair_sites(db: &AuditDb, old: AuditId, new: AuditId) -> Result<SitePairs, ReportError> {
    core::pair_sites(db, old, new).map_err(unknown_audit)
}

/// [`DbError::UnknownAudit`] as the report's own error, so callers see one kind for a wrong id.
pub(crate) fn unknown_audit(e: DbError) -> ReportError {
    match e {
        DbError::UnknownAudit { audit, .. } => ReportError::UnknownAudit { audit },
        e => ReportError::Db(e),
    }
}

#[derive(Serialize)]
pub(crate) struct AuditJson<'a> {
    id: u64,
    created_at: String,
    created_at_ms: u64,
    finished_at: Option<String>,
    finished_at_ms: Option<u64>,
    status: &'a str,
}

impl AuditJson<'_> {
    pub(crate) fn of(a: &AuditSummary) -> AuditJson<'static> {
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
pub(crate) struct CountsJson {
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
pub(crate) struct TotalsJson {
    sites: usize,
    added_sites: usize,
    removed_sites: usize,
    new: u64,
    fixed: u64,
    remaining: u64,
}

impl TotalsJson {
    pub(crate) fn of(pairs: &SitePairs, c: ChangeCounts) -> TotalsJson {
        TotalsJson {
            sites: pairs.both.len(),
            added_sites: pairs.added.len(),
            removed_sites: pairs.removed.len(),
            new: c.new,
            fixed: c.fixed,
            remaining: c.remaining,
        }
    }
}

#[derive(Serialize)]
pub(crate) struct SiteRefJson<'a> {
    id: u64,
    start_url: &'a str,
    status: &'a str,
}

pub(crate) fn site_ref(s: &SiteSummary) -> SiteRefJson<'_> {
    SiteRefJson { id: s.id.0, start_url: &s.start_url, status: s.status.as_str() }
}

/// One URL's change as JSON: an added or removed page with its facts (`facts`: each of
/// [`FACTS`] as text or null, `extracted`: the values its rules found), a changed one with what
/// changed (`changes`: `fact`, `old`, `new`).
fn url_change_json(change: &UrlChange) -> serde_json::Value {
    let page = |p: &UrlFacts| {
        let facts: serde_json::Map<String, serde_json::Value> =
            FACTS.iter().zip(&p.facts).map(|((name, _), v)| ((*name).to_owned(), v.clone().into())).collect();
        let extracted: serde_json::Map<String, serde_json::Value> =
            p.extracted.iter().map(|(k, v)| (k.clone(), v.clone().into())).collect();
        serde_json::json!({ "url": p.url, "facts": facts, "extracted": extracted })
    };
    match change {
        UrlChange::Added(p) | UrlChange::Removed(p) => page(p),
        UrlChange::Changed { url, changes } => serde_json::json!({
            "url": url,
            "changes": changes
                .iter()
                .map(|c| serde_json::json!({ "fact": c.fact, "old": c.old, "new": c.new }))
                .collect::<Vec<_>>(),
        }),
    }
}

/// Writes the `urls` object of a site pair (`docs/report-compare.md`): the pages `added`,
/// `removed` and `changed`, each list streamed in URL order, then their `summary` counts.
///
/// # Errors
/// A read failure, or `w` fails.
pub(crate) fn write_url_changes<W: Write>(
    w: &mut W,
    reader: &Reader,
    old: SiteId,
    new: SiteId,
) -> Result<(), ReportError> {
    let mut counts = UrlCounts::default();
    w.write_all(b"{")?;
    for (i, wanted) in ["added", "removed", "changed"].into_iter().enumerate() {
        key_json(w, i == 0, wanted)?;
        w.write_all(b"[")?;
        let mut first = true;
        url_changes_with(reader, old, new, |change| -> Result<(), ReportError> {
            if change.kind() != wanted {
                return Ok(());
            }
            counts.add(&change);
            if !std::mem::take(&mut first) {
                w.write_all(b",")?;
            }
            value(w, &url_change_json(&change))
        })?;
        w.write_all(b"]")?;
    }
    key_json(w, false, "summary")?;
    value(w, &serde_json::json!({ "added": counts.added, "removed": counts.removed, "changed": counts.changed }))?;
    w.write_all(b"}")?;
    Ok(())
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
    let core::Comparison { pairs, counts } = core::compare(db, old, new).map_err(unknown_audit)?;
    let old_audit = db.audit(old)?.ok_or(ReportError::UnknownAudit { audit: old })?;
    let new_audit = db.audit(new)?.ok_or(ReportError::UnknownAudit { audit: new })?;
    let reader = Reader::open(db)?;
    let totals = TotalsJson::of(&pairs, ChangeCounts::sum(&counts));

    let mut w = BufWriter::new(out);
    open_document(&mut w, COMPARE_SCHEMA)?;
    key_json(&mut w, false, "match")?;
    value(&mut w, &serde_json::json!({"sites": "start_url", "findings": ["code", "url", "key"], "urls": "url"}))?;
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
        key_json(&mut w, false, "urls")?;
        write_url_changes(&mut w, &reader, o.id, n.id)?;
        w.write_all(b"}")?;
    }
    w.write_all(b"]}\n")?;
    w.flush()?;
    Ok(())
}
