//! `shoal report`: an audit (or one site of it, or a comparison of two) as JSON, CSV, HTML, SARIF
//! or JUnit, to a file or stdout; one report per site into a directory; and the CI gate
//! (`--fail-on`), whose status comes after the report is written.

use crate::cli::{BrandingArgs, ReportArgs, ReportFormat};
use crate::{Exit, Failure};
use anyhow::Context;
use shoal_report::{self as report, Branding, Gate, HtmlOptions, Links, Logo};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_store::AuditDb;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Runs `shoal report`: writes what the flags ask for, then applies `--fail-on`.
///
/// # Errors
/// No database, no such audit or site, an unusable logo, an unwritable output (3); the database
/// (4); stdout (1).
pub fn run(args: &ReportArgs) -> Result<Exit, Failure> {
    let branding = load_branding(&args.branding)?;
    let db = open(&args.db)?;
    if let Some(ids) = &args.compare {
        compare(&db, &args.db, ids, args.format, args.out.as_deref())?;
        return Ok(Exit::Ok);
    }
    let audit = audit_of(&db, &args.db, args.audit)?;
    let site = match &args.site {
        Some(wanted) => Some(find_site(&db, audit, wanted)?),
        None => None,
    };
    let gate = args.fail_on.map(|level| Gate { level: level.into(), new_only: args.new_only });
    if let Some(dir) = &args.per_site {
        let files = report::write_per_site(&db, audit, &branding, dir)?;
        tracing::info!(index = %files.index.display(), sites = files.sites, issues = files.issues, "wrote");
    } else if let Some(site) = site {
        let opts = HtmlOptions { branding: &branding, links: Links::SingleFile { inline: false } };
        match args.format {
            ReportFormat::Json => to_file_or_stdout(args.out.as_deref(), |w| report::write_site_json(&db, site, w))?,
            ReportFormat::Html => {
                to_file_or_stdout(args.out.as_deref(), |w| report::write_site_html(&db, site, opts, w))?;
            }
            other => {
                return Err(Failure::input(anyhow::anyhow!(
                    "--site writes json or html, not {}",
                    format!("{other:?}").to_lowercase()
                )));
            }
        }
    } else {
        write(&db, audit, args.format, args.out.as_deref(), &branding, gate)?;
    }
    match gate {
        Some(gate) => check(&db, audit, site, gate),
        None => Ok(Exit::Ok),
    }
}

/// Writes the report of `audit` in `format` (what `shoal audit --report` calls too).
///
/// # Errors
/// As [`run`].
pub fn write(
    db: &AuditDb,
    audit: AuditId,
    format: ReportFormat,
    out: Option<&Path>,
    branding: &Branding,
    gate: Option<Gate>,
) -> Result<(), Failure> {
    match format {
        ReportFormat::Json => to_file_or_stdout(out, |w| report::write_json(db, audit, w)),
        ReportFormat::Html => to_file_or_stdout(out, |w| report::write_html_with(db, audit, branding, w)),
        ReportFormat::Sarif => to_file_or_stdout(out, |w| report::write_sarif(db, audit, w)),
        ReportFormat::Junit => {
            let gate = gate.unwrap_or(Gate { level: shoal_shared::finding::Severity::Error, new_only: false });
            to_file_or_stdout(out, |w| report::write_junit(db, audit, gate, w))
        }
        ReportFormat::Csv => {
            let dir = out.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("creating {}", dir.display()))
                .map_err(Failure::input)?;
            for f in report::write_csv(db, audit, &dir)? {
                tracing::info!(file = %f.display(), "wrote");
            }
            Ok(())
        }
    }
}

/// The operator's branding from the flags: the name checked, the logo read and recognised.
///
/// # Errors
/// An unreadable, over-large or unknown logo file, or a bad name (3).
pub fn load_branding(args: &BrandingArgs) -> Result<Branding, Failure> {
    let logo = match &args.operator_logo {
        None => None,
        Some(path) => {
            let file = std::fs::File::open(path)
                .with_context(|| format!("reading the logo {}", path.display()))
                .map_err(Failure::input)?;
            let cap = u64::try_from(report::branding::MAX_LOGO_BYTES).unwrap_or(u64::MAX) + 1;
            let mut bytes = Vec::new();
            // Bounded by `take`: at most one byte more than a logo may have, to tell it is too big.
            #[expect(clippy::disallowed_methods, reason = "bounded by take(cap) just before")]
            file.take(cap)
                .read_to_end(&mut bytes)
                .with_context(|| format!("reading the logo {}", path.display()))
                .map_err(Failure::input)?;
            let logo = Logo::from_bytes(&bytes)
                .with_context(|| format!("--operator-logo {}", path.display()))
                .map_err(Failure::input)?;
            Some(logo)
        }
    };
    Branding::new(args.operator_name.as_deref(), logo).context("--operator-name").map_err(Failure::input)
}

fn open(path: &Path) -> Result<AuditDb, Failure> {
    if !path.exists() {
        return Err(Failure::input(anyhow::anyhow!("no audit database at {}", path.display())));
    }
    Ok(AuditDb::open(path)?)
}

/// The audit asked for, or the latest.
fn audit_of(db: &AuditDb, path: &Path, audit: Option<u64>) -> Result<AuditId, Failure> {
    let audit = match audit {
        Some(a) => AuditId(a),
        None => db
            .latest_audit()?
            .ok_or_else(|| Failure::input(anyhow::anyhow!("the database {} holds no audit yet", path.display())))?,
    };
    if db.audit(audit)?.is_none() {
        return Err(Failure::input(anyhow::anyhow!("no audit {audit} in {}", path.display())));
    }
    Ok(audit)
}

/// The site of `audit` that `wanted` names ([`report::find_site`]: an id, or a start URL as stored
/// or as a user types it).
fn find_site(db: &AuditDb, audit: AuditId, wanted: &str) -> Result<SiteId, Failure> {
    match report::find_site(db, audit, wanted) {
        Ok(s) => Ok(s.id),
        Err(report::FindSiteError::Db(e)) => Err(e.into()),
        Err(e) => Err(Failure::input(anyhow::anyhow!(e))),
    }
}

fn compare(db: &AuditDb, path: &Path, ids: &[u64], format: ReportFormat, out: Option<&Path>) -> Result<(), Failure> {
    let [old, new] = ids else {
        return Err(Failure::input(anyhow::anyhow!("--compare takes two audit ids: OLD NEW")));
    };
    let (old, new) = (AuditId(*old), AuditId(*new));
    for a in [old, new] {
        if db.audit(a)?.is_none() {
            return Err(Failure::input(anyhow::anyhow!("no audit {a} in {}", path.display())));
        }
    }
    match format {
        ReportFormat::Json => to_file_or_stdout(out, |w| report::write_compare_json(db, old, new, w)),
        ReportFormat::Html => to_file_or_stdout(out, |w| report::write_compare_html(db, old, new, w)),
        _ => Err(Failure::input(anyhow::anyhow!("--compare writes json or html, not csv, sarif or junit"))),
    }
}

/// Applies the gate: exit 5 with a summary on standard error when it fails.
fn check(db: &AuditDb, audit: AuditId, site: Option<SiteId>, gate: Gate) -> Result<Exit, Failure> {
    let result = report::gate::evaluate(db, audit, site, gate)?;
    if !result.failed() {
        return Ok(Exit::Ok);
    }
    let which = if gate.new_only { "new " } else { "" };
    let codes: Vec<String> = result.by_code.iter().take(5).map(|(c, n)| format!("{c} ({n})")).collect();
    let msg = format!(
        "--fail-on {}: {} {which}finding{} of that severity or worse on {} site{}: {}{}",
        gate.level.as_str(),
        result.findings,
        if result.findings == 1 { "" } else { "s" },
        result.sites,
        if result.sites == 1 { "" } else { "s" },
        codes.join(", "),
        if result.by_code.len() > 5 { ", …" } else { "" }
    );
    // What a CI log shows: the reason for the failing status, on standard error.
    let _ = writeln!(std::io::stderr().lock(), "{msg}");
    Ok(Exit::Findings)
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
