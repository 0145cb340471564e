//! Each site's "Browser" section (SPEC §10, `--browser-pages`): what headless Chromium saw on the
//! pages it opened, read from the audit database's `browser_pages` ([`AuditDb::browser_pages`]),
//! with the thresholds each measure is judged by. A module and a template file of their own
//! (`templates/report/browser.html`), like the domain section.

use super::ReportError;
use super::base::render;
use askama::Template;
use shoal_shared::browser::BrowserPage;
use shoal_store::{AuditDb, SiteSummary};
use std::io::Write;

/// One measure against its thresholds: (name, good at most, poor above, unit).
struct Threshold {
    name: &'static str,
    good: u32,
    poor: u32,
    /// Thousandths (CLS) rather than milliseconds.
    milli: bool,
}

/// The published thresholds (web.dev): LCP 2.5/4 s, CLS 0.1/0.25, INP 200/500 ms; TBT, the lab
/// proxy of INP, 200/600 ms (Lighthouse); FCP 1.8/3 s; TTFB 0.8/1.8 s.
const THRESHOLDS: [Threshold; 6] = [
    Threshold { name: "Largest Contentful Paint (LCP)", good: 2500, poor: 4000, milli: false },
    Threshold { name: "Cumulative Layout Shift (CLS)", good: 100, poor: 250, milli: true },
    Threshold { name: "Interaction to Next Paint (INP)", good: 200, poor: 500, milli: false },
    Threshold { name: "Total Blocking Time (TBT, INP's lab proxy)", good: 200, poor: 600, milli: false },
    Threshold { name: "First Contentful Paint (FCP)", good: 1800, poor: 3000, milli: false },
    Threshold { name: "Time to First Byte (TTFB)", good: 800, poor: 1800, milli: false },
];

/// A measure as shown.
#[derive(Debug)]
pub(crate) struct VitalView {
    name: &'static str,
    value: String,
    good: String,
    poor: String,
    /// `good`, `fair`, `poor`, or `unmeasured`.
    verdict: &'static str,
}

/// A screenshot as shown.
#[derive(Debug)]
pub(crate) struct ShotView {
    name: &'static str,
    label: &'static str,
    /// `data:image/jpeg;base64,…`: base64 only, nothing to escape.
    data_url: String,
}

/// One page as shown.
#[derive(Debug)]
pub(crate) struct PageView {
    url: String,
    href: Option<String>,
    final_url: String,
    status: Option<u16>,
    error: Option<String>,
    vitals: Vec<VitalView>,
    resources: Vec<(String, u32, u64)>,
    third_party: Vec<String>,
    blocked: Vec<String>,
    axe: Vec<shoal_shared::browser::AxeViolation>,
    tabbed: u32,
    skip_link: bool,
    no_focus: Vec<String>,
    trap: Vec<String>,
    backwards: Vec<String>,
    banner: bool,
    reject: Option<String>,
    reject_clicked: bool,
    trackers_before: Vec<String>,
    cookies_before: Vec<String>,
    trackers_after: Vec<String>,
    cookies_after: Vec<String>,
    shots: Vec<ShotView>,
}

#[derive(Template, Debug)]
#[template(path = "report/browser.html", block = "browser_section")]
struct BrowserSection {
    site: u64,
    pages: Vec<PageView>,
}

fn shown(v: u32, milli: bool) -> String {
    if milli { format!("{:.3}", f64::from(v) / 1000.0) } else { format!("{v} ms") }
}

/// How a measured value compares with its thresholds.
#[must_use]
pub fn verdict(value: Option<u32>, good: u32, poor: u32) -> &'static str {
    match value {
        None => "unmeasured",
        Some(v) if v <= good => "good",
        Some(v) if v <= poor => "fair",
        Some(_) => "poor",
    }
}

fn vitals(p: &BrowserPage) -> Vec<VitalView> {
    let v = &p.vitals;
    let values = [v.lcp_ms, v.cls_milli, v.inp_ms, v.tbt_ms, v.fcp_ms, v.ttfb_ms];
    THRESHOLDS
        .iter()
        .zip(values)
        .map(|(t, value)| VitalView {
            name: t.name,
            value: value.map_or_else(|| "not measured".to_owned(), |x| shown(x, t.milli)),
            good: format!("\u{2264} {}", shown(t.good, t.milli)),
            poor: format!("> {}", shown(t.poor, t.milli)),
            verdict: verdict(value, t.good, t.poor),
        })
        .collect()
}

fn shot(name: &'static str, label: &'static str, jpeg: &[u8]) -> Option<ShotView> {
    (!jpeg.is_empty()).then(|| ShotView {
        name,
        label,
        data_url: format!("data:image/jpeg;base64,{}", super::csp::base64(jpeg)),
    })
}

fn view(p: BrowserPage) -> PageView {
    let href = super::base::href(&p.url).map(str::to_owned);
    let vitals = vitals(&p);
    let shots = [shot("desktop", "Desktop 1366x768", &p.desktop_jpeg), shot("phone", "Phone 390x844", &p.phone_jpeg)]
        .into_iter()
        .flatten()
        .collect();
    PageView {
        href,
        vitals,
        shots,
        resources: p.resources.into_iter().map(|r| (r.kind, r.requests, r.bytes)).collect(),
        third_party: p.third_party_hosts,
        blocked: p.blocked,
        axe: p.axe,
        tabbed: p.keyboard.tabbed,
        skip_link: p.keyboard.has_skip_link,
        no_focus: p.keyboard.no_focus_indicator,
        trap: p.keyboard.trap,
        backwards: p.keyboard.backwards,
        banner: p.consent.banner_found,
        reject: p.consent.reject_control,
        reject_clicked: p.consent.reject_clicked,
        trackers_before: p.consent.trackers_before,
        cookies_before: p.consent.cookies_before,
        trackers_after: p.consent.trackers_after_reject,
        cookies_after: p.consent.cookies_after_reject,
        url: p.url,
        final_url: p.final_url,
        status: p.status,
        error: p.error,
    }
}

/// Writes the section of `site`, if the browser check opened any of its pages (none when it was
/// off, or when robots.txt kept us from the start page).
pub(super) fn write_browser_section<W: Write>(w: &mut W, db: &AuditDb, site: &SiteSummary) -> Result<(), ReportError> {
    let pages: Vec<PageView> = db.browser_pages(site.audit, site.id)?.into_iter().map(view).collect();
    if pages.is_empty() {
        return Ok(());
    }
    render(w, &BrowserSection { site: site.id.0, pages })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_the_published_thresholds() {
        assert_eq!(verdict(Some(2500), 2500, 4000), "good");
        assert_eq!(verdict(Some(2501), 2500, 4000), "fair");
        assert_eq!(verdict(Some(4001), 2500, 4000), "poor");
        assert_eq!(verdict(None, 2500, 4000), "unmeasured");
    }

    #[test]
    fn crawled_text_is_escaped_and_screenshots_are_data_urls() {
        let evil = "<script>alert(1)</script>";
        let page = BrowserPage {
            url: format!("https://a.test/{evil}"),
            final_url: "https://a.test/".into(),
            desktop_jpeg: vec![0xff, 0xd8, 0xff],
            axe: vec![shoal_shared::browser::AxeViolation {
                rule: "image-alt".into(),
                impact: "critical".into(),
                elements: 2,
                sample_selector: format!("img{evil}"),
                help: "Images must have alternate text".into(),
            }],
            ..BrowserPage::default()
        };
        let section = BrowserSection { site: 1, pages: vec![view(page)] };
        let html = section.render().expect("renders");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("data:image/jpeg;base64,/9j/"), "{html}");
        assert!(html.contains("image-alt") && html.contains("Desktop 1366x768"), "{html}");
        assert!(!html.contains("Phone 390x844"), "no phone screenshot, no thumbnail: {html}");
    }
}
