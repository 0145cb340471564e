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
    pub axe: Vec<AxeViolation>,
    pub keyboard: Keyboard,
    pub consent: Consent,
    /// Screenshots, JPEG: 1366x768 desktop and 390x844 phone emulation.
    #[serde(with = "serde_bytes")]
    pub desktop_jpeg: Vec<u8>,
    #[serde(with = "serde_bytes")]
    pub phone_jpeg: Vec<u8>,
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

/// The findings this page raises (thresholds: LCP 2.5/4 s, CLS 0.1/0.25, INP 200/500 ms, TBT as INP's proxy;
/// one finding per violated axe rule; keyboard; consent). Pure: the engine calls it, reports never recompute.
pub fn findings(page: &BrowserPage) -> Vec<crate::finding::Finding> {
    /* engine implements */
    let _ = page;
    Vec::new()
}
