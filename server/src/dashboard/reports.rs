//! The dashboard's report pages: the same views `shoal report` writes (docs/report-html.md), with
//! links between them pointing at these routes ([`Links::Dashboard`]) and the operator's branding.
//!
//! | path | page |
//! |---|---|
//! | `/ui/audits/{id}/report` | the batch overview |
//! | `/ui/audits/{id}/overview.json` | the overview as `shoal.overview/v1` |
//! | `/ui/audits/{id}/issues/{code}` | every site of the audit with findings of `code` |
//! | `/ui/audits/{id}/sites/{site}` | one site's report |
//! | `/ui/audits/{id}/sites/{site}/report.json` | one site's `shoal.report/v1` document |
//! | `/ui/audits/{id}/sites/{site}/issues/{code}?page=N` | one page of a site's issue group (500 URLs) |
//!
//! Each is rendered on a connection of its own, off the async threads ([`crate::render_with`]). A
//! site of another audit, or a code without findings, is a 404.

use super::{Dash, json_download, report_page, service_error};
use crate::ServerError;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use serde::Deserialize;
use shoal_report::{self as report, HtmlOptions, Links, ReportError};
use shoal_shared::frontier::Frontier;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_store::AuditDb;

/// Whether `site` belongs to `audit` (a URL naming another audit's site is not found).
fn site_of(db: &AuditDb, audit: AuditId, site: SiteId) -> Result<SiteId, ReportError> {
    match db.site(site)? {
        Some(s) if s.audit == audit => Ok(site),
        _ => Err(ReportError::UnknownSite { site }),
    }
}

/// `GET /ui/audits/{id}/report`: the batch overview.
pub(super) async fn overview<F: Frontier>(State(d): State<Dash<F>>, Path(id): Path<u64>) -> Response {
    let audit = AuditId(id);
    let branding = std::sync::Arc::clone(&d.branding);
    let body = crate::render_with(&d.engine, audit, move |db, out| {
        let opts = HtmlOptions { branding: &branding, links: Links::Dashboard { audit } };
        report::write_overview_html(db, audit, opts, out)
    })
    .await;
    page(body)
}

/// `GET /ui/audits/{id}/overview.json`.
pub(super) async fn overview_json<F: Frontier>(State(d): State<Dash<F>>, Path(id): Path<u64>) -> Response {
    let audit = AuditId(id);
    let body = crate::render_with(&d.engine, audit, move |db, out| {
        report::write_overview_json(db, audit, Links::Dashboard { audit }, out)
    })
    .await;
    match body {
        Ok(body) => json_download(body, &format!("shoal-audit-{id}-overview.json")),
        Err(e) => service_error(e),
    }
}

/// `GET /ui/audits/{id}/issues/{code}`.
pub(super) async fn audit_issue<F: Frontier>(
    State(d): State<Dash<F>>,
    Path((id, code)): Path<(u64, String)>,
) -> Response {
    let audit = AuditId(id);
    let branding = std::sync::Arc::clone(&d.branding);
    let body = crate::render_with(&d.engine, audit, move |db, out| {
        let opts = HtmlOptions { branding: &branding, links: Links::Dashboard { audit } };
        report::write_issue_sites_html(db, audit, &code, opts, out)
    })
    .await;
    page(body)
}

/// `GET /ui/audits/{id}/sites/{site}`.
pub(super) async fn site<F: Frontier>(State(d): State<Dash<F>>, Path((id, site)): Path<(u64, u64)>) -> Response {
    let audit = AuditId(id);
    let branding = std::sync::Arc::clone(&d.branding);
    let body = crate::render_with(&d.engine, audit, move |db, out| {
        let site = site_of(db, audit, SiteId(site))?;
        let opts = HtmlOptions { branding: &branding, links: Links::Dashboard { audit } };
        report::write_site_html(db, site, opts, out)
    })
    .await;
    page(body)
}

/// `GET /ui/audits/{id}/sites/{site}/report.json`.
pub(super) async fn site_json<F: Frontier>(State(d): State<Dash<F>>, Path((id, site)): Path<(u64, u64)>) -> Response {
    let audit = AuditId(id);
    let body = crate::render_with(&d.engine, audit, move |db, out| {
        let site = site_of(db, audit, SiteId(site))?;
        report::write_site_json(db, site, out)
    })
    .await;
    match body {
        Ok(body) => json_download(body, &format!("shoal-audit-{id}-site-{site}.json")),
        Err(e) => service_error(e),
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct PageQuery {
    page: Option<u64>,
}

/// `GET /ui/audits/{id}/sites/{site}/issues/{code}?page=N`.
pub(super) async fn site_issue<F: Frontier>(
    State(d): State<Dash<F>>,
    Path((id, site, code)): Path<(u64, u64, String)>,
    Query(q): Query<PageQuery>,
) -> Response {
    let audit = AuditId(id);
    let branding = std::sync::Arc::clone(&d.branding);
    let body = crate::render_with(&d.engine, audit, move |db, out| {
        let site = site_of(db, audit, SiteId(site))?;
        let opts = HtmlOptions { branding: &branding, links: Links::Dashboard { audit } };
        report::write_issue_urls_html(db, site, &code, q.page.unwrap_or(1), opts, out)
    })
    .await;
    page(body)
}

fn page(body: Result<Vec<u8>, ServerError>) -> Response {
    match body {
        Ok(body) => report_page(body),
        Err(e) => service_error(e),
    }
}
