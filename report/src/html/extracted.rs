//! Each site's "Extracted values" section (issue 37, part 6): what the audit's extraction rules
//! (`--extract`) found, one row per page and rule, streamed page by page. Only for audits that
//! have rules. A module and a template file of their own (`templates/report/extracted.html`).

use super::ReportError;
use super::base::{anchor, render};
use super::view::{SectionEnd, TableEnd};
use askama::Template;
use shoal_shared::custom::CustomRules;
use shoal_store::{AuditDb, AuditSummary, DbError, OptionsError, SiteSummary};
use std::io::Write;

#[derive(Template, Debug)]
#[template(path = "report/extracted.html", block = "extracted_start")]
struct ExtractedStart {
    site: u64,
    /// The rules, as written.
    rules: String,
}

#[derive(Template, Debug)]
#[template(path = "report/extracted.html", block = "extracted_row")]
struct ExtractedRow<'a> {
    anchor: &'a str,
    url: &'a str,
    name: &'a str,
    value: &'a str,
}

/// The audit's rules, from its stored options: none for an audit from before they existed (its
/// options have no `custom`).
///
/// # Errors
/// [`DbError::UnreadableOptions`] when the options hold rules that do not read: a report without
/// them would say the audit had none.
pub(crate) fn audit_rules(db: &AuditDb, audit: &AuditSummary) -> Result<CustomRules, ReportError> {
    // Only the rules: the other options are shown as stored, whatever version wrote them.
    #[derive(serde::Deserialize)]
    struct Rules {
        #[serde(default)]
        custom: CustomRules,
    }
    serde_json::from_str::<Rules>(&audit.options_json).map(|r| r.custom).map_err(|e| {
        let source = OptionsError::Parse(e);
        ReportError::Db(DbError::UnreadableOptions { path: db.path().to_owned(), audit: audit.id, source })
    })
}

/// Writes the section of `site`, if its audit has extraction rules.
pub(super) fn write_extracted_section<W: Write>(
    w: &mut W,
    db: &AuditDb,
    audit: &AuditSummary,
    site: &SiteSummary,
) -> Result<(), ReportError> {
    let rules = audit_rules(db, audit)?;
    if rules.extract().is_empty() {
        return Ok(());
    }
    let listed: Vec<String> = rules.extract().iter().map(ToString::to_string).collect();
    render(w, &ExtractedStart { site: site.id.0, rules: listed.join(", ") })?;
    db.for_each_page(site.id, |p| -> Result<(), ReportError> {
        let a = anchor(site.id, &p.url);
        for (name, value) in &p.extracted {
            render(w, &ExtractedRow { anchor: &a, url: &p.url, name, value })?;
        }
        Ok(())
    })?;
    render(w, &TableEnd { open_table: true, collapsed: false })?;
    render(w, &SectionEnd)
}
