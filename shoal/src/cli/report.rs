//! The flags of `shoal report`, and the operator's branding that the report, the coordinator's
//! dashboard and `shoal audit --report` share.

use clap::{Args, ValueEnum};
use shoal_shared::finding::Severity;
use std::path::PathBuf;

/// `shoal report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The audit to report on; the latest if omitted.
    pub audit: Option<u64>,
    /// The audit database.
    #[arg(long, env = "SHOAL_DB", default_value = "shoal.db")]
    pub db: PathBuf,
    /// Report format.
    #[arg(long, env = "SHOAL_FORMAT", value_enum, default_value_t = ReportFormat::Json)]
    pub format: ReportFormat,
    /// Output file (json, html, sarif, junit; standard output if omitted) or directory (csv;
    /// current directory if omitted).
    #[arg(long, env = "SHOAL_OUT")]
    pub out: Option<PathBuf>,
    /// Compare two audits instead: new, fixed and remaining findings per site (json or html).
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"], conflicts_with_all = ["audit", "site", "per_site"])]
    pub compare: Option<Vec<u64>>,
    /// One site's report (html or json): its start URL as audited (`example.com` means
    /// `https://example.com/`) or its site id.
    #[arg(long, env = "SHOAL_SITE", value_name = "URL|ID", conflicts_with = "per_site")]
    pub site: Option<String>,
    /// Write one self-contained HTML and JSON report per site into DIR, with the overview as
    /// index.html and index.json and a page per issue (--format is not used).
    #[arg(long, env = "SHOAL_PER_SITE", value_name = "DIR", conflicts_with = "out")]
    pub per_site: Option<PathBuf>,
    /// After writing the report, exit with status 5 if the audit (or --site) has findings of this
    /// severity or worse: a CI gate. JUnit test cases fail by the same rule.
    #[arg(long, env = "SHOAL_FAIL_ON", value_enum)]
    pub fail_on: Option<FailOn>,
    /// With --fail-on (and for JUnit): count only findings that are new since each site's
    /// previous audit of the same start URL.
    #[arg(long, env = "SHOAL_NEW_ONLY")]
    pub new_only: bool,
    /// The operator's name and logo on HTML reports.
    #[command(flatten)]
    pub branding: BrandingArgs,
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// One JSON document (schema in docs/report-json.md).
    Json,
    /// pages.csv, links.csv, findings.csv, issues.csv and sites.csv.
    Csv,
    /// One self-contained HTML file: the overview, or the site's report for one site
    /// (docs/report-html.md).
    Html,
    /// A SARIF 2.1.0 log, for code-scanning tools and CI.
    Sarif,
    /// JUnit XML: a test suite per site, a test case per issue, for CI test reports.
    Junit,
}

/// The severities `--fail-on` takes: that severity or worse fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Errors.
    Error,
    /// Warnings and errors.
    Warning,
    /// Any finding.
    Notice,
}

impl From<FailOn> for Severity {
    fn from(f: FailOn) -> Severity {
        match f {
            FailOn::Error => Severity::Error,
            FailOn::Warning => Severity::Warning,
            FailOn::Notice => Severity::Notice,
        }
    }
}

/// Who prepared a report: shown in the header of HTML reports and the dashboard's report pages.
#[derive(Debug, Args, Clone, Default)]
pub struct BrandingArgs {
    /// Your name (a company, team or person): shown as "Prepared by NAME" on HTML reports, and on
    /// the page for site owners.
    #[arg(long, env = "SHOAL_OPERATOR_NAME")]
    pub operator_name: Option<String>,
    /// A logo for HTML reports: a PNG, JPEG, GIF, WebP or SVG file of at most 256 KiB, embedded in
    /// every page.
    #[arg(long, env = "SHOAL_OPERATOR_LOGO", value_name = "FILE")]
    pub operator_logo: Option<PathBuf>,
}
