//! Each site's "AI crawlers" section (issue 37, part 5): the table of
//! [`AuditDb::ai_crawlers`], per host and crawler, with the verdict over the pages crawled. A
//! module and a template file of their own (`templates/report/ai_crawlers.html`).

use super::ReportError;
use super::base::render;
use askama::Template;
use shoal_shared::ai_crawlers::AiVerdict;
use shoal_store::{AuditDb, SiteSummary};
use std::io::Write;

/// One row as shown.
#[derive(Debug)]
struct AiRow {
    host: String,
    token: &'static str,
    operator: &'static str,
    purpose: &'static str,
    verdict: &'static str,
    /// The badge class of a verdict that blocks something.
    badge: Option<&'static str>,
    start_page: &'static str,
    pages: u64,
    blocked: u64,
}

#[derive(Template, Debug)]
#[template(path = "report/ai_crawlers.html", block = "ai_section")]
struct AiSection {
    site: u64,
    rows: Vec<AiRow>,
}

/// Writes the section of `site` (a table of at most hosts × crawlers rows).
pub(super) fn write_ai_section<W: Write>(w: &mut W, db: &AuditDb, site: &SiteSummary) -> Result<(), ReportError> {
    let rows = db
        .ai_crawlers(site.id)?
        .into_iter()
        .map(|r| AiRow {
            token: r.crawler.token,
            operator: r.crawler.operator,
            purpose: r.crawler.purpose.as_str(),
            verdict: r.verdict.words(),
            badge: match r.verdict {
                AiVerdict::Blocked => Some("sev-warning"),
                AiVerdict::PartlyBlocked => Some("sev-notice"),
                AiVerdict::Allowed => None,
            },
            start_page: match r.start_blocked {
                Some(true) => "blocked",
                Some(false) => "allowed",
                None => "",
            },
            pages: r.pages,
            blocked: r.blocked,
            host: r.host,
        })
        .collect();
    render(w, &AiSection { site: site.id.0, rows })
}
