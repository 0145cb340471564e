//! Page-level checks: what one response says about a site, as (code, detail) pairs.
//!
//! Pure functions over the fetched response and the extracted page facts, so each rule is
//! unit-testable without a server. Site-level rules (broken links, duplicates, redirect chains,
//! sitemap coverage, canonical targets) run in the audit database once a site is done.
//!
//! One module per family: this file holds the page basics (titles, descriptions, headings,
//! canonicals, indexing, accessibility, mixed content); [`response`] performance and security
//! headers, [`probe`] the standard probes, [`structured`] structured data, [`content`] thin pages,
//! [`onpage`] viewport, social tags and images.

use crate::extract::PageFacts;
use crate::parse::{CutReason, ParseCut};
use shoal_shared::finding::Code;
use shoal_shared::url::{NormalizedUrl, Scope};
use std::time::Duration;

pub mod content;
pub mod onpage;
pub mod probe;
pub mod response;
pub mod structured;

pub use probe::{SecurityTxt, looks_like_wordpress, parse_rfc3339, probe_checks, security_txt};
pub use response::{response_checks, security_header_checks};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
