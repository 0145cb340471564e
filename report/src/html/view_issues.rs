//! The fragments of a site's health and issues (`templates/report/issues.html`) and of the batch
//! overview (`templates/report/overview.html`): one askama struct per block, like [`super::view`].

use super::links::Local;
use super::svg::Svg;
use super::view::{Chart, UrlView};
use askama::Template;

/// A family in a filter's list: its bit ([`crate::issues::family_bit`]) and its label.
#[derive(Debug, Clone)]
pub(crate) struct FamilyOption {
    pub(crate) bit: u64,
    pub(crate) label: String,
}

/// A score's change since an earlier audit.
#[derive(Debug)]
pub(crate) struct TrendView {
    pub(crate) audit: u64,
    pub(crate) then: u8,
    pub(crate) arrow: &'static str,
    pub(crate) class: &'static str,
    pub(crate) text: String,
}

#[derive(Template, Debug)]
#[template(path = "report/issues.html", block = "site_health")]
pub(crate) struct SiteHealthView<'a> {
    pub(crate) id: u64,
    pub(crate) start_url: &'a str,
    pub(crate) start_href: Option<&'a str>,
    pub(crate) own_page: Option<Local>,
    pub(crate) status: &'static str,
    pub(crate) done_at: Option<String>,
    pub(crate) pages: u64,
    pub(crate) urls: u64,
    pub(crate) answered: u64,
    pub(crate) score: Option<u8>,
    pub(crate) band: &'static str,
    pub(crate) trend: Option<TrendView>,
    pub(crate) has_earlier: bool,
    pub(crate) errors: u64,
    pub(crate) warnings: u64,
    pub(crate) notices: u64,
    pub(crate) issues: usize,
    pub(crate) full: bool,
    pub(crate) json: Option<Local>,
    pub(crate) formula: &'static str,
    pub(crate) audit_line: String,
}

#[derive(Template, Debug)]
#[template(path = "report/issues.html", block = "issues_start")]
pub(crate) struct IssuesStart {
    pub(crate) site: u64,
    pub(crate) count: usize,
    pub(crate) families: Vec<FamilyOption>,
}

#[derive(Template, Debug)]
#[template(path = "report/issues.html", block = "issue_start")]
pub(crate) struct IssueStart<'a> {
    pub(crate) anchor: String,
    pub(crate) code: &'a str,
    pub(crate) severity: &'static str,
    pub(crate) sev_letter: &'static str,
    pub(crate) family_bit: u64,
    pub(crate) family_label: String,
    pub(crate) message: Option<&'static str>,
    pub(crate) why: Option<String>,
    pub(crate) fix: Option<String>,
    pub(crate) urls: u64,
    pub(crate) scope: &'static str,
    pub(crate) impact: String,
    pub(crate) open: bool,
    pub(crate) paged: bool,
}

#[derive(Template, Debug)]
#[template(path = "report/issues.html", block = "issue_row")]
pub(crate) struct IssueRow<'a> {
    pub(crate) url: &'a str,
    pub(crate) href: Option<&'a str>,
    pub(crate) anchor: Option<String>,
    pub(crate) detail: &'a str,
    pub(crate) related: Vec<UrlView<'a>>,
}

#[derive(Template, Debug)]
#[template(path = "report/issues.html", block = "issue_end")]
pub(crate) struct IssueEnd {
    pub(crate) shown: u64,
    pub(crate) total: u64,
    pub(crate) more: Option<Local>,
    pub(crate) more_text: String,
    pub(crate) prev: Option<Local>,
    pub(crate) next: Option<Local>,
}

#[derive(Template, Debug)]
#[template(path = "report/issues.html", block = "issues_end")]
pub(crate) struct IssuesEnd;

#[derive(Template, Debug)]
#[template(path = "report/issues.html", block = "site_end")]
pub(crate) struct SiteEnd;

#[derive(Template, Debug)]
#[template(path = "report/issues.html", block = "charts")]
pub(crate) struct ChartsView {
    pub(crate) id: u64,
    pub(crate) charts: Vec<Chart>,
}

#[derive(Template, Debug)]
#[template(path = "report/overview.html", block = "overview_summary")]
pub(crate) struct OverviewSummary {
    pub(crate) audit_id: u64,
    pub(crate) status: &'static str,
    pub(crate) created_at: String,
    pub(crate) finished_at: Option<String>,
    pub(crate) sites: usize,
    pub(crate) scored: usize,
    pub(crate) pages: u64,
    pub(crate) urls: u64,
    pub(crate) median: Option<u8>,
    pub(crate) trend: Option<String>,
    pub(crate) errors: u64,
    pub(crate) warnings: u64,
    pub(crate) notices: u64,
    pub(crate) chart: Svg,
    pub(crate) options: String,
    pub(crate) json: Option<Local>,
    pub(crate) families: Vec<FamilyOption>,
}

/// One code across sites.
#[derive(Debug)]
pub(crate) struct AcrossRow {
    pub(crate) code: String,
    pub(crate) severity: &'static str,
    pub(crate) sev_letter: &'static str,
    pub(crate) rank: u8,
    pub(crate) family: String,
    pub(crate) family_bit: u64,
    pub(crate) message: Option<&'static str>,
    pub(crate) sites: u64,
    pub(crate) share: u64,
    pub(crate) urls: u64,
    pub(crate) link: Option<Local>,
}

#[derive(Template, Debug)]
#[template(path = "report/overview.html", block = "across")]
pub(crate) struct AcrossView {
    pub(crate) rows: Vec<AcrossRow>,
    pub(crate) linked: bool,
}

/// A site named in a list (a cause's sites).
#[derive(Debug)]
pub(crate) struct SiteRef {
    pub(crate) start_url: String,
    pub(crate) link: Option<Local>,
}

/// A code a cause's sites share.
#[derive(Debug)]
pub(crate) struct SharedView {
    pub(crate) code: String,
    pub(crate) severity: &'static str,
    pub(crate) sites: u64,
    pub(crate) elsewhere: Option<u64>,
}

/// One shared cause.
#[derive(Debug)]
pub(crate) struct CauseView {
    pub(crate) kind: &'static str,
    pub(crate) title: &'static str,
    pub(crate) value: String,
    pub(crate) shared: Vec<SharedView>,
    pub(crate) sites: Vec<SiteRef>,
    pub(crate) more: usize,
}

#[derive(Template, Debug)]
#[template(path = "report/overview.html", block = "causes")]
pub(crate) struct CausesView {
    pub(crate) causes: Vec<CauseView>,
}

/// A line of the short rankings.
#[derive(Debug)]
pub(crate) struct RankRow {
    pub(crate) start_url: String,
    pub(crate) link: Option<Local>,
    pub(crate) score: String,
    pub(crate) band: &'static str,
    pub(crate) errors: u64,
    pub(crate) sevs: String,
    pub(crate) families: u64,
}

#[derive(Template, Debug)]
#[template(path = "report/overview.html", block = "rankings")]
pub(crate) struct RankingsView {
    pub(crate) by_score: Vec<RankRow>,
    pub(crate) by_errors: Vec<RankRow>,
}

#[derive(Template, Debug)]
#[template(path = "report/overview.html", block = "sites_start")]
pub(crate) struct SitesStart {
    pub(crate) total: usize,
    /// Sites the script can page through (the data block), at most [`super::MAX_SITE_ROWS`].
    pub(crate) listed: usize,
    /// Sites written as HTML rows.
    pub(crate) rows: usize,
    pub(crate) linked: bool,
    /// The rows come from a data block (`sites-data`) when the page has more sites than rows.
    pub(crate) data: bool,
}

#[derive(Template, Debug)]
#[template(path = "report/overview.html", block = "sites_data")]
pub(crate) struct SitesData {
    pub(crate) data: super::data::DataBlock,
}

#[derive(Template, Debug)]
#[template(path = "report/overview.html", block = "site_row")]
pub(crate) struct SiteRow<'a> {
    pub(crate) start_url: &'a str,
    pub(crate) link: Option<Local>,
    pub(crate) running: bool,
    pub(crate) score: String,
    pub(crate) band: &'static str,
    pub(crate) trend: String,
    pub(crate) errors: u64,
    pub(crate) warnings: u64,
    pub(crate) notices: u64,
    pub(crate) pages: u64,
    pub(crate) top: &'a str,
    pub(crate) sevs: String,
    pub(crate) families: u64,
}

#[derive(Template, Debug)]
#[template(path = "report/overview.html", block = "sites_end")]
pub(crate) struct SitesEnd;

#[derive(Template, Debug)]
#[template(path = "report/overview.html", block = "issue_sites_start")]
pub(crate) struct IssueSitesStart<'a> {
    pub(crate) code: &'a str,
    pub(crate) severity: &'static str,
    pub(crate) message: Option<&'static str>,
    pub(crate) family: String,
    pub(crate) why: Option<String>,
    pub(crate) fix: Option<String>,
    pub(crate) sites: u64,
    pub(crate) total_sites: usize,
    pub(crate) urls: u64,
}

#[derive(Template, Debug)]
#[template(path = "report/overview.html", block = "issue_site_row")]
pub(crate) struct IssueSiteRow<'a> {
    pub(crate) start_url: &'a str,
    pub(crate) link: Option<Local>,
    pub(crate) urls: u64,
    pub(crate) findings: u64,
    pub(crate) impact: String,
    pub(crate) score: String,
    pub(crate) score_sort: i32,
    pub(crate) band: &'static str,
}
