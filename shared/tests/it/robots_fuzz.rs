//! Property tests for `shoal_shared::robots`: arbitrary input never panics, and the wrapper
//! agrees with raw robotxt wherever it does not deliberately correct it.

use proptest::prelude::*;
use shoal_shared::ai_crawlers::{AI_CRAWLERS, AiRules};
use shoal_shared::robots::{ProductToken, RobotsRules};
use url::Url;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Whatever a server sends and whatever URL or agent we are asked about, nothing panics.
    #[test]
    fn arbitrary_bytes_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..2048),
        agent in any::<String>(),
        url in any::<String>(),
        path in "[ -~\u{80}-\u{10ffff}]{0,64}",
    ) {
        let rules = RobotsRules::parse(&body, &ProductToken::from_agent(&agent));
        let _ = rules.check_str(&url);
        let _ = rules.crawl_delay();
        let _ = rules.sitemaps();
        if let Ok(url) = Url::parse("https://example.com/").and_then(|base| base.join(&path)) {
            let _ = rules.check(&url);
        }
    }

    /// Robots-like text (real keys, misspellings, odd separators, all line ends) never panics
    /// either. Outside what the wrapper corrects (`User-agent` values that are not bare tokens,
    /// `Crawl-delay` lines, literal `*`/`$` in URLs) it agrees with raw robotxt on every path,
    /// which also checks that its pre-pass reads lines exactly as robotxt's lexer does.
    #[test]
    fn agrees_with_robotxt_where_not_corrected(
        lines in proptest::collection::vec((line(), line_end()), 0..24),
        token in "[abAB]",
        paths in proptest::collection::vec("/[ab/%61]{0,6}", 1..8),
    ) {
        let body: String = lines.iter().flat_map(|(l, e)| [l.as_str(), e]).collect();
        let ours = RobotsRules::parse(body.as_bytes(), &ProductToken::from_agent(&token));
        let raw = robotxt::Robots::parse(body.as_bytes(), token.as_str());
        for path in &paths {
            let url = format!("https://example.com{path}");
            prop_assert_eq!(
                ours.check_str(&url).is_allowed(),
                raw.is_url_allowed(&Url::parse(&url).expect("generated URLs are valid")),
                "body {:?} token {} url {}", body, token, url
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// The AI crawler table is the crawler's own verdict for each token (issue 37): parsing the
    /// file once per named crawler (and once for `*`) gives, for every crawler and path, what a
    /// `RobotsRules` for that crawler's token alone gives.
    #[test]
    fn ai_verdicts_are_each_crawlers_own(
        lines in proptest::collection::vec((ai_line(), line_end()), 0..16),
        paths in proptest::collection::vec("/[ab/]{0,5}", 1..6),
    ) {
        let body: String = lines.iter().flat_map(|(l, e)| [l.as_str(), e]).collect();
        let ai = AiRules::parse(body.as_bytes());
        for path in &paths {
            let url = Url::parse(&format!("https://example.com{path}")).expect("generated URLs are valid");
            let blocked = ai.blocked(&url);
            for (i, crawler) in AI_CRAWLERS.iter().enumerate() {
                let alone = RobotsRules::parse(body.as_bytes(), &ProductToken::from_agent(crawler.token));
                prop_assert_eq!(blocked.is_blocked(i), !alone.check(&url).is_allowed(), "body {:?} {} {}", body, crawler.token, url);
            }
        }
    }
}

/// A robots.txt line naming AI crawlers (bare, versioned, in other cases) or others, or a rule.
fn ai_line() -> impl Strategy<Value = String> {
    let agent = prop_oneof![
        Just("GPTBot"),
        Just("gptbot/1.2"),
        Just("ClaudeBot"),
        Just("CLAUDE-USER"),
        Just("CCBot (+https://commoncrawl.org)"),
        Just("*"),
        Just("OtherBot"),
    ];
    let agent_line = agent.prop_map(|a| format!("User-agent: {a}"));
    let rule = (prop_oneof![Just("Allow"), Just("Disallow")], "/[ab]{0,3}[*$]?").prop_map(|(k, v)| format!("{k}: {v}"));
    prop_oneof![agent_line, rule]
}

/// One robots.txt line whose `User-agent` value (if any) is a bare token or `*`, so the shim
/// has nothing to cut, and which is not a `Crawl-delay` line.
fn line() -> impl Strategy<Value = String> {
    let indent = prop_oneof![Just(""), Just(" "), Just("\t")];
    let sep = prop_oneof![Just(": "), Just(":"), Just(" "), Just(" : "), Just("\t"), Just("=")];
    let agent_key = prop_oneof![Just("User-agent"), Just("user agent"), Just("USERAGENT")];
    let agent = prop_oneof![Just("a"), Just("B"), Just("*"), Just(""), Just("c"), Just("a # x")];
    let agent_line = (indent.clone(), agent_key, sep.clone(), agent)
        .prop_map(|(indent, key, sep, value)| format!("{indent}{key}{sep}{value}"));
    let other_key = prop_oneof![
        Just("Allow"),
        Just("alow"),
        Just("Disallow"),
        Just("disalow"),
        Just("Sitemap"),
        Just("Host"),
        Just("user-agentx"),
        Just("# Disallow"),
    ];
    let value = prop_oneof![Just(String::new()), "[ab/*$%61]{0,6}", "/[ab]{0,3} # [ab]{0,3}"];
    let other_line =
        (indent, other_key, sep, value).prop_map(|(indent, key, sep, value)| format!("{indent}{key}{sep}{value}"));
    prop_oneof![agent_line, other_line]
}

fn line_end() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("\n"), Just("\r\n"), Just("\r"), Just("\0"), Just("\r\r\n"), Just("\n\n")]
}
