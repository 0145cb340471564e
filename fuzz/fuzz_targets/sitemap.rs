//! Sitemaps as a site serves them: XML (urlset or sitemapindex), plain text, gzip, or anything
//! else. Parsing must stay under its caps and come back without a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_worker::sitemap::{SitemapCaps, parse_sitemap};

fuzz_target!(|data: &[u8]| {
    let caps = SitemapCaps { max_bytes: 1 << 20, max_urls: 1_000 };
    let parsed = parse_sitemap(data, &caps);
    assert!(parsed.urls.len() <= caps.max_urls, "{} URLs kept over a cap of {}", parsed.urls.len(), caps.max_urls);
    let _ = parse_sitemap(data, &SitemapCaps::default());
});
