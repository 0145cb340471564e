//! The robots.txt conformance corpus (`shared/robots-conformance/cases.jsonl`, beside the repo),
//! run through exactly the API the crawler and `shoal robots` use: `ProductToken::from_agent`,
//! `RobotsRules::parse`, `check_str`, `sitemaps` and `crawl_delay`.
//!
//! The `crawler` profile (every case not tagged `google-specific` or `api-edge`) is Shoal's
//! target and must pass in full. Of the other cases, Shoal fails only the few where Google's
//! reference library departs from RFC 9309; the second test pins that list.

use std::fmt::Write as _;

use serde::Deserialize;
use shoal_shared::robots::{ProductToken, RobotsRules};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/robots-conformance/cases.jsonl");

/// Tags the `crawler` profile leaves out (see the corpus README).
const NOT_CRAWLER: [&str; 2] = ["google-specific", "api-edge"];
/// Tags the `google` profile leaves out.
const NOT_GOOGLE: [&str; 2] = ["rfc-beyond-google", "full-ua"];
const CRAWLER_CASES: usize = 256;

#[derive(Debug, Deserialize)]
struct Case {
    id: String,
    robots: String,
    /// The exact body, for the few that are not valid UTF-8.
    robots_base64: Option<String>,
    agent: String,
    url: String,
    allowed: bool,
    sitemaps: Option<Vec<String>>,
    crawl_delay: Option<f64>,
    #[serde(default)]
    tags: Vec<String>,
    note: Option<String>,
}

impl Case {
    fn has_any_tag(&self, tags: &[&str]) -> bool {
        self.tags.iter().any(|t| tags.contains(&t.as_str()))
    }

    fn body(&self) -> Vec<u8> {
        match &self.robots_base64 {
            Some(b64) => decode_base64(b64),
            None => self.robots.clone().into_bytes(),
        }
    }

    /// Runs the case; `Err` describes every check that failed.
    fn run(&self) -> Result<(), String> {
        let token = ProductToken::from_agent(&self.agent);
        let rules = RobotsRules::parse(&self.body(), &token);
        let mut problems = Vec::new();

        let verdict = rules.check_str(&self.url);
        if verdict.is_allowed() != self.allowed {
            problems.push(format!("expected {}, got {verdict:?}", if self.allowed { "allowed" } else { "disallowed" }));
        }
        if let Some(expected) = &self.sitemaps {
            let got = rules.sitemaps();
            if &got != expected {
                problems.push(format!("sitemaps: expected {expected:?}, got {got:?}"));
            }
        }
        if let Some(expected) = self.crawl_delay {
            let got = rules.crawl_delay().map(|d| d.as_secs_f64());
            if got.is_none_or(|got| (got - expected).abs() > 1e-6) {
                problems.push(format!("crawl-delay: expected {expected}, got {got:?}"));
            }
        }
        if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
    }
}

fn load_corpus() -> Vec<Case> {
    let text = std::fs::read_to_string(CORPUS).unwrap_or_else(|e| {
        panic!(
            "robots.txt conformance corpus not readable at {CORPUS}: {e}. It lives in the \
             read-only shared/robots-conformance folder beside the repository; this test must \
             not pass without it."
        )
    });
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| serde_json::from_str(line).unwrap_or_else(|e| panic!("{CORPUS}:{}: bad case: {e}", n + 1)))
        .collect()
}

/// Runs the cases and returns the failures as `(case, message)`.
fn failures<'a>(cases: impl IntoIterator<Item = &'a Case>) -> Vec<(&'a Case, String)> {
    cases.into_iter().filter_map(|case| case.run().err().map(|msg| (case, msg))).collect()
}

fn describe(failed: &[(&Case, String)]) -> String {
    let mut out = String::new();
    for (case, msg) in failed {
        let _ = writeln!(
            out,
            "FAIL {}: {msg}\n     agent={:?} url={:?} tags={:?}\n     note: {}",
            case.id,
            case.agent,
            case.url,
            case.tags,
            case.note.as_deref().unwrap_or("-"),
        );
    }
    out
}

#[test]
fn crawler_profile_passes_every_case() {
    let cases = load_corpus();
    let crawler: Vec<&Case> = cases.iter().filter(|c| !c.has_any_tag(&NOT_CRAWLER)).collect();
    assert_eq!(
        crawler.len(),
        CRAWLER_CASES,
        "the crawler profile of {CORPUS} should have {CRAWLER_CASES} cases; was the corpus changed?"
    );
    let failed = failures(crawler.iter().copied());
    assert!(
        failed.is_empty(),
        "crawler profile: {} passed, {} failed\n{}",
        CRAWLER_CASES - failed.len(),
        failed.len(),
        describe(&failed)
    );
}

/// The cases where Shoal deliberately reads robots.txt differently from Google's library.
const DELIBERATE: &[(&str, &str)] = &[
    (
        "google-GoogleOnly_AcceptUserAgentUpToFirstSpace-02",
        "Google compares the whole agent argument `Foo Bar`; ProductToken::from_agent takes \
         its product token `Foo`, because the crawler hands over its full UA string",
    ),
    ("google-ID_Encoding-03", "RFC 9309 §2.2.2: a raw `ツ` URL is percent-encoded before matching"),
    ("google-ID_Encoding-05", "RFC 9309 §2.2.2: a raw `ツ` URL is percent-encoded before matching"),
    ("google-ID_Encoding-06", "RFC 9309 figure 4: `%62%61%7A` is `baz`"),
    (
        "google-GoogleOnly_IndexHTMLisDirectory-01",
        "Google extension: an allowed `/dir/index.html` allows `/dir/`; RFC prefix match does not",
    ),
    (
        "google-GoogleOnly_LineTooLong-02",
        "Google cuts lines after 16,664 bytes; RFC 9309 has no line limit, so the rule is whole",
    ),
    (
        "google-GoogleOnly_LineTooLong-05",
        "Google cuts lines after 16,664 bytes; RFC 9309 has no line limit, so the rule is whole",
    ),
];

/// Outside the crawler profile, Shoal fails exactly the [`DELIBERATE`] cases: those where
/// Google's library deviates from RFC 9309. Everything else, including Google's API edge cases
/// (empty and schemeless URLs, empty agents), passes.
#[test]
#[expect(
    clippy::print_stderr,
    reason = "prints the google/all profile scores for information (visible with --nocapture)"
)]
fn only_deliberate_differences_from_google_fail() {
    let cases = load_corpus();
    let failed = failures(&cases);
    let unexpected: Vec<_> =
        failed.iter().filter(|(case, _)| !DELIBERATE.iter().any(|(id, _)| *id == case.id)).cloned().collect();
    assert!(unexpected.is_empty(), "unexpected failures:\n{}", describe(&unexpected));
    for (id, why) in DELIBERATE {
        let case = cases.iter().find(|c| c.id == *id);
        assert!(
            case.is_some_and(|c| c.has_any_tag(&["google-specific"]) && c.run().is_err()),
            "{id} is listed as a deliberate difference ({why}) but is not a failing \
             google-specific case; update DELIBERATE"
        );
    }

    let google_total = cases.iter().filter(|c| !c.has_any_tag(&NOT_GOOGLE)).count();
    let google_failed = failed.iter().filter(|(c, _)| !c.has_any_tag(&NOT_GOOGLE)).count();
    eprintln!(
        "robots conformance: google profile {}/{google_total}, all {}/{}\n{}",
        google_total - google_failed,
        cases.len() - failed.len(),
        cases.len(),
        describe(&failed)
    );
}

/// Standard base64 (RFC 4648, with padding), enough for the corpus's three non-UTF-8 bodies.
fn decode_base64(text: &str) -> Vec<u8> {
    fn sextet(c: u8) -> u32 {
        u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("bad base64 character {c:#x} in the corpus"),
        })
    }
    let data: Vec<u8> = text.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(data.len() * 3 / 4);
    for chunk in data.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, &c)| acc | (sextet(c) << (18 - 6 * i)));
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

#[test]
fn base64_decoder_round_trips() {
    assert_eq!(decode_base64("TWFu"), b"Man");
    assert_eq!(decode_base64("TWE="), b"Ma");
    assert_eq!(decode_base64("TQ=="), b"M");
    assert_eq!(decode_base64("7xG/"), b"\xef\x11\xbf");
}
