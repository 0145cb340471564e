//! Page-level checks: what one response says about a site, as (code, detail) pairs.
//!
//! Pure functions over the fetched response and the extracted page facts, so each rule is
//! unit-testable without a server. Site-level rules (broken links, duplicates, redirect chains,
//! sitemap coverage, canonical targets) run in the audit database once a site is done.

use crate::extract::PageFacts;
use crate::fetch::Fetched;
use crate::parse::{CutReason, ParseCut};
use shoal_shared::finding::Code;
use shoal_shared::task::ProbeKind;
use shoal_shared::time::UnixMs;
use shoal_shared::url::{NormalizedUrl, Scope};
use std::time::Duration;

pub mod content;
pub mod onpage;
pub mod structured;

/// A title longer than this is cut off in search results.
pub const TITLE_MAX_CHARS: usize = 60;
/// A description longer than this is cut off in search results.
pub const DESCRIPTION_MAX_CHARS: usize = 160;
/// A response slower than this is reported.
pub const SLOW_RESPONSE: Duration = Duration::from_secs(1);
/// An HTML document larger than this is reported.
pub const HEAVY_PAGE_BYTES: u64 = 1024 * 1024;
/// Text responses larger than this should be compressed.
pub const COMPRESSIBLE_BYTES: u64 = 1024;
/// Invalid links reported per page, at most.
pub const MAX_INVALID_LINK_FINDINGS: usize = 10;
/// Mixed-content URLs named per page, at most.
const MAX_MIXED_NAMED: usize = 5;

/// What `html_too_complex` says about where and why parsing stopped.
fn parse_cut_detail(cut: &ParseCut) -> String {
    let why = match cut.reason {
        CutReason::Depth => format!("elements nested more than {} deep", cut.limit),
        CutReason::Work => format!("markup that would take more than {} parser steps", cut.limit),
        CutReason::Attributes => format!("a tag with more than {} attributes", cut.limit),
    };
    format!("{why}: parsing stopped at byte {} of {}", cut.at_byte, cut.total_bytes)
}

/// One finding about the URL being checked: its code and detail.
pub type Check = (Code, String);

/// Content, canonical, indexing, accessibility and mixed-content rules for one HTML page.
#[must_use]
pub fn page_checks(
    f: &PageFacts,
    scope: &Scope,
    header_noindex: bool,
    header_nofollow: bool,
    max_links: usize,
) -> Vec<Check> {
    let mut out = Vec::new();
    // On a page whose parse was cut (`html_too_complex`), what is missing may be after the cut.
    let whole = f.parse_cut.is_none();
    match f.title.as_deref() {
        None if whole => out.push((Code::TitleMissing, String::new())),
        None => {}
        Some("") => out.push((Code::TitleEmpty, String::new())),
        Some(t) if t.chars().count() > TITLE_MAX_CHARS => {
            out.push((Code::TitleTooLong, format!("{} characters", t.chars().count())));
        }
        Some(_) => {}
    }
    match f.meta_description.as_deref() {
        None if whole => out.push((Code::DescriptionMissing, String::new())),
        None => {}
        Some("") => out.push((Code::DescriptionEmpty, String::new())),
        Some(d) if d.chars().count() > DESCRIPTION_MAX_CHARS => {
            out.push((Code::DescriptionTooLong, format!("{} characters", d.chars().count())));
        }
        Some(_) => {}
    }
    match f.h1.len() {
        0 if whole => out.push((Code::H1Missing, String::new())),
        0 | 1 => {}
        n => out.push((Code::H1Multiple, format!("{n} h1 headings"))),
    }
    if f.robots_noindex() || header_noindex {
        let source = if header_noindex { "X-Robots-Tag" } else { "meta robots" };
        out.push((Code::Noindex, format!("noindex via {source}")));
    }
    if f.robots_nofollow() || header_nofollow {
        let source = if header_nofollow { "X-Robots-Tag" } else { "meta robots" };
        out.push((Code::NofollowPage, format!("nofollow via {source}")));
    }
    if f.links_truncated {
        out.push((Code::TooManyLinks, format!("more than {max_links} links")));
    }
    if let Some(cut) = &f.parse_cut {
        out.push((Code::HtmlTooComplex, parse_cut_detail(cut)));
    }
    for bad in f.invalid_links.iter().take(MAX_INVALID_LINK_FINDINGS) {
        out.push((Code::InvalidLink, bad.clone()));
    }
    if f.canonical_count > 1 {
        out.push((Code::CanonicalMultiple, format!("{} rel=canonical links", f.canonical_count)));
    }
    if f.canonical_in_body {
        out.push((Code::CanonicalInBody, String::new()));
    }
    if let Some(c) = f.canonical.as_deref() {
        match NormalizedUrl::parse(c) {
            Err(_) => out.push((Code::CanonicalInvalid, c.chars().take(300).collect())),
            Ok(target) if !scope.contains(target.as_url()) => out.push((Code::CanonicalOtherSite, target.to_string())),
            Ok(_) => {}
        }
    }
    if !f.mixed_content.is_empty() {
        let named: Vec<&str> = f.mixed_content.iter().take(MAX_MIXED_NAMED).map(String::as_str).collect();
        let more = f.mixed_content.len().saturating_sub(MAX_MIXED_NAMED);
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        out.push((
            Code::MixedContent,
            format!("{} http:// resources: {}{tail}", f.mixed_content.len(), named.join(", ")),
        ));
    }
    if f.images_without_alt > 0 {
        out.push((Code::ImgMissingAlt, format!("{} images without alt", f.images_without_alt)));
    }
    if f.html_lang.as_deref().is_none_or(|l| l.trim().is_empty()) {
        out.push((Code::HtmlLangMissing, String::new()));
    }
    out
}

fn is_text_type(ct: &str) -> bool {
    let ct = ct.to_ascii_lowercase();
    ct.starts_with("text/")
        || ct.contains("javascript")
        || ct.contains("json")
        || ct.contains("xml")
        || ct.contains("svg")
}

fn is_static_resource_type(ct: &str) -> bool {
    let ct = ct.to_ascii_lowercase();
    ct.starts_with("image/")
        || ct.starts_with("font/")
        || ct.contains("css")
        || ct.contains("javascript")
        || ct.starts_with("video/")
        || ct.starts_with("audio/")
}

/// Performance rules for any successful response: slow, heavy, uncompressed, uncached.
#[must_use]
pub fn response_checks(resp: &Fetched, is_html_page: bool, is_resource: bool) -> Vec<Check> {
    let mut out = Vec::new();
    if !(200..300).contains(&resp.status) {
        return out;
    }
    if resp.elapsed > SLOW_RESPONSE {
        out.push((Code::SlowResponse, format!("{} ms", resp.elapsed.as_millis())));
    }
    let declared: Option<u64> = resp.header("content-length").and_then(|v| v.trim().parse().ok());
    let size = declared.unwrap_or(resp.body.len() as u64).max(resp.body.len() as u64);
    if is_html_page && size > HEAVY_PAGE_BYTES {
        out.push((Code::HeavyPage, format!("{size} bytes")));
    }
    let ct = resp.header("content-type").unwrap_or("");
    // The fetcher asks for gzip/br/deflate/zstd and decodes the body itself, keeping the header:
    // it tells what was sent.
    let encoded = resp.header("content-encoding").is_some_and(|e| !e.trim().eq_ignore_ascii_case("identity"));
    if is_text_type(ct) && size > COMPRESSIBLE_BYTES && !encoded {
        out.push((Code::CompressionMissing, format!("{size} bytes of {ct} sent uncompressed")));
    }
    if is_resource && is_static_resource_type(ct) {
        let cached = ["cache-control", "expires", "etag", "last-modified"].iter().any(|h| resp.header(h).is_some());
        if !cached {
            out.push((Code::CachingHeadersMissing, ct.to_owned()));
        }
    }
    out
}

/// Security-header rules, for the start page.
#[must_use]
pub fn security_header_checks(resp: &Fetched, https: bool) -> Vec<Check> {
    let mut out = Vec::new();
    let csp = resp.header_all("content-security-policy").join(", ").to_ascii_lowercase();
    if https && resp.header("strict-transport-security").is_none() {
        out.push((Code::HstsMissing, String::new()));
    }
    if csp.is_empty() {
        out.push((Code::CspMissing, String::new()));
    }
    if !resp.header("x-content-type-options").is_some_and(|v| v.trim().eq_ignore_ascii_case("nosniff")) {
        out.push((Code::ContentTypeOptionsMissing, String::new()));
    }
    if resp.header("x-frame-options").is_none() && !csp.contains("frame-ancestors") {
        out.push((Code::FrameProtectionMissing, String::new()));
    }
    if resp.header("referrer-policy").is_none() {
        out.push((Code::ReferrerPolicyMissing, String::new()));
    }
    out
}

/// Whether a start page looks like WordPress, so the four WordPress probes are worth making.
#[must_use]
pub fn looks_like_wordpress(html: &str) -> bool {
    let h = html.to_ascii_lowercase();
    h.contains("/wp-content/") || h.contains("/wp-includes/") || h.contains("content=\"wordpress")
}

/// What a standard probe's answer means. `body` is the decoded start of the body.
#[must_use]
pub fn probe_checks(kind: ProbeKind, resp: &Fetched, body: &str, now: UnixMs) -> Vec<Check> {
    let ct = resp.header("content-type").unwrap_or("").to_ascii_lowercase();
    let ok = (200..300).contains(&resp.status);
    let html = ct.contains("html");
    let mut out = Vec::new();
    match kind {
        ProbeKind::LlmsTxt => {
            if ok && !html && !body.trim().is_empty() {
                out.push((Code::LlmsTxtPresent, format!("{} bytes", resp.body.len())));
            }
        }
        ProbeKind::SecurityTxt => {
            if !ok {
                out.push((Code::SecurityTxtMissing, format!("HTTP {}", resp.status)));
            } else if html {
                out.push((Code::SecurityTxtMissing, format!("answered an HTML page (HTTP {})", resp.status)));
            } else {
                match security_txt(body, now) {
                    SecurityTxt::Valid => {}
                    SecurityTxt::Invalid(why) => out.push((Code::SecurityTxtInvalid, why)),
                    SecurityTxt::Expired(when) => out.push((Code::SecurityTxtExpired, format!("expired {when}"))),
                }
            }
        }
        ProbeKind::Soft404 => {
            if ok {
                out.push((Code::Soft404, format!("answered {} for a URL that cannot exist", resp.status)));
            } else if (300..400).contains(&resp.status) {
                let to = resp.header("location").unwrap_or("");
                out.push((Code::Soft404, format!("redirected to {to} instead of answering 404")));
            }
        }
        ProbeKind::HttpsRedirect => {
            let to_https = (300..400).contains(&resp.status)
                && resp.header("location").is_some_and(|l| l.trim().to_ascii_lowercase().starts_with("https://"));
            if !to_https {
                out.push((Code::HttpsRedirectMissing, format!("http:// answered {}", resp.status)));
            }
        }
        ProbeKind::WpJson => {
            if ok && ct.contains("json") {
                out.push((Code::WpRestApiExposed, String::new()));
            }
        }
        ProbeKind::WpXmlrpc => {
            if (ok || resp.status == 405) && body.contains("XML-RPC") {
                out.push((Code::WpXmlrpcExposed, format!("HTTP {}", resp.status)));
            }
        }
        ProbeKind::WpUploads => {
            if ok && body.contains("Index of") {
                out.push((Code::WpUploadsListing, String::new()));
            }
        }
        ProbeKind::WpP1 => {
            if ok && html && body.to_ascii_lowercase().contains("hello world") {
                out.push((Code::WpDefaultPost, String::new()));
            }
        }
    }
    out
}

/// What a security.txt says (RFC 9116).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecurityTxt {
    /// Has Contact and an Expires in the future.
    Valid,
    /// Missing or malformed required fields.
    Invalid(String),
    /// Expires is in the past.
    Expired(String),
}

/// Checks the required fields of RFC 9116 §2.5: at least one `Contact`, exactly one `Expires`
/// (an RFC 3339 date) that has not passed. A PGP-signed file is read through its signature
/// armour; the signature itself is not verified.
#[must_use]
pub fn security_txt(body: &str, now: UnixMs) -> SecurityTxt {
    let mut contacts = 0;
    let mut expires = Vec::new();
    for line in body.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let Some((field, value)) = line.split_once(':') else { continue };
        match field.trim().to_ascii_lowercase().as_str() {
            "contact" if !value.trim().is_empty() => contacts += 1,
            "expires" => expires.push(value.trim().to_owned()),
            _ => {}
        }
    }
    if contacts == 0 {
        return SecurityTxt::Invalid("no Contact field".into());
    }
    match expires.as_slice() {
        [] => SecurityTxt::Invalid("no Expires field".into()),
        [one] => match parse_rfc3339(one) {
            None => SecurityTxt::Invalid(format!("Expires {one:?} is not an RFC 3339 date")),
            Some(t) if t <= now => SecurityTxt::Expired(one.clone()),
            Some(_) => SecurityTxt::Valid,
        },
        _ => SecurityTxt::Invalid("more than one Expires field".into()),
    }
}

/// Parses an RFC 3339 date; see [`UnixMs::parse_rfc3339`].
#[must_use]
pub fn parse_rfc3339(s: &str) -> Option<UnixMs> {
    UnixMs::parse_rfc3339(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(UnixMs(0)));
        assert_eq!(parse_rfc3339("2026-11-30T00:00:00Z"), Some(UnixMs(1_795_996_800_000)));
        assert_eq!(parse_rfc3339("2026-11-30T02:00:00+02:00"), Some(UnixMs(1_795_996_800_000)));
        assert_eq!(parse_rfc3339("2026-11-30T00:00:00.123Z"), Some(UnixMs(1_795_996_800_000)));
        assert_eq!(parse_rfc3339("2026-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("soon"), None);
    }

    #[test]
    fn security_txt_rules() {
        let now = UnixMs(1_795_996_800_000);
        assert_eq!(security_txt("Contact: mailto:a@b.c\nExpires: 2030-01-01T00:00:00Z\n", now), SecurityTxt::Valid);
        assert!(matches!(security_txt("Expires: 2030-01-01T00:00:00Z\n", now), SecurityTxt::Invalid(_)));
        assert!(matches!(security_txt("Contact: mailto:a@b.c\n", now), SecurityTxt::Invalid(_)));
        assert!(matches!(security_txt("Contact: x\nExpires: 2020-01-01T00:00:00Z\n", now), SecurityTxt::Expired(_)));
        assert!(matches!(
            security_txt("Contact: x\nExpires: 2030-01-01T00:00:00Z\nExpires: 2031-01-01T00:00:00Z\n", now),
            SecurityTxt::Invalid(_)
        ));
        assert!(matches!(security_txt("Contact: x\nExpires: tomorrow\n", now), SecurityTxt::Invalid(_)));
    }

    #[test]
    fn cut_parse_is_reported_and_absences_are_not_claimed() {
        let start = url::Url::parse("https://example.com/").expect("valid URL");
        let scope = Scope::of(&start);
        let cut = ParseCut { reason: CutReason::Depth, limit: 512, at_byte: 4096, total_bytes: 5_000_000 };
        let facts = PageFacts { parse_cut: Some(cut), ..PageFacts::default() };
        let found = page_checks(&facts, &scope, false, false, 10);
        let detail = found.iter().find(|(c, _)| *c == Code::HtmlTooComplex).map(|(_, d)| d.as_str());
        assert_eq!(detail, Some("elements nested more than 512 deep: parsing stopped at byte 4096 of 5000000"));
        for absent in [Code::TitleMissing, Code::DescriptionMissing, Code::H1Missing] {
            assert!(!found.iter().any(|(c, _)| *c == absent), "{absent:?} claimed on a cut page: {found:?}");
        }
        let whole = page_checks(&PageFacts::default(), &scope, false, false, 10);
        assert!(!whole.iter().any(|(c, _)| *c == Code::HtmlTooComplex));
        assert!(whole.iter().any(|(c, _)| *c == Code::H1Missing));
    }

    #[test]
    fn wordpress_is_recognised() {
        assert!(looks_like_wordpress(r#"<link rel="stylesheet" href="/wp-content/themes/x/style.css">"#));
        assert!(looks_like_wordpress(r#"<meta name="generator" content="WordPress 6.4">"#));
        assert!(!looks_like_wordpress("<html><body>plain</body></html>"));
    }
}
