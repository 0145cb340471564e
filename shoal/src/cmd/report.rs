//! `shoal report`: an audit (or a comparison of two) as JSON, CSV or HTML, to a file or stdout.

use crate::Failure;
use crate::cli::ReportFormat;
use anyhow::Context;
use shoal_report as report;
use shoal_shared::ids::AuditId;
use shoal_store::AuditDb;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes the report of `audit` (the latest when `None`), or the comparison `compare = [old, new]`.
///
/// # Errors
/// No database, no such audit, an unwritable output (3); the database (4); stdout (1).
pub fn write(
    db_path: &Path,
    audit: Option<u64>,
    format: ReportFormat,
    out: Option<&Path>,
    compare: Option<&[u64]>,
) -> Result<(), Failure> {
    if !db_path.exists() {
        return Err(Failure::input(anyhow::anyhow!("no audit database at {}", db_path.display())));
    }
    let db = AuditDb::open(db_path)?;
    if let Some(ids) = compare {
        let [old, new] = ids else {
            return Err(Failure::input(anyhow::anyhow!("--compare takes two audit ids: OLD NEW")));
        };
        let (old, new) = (AuditId(*old), AuditId(*new));
        for a in [old, new] {
            if db.audit(a)?.is_none() {
                return Err(Failure::input(anyhow::anyhow!("no audit {a} in {}", db_path.display())));
            }
        }
        return match format {
            ReportFormat::Json => to_file_or_stdout(out, |w| report::write_compare_json(&db, old, new, w)),
            ReportFormat::Html => to_file_or_stdout(out, |w| report::write_compare_html(&db, old, new, w)),
            ReportFormat::Csv => Err(Failure::input(anyhow::anyhow!("--compare writes json or html, not csv"))),
        };
    }
    let audit = match audit {
        Some(a) => AuditId(a),
        None => db
            .latest_audit()?
            .ok_or_else(|| Failure::input(anyhow::anyhow!("the database {} holds no audit yet", db_path.display())))?,
    };
    if db.audit(audit)?.is_none() {
        return Err(Failure::input(anyhow::anyhow!("no audit {audit} in {}", db_path.display())));
    }
    match format {
        ReportFormat::Json => to_file_or_stdout(out, |w| report::write_json(&db, audit, w)),
        ReportFormat::Html => to_file_or_stdout(out, |w| report::write_html(&db, audit, w)),
        ReportFormat::Csv => {
            let dir = out.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("creating {}", dir.display()))
                .map_err(Failure::input)?;
            for f in report::write_csv(&db, audit, &dir)? {
                tracing::info!(file = %f.display(), "wrote");
            }
            Ok(())
        }
    }
}

/// Runs `write` into `out`, or standard output when it is not given.
fn to_file_or_stdout(
    out: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> Result<(), report::ReportError>,
) -> Result<(), Failure> {
    match out {
        Some(path) => {
            let f = std::fs::File::create(path)
                .with_context(|| format!("creating {}", path.display()))
                .map_err(Failure::input)?;
            let mut w = std::io::BufWriter::new(f);
            write(&mut w)?;
            w.flush().with_context(|| format!("writing {}", path.display()))?;
        }
        None => {
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::new(stdout.lock());
            write(&mut w)?;
            w.flush().context("writing the report to standard output")?;
        }
    }
    Ok(())
}
