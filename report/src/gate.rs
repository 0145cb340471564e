//! The CI gate: `shoal report --fail-on error [--new-only]` exits non-zero when an audit has
//! findings of that severity or worse (only those new since the audit each site is compared
//! with, with `--new-only`), so a pipeline can fail on new errors. The JUnit and SARIF summaries
//! mark the same findings.

use crate::ReportError;
use crate::compare::{Change, changes_with};
use crate::issues::baselines;
use shoal_shared::finding::Severity;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_store::cursor::Reader;
use shoal_store::{AuditDb, DbError};
use std::collections::BTreeMap;

/// What fails a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    /// Findings of this severity or worse fail (`Notice` fails on anything).
    pub level: Severity,
    /// Only findings new since each site's previous audit count (every finding of a site with no
    /// earlier audit is new).
    pub new_only: bool,
}

impl Gate {
    /// Whether a finding of `severity` is bad enough to fail.
    #[must_use]
    pub fn counts(&self, severity: Severity) -> bool {
        severity <= self.level
    }
}

/// The findings that failed a gate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GateResult {
    /// Failing findings.
    pub findings: u64,
    /// Sites with at least one.
    pub sites: u64,
    /// Failing findings by code, most first (then by code).
    pub by_code: Vec<(String, u64)>,
}

impl GateResult {
    /// Whether the gate failed.
    #[must_use]
    pub fn failed(&self) -> bool {
        self.findings > 0
    }
}

/// Parses a stored severity; `None` for anything else.
#[must_use]
pub fn parse_severity(s: &str) -> Option<Severity> {
    Severity::parse(s)
}

/// Evaluates `gate` on an audit, or on one site of it.
///
/// # Errors
/// [`ReportError::UnknownAudit`], [`ReportError::Db`].
pub fn evaluate(db: &AuditDb, audit: AuditId, only: Option<SiteId>, gate: Gate) -> Result<GateResult, ReportError> {
    db.audit(audit)?.ok_or(ReportError::UnknownAudit { audit })?;
    let mut by_code: BTreeMap<String, u64> = BTreeMap::new();
    let mut sites = 0;
    let keep = |s: SiteId| only.is_none_or(|o| o == s);
    if gate.new_only {
        let base = baselines(db, audit)?;
        let reader = Reader::open(db)?;
        for site in db.site_counts(audit)?.into_iter().filter(|s| keep(s.id)) {
            let before = by_code.values().sum::<u64>();
            match base.get(&site.id) {
                Some(prev) => changes_with(&reader, prev.site, site.id, |change, f| -> Result<(), DbError> {
                    if change == Change::New && gate.counts(f.severity) {
                        *by_code.entry(f.code).or_default() += 1;
                    }
                    Ok(())
                })?,
                None => add_counts(db, site.id, gate, &mut by_code)?,
            }
            sites += u64::from(by_code.values().sum::<u64>() > before);
        }
    } else {
        let mut per_site: BTreeMap<SiteId, u64> = BTreeMap::new();
        for c in db.issue_counts(audit)?.into_iter().filter(|c| keep(c.site) && gate.counts(c.severity)) {
            *per_site.entry(c.site).or_default() += c.findings;
            *by_code.entry(c.code).or_default() += c.findings;
        }
        sites = per_site.len() as u64;
    }
    let mut by_code: Vec<(String, u64)> = by_code.into_iter().collect();
    by_code.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(GateResult { findings: by_code.iter().map(|(_, n)| n).sum(), sites, by_code })
}

fn add_counts(db: &AuditDb, site: SiteId, gate: Gate, by_code: &mut BTreeMap<String, u64>) -> Result<(), DbError> {
    for c in db.site_issue_counts(site)?.into_iter().filter(|c| gate.counts(c.severity)) {
        *by_code.entry(c.code).or_default() += c.findings;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_counts_itself_and_worse() {
        let error = Gate { level: Severity::Error, new_only: false };
        assert!(error.counts(Severity::Error) && !error.counts(Severity::Warning) && !error.counts(Severity::Notice));
        let notice = Gate { level: Severity::Notice, new_only: false };
        assert!(notice.counts(Severity::Error) && notice.counts(Severity::Warning) && notice.counts(Severity::Notice));
        assert_eq!(parse_severity("warning"), Some(Severity::Warning));
        assert_eq!(parse_severity("fatal"), None);
    }
}
