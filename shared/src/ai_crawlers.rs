//! Which AI crawlers a site's robots.txt lets in, judged by the same robots code as Shoal's own
//! verdicts ([`RobotsRules`]).
//!
//! Since 2025 the first robots.txt question site owners ask is which AI crawlers it admits. Each
//! crawler of [`AI_CRAWLERS`] is judged with the file exactly as the crawler judges itself: the
//! group for its product token, else `*`, longest match, `Allow` winning a tie, and so on. The
//! worker parses a lane's robots.txt once per token ([`AiRules::parse`]) and records on every page
//! it crawls which tokens the file blocks from it ([`AiBlocked`], a bit per token); the audit
//! database sums the bits per host into the per-site table ([`AiVerdict`]: allowed, blocked,
//! partly blocked) and raises `ai_crawlers_inconsistent` when the tokens' verdicts differ
//! ([`inconsistency`]). The sample is therefore the site's pages Shoal itself was allowed to crawl,
//! the start page first among them.
//!
//! The table is append-only: a token's bit is its position in [`AI_CRAWLERS`], and that position
//! is stored in the audit database (`pages.ai_blocked`), so new tokens go at the end.

use crate::robots::{ProductToken, RobotsRules, Verdict, names_agents};
use serde::{Deserialize, Serialize};
use std::fmt;
use url::Url;

/// What an AI crawler's visits are for, as its operator documents it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Purpose {
    /// Collects pages to train models (or a control token that says whether pages may be used so).
    Training,
    /// Indexes pages for an AI search or answer engine, which links back to them.
    Search,
    /// Fetches a page because a person asked an assistant about it.
    User,
}

impl Purpose {
    /// The stable spelling (`training`, `search`, `user`).
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            Purpose::Training => "training",
            Purpose::Search => "search",
            Purpose::User => "user",
        }
    }
}

/// One documented AI crawler: its robots.txt product token, its operator and what it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AiCrawler {
    /// The product token robots.txt groups name (`GPTBot`).
    pub token: &'static str,
    /// Who runs it.
    pub operator: &'static str,
    /// What its visits are for.
    pub purpose: Purpose,
}

const fn crawler(token: &'static str, operator: &'static str, purpose: Purpose) -> AiCrawler {
    AiCrawler { token, operator, purpose }
}

/// The AI crawlers judged, in bit order (append only: see the module documentation). The same
/// table is in `docs/ai-crawlers.md`, and a test keeps the two equal.
pub const AI_CRAWLERS: &[AiCrawler] = &[
    crawler("GPTBot", "OpenAI", Purpose::Training),
    crawler("OAI-SearchBot", "OpenAI", Purpose::Search),
    crawler("ChatGPT-User", "OpenAI", Purpose::User),
    crawler("ClaudeBot", "Anthropic", Purpose::Training),
    crawler("Claude-SearchBot", "Anthropic", Purpose::Search),
    crawler("Claude-User", "Anthropic", Purpose::User),
    crawler("CCBot", "Common Crawl", Purpose::Training),
    crawler("Google-Extended", "Google", Purpose::Training),
    crawler("Applebot-Extended", "Apple", Purpose::Training),
    crawler("PerplexityBot", "Perplexity", Purpose::Search),
    crawler("Perplexity-User", "Perplexity", Purpose::User),
    crawler("Bytespider", "ByteDance", Purpose::Training),
    crawler("Meta-ExternalAgent", "Meta", Purpose::Training),
    crawler("Meta-ExternalFetcher", "Meta", Purpose::User),
    crawler("Amazonbot", "Amazon", Purpose::Training),
    crawler("DuckAssistBot", "DuckDuckGo", Purpose::Search),
    crawler("MistralAI-User", "Mistral AI", Purpose::User),
];

/// The tokens of [`AI_CRAWLERS`] robots.txt blocks from one URL: bit `i` is `AI_CRAWLERS[i]`.
/// Travels in the page record and is stored as an integer (`pages.ai_blocked`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AiBlocked(u32);

impl AiBlocked {
    /// Nothing blocked.
    pub const NONE: AiBlocked = AiBlocked(0);

    /// From a stored integer; bits past the table (a newer Shoal's tokens) are dropped.
    #[must_use]
    pub fn from_bits(bits: u32) -> AiBlocked {
        let known = if AI_CRAWLERS.len() >= 32 { u32::MAX } else { (1u32 << AI_CRAWLERS.len()) - 1 };
        AiBlocked(bits & known)
    }

    /// The integer stored.
    #[must_use]
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Whether the crawler at `index` of [`AI_CRAWLERS`] is blocked.
    #[must_use]
    pub fn is_blocked(self, index: usize) -> bool {
        index < 32 && self.0 & (1 << index) != 0
    }

    fn with(self, index: usize) -> AiBlocked {
        AiBlocked(self.0 | (1 << index))
    }
}

/// A token no robots.txt names (an empty one would match an empty `User-agent:` line): parsed
/// for it, a file gives the rules of its `*` group.
const STAR_PROBE: &str = "Shoal-AI-crawlers-star-group";

/// A robots.txt as every crawler of [`AI_CRAWLERS`] reads it, parsed once per token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AiRules {
    /// The rules of each token that has a group of its own, in table order; `None` for the tokens
    /// the file gives no group (they obey `star`): only distinct rules are kept in memory.
    own: Vec<Option<RobotsRules>>,
    /// The `*` group's rules (what a token without a group of its own obeys).
    star: RobotsRules,
}

impl AiRules {
    /// Reads a robots.txt body (a 2xx answer) for every token, as [`RobotsRules::parse`] does for
    /// Shoal's own. The file is parsed once for `*` and once more for each crawler it names in a
    /// `User-agent` line ([`names_agents`]): most files name few or none, and a crawler not named
    /// obeys `*`.
    #[must_use]
    pub fn parse(body: &[u8]) -> AiRules {
        let star = RobotsRules::parse(body, &ProductToken::from_agent(STAR_PROBE));
        let tokens: Vec<&str> = AI_CRAWLERS.iter().map(|c| c.token).collect();
        let own = names_agents(body, &tokens)
            .into_iter()
            .zip(&tokens)
            .map(|(named, token)| {
                let rules = named.then(|| RobotsRules::parse(body, &ProductToken::from_agent(token)))?;
                (rules.group() != "*").then_some(rules)
            })
            .collect();
        AiRules { own, star }
    }

    /// No rules (a robots.txt answering 4xx): every crawler may fetch everything.
    #[must_use]
    pub fn allow_all() -> AiRules {
        AiRules { own: vec![None; AI_CRAWLERS.len()], star: RobotsRules::allow_all() }
    }

    /// How many crawlers the file gives a group of their own (each keeps its own rules in memory).
    #[must_use]
    pub fn own_groups(&self) -> usize {
        self.own.iter().filter(|r| r.is_some()).count()
    }

    fn rules(&self, index: usize) -> &RobotsRules {
        self.own.get(index).and_then(Option::as_ref).unwrap_or(&self.star)
    }

    /// The verdict for each crawler of [`AI_CRAWLERS`] on `url`, in table order.
    #[must_use]
    pub fn verdicts(&self, url: &Url) -> Vec<Verdict> {
        (0..AI_CRAWLERS.len()).map(|i| self.rules(i).check(url)).collect()
    }

    /// The verdict for each crawler on a URL given as text, as `shoal robots` takes it
    /// ([`RobotsRules::check_str`]).
    #[must_use]
    pub fn verdicts_str(&self, url: &str) -> Vec<Verdict> {
        (0..AI_CRAWLERS.len()).map(|i| self.rules(i).check_str(url)).collect()
    }

    /// The crawlers blocked from `url`.
    #[must_use]
    pub fn blocked(&self, url: &Url) -> AiBlocked {
        let star_blocked = !self.star.check(url).is_allowed();
        (0..AI_CRAWLERS.len()).fold(AiBlocked::NONE, |acc, i| {
            let blocked = match self.own.get(i).and_then(Option::as_ref) {
                Some(rules) => !rules.check(url).is_allowed(),
                None => star_blocked,
            };
            if blocked { acc.with(i) } else { acc }
        })
    }
}

/// What a host's robots.txt means for one AI crawler over the sampled pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AiVerdict {
    /// No sampled page is blocked.
    Allowed,
    /// Some sampled pages are blocked, others are not.
    PartlyBlocked,
    /// Every sampled page is blocked.
    Blocked,
}

impl AiVerdict {
    /// The verdict over `pages` sampled pages of which `blocked` are blocked; `None` without pages.
    #[must_use]
    pub fn of(pages: u64, blocked: u64) -> Option<AiVerdict> {
        match (pages, blocked) {
            (0, _) => None,
            (_, 0) => Some(AiVerdict::Allowed),
            (p, b) if b >= p => Some(AiVerdict::Blocked),
            _ => Some(AiVerdict::PartlyBlocked),
        }
    }

    /// The stable spelling (`allowed`, `partly_blocked`, `blocked`).
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            AiVerdict::Allowed => "allowed",
            AiVerdict::PartlyBlocked => "partly_blocked",
            AiVerdict::Blocked => "blocked",
        }
    }

    /// As people read it (`partly blocked`).
    #[must_use]
    pub fn words(&self) -> &'static str {
        match self {
            AiVerdict::Allowed => "allowed",
            AiVerdict::PartlyBlocked => "partly blocked",
            AiVerdict::Blocked => "blocked",
        }
    }
}

impl fmt::Display for AiVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The detail of `ai_crawlers_inconsistent` for one host, or `None` when every crawler gets the
/// same verdict. `verdicts` pairs each crawler (by its index in [`AI_CRAWLERS`]) with its verdict;
/// the detail names them grouped by verdict, most restrictive first:
/// `blocked: GPTBot, CCBot; allowed: OAI-SearchBot, …`.
#[must_use]
pub fn inconsistency(verdicts: &[(usize, AiVerdict)]) -> Option<String> {
    let first = verdicts.first()?.1;
    if verdicts.iter().all(|(_, v)| *v == first) {
        return None;
    }
    let groups: Vec<String> = [AiVerdict::Blocked, AiVerdict::PartlyBlocked, AiVerdict::Allowed]
        .iter()
        .filter_map(|wanted| {
            let names: Vec<&str> = verdicts
                .iter()
                .filter(|(_, v)| v == wanted)
                .filter_map(|(i, _)| AI_CRAWLERS.get(*i))
                .map(|c| c.token)
                .collect();
            (!names.is_empty()).then(|| format!("{}: {}", wanted.words(), names.join(", ")))
        })
        .collect();
    Some(groups.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL")
    }

    fn index(token: &str) -> usize {
        AI_CRAWLERS.iter().position(|c| c.token == token).expect("a documented token")
    }

    #[test]
    fn tokens_are_product_tokens_and_fit_the_bits() {
        assert!(AI_CRAWLERS.len() <= 32, "a bit per crawler in a u32");
        let mut seen = std::collections::HashSet::new();
        for c in AI_CRAWLERS {
            assert_eq!(ProductToken::from_agent(c.token).as_str(), c.token, "{} is a whole product token", c.token);
            assert!(seen.insert(c.token.to_ascii_lowercase()), "{} twice", c.token);
        }
    }

    /// The bit order is stored in audit databases: it never changes, tokens are only appended.
    #[test]
    fn the_first_tokens_keep_their_bits() {
        let pinned = [
            "GPTBot",
            "OAI-SearchBot",
            "ChatGPT-User",
            "ClaudeBot",
            "Claude-SearchBot",
            "Claude-User",
            "CCBot",
            "Google-Extended",
            "Applebot-Extended",
            "PerplexityBot",
            "Perplexity-User",
            "Bytespider",
            "Meta-ExternalAgent",
            "Meta-ExternalFetcher",
            "Amazonbot",
            "DuckAssistBot",
            "MistralAI-User",
        ];
        let tokens: Vec<&str> = AI_CRAWLERS.iter().map(|c| c.token).collect();
        assert_eq!(&tokens[..pinned.len()], &pinned[..]);
    }

    #[test]
    fn each_token_obeys_its_own_group_or_the_star_group() {
        let body = b"User-agent: GPTBot\nDisallow: /\n\nUser-agent: ccbot/2.0\nDisallow: /shop/\n\n\
                     User-agent: *\nDisallow: /admin/\n";
        let rules = AiRules::parse(body);
        let home = rules.blocked(&url("https://a.test/"));
        assert!(home.is_blocked(index("GPTBot")));
        assert!(!home.is_blocked(index("CCBot")));
        assert!(!home.is_blocked(index("OAI-SearchBot")), "a group for GPTBot says nothing of OAI-SearchBot");
        let shop = rules.blocked(&url("https://a.test/shop/item?id=1"));
        assert!(shop.is_blocked(index("CCBot")), "a versioned group line names the product");
        assert!(!shop.is_blocked(index("ClaudeBot")));
        let admin = rules.blocked(&url("https://a.test/admin/x"));
        assert!(admin.is_blocked(index("ClaudeBot")), "the * group applies to tokens without a group");
        assert!(!admin.is_blocked(index("CCBot")), "a token with its own group ignores *");
        assert_eq!(rules.verdicts(&url("https://a.test/"))[index("GPTBot")], Verdict::Disallowed { rule: "/".into() });
        assert_eq!(AiRules::allow_all().blocked(&url("https://a.test/admin/")), AiBlocked::NONE);
    }

    #[test]
    fn the_same_verdicts_as_a_single_token_parse() {
        let body = b"User-agent: Claude-User\nUser-agent: PerplexityBot\nAllow: /open\nDisallow: /\n\
                     User-agent: *\nDisallow: /*.pdf$\n";
        let rules = AiRules::parse(body);
        for path in ["/", "/open/x", "/a.pdf", "/a.pdf?x", "/b"] {
            let u = url(&format!("https://a.test{path}"));
            for (i, c) in AI_CRAWLERS.iter().enumerate() {
                let alone = RobotsRules::parse(body, &ProductToken::from_agent(c.token)).check(&u);
                assert_eq!(rules.blocked(&u).is_blocked(i), !alone.is_allowed(), "{} on {path}", c.token);
            }
        }
    }

    #[test]
    fn only_the_crawlers_a_file_names_get_rules_of_their_own() {
        let body = b"\xef\xbb\xbfuser-agent: gptbot/1.0 # versioned\nUser-agent: NotAnAiBot\nDisallow: /\n";
        let named = names_agents(body, &["GPTBot", "ClaudeBot", "NotAnAiBot", "*"]);
        assert_eq!(named, [true, false, true, false]);
        assert_eq!(AiRules::parse(body).own_groups(), 1);
        assert_eq!(AiRules::parse(b"User-agent: *\nDisallow: /x\n").own_groups(), 0);
    }

    #[test]
    fn unknown_bits_are_dropped() {
        assert_eq!(AiBlocked::from_bits(u32::MAX).bits().count_ones() as usize, AI_CRAWLERS.len());
        assert!(!AiBlocked::from_bits(u32::MAX).is_blocked(40));
    }

    #[test]
    fn verdicts_over_a_sample() {
        assert_eq!(AiVerdict::of(0, 0), None);
        assert_eq!(AiVerdict::of(5, 0), Some(AiVerdict::Allowed));
        assert_eq!(AiVerdict::of(5, 2), Some(AiVerdict::PartlyBlocked));
        assert_eq!(AiVerdict::of(5, 5), Some(AiVerdict::Blocked));
    }

    #[test]
    fn inconsistency_names_the_crawlers_by_verdict() {
        let (g, s, c) = (index("GPTBot"), index("OAI-SearchBot"), index("CCBot"));
        assert_eq!(inconsistency(&[]), None);
        assert_eq!(inconsistency(&[(g, AiVerdict::Blocked), (s, AiVerdict::Blocked)]), None);
        assert_eq!(
            inconsistency(&[(g, AiVerdict::Blocked), (s, AiVerdict::Allowed), (c, AiVerdict::PartlyBlocked)])
                .as_deref(),
            Some("blocked: GPTBot; partly blocked: CCBot; allowed: OAI-SearchBot")
        );
    }
}
