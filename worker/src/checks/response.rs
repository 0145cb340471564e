//! Performance and security-header rules, on any successful response (`slow_response`,
//! `heavy_page`, `compression_missing`, `caching_headers_missing`) and on the start page (`hsts_missing`,
//! `csp_missing` and the other security headers).

use super::{COMPRESSIBLE_BYTES, Check, HEAVY_PAGE_BYTES, SLOW_RESPONSE};
use crate::fetch::Fetched;
use shoal_shared::finding::Code;

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
