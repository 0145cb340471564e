//! What every page of the HTML report is made of: rendering a template fragment, the document's
//! head, URLs shown as text or links, anchors, sizes and statuses as read. Below the report's
//! pages (the site, the overview, comparisons, the sections), which all use it, so none of them
//! imports the module that assembles them.

use super::csp;
use super::view::{BackLink, FindingRowView, FindingsStart, Head, TableEnd, UrlView};
use crate::branding::Branding;
use crate::{ReportError, generator, rfc3339};
use askama::Template;
use shoal_shared::finding::Severity;
use shoal_shared::ids::SiteId;
use shoal_shared::time::UnixMs;
use shoal_store::cursor::Reader;
use shoal_store::{FindingRow, PageRow};
use std::io::Write;

/// Output buffer: fragments are small, so batch them into large writes.
pub(super) const BUFFER: usize = 256 * 1024;

pub(super) fn render<W: Write, T: Template>(w: &mut W, t: &T) -> Result<(), ReportError> {
    Template::write_into(t, w).map_err(|source| ReportError::Write { source })
}

pub(super) fn head<W: Write>(
    w: &mut W,
    title: &str,
    branding: &Branding,
    back: Option<BackLink>,
) -> Result<(), ReportError> {
    // data: images: the operator's logo and the browser check's screenshots (nothing from the
    // network either way).
    let policy = csp::policy(true);
    let written_at = rfc3339(UnixMs::from(std::time::SystemTime::now()));
    render(
        w,
        &Head {
            csp: &policy,
            generator: &generator(),
            title,
            written_at: &written_at,
            style: csp::STYLE,
            operator: branding.operator(),
            logo: branding.logo().map(|l| l.data_url()),
            back,
        },
    )
}

/// `url` as a link target if it is an absolute http(s) URL; anything else (`javascript:`, `data:`,
/// relative or unparsable text) is shown as text only.
pub(super) fn href(url: &str) -> Option<&str> {
    let parsed = url::Url::parse(url).ok()?;
    matches!(parsed.scheme(), "http" | "https").then_some(url)
}

pub(super) fn url_view(url: &str) -> UrlView<'_> {
    UrlView { text: url, href: href(url) }
}

/// A finding's related URLs as shown.
pub(super) fn related_views(urls: &[String]) -> Vec<UrlView<'_>> {
    urls.iter().map(|u| url_view(u)).collect()
}

/// The id of a URL's details section: site id and a 64-bit FNV-1a hash of the URL. Computable from
/// the URL alone, so a finding can link to its page without a table of every page in memory.
pub(super) fn anchor(site: SiteId, url: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in url.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("u{}-{h:016x}", site.0)
}

/// Bytes in a unit a reader takes in at a glance.
pub(super) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1000.0;
    let mut unit = 0;
    while v >= 1000.0 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

pub(super) fn status_text(p: &PageRow) -> String {
    match (p.status, p.error) {
        (Some(s), _) => s.to_string(),
        (None, Some(e)) => format!("failed: {e}"),
        (None, None) => "failed".to_owned(),
    }
}

pub(super) fn severity_rank(s: Severity) -> u8 {
    match s {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Notice => 2,
    }
}

/// Writes a findings table: its start, the rows `rows` writes, its end.
pub(super) fn findings_table<W: Write>(
    w: &mut W,
    start: FindingsStart,
    rows: impl FnOnce(&mut W) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let (open_table, collapsed) = (start.count > 0, start.collapsed);
    render(w, &start)?;
    if open_table {
        rows(w)?;
    }
    render(w, &TableEnd { open_table, collapsed })
}

/// One finding row; the URL links to its details section when `details_of` has that page.
pub(super) fn finding_row<W: Write>(
    w: &mut W,
    reader: &Reader,
    f: &FindingRow,
    details_of: Option<SiteId>,
) -> Result<(), ReportError> {
    let code = f.known_code();
    let anchor = match details_of {
        Some(site) if reader.has_page(site, &f.url)? => Some(anchor(site, &f.url)),
        _ => None,
    };
    render(
        w,
        &FindingRowView {
            severity: f.severity.as_str(),
            rank: severity_rank(f.severity),
            code: &f.code,
            family: code.map_or("unknown", |c| c.family()),
            message: code.map_or("", |c| c.message()),
            url: &f.url,
            href: href(&f.url),
            anchor,
            detail: &f.detail,
            related: related_views(&f.related),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_become_links() {
        assert_eq!(href("https://example.test/a?b=1&c=\"x\""), Some("https://example.test/a?b=1&c=\"x\""));
        assert_eq!(href("http://example.test/"), Some("http://example.test/"));
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            " javascript:alert(1)",
            "data:text/html,x",
            "/relative",
            "vbscript:x",
            "",
        ] {
            assert_eq!(href(bad), None, "{bad}");
        }
    }

    #[test]
    fn anchors_are_stable_and_plain() {
        let a = anchor(SiteId(3), "https://example.test/\"><script>");
        assert_eq!(a, anchor(SiteId(3), "https://example.test/\"><script>"));
        assert!(a.starts_with("u3-") && a[3..].chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, anchor(SiteId(3), "https://example.test/"));
    }

    #[test]
    fn sizes_read_at_a_glance() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(2048), "2.0 KB");
        assert_eq!(human_bytes(5_300_000), "5.3 MB");
    }
}
