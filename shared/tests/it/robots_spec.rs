//! SPEC §3 (robots.txt) checks for `shoal_shared::robots`, plus the real-file fixtures in
//! `tests/fixtures/robots/`.

use std::time::Duration;

use shoal_shared::robots::{
    MAX_CRAWL_DELAY, ProductToken, RobotsRules, RobotsStatus, Verdict, rules_for_status, verdict_line,
};
use url::Url;

fn shoalbot() -> ProductToken {
    ProductToken::from_agent("ShoalBot/0.1 (+https://shoal.example/bot)")
}

fn parse(body: &str) -> RobotsRules {
    RobotsRules::parse(body.as_bytes(), &shoalbot())
}

fn allowed(rules: &RobotsRules, url: &str) -> bool {
    rules.check_str(url).is_allowed()
}

#[test]
fn our_user_agent_string_gives_the_shoalbot_token() {
    assert_eq!(shoalbot().as_str(), "ShoalBot");
    assert_eq!(shoalbot().to_string(), "ShoalBot");
}

/// SPEC §3: `shoalbot` and `ShoalBot/2.1` name our group (case and version ignored);
/// `Shoal` does not, nor does `ShoalBotExtra` or `ShoalBot-Images`.
#[test]
fn group_selection_by_product_token() {
    for (value, ours) in [
        ("ShoalBot", true),
        ("shoalbot", true),
        ("SHOALBOT", true),
        ("ShoalBot/2.1", true),
        ("ShoalBot/2.1 (+https://shoal.example)", true),
        ("shoalbot # our crawler", true),
        ("Shoal", false),
        ("ShoalBotExtra", false),
        ("ShoalBot-Images", false),
        ("Bot", false),
    ] {
        let rules = parse(&format!("User-agent: *\nDisallow: /star\n\nUser-agent: {value}\nDisallow: /ours\n"));
        assert_eq!(!allowed(&rules, "https://a.test/ours"), ours, "User-agent: {value}");
        assert_eq!(!allowed(&rules, "https://a.test/star"), !ours, "User-agent: {value}");
        assert_eq!(rules.group(), if ours { "shoalbot" } else { "*" }, "{value}");
    }
}

/// SPEC §3: groups naming us are merged, and we never inherit `*` rules once we have a group.
#[test]
fn merged_groups_and_no_inheritance() {
    let rules = parse(
        "User-agent: ShoalBot\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n\n\
         User-agent: shoalbot/3\nDisallow: /c\n",
    );
    assert!(!allowed(&rules, "https://a.test/a"));
    assert!(allowed(&rules, "https://a.test/b"));
    assert!(!allowed(&rules, "https://a.test/c"));
}

/// SPEC §3: longest match wins, Allow wins a tie, `*` and `$` work, and the verdict names the
/// blocking rule.
#[test]
fn longest_match_allow_tie_wildcards() {
    let rules = parse(
        "User-agent: ShoalBot\nDisallow: /shop\nAllow: /shop/public\nDisallow: /*.pdf$\n\
         Allow: /tie\nDisallow: /tie\n",
    );
    assert_eq!(rules.check_str("https://a.test/shop/cart"), Verdict::Disallowed { rule: "/shop".to_owned() });
    assert_eq!(rules.check_str("https://a.test/shop/public/x"), Verdict::Allowed);
    assert_eq!(rules.check_str("https://a.test/docs/a.pdf"), Verdict::Disallowed { rule: "/*.pdf$".to_owned() });
    assert!(allowed(&rules, "https://a.test/docs/a.pdf?download=1"));
    assert!(allowed(&rules, "https://a.test/tie"));
}

/// SPEC §3: percent-encoding is normalised, `%61bc` ≡ `abc`, whichever side is encoded.
#[test]
fn percent_encoding_both_ways() {
    let encoded_rule = parse("User-agent: *\nDisallow: /%61bc\n");
    assert!(!allowed(&encoded_rule, "https://a.test/abc"));
    assert!(!allowed(&encoded_rule, "https://a.test/%61bc"));
    let plain_rule = parse("User-agent: *\nDisallow: /abc\n");
    assert!(!allowed(&plain_rule, "https://a.test/%61bc"));
    assert!(!allowed(&plain_rule, "https://a.test/abc"));
    // Reserved characters stay distinct: %2F is not a path separator.
    let slash = parse("User-agent: *\nDisallow: /a/b\n");
    assert!(allowed(&slash, "https://a.test/a%2Fb"));
}

/// A parsed `Url` and the same URL as text give the same verdict.
#[test]
fn check_and_check_str_agree() {
    let rules = parse("User-agent: *\nDisallow: /private\nDisallow: /caf%C3%A9\n");
    for text in [
        "https://a.test/private/x?y=1#frag",
        "https://a.test/public",
        "https://a.test/café",
        "HTTPS://A.TEST/private",
        "https://a.test/%70rivate",
    ] {
        let url = Url::parse(text).expect("test URLs are valid");
        assert_eq!(rules.check(&url), rules.check_str(text), "{text}");
    }
    // Text that is not an absolute URL is read as a path, as Google's library reads it.
    assert!(!allowed(&rules, "/private/x"));
    assert!(!allowed(&rules, "a.test/private"));
    assert!(allowed(&rules, ""));
}

/// RFC 9309 §2.5 / SPEC §3: at least 500 KiB is parsed; a rule at 490 KiB is honoured.
#[test]
fn rule_at_490_kib_is_honoured() {
    let mut body = String::from("User-agent: ShoalBot\n");
    let filler = "# padding padding padding padding padding padding padding padding\n";
    while body.len() < 490 * 1024 {
        body.push_str(filler);
    }
    body.push_str("Disallow: /deep\n");
    let rules = parse(&body);
    assert!(!allowed(&rules, "https://a.test/deep/x"));
    assert!(allowed(&rules, "https://a.test/shallow"));
}

/// Past the limit, rules are ignored (including one cut by it), but the file is not thrown
/// away: the rules before the limit still apply.
#[test]
fn rules_past_500_kib_are_ignored() {
    let mut body = String::from("User-agent: ShoalBot\nDisallow: /early\n");
    while body.len() < 500 * 1024 - 10 {
        body.push_str("#\n");
    }
    body.push_str("Disallow: /straddling-the-limit\nDisallow: /late\n");
    let rules = parse(&body);
    assert!(!allowed(&rules, "https://a.test/early"));
    assert!(allowed(&rules, "https://a.test/straddling-the-limit"));
    assert!(allowed(&rules, "https://a.test/late"));
}

/// SPEC §3: Crawl-delay of our group; fractional seconds; `*` only when we have no group; the
/// largest when our groups give several; huge values clamp instead of vanishing.
#[test]
fn crawl_delay_for_our_group() {
    let secs = |body: &str| parse(body).crawl_delay().map(|d| d.as_secs_f64());
    assert_eq!(secs("User-agent: ShoalBot\nCrawl-delay: 2.5\n"), Some(2.5));
    assert_eq!(secs("User-agent: *\nCrawl-delay: 30\n\nUser-agent: ShoalBot/2\nCrawl-delay: 1\n"), Some(1.0));
    assert_eq!(secs("User-agent: *\nCrawl-delay: 30\n\nUser-agent: Other\nCrawl-delay: 1\n"), Some(30.0));
    assert_eq!(secs("User-agent: Other\nCrawl-delay: 1\n"), None);
    assert_eq!(
        secs("User-agent: ShoalBot\nCrawl-delay: 3\nDisallow: /x\n\nUser-agent: shoalbot\nCrawl-delay: 7\n"),
        Some(7.0)
    );
    // A Crawl-delay line does not end the group for the rules after it.
    let rules = parse("User-agent: ShoalBot\nCrawl-delay: 5\nDisallow: /after\n");
    assert!(!allowed(&rules, "https://a.test/after"));
    // Values a site plainly meant as slow must not read as "no delay".
    assert_eq!(parse("User-agent: *\nCrawl-delay: 1e400\n").crawl_delay(), Some(MAX_CRAWL_DELAY));
    assert_eq!(secs("User-agent: *\nCrawl-delay: 10 seconds\n"), Some(10.0));
    assert_eq!(secs("User-agent: *\nCrawl-delay: -5\n"), None);
    assert!(MAX_CRAWL_DELAY > Duration::from_secs(60));
}

#[test]
fn sitemaps_in_file_order() {
    let rules = parse(
        "Sitemap: https://a.test/1.xml\nUser-agent: Other\nSitemap: https://a.test/2.xml\n\
         Disallow: /\nsitemap: /relative.xml\nSITEMAP: https://a.test/3.xml # comment\n",
    );
    assert_eq!(rules.sitemaps(), ["https://a.test/1.xml", "https://a.test/2.xml", "https://a.test/3.xml"]);
}

#[test]
fn fixture_realistic_site() {
    let rules = RobotsRules::parse(include_bytes!("../fixtures/robots/realistic.txt"), &shoalbot());
    assert_eq!(rules.group(), "shoalbot");
    assert_eq!(rules.crawl_delay(), Some(Duration::from_millis(2500)));
    assert!(!allowed(&rules, "https://www.example.org/private/notes"));
    assert!(allowed(&rules, "https://www.example.org/private/press-kit/logo.png"));
    assert!(!allowed(&rules, "https://www.example.org/reports/2024.pdf"));
    assert!(allowed(&rules, "https://www.example.org/reports/2024.pdf?page=2"));
    // `*` rules are not ours.
    assert!(allowed(&rules, "https://www.example.org/admin/"));
    assert!(allowed(&rules, "https://www.example.org/search?q=x"));
    assert_eq!(
        rules.sitemaps(),
        ["https://www.example.org/sitemap_index.xml", "https://www.example.org/news-sitemap.xml"]
    );

    let other = RobotsRules::parse(
        include_bytes!("../fixtures/robots/realistic.txt"),
        &ProductToken::from_agent("SomeOtherBot/1.0"),
    );
    assert_eq!(other.group(), "*");
    assert_eq!(other.crawl_delay(), Some(Duration::from_secs(10)));
    assert!(!allowed(&other, "https://www.example.org/shop?sessionid=42"));
    assert!(!allowed(&other, "https://www.example.org/cart"));
}

#[test]
fn fixture_bom_and_crlf() {
    let rules = RobotsRules::parse(include_bytes!("../fixtures/robots/bom_crlf.txt"), &shoalbot());
    assert_eq!(rules.group(), "shoalbot");
    assert!(!allowed(&rules, "https://bom.example/drafts/1"));
    assert!(allowed(&rules, "https://bom.example/tmp/1"));
    assert_eq!(rules.crawl_delay(), Some(Duration::from_secs(1)));
    assert_eq!(rules.sitemaps(), ["https://bom.example/sitemap.xml"]);
}

#[test]
fn fixture_cr_only_line_ends() {
    let rules = RobotsRules::parse(include_bytes!("../fixtures/robots/cr_only.txt"), &shoalbot());
    assert!(!allowed(&rules, "https://a.test/old/page"));
    assert!(allowed(&rules, "https://a.test/old/keep/page"));
    assert!(allowed(&rules, "https://a.test/new"));
    let other =
        RobotsRules::parse(include_bytes!("../fixtures/robots/cr_only.txt"), &ProductToken::from_agent("Other"));
    assert!(!allowed(&other, "https://a.test/new"));
}

#[test]
fn invalid_utf8_is_parsed_around() {
    let rules = RobotsRules::parse(b"User-agent: ShoalBot\nDisallow: /\xff\xfe\nDisallow: /ok-\xc3\n", &shoalbot());
    assert!(!allowed(&rules, "https://a.test/%FF%FE"));
    assert!(!allowed(&rules, "https://a.test/ok-%C3"));
    assert!(allowed(&rules, "https://a.test/fine"));
}

#[test]
fn robots_txt_itself_is_always_allowed() {
    let rules = parse("User-agent: *\nDisallow: /\n");
    assert!(!allowed(&rules, "https://a.test/"));
    assert!(allowed(&rules, "https://a.test/robots.txt"));
}

/// SPEC §3 statuses: 2xx parse; 4xx (not 429) allow all; 429, 5xx and a 3xx the fetcher gave
/// up on are retried, never "allow all".
#[test]
fn status_handling() {
    let body = b"User-agent: *\nDisallow: /";
    match rules_for_status(200, body, &shoalbot()) {
        RobotsStatus::Rules(rules) => assert!(!allowed(&rules, "https://a.test/x")),
        other => panic!("200 should give rules, got {other:?}"),
    }
    assert_eq!(rules_for_status(404, body, &shoalbot()), RobotsStatus::AllowAll);
    assert_eq!(rules_for_status(403, body, &shoalbot()), RobotsStatus::AllowAll);
    assert_eq!(rules_for_status(429, body, &shoalbot()), RobotsStatus::Retry);
    assert_eq!(rules_for_status(503, body, &shoalbot()), RobotsStatus::Retry);
    assert_eq!(rules_for_status(301, body, &shoalbot()), RobotsStatus::Retry);

    let all = RobotsRules::allow_all();
    assert!(allowed(&all, "https://a.test/anything"));
    assert_eq!(all.crawl_delay(), None);
    assert!(all.sitemaps().is_empty());
}

#[test]
fn verdict_lines_for_the_cli() {
    assert_eq!(verdict_line(&Verdict::Allowed, "https://a.test/"), "allowed https://a.test/");
    let blocked = Verdict::Disallowed { rule: "/x".to_owned() };
    assert_eq!(verdict_line(&blocked, "https://a.test/x"), "disallowed https://a.test/x");
}
