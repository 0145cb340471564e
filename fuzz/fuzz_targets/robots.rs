//! robots.txt as a site serves it: any bytes, any status. Parsing, group selection, every verdict
//! and the Crawl-delay must come back without a panic, and a verdict must not depend on how often it
//! is asked.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_shared::robots::{ProductToken, RobotsRules, rules_for_status};

fuzz_target!(|data: &[u8]| {
    let token = ProductToken::from_agent("ShoalBot/1.0 (+https://example.com/bot)");
    let rules = RobotsRules::parse(data, &token);
    let _ = rules.sitemaps();
    let _ = rules.crawl_delay();
    let _ = rules.group();
    // Fixed paths, and each line's value as a path, so patterns meet paths that resemble them.
    let text = String::from_utf8_lossy(data);
    let values = text.lines().take(32).filter_map(|l| l.split_once(':').map(|(_, v)| v.trim()));
    for path in ["/", "/a/b?c=d", "/%7Euser/", "/ä/x", "/$"].into_iter().chain(values) {
        let url = format!("https://example.com/{}", path.trim_start_matches('/'));
        let first = rules.check_str(&url);
        assert_eq!(first, rules.check_str(&url), "the same verdict twice for {url}");
    }
    // The token as a site owner might write it in the first line, and the status handling.
    let first_line = text.lines().next().unwrap_or_default();
    let _ = RobotsRules::parse(data, &ProductToken::from_agent(first_line));
    let status = data.first().map_or(200, |b| 100 + u16::from(*b) * 2);
    let _ = rules_for_status(status, data, &token);
});
