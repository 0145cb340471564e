//! Each site's "Domain and e-mail" section: the findings of SPEC §9's checks (families `dns`,
//! `mail`, `domain`) in a table of their own, after the site's issues in its own report. A module and a template
//! file of their own (`templates/report/domain.html`), so the section moves with the report's
//! layout as one piece.

use super::ReportError;
use super::base::{finding_row, findings_table, render};
use super::view::{FindingsStart, SectionEnd};
use askama::Template;
use shoal_shared::domain::registrable_domain;
use shoal_store::cursor::Reader;
use shoal_store::{AuditDb, FindingRow, SiteSummary};
use std::io::Write;

/// The families of SPEC §9's findings.
pub const FAMILIES: &[&str] = &["dns", "mail", "domain"];

#[derive(Template, Debug)]
#[template(path = "report/domain.html", block = "domain_section")]
struct DomainSection {
    site: u64,
    domain: Option<String>,
    count: u64,
}

fn is_domain(f: &FindingRow) -> bool {
    f.known_code().is_some_and(|c| FAMILIES.contains(&c.family()))
}

/// Writes the section of `site`.
pub(super) fn write_domain_section<W: Write>(
    w: &mut W,
    db: &AuditDb,
    reader: &Reader,
    site: &SiteSummary,
) -> Result<(), ReportError> {
    let mut count = 0u64;
    db.for_each_finding(site.id, |f| -> Result<(), ReportError> {
        count += u64::from(is_domain(&f));
        Ok(())
    })?;
    let domain = url::Url::parse(&site.start_url).ok().and_then(|u| u.host_str().and_then(registrable_domain));
    render(w, &DomainSection { site: site.id.0, domain, count })?;
    let table_id = format!("domain-t-{}", site.id);
    findings_table(w, FindingsStart { heading: None, table_id, count, collapsed: false }, |w| {
        db.for_each_finding(site.id, |f| if is_domain(&f) { finding_row(w, reader, &f, Some(site.id)) } else { Ok(()) })
    })?;
    render(w, &SectionEnd)
}
