//! The `browser` array of a site in the JSON report (`shoal.report/v1`, added within v1): what
//! the browser check saw on each page it opened, screenshots as base64 JPEG; and its `render`
//! object: the rendered crawl's decision, totals and pages (`--render`).

use super::ReportError;
use serde::Serialize;
use shoal_shared::browser::{AxeViolation, BrowserPage, Consent, Keyboard, Rendered, ResourceTally, Vitals};
use shoal_shared::render::RenderDecision;
use shoal_store::{AuditDb, SiteSummary};
use std::io::Write;

#[derive(Serialize)]
struct ShotsJson {
    /// 1366x768, base64 of the JPEG ("" when none was taken).
    desktop_jpeg_base64: String,
    /// 390x844 phone emulation, likewise.
    phone_jpeg_base64: String,
}

#[derive(Serialize)]
struct BrowserJson<'a> {
    url: &'a str,
    final_url: &'a str,
    status: Option<u16>,
    error: Option<&'a str>,
    vitals: &'a Vitals,
    resources: &'a [ResourceTally],
    third_party_hosts: &'a [String],
    blocked: &'a [String],
    robots_blocked: &'a [String],
    axe: &'a [AxeViolation],
    keyboard: &'a Keyboard,
    consent: &'a Consent,
    /// The page as its scripts left it (null when it could not be read).
    rendered: Option<&'a Rendered>,
    screenshots: ShotsJson,
}

impl<'a> BrowserJson<'a> {
    fn of(p: &'a BrowserPage) -> BrowserJson<'a> {
        BrowserJson {
            url: &p.url,
            final_url: &p.final_url,
            status: p.status,
            error: p.error.as_deref(),
            vitals: &p.vitals,
            resources: &p.resources,
            third_party_hosts: &p.third_party_hosts,
            blocked: &p.blocked,
            robots_blocked: &p.robots_blocked,
            axe: &p.axe,
            keyboard: &p.keyboard,
            consent: &p.consent,
            rendered: p.rendered.as_ref(),
            screenshots: ShotsJson {
                desktop_jpeg_base64: crate::html::csp::base64(&p.desktop_jpeg),
                phone_jpeg_base64: crate::html::csp::base64(&p.phone_jpeg),
            },
        }
    }
}

/// Writes the site's `browser` array (empty when the check was off or opened nothing).
pub(crate) fn write_browser<W: Write>(db: &AuditDb, site: &SiteSummary, w: &mut W) -> Result<(), ReportError> {
    let pages = db.browser_pages(site.audit, site.id)?;
    super::json_doc::value(w, &pages.iter().map(BrowserJson::of).collect::<Vec<_>>())
}

/// `sites[].render`: the rendered crawl of the site (`null` when it was not rendered).
#[derive(Serialize)]
struct RenderJson<'a> {
    /// `always`, `rendered`, `raw` or `not_rendered`, and why.
    decision: &'a RenderDecision,
    pages_queued: u32,
    pages_rendered: u32,
    pages_failed: u32,
    render_ms: u64,
    requests: u64,
    /// Links only rendered pages have (also in `pages[].links` with `rendered: true`).
    rendered_links: u32,
    pages: Vec<RenderedPageJson<'a>>,
}

/// One page queued for rendering.
#[derive(Serialize)]
struct RenderedPageJson<'a> {
    url: &'a str,
    /// `rendered`, `failed`, or `not_rendered` (its task never completed: its lane ended).
    state: &'static str,
    final_url: Option<&'a str>,
    status: Option<u16>,
    error: Option<&'a str>,
    render_ms: Option<u32>,
    requests: Option<u32>,
    robots_blocked: &'a [String],
    /// The page as its scripts left it.
    rendered: Option<&'a Rendered>,
}

/// Writes the site's `render` object, or `null`.
pub(crate) fn write_render<W: Write>(db: &AuditDb, site: &SiteSummary, w: &mut W) -> Result<(), ReportError> {
    let summary = db.render_summary(site.id)?;
    let Some(decision) = summary.decision.as_ref() else {
        return super::json_doc::value(w, &serde_json::Value::Null);
    };
    let rows = db.rendered_pages(site.id)?;
    let pages = rows
        .iter()
        .map(|r| RenderedPageJson {
            url: &r.url,
            state: if r.queued {
                "not_rendered"
            } else if r.error.is_some() {
                "failed"
            } else {
                "rendered"
            },
            final_url: r.final_url.as_deref(),
            status: r.status,
            error: r.error.as_deref(),
            render_ms: r.render_ms,
            requests: r.requests,
            robots_blocked: &r.robots_blocked,
            rendered: r.rendered.as_ref(),
        })
        .collect();
    let json = RenderJson {
        decision,
        pages_queued: summary.queued,
        pages_rendered: summary.rendered,
        pages_failed: summary.failed,
        render_ms: summary.render_ms,
        requests: summary.requests,
        rendered_links: summary.rendered_links,
        pages,
    };
    super::json_doc::value(w, &json)
}
