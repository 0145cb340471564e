//! HTML as a site serves it: any bytes, any declared charset. Decoding, extraction (links, titles,
//! meta robots, canonical, hreflang...) and the page rules must come back without a panic, with at
//! most the capped number of links.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_shared::url::Scope;
use shoal_worker::charset::decode_html;
use shoal_worker::checks::page_checks;
use shoal_worker::extract::{ExtractCaps, extract};

fuzz_target!(|data: &[u8]| {
    // The first line, when short, is the Content-Type header; the rest is the body.
    let (content_type, body) = match data.iter().position(|&b| b == b'\n') {
        Some(i) if i < 100 => (std::str::from_utf8(&data[..i]).ok(), &data[i + 1..]),
        _ => (None, data),
    };
    let (html, _) = decode_html(body, content_type);
    let Ok(base) = url::Url::parse("https://www.example.com/dir/page.html?q=1") else { return };
    let caps = ExtractCaps { max_links: 64, ..ExtractCaps::default() };
    let facts = extract(&html, &base, &caps);
    assert!(facts.links.len() <= caps.max_links, "{} links kept over a cap of {}", facts.links.len(), caps.max_links);
    let _ = page_checks(&facts, &Scope::of(&base), false, false, caps.max_links);
    let _ = facts.robots_noindex();
    let _ = facts.robots_nofollow();
});
