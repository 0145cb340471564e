//! What every JSON report is written with: a document's opening, keys and values streamed to the
//! writer, and a finding as the reports show it. Below the reports (the audit's, the comparison,
//! the browser check's), so they share it without importing each other.

use crate::{ReportError, generator};
use serde::Serialize;
use shoal_store::FindingRow;
use std::io::Write;

/// One finding as the JSON reports write it (the audit report and the comparison share it).
#[derive(Serialize)]
pub(crate) struct FindingJson<'a> {
    code: &'a str,
    severity: &'a str,
    family: Option<&'static str>,
    message: Option<&'static str>,
    url: &'a str,
    detail: &'a str,
    related: &'a [String],
}

impl<'a> FindingJson<'a> {
    pub(crate) fn of(f: &'a FindingRow) -> FindingJson<'a> {
        let code = f.known_code();
        FindingJson {
            code: &f.code,
            severity: f.severity.as_str(),
            family: code.map(|c| c.family()),
            message: code.map(|c| c.message()),
            url: &f.url,
            detail: &f.detail,
            related: &f.related,
        }
    }
}

/// Writes one JSON value.
pub(crate) fn value<W: Write, T: Serialize + ?Sized>(w: &mut W, v: &T) -> Result<(), ReportError> {
    serde_json::to_writer(w, v).map_err(|e| ReportError::Write { source: e.into() })
}

/// Opens a document: `{"schema":SCHEMA,"generator":"shoal <version>"` (every JSON report starts
/// so).
pub(crate) fn open_document<W: Write>(w: &mut W, schema: &str) -> Result<(), ReportError> {
    w.write_all(b"{")?;
    key(w, true, "schema")?;
    value(w, schema)?;
    key(w, false, "generator")?;
    value(w, &generator())
}

/// Writes `"key":` (preceded by a comma unless it is the object's first key).
pub(crate) fn key<W: Write>(w: &mut W, first: bool, name: &str) -> Result<(), ReportError> {
    if !first {
        w.write_all(b",")?;
    }
    value(w, name)?;
    w.write_all(b":")?;
    Ok(())
}
