//! The `browser` array of a site in the JSON report (`shoal.report/v1`, added within v1): what
//! the browser check saw on each page it opened, screenshots as base64 JPEG.

use super::ReportError;
use serde::Serialize;
use shoal_shared::browser::{AxeViolation, BrowserPage, Consent, Keyboard, Rendered, ResourceTally, Vitals};
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
