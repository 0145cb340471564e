//! One report per site, in a directory (`shoal report AUDIT --per-site DIR`): what a hosting
//! provider hands each customer, plus an index for themselves.
//!
//! ```text
//! DIR/index.html               the batch overview, each site linked to its report
//! DIR/index.json               the overview as JSON (shoal.overview/v1)
//! DIR/sites/<id>-<host>.html   one self-contained report per site
//! DIR/sites/<id>-<host>.json   the same site as a shoal.report/v1 document
//! DIR/issues/<code>.html       every site with findings of one code
//! ```
//!
//! Every HTML file is self-contained (styles, script, logo inside; it loads nothing), so a site's
//! file can be sent on its own; its links to the index simply lead nowhere then. The audit's
//! health is computed once and shared by every page.

use crate::ReportError;
use crate::branding::Branding;
use crate::html::links::{Links, issue_file, site_file};
use crate::html::{HtmlOptions, write_issue_sites_body, write_overview_body, write_site_health_html};
use crate::issues::{across_sites, audit_health};
use crate::json::write_site_health_json;
use crate::overview_json::write_overview_json_of;
use shoal_shared::ids::AuditId;
use shoal_store::AuditDb;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// What [`write_per_site`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerSiteFiles {
    /// `DIR/index.html`.
    pub index: PathBuf,
    /// Sites written (an HTML and a JSON file each).
    pub sites: usize,
    /// Issue pages written.
    pub issues: usize,
}

/// Creates `path` and runs `write` into it, naming the file in any error.
fn to_file(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<(), ReportError>) -> Result<(), ReportError> {
    let file = File::create(path).map_err(|source| ReportError::File { path: path.to_owned(), source })?;
    let mut w = BufWriter::new(file);
    write(&mut w)?;
    w.flush().map_err(|source| ReportError::File { path: path.to_owned(), source })
}

fn mkdir(path: &Path) -> Result<(), ReportError> {
    std::fs::create_dir_all(path).map_err(|source| ReportError::File { path: path.to_owned(), source })
}

/// Writes the directory described in the module documentation for `audit` into `dir` (created if
/// missing; files of the same names are replaced, others left alone).
///
/// # Errors
/// [`ReportError::UnknownAudit`], [`ReportError::Db`], and [`ReportError::File`] naming a file or
/// directory that could not be written.
pub fn write_per_site(
    db: &AuditDb,
    audit: AuditId,
    branding: &Branding,
    dir: &Path,
) -> Result<PerSiteFiles, ReportError> {
    let summary = db.audit(audit)?.ok_or(ReportError::UnknownAudit { audit })?;
    let sites = audit_health(db, audit)?;
    mkdir(&dir.join("sites"))?;
    mkdir(&dir.join("issues"))?;
    let top = Links::Directory { nested: false };
    let nested = HtmlOptions { branding, links: Links::Directory { nested: true } };

    let index = dir.join("index.html");
    to_file(&index, |w| {
        let mut w = BufWriter::new(w);
        write_overview_body(&mut w, db, &summary, &sites, branding, top)?;
        crate::html::finish_page(w)
    })?;
    to_file(&dir.join("index.json"), |w| write_overview_json_of(db, &summary, &sites, top, w))?;
    for h in &sites {
        let name = site_file(&h.site);
        to_file(&dir.join("sites").join(format!("{name}.html")), |w| {
            write_site_health_html(db, &summary, h, nested, w)
        })?;
        to_file(&dir.join("sites").join(format!("{name}.json")), |w| write_site_health_json(db, h, w))?;
    }
    let mut issues = 0;
    for code in across_sites(&sites) {
        let Some(name) = issue_file(&code.code) else { continue };
        to_file(&dir.join("issues").join(format!("{name}.html")), |w| {
            write_issue_sites_body(&sites, audit, &code.code, nested, w)
        })?;
        issues += 1;
    }
    Ok(PerSiteFiles { index, sites: sites.len(), issues })
}
