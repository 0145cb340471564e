//! The batch overview as JSON, `shoal.overview/v1` (documented in `docs/report-json.md`): every
//! site with its score and trend, the issues across sites, the shared causes. For dashboards and
//! scripts of hosting providers that rank thousands of customer sites; the full findings of a site
//! are in its `shoal.report/v1` document.

use crate::ReportError;
use crate::causes::{Cause, causes};
use crate::compare::AuditJson;
use crate::html::links::Links;
use crate::issues::{CodeAcross, SiteHealth, across_sites, audit_health, median_score, score_bands};
use crate::json::HealthJson;
use crate::json_doc::{key, open_document, value};
use crate::score::FORMULA;
use serde::Serialize;
use shoal_shared::ids::AuditId;
use shoal_store::{AuditDb, AuditSummary};
use std::io::{BufWriter, Write};

/// The `schema` value of every overview document. Within v1 fields may be added, never removed,
/// renamed or retyped.
pub const OVERVIEW_SCHEMA: &str = "shoal.overview/v1";

#[derive(Serialize)]
struct SummaryJson {
    sites: usize,
    scored: usize,
    pages: u64,
    urls: u64,
    errors: u64,
    warnings: u64,
    notices: u64,
    median_score: Option<u8>,
    score_bands: [u64; 11],
}

#[derive(Serialize)]
struct CodeJson<'a> {
    code: &'a str,
    severity: &'static str,
    family: &'static str,
    message: Option<&'static str>,
    sites: u64,
    urls: u64,
}

impl<'a> CodeJson<'a> {
    fn of(c: &'a CodeAcross) -> CodeJson<'a> {
        CodeJson {
            code: &c.code,
            severity: c.severity.as_str(),
            family: c.family,
            message: c.message(),
            sites: c.sites,
            urls: c.urls,
        }
    }
}

#[derive(Serialize)]
struct SharedJson<'a> {
    code: &'a str,
    severity: &'static str,
    sites: u64,
    elsewhere: f64,
}

#[derive(Serialize)]
struct CauseJson<'a> {
    kind: &'static str,
    value: &'a str,
    sites: Vec<u64>,
    shared: Vec<SharedJson<'a>>,
}

impl<'a> CauseJson<'a> {
    fn of(c: &'a Cause) -> CauseJson<'a> {
        CauseJson {
            kind: c.kind.as_str(),
            value: c.kind.value(),
            sites: c.sites.iter().map(|s| s.0).collect(),
            shared: c
                .shared
                .iter()
                .map(|s| SharedJson {
                    code: &s.code,
                    severity: s.severity.as_str(),
                    sites: s.sites,
                    elsewhere: (s.elsewhere * 1000.0).round() / 1000.0,
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct FilesJson {
    html: String,
    json: String,
}

#[derive(Serialize)]
struct SiteJson<'a> {
    id: u64,
    start_url: &'a str,
    status: &'static str,
    pages: u64,
    errors: u64,
    warnings: u64,
    notices: u64,
    health: HealthJson,
    top_issue: Option<&'a str>,
    report: Option<FilesJson>,
}

/// Writes the `shoal.overview/v1` document of an audit. `links` says where each site's own
/// reports are (`sites[].report`, null when they are not written next to it).
///
/// # Errors
/// [`ReportError::UnknownAudit`], [`ReportError::Db`], [`ReportError::Write`].
pub fn write_overview_json(db: &AuditDb, audit: AuditId, links: Links, out: &mut dyn Write) -> Result<(), ReportError> {
    let summary = db.audit(audit)?.ok_or(ReportError::UnknownAudit { audit })?;
    let sites = audit_health(db, audit)?;
    write_overview_json_of(db, &summary, &sites, links, out)
}

/// [`write_overview_json`] from an audit's health.
pub(crate) fn write_overview_json_of(
    db: &AuditDb,
    summary: &AuditSummary,
    sites: &[SiteHealth],
    links: Links,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let mut w = BufWriter::new(out);
    open_document(&mut w, OVERVIEW_SCHEMA)?;
    key(&mut w, false, "score_formula")?;
    value(&mut w, FORMULA)?;
    key(&mut w, false, "audit")?;
    value(&mut w, &AuditJson::of(summary))?;
    key(&mut w, false, "summary")?;
    value(
        &mut w,
        &SummaryJson {
            sites: sites.len(),
            scored: sites.iter().filter(|s| s.score.is_some()).count(),
            pages: summary.pages,
            urls: summary.urls,
            errors: sites.iter().map(|s| s.counts.errors).sum(),
            warnings: sites.iter().map(|s| s.counts.warnings).sum(),
            notices: sites.iter().map(|s| s.counts.notices).sum(),
            median_score: median_score(sites),
            score_bands: score_bands(sites),
        },
    )?;
    key(&mut w, false, "issues")?;
    let across = across_sites(sites);
    value(&mut w, &across.iter().map(CodeJson::of).collect::<Vec<_>>())?;
    key(&mut w, false, "causes")?;
    let found = causes(db, summary.id, sites)?;
    value(&mut w, &found.iter().map(CauseJson::of).collect::<Vec<_>>())?;
    key(&mut w, false, "sites")?;
    w.write_all(b"[")?;
    for (i, h) in sites.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        let report = match (links.site(&h.site), links.site_json(&h.site)) {
            (Some(html), Some(json)) => Some(FilesJson { html: html.to_string(), json: json.to_string() }),
            _ => None,
        };
        value(
            &mut w,
            &SiteJson {
                id: h.site.id.0,
                start_url: &h.site.start_url,
                status: h.site.status.as_str(),
                pages: h.site.pages,
                errors: h.counts.errors,
                warnings: h.counts.warnings,
                notices: h.counts.notices,
                health: HealthJson::of(h),
                top_issue: h.groups.first().map(|g| g.code.as_str()),
                report,
            },
        )?;
    }
    w.write_all(b"]}\n")?;
    w.flush()?;
    Ok(())
}
