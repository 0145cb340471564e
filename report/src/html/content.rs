//! Each site's "Content and structured data" section (issue 37): the Schema.org types found, the
//! thin pages counted, and the duplicate clusters with their pages
//! ([`AuditDb::content_summary`]). A module and a template file of their own
//! (`templates/report/content.html`), like the browser section.

use super::ReportError;
use super::base::render;
use askama::Template;
use shoal_store::{AuditDb, SiteSummary};
use std::io::Write;

/// Pages listed per cluster in the HTML report (the JSON report lists them all).
const URLS_SHOWN: usize = 50;

#[derive(Debug)]
pub(crate) struct ClusterView {
    kind: &'static str,
    detail: String,
    urls: Vec<String>,
    more: usize,
}

#[derive(Template, Debug)]
#[template(path = "report/content.html", block = "content_section")]
struct ContentSection {
    site: u64,
    pages_with_types: u64,
    thin: u64,
    types: Vec<(String, u64)>,
    clusters: Vec<ClusterView>,
}

/// Writes the section of `site`, unless it has nothing to show.
pub(super) fn write_content_section<W: Write>(w: &mut W, db: &AuditDb, site: &SiteSummary) -> Result<(), ReportError> {
    let summary = db.content_summary(site.id)?;
    if summary.types.is_empty() && summary.thin_pages == 0 && summary.clusters.is_empty() {
        return Ok(());
    }
    let clusters = summary
        .clusters
        .into_iter()
        .map(|c| ClusterView {
            kind: if c.code == "content_duplicate" { "Same text" } else { "Nearly the same text" },
            detail: c.detail,
            more: c.urls.len().saturating_sub(URLS_SHOWN),
            urls: c.urls.into_iter().take(URLS_SHOWN).collect(),
        })
        .collect();
    render(
        w,
        &ContentSection {
            site: site.id.0,
            pages_with_types: summary.pages_with_types,
            thin: summary.thin_pages,
            types: summary.types,
            clusters,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crawled_text_is_escaped() {
        let evil = "<script>alert(1)</script>";
        let section = ContentSection {
            site: 1,
            pages_with_types: 1,
            thin: 0,
            types: vec![(evil.to_owned(), 1)],
            clusters: vec![ClusterView { kind: "Same text", detail: evil.into(), urls: vec![evil.into()], more: 3 }],
        };
        let html = section.render().expect("renders");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("and 3 more"), "{html}");
    }
}
