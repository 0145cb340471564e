//! The HTML twin of the comparison of two audits (`shoal report --compare OLD NEW --format html`)
//! and the section a scheduled run's report opens with: what changed since the previous run.

use super::base::{BUFFER, head, render, url_view};
use super::csp;
use super::site::change_lists;
use super::view::{
    ChangesStart, CompareSummary, Foot, PrevView, ScheduleChanges, ScheduleDelta, SectionEnd, SitesDelta,
};
use crate::branding::Branding;
use crate::compare;
use crate::{ReportError, generator, rfc3339};
use shoal_shared::ids::AuditId;
use shoal_store::AuditDb;
use shoal_store::compare::{ChangeCounts, Comparison, SitePairs};
use shoal_store::cursor::Reader;
use std::io::{BufWriter, Write};

/// Writes an HTML page comparing audit `old` with audit `new` (the HTML twin of
/// [`write_compare_json`](crate::write_compare_json)): totals, added and removed sites, and per
/// site the new, fixed and remaining findings.
///
/// # Errors
/// As [`write_compare_json`](crate::write_compare_json).
pub fn write_compare_html(db: &AuditDb, old: AuditId, new: AuditId, out: &mut dyn Write) -> Result<(), ReportError> {
    let Comparison { pairs, counts } = shoal_store::compare::compare(db, old, new).map_err(compare::unknown_audit)?;
    let old_audit = db.audit(old)?.ok_or(ReportError::UnknownAudit { audit: old })?;
    let new_audit = db.audit(new)?.ok_or(ReportError::UnknownAudit { audit: new })?;
    let reader = Reader::open(db)?;
    let mut w = BufWriter::with_capacity(BUFFER, out);
    head(&mut w, &format!("Shoal: changes from audit {old} to audit {new}"), &Branding::default(), None)?;
    render(
        &mut w,
        &CompareSummary {
            old_audit: old.0,
            old_status: old_audit.status.as_str(),
            old_created: rfc3339(old_audit.created_at),
            new_audit: new.0,
            new_status: new_audit.status.as_str(),
            new_created: rfc3339(new_audit.created_at),
            new: counts.iter().map(|c| c.new).sum(),
            fixed: counts.iter().map(|c| c.fixed).sum(),
            remaining: counts.iter().map(|c| c.remaining).sum(),
            urls: shoal_store::url_changes::count_pairs(&reader, &pairs.both)?,
        },
    )?;
    sites_delta(&mut w, old, new, &pairs)?;
    for ((o, n), c) in pairs.both.iter().zip(&counts) {
        let prev = PrevView {
            audit: old.0,
            site: o.id.0,
            status: o.status.as_str(),
            created_at: rfc3339(old_audit.created_at),
            new: c.new,
            fixed: c.fixed,
            remaining: c.remaining,
        };
        let heading = format!("{} (site {} → site {})", n.start_url, o.id, n.id);
        render(&mut w, &ChangesStart { anchor: n.id.0, heading: &heading, previous: Some(prev), none_text: "" })?;
        change_lists(&mut w, &reader, o.id, n.id, *c, None)?;
        render(&mut w, &SectionEnd)?;
    }
    render(&mut w, &Foot { generator: &generator(), script: csp::SCRIPT })?;
    w.flush()?;
    Ok(())
}

/// For an audit a schedule started, the section at the top of its overview: what changed since the
/// schedule's previous run, or that this is its first run. Nothing for a submitted audit.
pub(crate) fn schedule_changes<W: Write>(w: &mut W, db: &AuditDb, audit: AuditId) -> Result<(), ReportError> {
    let Some(run) = db.scheduled_run(audit)? else { return Ok(()) };
    let name = run.name.unwrap_or_else(|| "(removed since)".to_owned());
    let Some(previous) = run.previous else {
        return render(w, &ScheduleChanges { schedule: run.schedule.0, name: &name, previous: None });
    };
    let Comparison { pairs, counts } =
        shoal_store::compare::compare(db, previous, audit).map_err(compare::unknown_audit)?;
    let old = db.audit(previous)?.ok_or(ReportError::UnknownAudit { audit: previous })?;
    let totals = ChangeCounts::sum(&counts);
    let view = ScheduleDelta {
        audit: previous.0,
        status: old.status.as_str(),
        created_at: rfc3339(old.created_at),
        new: totals.new,
        fixed: totals.fixed,
        remaining: totals.remaining,
        added: pairs.added.len(),
        removed: pairs.removed.len(),
        urls: shoal_store::url_changes::count_pairs(&Reader::open(db)?, &pairs.both)?,
    };
    render(w, &ScheduleChanges { schedule: run.schedule.0, name: &name, previous: Some(view) })
}

fn sites_delta<W: Write>(w: &mut W, old: AuditId, new: AuditId, pairs: &SitePairs) -> Result<(), ReportError> {
    render(
        w,
        &SitesDelta {
            old_audit: old.0,
            new_audit: new.0,
            paired: pairs.both.len(),
            added: pairs.added.iter().map(|s| url_view(&s.start_url)).collect(),
            removed: pairs.removed.iter().map(|s| url_view(&s.start_url)).collect(),
        },
    )
}
