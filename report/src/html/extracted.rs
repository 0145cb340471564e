//! Each site's "Extracted values" section (issue 37, part 6): what the audit's extraction rules
//! (`--extract`) found, one row per page and rule, streamed page by page. Only for audits that
//! have rules. A module and a template file of their own (`templates/report/extracted.html`).

use super::ReportError;
use super::base::{anchor, render};
use super::view::{SectionEnd, TableEnd};
use askama::Template;
use shoal_shared::custom::CustomRules;
use shoal_store::{AuditDb, AuditSummary, SiteSummary};
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

/// The audit's rules, from its stored options (none for an audit from before they existed).
pub(crate) fn audit_rules(audit: &AuditSummary) -> CustomRules {
    serde_json::from_str::<serde_json::Value>(&audit.options_json)
        .ok()
        .and_then(|v| serde_json::from_value(v.get("custom")?.clone()).ok())
        .unwrap_or_default()
}

/// Writes the section of `site`, if its audit has extraction rules.
pub(super) fn write_extracted_section<W: Write>(
    w: &mut W,
    db: &AuditDb,
    audit: &AuditSummary,
    site: &SiteSummary,
) -> Result<(), ReportError> {
    let rules = audit_rules(audit);
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
