//! The HTML report's fragments: one askama struct per block of `templates/report/report.html`.
//!
//! Each struct renders one block, so the writer can emit the report piece by piece (a header, then
//! a row per database row, then a footer) instead of building one string for the whole audit.
//! Everything is escaped by askama except values of the two `HtmlSafe` types, [`Asset`] (the report's
//! own CSS and script) and [`Svg`] (charts drawn from counts), neither of which can hold crawled text
//! unescaped.

use super::csp::Asset;
use super::links::Local;
use super::svg::Svg;
use askama::Template;

/// A crawled URL as shown: its text, and an href only when it is an http(s) URL.
#[derive(Debug, Clone)]
pub(crate) struct UrlView<'a> {
    pub(crate) text: &'a str,
    pub(crate) href: Option<&'a str>,
}

/// The link from a page back to the page above it (a site's report to the overview).
#[derive(Debug, Clone)]
pub(crate) struct BackLink {
    pub(crate) href: Local,
    pub(crate) text: String,
}

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "head")]
pub(super) struct Head<'a> {
    pub(super) csp: &'a str,
    pub(super) generator: &'a str,
    pub(super) title: &'a str,
    pub(super) written_at: &'a str,
    pub(super) style: Asset,
    pub(super) operator: Option<&'a str>,
    pub(super) logo: Option<&'a str>,
    pub(super) back: Option<BackLink>,
}

/// A chart with its caption.
#[derive(Debug)]
pub(crate) struct Chart {
    pub(crate) caption: &'static str,
    pub(crate) svg: Svg,
}

/// The earlier site a site is compared with, and the counts.
#[derive(Debug)]
pub(super) struct PrevView {
    pub(super) audit: u64,
    pub(super) site: u64,
    pub(super) status: &'static str,
    pub(super) created_at: String,
    pub(super) new: u64,
    pub(super) fixed: u64,
    pub(super) remaining: u64,
}

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "changes_start")]
pub(super) struct ChangesStart<'a> {
    pub(super) anchor: u64,
    pub(super) heading: &'a str,
    pub(super) previous: Option<PrevView>,
    pub(super) none_text: &'a str,
}

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "findings_start")]
pub(super) struct FindingsStart {
    pub(super) heading: Option<String>,
    pub(super) table_id: String,
    pub(super) count: u64,
    pub(super) collapsed: bool,
}

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "finding_row")]
pub(super) struct FindingRowView<'a> {
    pub(super) severity: &'a str,
    pub(super) rank: u8,
    pub(super) code: &'a str,
    pub(super) family: &'static str,
    pub(super) message: &'static str,
    pub(super) url: &'a str,
    pub(super) href: Option<&'a str>,
    pub(super) anchor: Option<String>,
    pub(super) detail: &'a str,
    pub(super) related: Vec<UrlView<'a>>,
}

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "table_end")]
pub(super) struct TableEnd {
    pub(super) open_table: bool,
    pub(super) collapsed: bool,
}

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "section_end")]
pub(super) struct SectionEnd;

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "pages_start")]
pub(super) struct PagesStart {
    pub(super) site: u64,
    pub(super) count: u64,
}

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "page_row")]
pub(super) struct PageRowView<'a> {
    pub(super) anchor: &'a str,
    pub(super) url: &'a str,
    pub(super) status: &'a str,
    pub(super) status_sort: i64,
    pub(super) depth: u16,
    pub(super) found_via: &'a str,
    pub(super) title: Option<&'a str>,
    pub(super) response_ms: u64,
    pub(super) bytes: u64,
    pub(super) bytes_text: &'a str,
}

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "details_start")]
pub(super) struct DetailsStart {
    pub(super) site: u64,
}

/// Links on a page, counted.
#[derive(Debug, Default)]
pub(super) struct LinkCounts {
    pub(super) total: u64,
    pub(super) internal: u64,
    pub(super) external: u64,
    pub(super) resources: u64,
    pub(super) sitemap_entries: u64,
    pub(super) nofollow: u64,
}

/// A finding listed under its URL's details.
#[derive(Debug)]
pub(super) struct UrlFinding {
    pub(super) severity: &'static str,
    pub(super) code: String,
    pub(super) message: &'static str,
    pub(super) detail: String,
}

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "url_detail")]
pub(super) struct UrlDetail<'a> {
    pub(super) anchor: &'a str,
    pub(super) url: &'a str,
    pub(super) href: Option<&'a str>,
    pub(super) kind: &'a str,
    pub(super) status: &'a str,
    pub(super) found_via: &'a str,
    pub(super) found_from: Option<UrlView<'a>>,
    pub(super) depth: u16,
    pub(super) redirect_to: Option<UrlView<'a>>,
    pub(super) final_url: Option<UrlView<'a>>,
    pub(super) redirect_loops: bool,
    pub(super) content_type: Option<&'a str>,
    pub(super) response_ms: u64,
    pub(super) bytes_text: &'a str,
    pub(super) fetched_at: &'a str,
    pub(super) title: Option<&'a str>,
    pub(super) meta_description: Option<&'a str>,
    pub(super) h1: &'a [String],
    pub(super) canonical: Option<UrlView<'a>>,
    pub(super) canonical_is_self: bool,
    pub(super) meta_robots: String,
    pub(super) x_robots_tag: String,
    pub(super) links: LinkCounts,
    pub(super) findings: Vec<UrlFinding>,
    /// What the audit's extraction rules found on the page.
    pub(super) extracted: &'a [(String, String)],
}

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "compare_summary")]
pub(super) struct CompareSummary {
    pub(super) old_audit: u64,
    pub(super) old_status: &'static str,
    pub(super) old_created: String,
    pub(super) new_audit: u64,
    pub(super) new_status: &'static str,
    pub(super) new_created: String,
    pub(super) new: u64,
    pub(super) fixed: u64,
    pub(super) remaining: u64,
    /// Pages added, removed and changed over the matched sites.
    pub(super) urls: shoal_store::url_changes::UrlCounts,
}

/// The schedule's previous run and the totals against it.
#[derive(Debug)]
pub(super) struct ScheduleDelta {
    pub(super) audit: u64,
    pub(super) status: &'static str,
    pub(super) created_at: String,
    pub(super) new: u64,
    pub(super) fixed: u64,
    pub(super) remaining: u64,
    pub(super) added: usize,
    pub(super) removed: usize,
    /// Pages added, removed and changed over the matched sites.
    pub(super) urls: shoal_store::url_changes::UrlCounts,
}

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "schedule_changes")]
pub(super) struct ScheduleChanges<'a> {
    pub(super) schedule: u64,
    pub(super) name: &'a str,
    pub(super) previous: Option<ScheduleDelta>,
}

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "sites_delta")]
pub(super) struct SitesDelta<'a> {
    pub(super) old_audit: u64,
    pub(super) new_audit: u64,
    pub(super) paired: usize,
    pub(super) added: Vec<UrlView<'a>>,
    pub(super) removed: Vec<UrlView<'a>>,
}

#[derive(Template, Debug)]
#[template(path = "report/report.html", block = "foot")]
pub(super) struct Foot<'a> {
    pub(super) generator: &'a str,
    pub(super) script: Asset,
}
