//! Reports from the audit database, for the people who act on them and the tools that read them:
//!
//! - **HTML** (`docs/report-html.md`): the batch overview of an audit ([`write_overview_html`]:
//!   sites ranked by health score and errors, the issues that affect the most sites, shared
//!   causes, filters), one report per site ([`write_site_html`]: health and trend, issues grouped
//!   and ranked by impact with why and how to fix, every URL), the page of one issue across sites,
//!   one file for a whole audit ([`write_html`]), a directory of them ([`write_per_site`]), and
//!   comparisons ([`write_compare_html`]). Branded with the operator's name and logo
//!   ([`Branding`]).
//! - **JSON**: `shoal.report/v1` ([`write_json`], [`write_site_json`]), `shoal.overview/v1`
//!   ([`write_overview_json`]), `shoal.compare/v1` ([`write_compare_json`]); documented field by
//!   field in `docs/report-json.md` and `docs/report-compare.md`.
//! - **CSV** ([`write_csv`]): pages, links, findings, grouped issues and site scores.
//! - **For CI**: SARIF 2.1.0 ([`write_sarif`]), JUnit XML ([`write_junit`]) and the gate behind
//!   `--fail-on` ([`gate`]).
//!
//! How findings become issues and scores: [`issues`], [`score`] (formula `shoal-health/1`,
//! `docs/report-scoring.md`), [`causes`]; the texts come from `docs/findings.md` ([`guidance`]).
//!
//! Everything streams: rows are read one at a time from SQLite and written straight out, and the
//! overview reads per-(site, code) aggregates, so a report of a 100,000-page audit needs memory for
//! one page (and its links) or one site's issue counts, not for the audit.
//!
//! Crawled content is untrusted (SPEC §6): HTML is escaped by askama, JSON by serde_json, XML by
//! [`write_junit`]'s escaper; CSV cells that a spreadsheet would run as a formula are defused (see
//! [`write_csv`]).

pub mod branding;
mod browser_json;
pub mod causes;
mod compare;
mod csv_out;
#[cfg(feature = "fixtures")]
pub mod fixtures;
pub mod gate;
pub mod guidance;
mod html;
pub mod issues;
mod json;
mod json_doc;
mod junit;
mod overview_json;
mod per_site;
mod sarif;
pub mod score;
mod sites;

pub use branding::{Branding, BrandingError, Logo};
pub use compare::{COMPARE_SCHEMA, Change, for_each_change, pair_sites, write_compare_json};
pub use csv_out::{CSV_FILES, write_csv};
pub use gate::{Gate, GateResult};
pub use html::links::{Links, Local};
pub use html::{
    HtmlOptions, INLINE_SITES, ISSUE_PAGE_URLS, MAX_SITE_ROWS, write_compare_html, write_html, write_html_with,
    write_issue_sites_html, write_issue_urls_html, write_overview_html, write_site_html,
};
pub use json::{SCHEMA, write_json, write_site_json};
pub use junit::write_junit;
pub use overview_json::{OVERVIEW_SCHEMA, write_overview_json};
pub use per_site::{PerSiteFiles, write_per_site};
pub use sarif::{SARIF_VERSION, write_sarif};
pub use shoal_store::compare::{ChangeCounts, SitePairs};
pub use sites::{FindSiteError, find_site};

use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::time::UnixMs;
use shoal_store::DbError;
use std::path::PathBuf;

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// Reading the audit database failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The audit asked for is not in the database.
    #[error("there is no audit {audit} in the audit database")]
    UnknownAudit {
        /// The id asked for.
        audit: AuditId,
    },
    /// The site asked for is not in the database.
    #[error("there is no site {site} in the audit database")]
    UnknownSite {
        /// The id asked for.
        site: SiteId,
    },
    /// No site (of the audit, or the site asked for) has a finding of this code.
    #[error("no finding with the code {code:?} here")]
    UnknownIssue {
        /// The code asked for.
        code: String,
    },
    /// Writing to the output failed (closed pipe, disk full).
    #[error("cannot write the report: {source}")]
    Write {
        /// The I/O error.
        #[from]
        source: std::io::Error,
    },
    /// Creating or writing a report file failed.
    #[error("cannot write {}: {source}", path.display())]
    File {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Writing a CSV file failed.
    #[error("cannot write {}: {source}", path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// The CSV writer's error.
        source: csv::Error,
    },
}

/// The generator string in reports: `shoal <version>`.
#[must_use]
pub fn generator() -> String {
    format!("shoal {}", env!("CARGO_PKG_VERSION"))
}

/// Formats milliseconds since the epoch as RFC 3339 UTC with milliseconds; see
/// [`UnixMs::to_rfc3339`] (one formatter for reports and findings).
#[must_use]
pub fn rfc3339(t: UnixMs) -> String {
    t.to_rfc3339()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_instants() {
        let cases = [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (951_868_799_999, "2000-02-29T23:59:59.999Z"),
            (1_709_164_800_250, "2024-02-29T00:00:00.250Z"),
            (1_735_689_599_000, "2024-12-31T23:59:59.000Z"),
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
            (u64::MAX, "9999-12-31T23:59:59.999Z"),
        ];
        for (ms, want) in cases {
            assert_eq!(rfc3339(UnixMs(ms)), want, "{ms}");
        }
    }
}
