//! Reports from the audit database: JSON (`shoal report --format json`), CSV, HTML
//! ([`write_html`], `docs/report-html.md`) and comparisons of two audits ([`write_compare_json`],
//! [`write_compare_html`], `docs/report-compare.md`).
//!
//! Both stream: rows are read one at a time from SQLite and written straight out, so a report of a
//! 100,000-page audit needs memory for one page (and its links), not for the audit. The JSON
//! document's shape is a stable contract, `shoal.report/v1`, documented field by field in
//! `docs/report-json.md`; the CSV files are documented there too.
//!
//! Crawled content is untrusted (SPEC §6): JSON escaping is serde_json's, which makes any title a
//! plain JSON string; CSV cells that a spreadsheet would run as a formula are defused (see
//! [`write_csv`]).

mod compare;
mod csv_out;
pub mod guidance;
mod html;
pub mod issues;
mod json;
pub mod score;

pub use compare::{COMPARE_SCHEMA, Change, for_each_change, pair_sites, write_compare_json};
pub use csv_out::{CSV_FILES, write_csv};
pub use html::{write_compare_html, write_html};
pub use json::{SCHEMA, write_json};
pub use shoal_store::compare::{ChangeCounts, SitePairs};

use shoal_shared::ids::AuditId;
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
