//! What the browser check (SPEC §10) saw on one page: produced by the worker's browser engine
//! (`worker/src/browser/`), carried to the coordinator in `Event::Browser`, stored, reported.
use crate::ids::{AuditId, SiteId};
use serde::{Deserialize, Serialize};

/// One page loaded in headless Chromium. Times in milliseconds, CLS in thousandths (so the record
/// stays `Eq` and exact through rmp-serde).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BrowserPage {
    pub audit: AuditId,
    pub site: SiteId,
    /// The URL opened, and where it ended after redirects.
    pub url: String,
    pub final_url: String,
    /// The main document's HTTP status, when one arrived.
    pub status: Option<u16>,
    /// Why the page could not be measured (load timed out, Chromium crashed, refused by the address guard).
    pub error: Option<String>,
    pub vitals: Vitals,
    /// Requests and bytes by resource type (document, script, stylesheet, image, font, xhr, other).
    pub resources: Vec<ResourceTally>,
    /// Hosts other than the page's site (www/apex twin counts as the site) that the page loaded from.
    pub third_party_hosts: Vec<String>,
    /// Requests the address guard refused (private/link-local targets without --allow-private).
    pub blocked: Vec<String>,
    /// Requests to the audited site's hosts that their robots.txt disallows, held back (at most
    /// 50): `"URL (rule)"`. Absent from records of older workers.
    #[serde(default)]
    pub robots_blocked: Vec<String>,
    /// The memory (MiB) all of Chromium's processes used when the page took them past the
    /// worker's limit and the check was stopped (`error` says so too); `None` otherwise. Absent
    /// from records of older workers.
    #[serde(default)]
    pub memory_exceeded_mib: Option<u32>,
    pub axe: Vec<AxeViolation>,
    pub keyboard: Keyboard,
    pub consent: Consent,
    /// Screenshots, JPEG: 1366x768 desktop and 390x844 phone emulation.
    #[serde(with = "serde_bytes")]
    pub desktop_jpeg: Vec<u8>,
    #[serde(with = "serde_bytes")]
    pub phone_jpeg: Vec<u8>,
    /// The page as Chromium rendered it, read after the load and before any interaction; `None`
    /// when it could not be read, and in records of older workers.
    #[serde(default)]
    pub rendered: Option<Rendered>,
}

/// One page rendered for the rendered crawl (`--render`, [`crate::render`]): loaded in headless
/// Chromium like the browser check's pages (same proxy, address guard, robots.txt for the site's
/// own hosts, probe), its DOM read, nothing clicked or typed, no screenshot.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RenderedPage {
    pub audit: AuditId,
    pub site: SiteId,
    /// The URL rendered, and where it ended after redirects.
    pub url: String,
    pub final_url: String,
    /// The main document's HTTP status, when one arrived.
    pub status: Option<u16>,
    /// Why the page could not be rendered (Chromium missing, the load timed out, ...).
    pub error: Option<String>,
    /// The page's facts as its scripts left them; `None` when the render failed.
    pub rendered: Option<Rendered>,
    /// Wall time of the render, load and reading the DOM (milliseconds).
    pub render_ms: u32,
    /// Requests the page made through the proxy (its document, scripts, styles, XHR, images,
    /// fonts), and their bytes: answers from Chromium's cache are not counted.
    pub requests: u32,
    pub bytes: u64,
    /// Requests robots.txt kept from the site's own hosts (`"URL (rule)"`, at most 50).
    pub robots_blocked: Vec<String>,
    /// Requests the address guard refused.
    pub blocked: Vec<String>,
    /// The rendered page's links to pages, recorded as the crawl records a page's links (at most
    /// [`MAX_RENDERED_LINKS`]); the store adds those the HTML lacks to the link graph.
    pub links: Vec<crate::link::LinkRecord>,
}

/// At most this many page links of a rendered page are kept.
pub const MAX_RENDERED_LINKS: usize = 500;
/// At most this many script errors of a page load are kept, each at most
/// [`MAX_SCRIPT_ERROR_CHARS`] characters.
pub const MAX_SCRIPT_ERRORS: usize = 20;
/// See [`MAX_SCRIPT_ERRORS`].
pub const MAX_SCRIPT_ERROR_CHARS: usize = 300;

/// A page's facts as JavaScript left them: read by the crawl's own HTML extractor from the DOM
/// Chromium built (serialised after the load, before any click or key), so each field means what
/// the same field of the crawl's raw `pages` row means. What scripts changed is the difference
/// between the two (the store's site analysis, `rendered_*` findings); search engines that render
/// see this version, those that do not see the raw one.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Rendered {
    /// The first `<title>`, collapsed; `Some("")` when present but empty.
    pub title: Option<String>,
    /// The first meta description, collapsed.
    pub meta_description: Option<String>,
    /// The first canonical link, resolved as the crawl resolves it.
    pub canonical: Option<String>,
    /// The meta robots directives, lower-cased.
    pub meta_robots: Vec<String>,
    /// The text of each `<h1>`.
    pub h1: Vec<String>,
    /// Links to pages (`<a>`, `<area>`, `<iframe>`), absolute and normalised as the crawl
    /// normalises them, in document order, at most [`MAX_RENDERED_LINKS`].
    pub links: Vec<String>,
    /// Words of the main text, counted as the crawl counts them.
    pub words: u32,
    /// Uncaught script errors and unhandled promise rejections while the page loaded.
    pub script_errors: Vec<String>,
    /// The `<link rel=alternate hreflang>` pairs (language, URL), as the crawl reads them. Absent
    /// in records of older workers.
    #[serde(default)]
    pub hreflang: Vec<(String, String)>,
    /// The structured-data types (JSON-LD, microdata, RDFa Lite), as the crawl reads them. Absent
    /// in records of older workers.
    #[serde(default)]
    pub structured_types: Vec<String>,
}

impl Rendered {
    /// Whether its meta robots say `noindex` (or `none`), the crawl's rule.
    #[must_use]
    pub fn noindex(&self) -> bool {
        self.meta_robots.iter().any(|d| d == "noindex" || d == "none")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Vitals {
    pub lcp_ms: Option<u32>,
    pub cls_milli: Option<u32>,
    /// Interaction to Next Paint when an interaction was measured, else None.
    pub inp_ms: Option<u32>,
    /// Total blocking time between FCP and load: INP's lab proxy.
    pub tbt_ms: Option<u32>,
    pub fcp_ms: Option<u32>,
    pub ttfb_ms: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResourceTally {
    pub kind: String,
    pub requests: u32,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AxeViolation {
    /// axe-core rule id, e.g. "image-alt".
    pub rule: String,
    /// "minor" | "moderate" | "serious" | "critical".
    pub impact: String,
    pub elements: u32,
    pub sample_selector: String,
    pub help: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Keyboard {
    /// Tab presses made (at most 50).
    pub tabbed: u32,
    /// Selectors of focused elements with no visible focus indicator.
    pub no_focus_indicator: Vec<String>,
    /// The selectors focus cycled among when it was trapped.
    pub trap: Vec<String>,
    pub has_skip_link: bool,
    /// Tab steps whose focus moved backwards in reading order (selector pairs "from -> to").
    pub backwards: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Consent {
    pub banner_found: bool,
    /// The reject control's selector or text, when found.
    pub reject_control: Option<String>,
    pub reject_clicked: bool,
    /// Third-party tracking hosts requested, and cookie names set, before any interaction.
    pub trackers_before: Vec<String>,
    pub cookies_before: Vec<String>,
    /// The same after Reject was clicked (empty when no reject control).
    pub trackers_after_reject: Vec<String>,
    pub cookies_after_reject: Vec<String>,
}

/// Largest Contentful Paint: good up to 2.5 s, poor above 4 s (web.dev's published thresholds).
pub const LCP_SLOW_MS: u32 = 2_500;
/// LCP above this is poor.
pub const LCP_POOR_MS: u32 = 4_000;
/// Cumulative Layout Shift in thousandths: good up to 0.1, poor above 0.25.
pub const CLS_HIGH_MILLI: u32 = 100;
/// CLS above this (thousandths) is poor.
pub const CLS_POOR_MILLI: u32 = 250;
/// Interaction to Next Paint: good up to 200 ms, poor above 500 ms.
pub const INP_SLOW_MS: u32 = 200;
/// INP above this is poor.
pub const INP_POOR_MS: u32 = 500;
/// Total Blocking Time (INP's lab proxy): good up to 200 ms, poor above 600 ms (Lighthouse's bands).
pub const TBT_HIGH_MS: u32 = 200;
/// TBT above this is poor.
pub const TBT_POOR_MS: u32 = 600;

/// What any page load shows, a check's or a render's: its script errors and the requests robots.txt
/// held back, as (code, detail, related).
fn load_findings(
    rendered: Option<&Rendered>,
    robots_blocked: &[String],
) -> Vec<(crate::finding::Code, String, Vec<String>)> {
    use crate::finding::Code;
    let mut out = Vec::new();
    if let Some(r) = rendered
        && let Some(first) = r.script_errors.first()
    {
        let n = r.script_errors.len();
        let detail = format!("{n} error{} while the page loaded, first: {first}", if n == 1 { "" } else { "s" });
        out.push((Code::BrowserScriptErrors, detail, r.script_errors.clone()));
    }
    if let Some(first) = robots_blocked.first() {
        let n = robots_blocked.len();
        let detail = format!("{n} request{} held back, first: {first}", if n == 1 { "" } else { "s" });
        out.push((Code::BrowserRobotsBlocked, detail, robots_blocked.to_vec()));
    }
    out
}

/// The findings a rendered page of the rendered crawl raises: its script errors and the requests
/// robots.txt held back (the codes of the browser check's, [`findings`]). A render that failed
/// raises none: its error is in the site's render report (`auto` records it as the reason when
/// it was the start page's).
#[must_use]
pub fn render_findings(page: &RenderedPage) -> Vec<crate::finding::Finding> {
    load_findings(page.rendered.as_ref(), &page.robots_blocked)
        .into_iter()
        .map(|(code, detail, related)| crate::finding::Finding {
            audit: page.audit,
            site: page.site,
            code,
            url: page.url.clone(),
            detail,
            related,
            domain_wide: false,
        })
        .collect()
}

/// The findings this page raises (thresholds: LCP 2.5/4 s, CLS 0.1/0.25, INP 200/500 ms, TBT as INP's proxy;
/// one finding per violated axe rule; keyboard; consent). Pure: the engine calls it, reports never recompute.
pub fn findings(page: &BrowserPage) -> Vec<crate::finding::Finding> {
    use crate::finding::Code;
    let mut out = Vec::new();
    let mut push = |code: Code, detail: String, related: Vec<String>| {
        out.push(crate::finding::Finding {
            audit: page.audit,
            site: page.site,
            code,
            url: page.url.clone(),
            detail,
            related,
            domain_wide: false,
        });
    };
    if let Some(error) = &page.error {
        let code =
            if page.memory_exceeded_mib.is_some() { Code::BrowserMemoryExceeded } else { Code::BrowserPageFailed };
        push(code, error.clone(), Vec::new());
        return out;
    }
    let v = &page.vitals;
    if let Some(lcp) = v.lcp_ms {
        let code = if lcp > LCP_POOR_MS {
            Some(Code::BrowserLcpPoor)
        } else if lcp > LCP_SLOW_MS {
            Some(Code::BrowserLcpSlow)
        } else {
            None
        };
        if let Some(code) = code {
            push(code, format!("LCP {:.1} s", f64::from(lcp) / 1000.0), Vec::new());
        }
    }
    if let Some(cls) = v.cls_milli {
        let code = if cls > CLS_POOR_MILLI {
            Some(Code::BrowserClsPoor)
        } else if cls > CLS_HIGH_MILLI {
            Some(Code::BrowserClsHigh)
        } else {
            None
        };
        if let Some(code) = code {
            push(code, format!("CLS {:.3}", f64::from(cls) / 1000.0), Vec::new());
        }
    }
    match (v.inp_ms, v.tbt_ms) {
        (Some(inp), _) => {
            let code = if inp > INP_POOR_MS {
                Some(Code::BrowserInpPoor)
            } else if inp > INP_SLOW_MS {
                Some(Code::BrowserInpSlow)
            } else {
                None
            };
            if let Some(code) = code {
                push(code, format!("INP {inp} ms"), Vec::new());
            }
        }
        (None, Some(tbt)) => {
            let code = if tbt > TBT_POOR_MS {
                Some(Code::BrowserTbtPoor)
            } else if tbt > TBT_HIGH_MS {
                Some(Code::BrowserTbtHigh)
            } else {
                None
            };
            if let Some(code) = code {
                push(code, format!("TBT {tbt} ms"), Vec::new());
            }
        }
        (None, None) => {}
    }
    for a in &page.axe {
        let code = match a.impact.as_str() {
            "critical" => Code::A11yCritical,
            "serious" => Code::A11ySerious,
            "moderate" => Code::A11yModerate,
            _ => Code::A11yMinor,
        };
        // The rule id comes first, before a colon: it is the finding's identity across audits.
        let detail = format!(
            "{}: {} element{}, e.g. {} ({})",
            a.rule,
            a.elements,
            if a.elements == 1 { "" } else { "s" },
            a.sample_selector,
            a.help
        );
        push(code, detail, Vec::new());
    }
    let k = &page.keyboard;
    if !k.no_focus_indicator.is_empty() {
        let detail = format!(
            "{} focused element(s) without a visible focus indicator, e.g. {}",
            k.no_focus_indicator.len(),
            k.no_focus_indicator[0]
        );
        push(Code::KeyboardNoFocusVisible, detail, k.no_focus_indicator.clone());
    }
    if !k.trap.is_empty() {
        push(Code::KeyboardFocusTrap, format!("focus cycles among: {}", k.trap.join(", ")), k.trap.clone());
    }
    if k.tabbed > 0 && !k.has_skip_link {
        push(
            Code::KeyboardNoSkipLink,
            "the first element reached with Tab is not a link to the main content".to_owned(),
            Vec::new(),
        );
    }
    if !k.backwards.is_empty() {
        push(
            Code::KeyboardFocusBackwards,
            format!("{} backward step(s), e.g. {}", k.backwards.len(), k.backwards[0]),
            k.backwards.clone(),
        );
    }
    for (code, detail, related) in load_findings(page.rendered.as_ref(), &page.robots_blocked) {
        push(code, detail, related);
    }
    let c = &page.consent;
    if !c.trackers_before.is_empty() {
        let mut detail = format!("before any consent: {}", c.trackers_before.join(", "));
        if !c.cookies_before.is_empty() {
            detail.push_str(&format!("; cookies: {}", c.cookies_before.join(", ")));
        }
        push(Code::ConsentTrackingBeforeConsent, detail, c.trackers_before.clone());
    }
    if c.reject_clicked && !c.trackers_after_reject.is_empty() {
        let mut detail = format!("after Reject: {}", c.trackers_after_reject.join(", "));
        if !c.cookies_after_reject.is_empty() {
            detail.push_str(&format!("; cookies set: {}", c.cookies_after_reject.join(", ")));
        }
        push(Code::ConsentTrackingAfterReject, detail, c.trackers_after_reject.clone());
    }
    if c.banner_found && c.reject_control.is_none() {
        push(
            Code::ConsentNoRejectOption,
            "a consent banner was found without a Reject or Decline control".to_owned(),
            Vec::new(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Code;

    fn codes(page: &BrowserPage) -> Vec<Code> {
        findings(page).iter().map(|f| f.code).collect()
    }

    fn with_vitals(v: Vitals) -> BrowserPage {
        BrowserPage {
            url: "http://a.test/".into(),
            vitals: v,
            keyboard: Keyboard { has_skip_link: true, ..Keyboard::default() },
            ..BrowserPage::default()
        }
    }

    #[test]
    fn vitals_at_the_published_thresholds() {
        let cases: &[(Vitals, &[Code])] = &[
            (
                Vitals {
                    lcp_ms: Some(2_500),
                    cls_milli: Some(100),
                    inp_ms: Some(200),
                    tbt_ms: Some(9_999),
                    ..Vitals::default()
                },
                &[],
            ),
            (
                Vitals { lcp_ms: Some(2_501), cls_milli: Some(101), inp_ms: Some(201), ..Vitals::default() },
                &[Code::BrowserLcpSlow, Code::BrowserClsHigh, Code::BrowserInpSlow],
            ),
            (
                Vitals { lcp_ms: Some(4_000), cls_milli: Some(250), inp_ms: Some(500), ..Vitals::default() },
                &[Code::BrowserLcpSlow, Code::BrowserClsHigh, Code::BrowserInpSlow],
            ),
            (
                Vitals { lcp_ms: Some(4_001), cls_milli: Some(251), inp_ms: Some(501), ..Vitals::default() },
                &[Code::BrowserLcpPoor, Code::BrowserClsPoor, Code::BrowserInpPoor],
            ),
            // No interaction measured: total blocking time stands in.
            (Vitals { tbt_ms: Some(200), ..Vitals::default() }, &[]),
            (Vitals { tbt_ms: Some(201), ..Vitals::default() }, &[Code::BrowserTbtHigh]),
            (Vitals { tbt_ms: Some(601), ..Vitals::default() }, &[Code::BrowserTbtPoor]),
            (Vitals::default(), &[]),
        ];
        for (v, want) in cases {
            assert_eq!(codes(&with_vitals(v.clone())), *want, "{v:?}");
        }
        let f = findings(&with_vitals(Vitals { cls_milli: Some(412), lcp_ms: Some(4_340), ..Vitals::default() }));
        assert_eq!(f[0].detail, "LCP 4.3 s");
        assert_eq!(f[1].detail, "CLS 0.412");
    }

    #[test]
    fn one_finding_per_axe_rule_by_impact_with_the_rule_as_identity() {
        let rule = |rule: &str, impact: &str, elements| AxeViolation {
            rule: rule.into(),
            impact: impact.into(),
            elements,
            sample_selector: "img.logo".into(),
            help: "Images must have alternate text".into(),
        };
        let page = BrowserPage {
            axe: vec![
                rule("image-alt", "critical", 3),
                rule("color-contrast", "serious", 1),
                rule("region", "moderate", 2),
                rule("x", "minor", 1),
                rule("y", "", 1),
            ],
            keyboard: Keyboard { has_skip_link: true, ..Keyboard::default() },
            ..BrowserPage::default()
        };
        let f = findings(&page);
        assert_eq!(
            f.iter().map(|f| f.code).collect::<Vec<_>>(),
            [Code::A11yCritical, Code::A11ySerious, Code::A11yModerate, Code::A11yMinor, Code::A11yMinor]
        );
        assert_eq!(f[0].detail, "image-alt: 3 elements, e.g. img.logo (Images must have alternate text)");
        assert_eq!(f[1].detail, "color-contrast: 1 element, e.g. img.logo (Images must have alternate text)");
        assert_eq!(Code::A11yCritical.identity("u", &f[0].detail), ("u", "image-alt"));
    }

    #[test]
    fn keyboard_and_consent_findings() {
        let page = BrowserPage {
            keyboard: Keyboard {
                tabbed: 5,
                no_focus_indicator: vec!["a#x".into()],
                trap: vec!["a#1".into(), "a#2".into()],
                has_skip_link: false,
                backwards: vec!["a#3 -> a#1".into()],
            },
            consent: Consent {
                banner_found: true,
                reject_control: None,
                trackers_before: vec!["tracker.test".into()],
                cookies_before: vec!["uid".into()],
                ..Consent::default()
            },
            ..BrowserPage::default()
        };
        assert_eq!(
            codes(&page),
            [
                Code::KeyboardNoFocusVisible,
                Code::KeyboardFocusTrap,
                Code::KeyboardNoSkipLink,
                Code::KeyboardFocusBackwards,
                Code::ConsentTrackingBeforeConsent,
                Code::ConsentNoRejectOption
            ]
        );
        let rejected = BrowserPage {
            consent: Consent {
                banner_found: true,
                reject_control: Some("Reject all".into()),
                reject_clicked: true,
                trackers_after_reject: vec!["tracker.test".into()],
                ..Consent::default()
            },
            keyboard: Keyboard { tabbed: 0, ..Keyboard::default() },
            ..BrowserPage::default()
        };
        assert_eq!(codes(&rejected), [Code::ConsentTrackingAfterReject]);
        // Nothing tabbed (no focusable element): no skip-link finding.
        assert!(codes(&BrowserPage::default()).is_empty());
    }

    #[test]
    fn a_failed_page_raises_only_that() {
        let page = BrowserPage {
            error: Some("load timed out after 30 s".into()),
            vitals: Vitals { lcp_ms: Some(9_000), ..Vitals::default() },
            ..BrowserPage::default()
        };
        let f = findings(&page);
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].code, f[0].detail.as_str()), (Code::BrowserPageFailed, "load timed out after 30 s"));
    }

    #[test]
    fn a_page_over_the_memory_limit_raises_its_own_code_and_older_records_still_decode() {
        let page = BrowserPage {
            error: Some("the page took Chromium to 2300 MiB".into()),
            memory_exceeded_mib: Some(2300),
            ..BrowserPage::default()
        };
        let f = findings(&page);
        assert_eq!(f.iter().map(|f| f.code).collect::<Vec<_>>(), [Code::BrowserMemoryExceeded]);
        // A record of a worker that did not know the field: the field is absent, not an error.
        let mut older = serde_json::to_value(BrowserPage { url: "http://a.test/".into(), ..BrowserPage::default() })
            .expect("to a map");
        older.as_object_mut().expect("a map").remove("memory_exceeded_mib").expect("the field was there");
        let bytes = rmp_serde::to_vec_named(&older).expect("encodes");
        let decoded: BrowserPage = rmp_serde::from_slice(&bytes).expect("decodes");
        assert_eq!((decoded.url.as_str(), decoded.memory_exceeded_mib), ("http://a.test/", None));
    }

    #[test]
    fn the_record_round_trips_through_rmp_serde() {
        let page = BrowserPage {
            desktop_jpeg: vec![0xff, 0xd8, 0, 1],
            vitals: Vitals { cls_milli: Some(7), ..Vitals::default() },
            ..BrowserPage::default()
        };
        let bytes = rmp_serde::to_vec_named(&page).expect("encodes");
        assert_eq!(rmp_serde::from_slice::<BrowserPage>(&bytes).expect("decodes"), page);
    }
}
