//! Loads the robots.txt conformance corpus, the project's own copy in `test-support/data/robots/`
//! (see the README there). Shared by the library-level test (`shared/tests/it/robots_conformance.rs`)
//! and the binary-level test (`shoal/tests/it/cli.rs`), so both read the same cases the same
//! way. A missing corpus does not compile: these tests fail, never skip. Needs no feature: the
//! core crate's tests use it without the servers' runtime.

use serde::Deserialize;

/// Where the corpus is, inside the repository (for messages).
pub const CORPUS: &str = "test-support/data/robots/cases.jsonl";
/// The corpus itself, compiled into the test binary from beside this file: a missing file is a
/// build error, so the tests fail, never skip.
const CORPUS_TEXT: &str = include_str!("../data/robots/cases.jsonl");

/// Tags the `crawler` profile leaves out (see the corpus README).
pub const NOT_CRAWLER: [&str; 2] = ["google-specific", "api-edge"];
/// Tags the `google` profile leaves out.
pub const NOT_GOOGLE: [&str; 2] = ["rfc-beyond-google", "full-ua"];
/// How many cases the `crawler` profile has; a different count means the corpus changed.
pub const CRAWLER_CASES: usize = 256;

/// One case of `cases.jsonl`.
#[derive(Debug, Deserialize)]
pub struct Case {
    pub id: String,
    pub robots: String,
    /// The exact body, for the few that are not valid UTF-8.
    pub robots_base64: Option<String>,
    pub agent: String,
    pub url: String,
    pub allowed: bool,
    pub sitemaps: Option<Vec<String>>,
    pub crawl_delay: Option<f64>,
    #[serde(default)]
    pub tags: Vec<String>,
    pub note: Option<String>,
}

impl Case {
    pub fn has_any_tag(&self, tags: &[&str]) -> bool {
        self.tags.iter().any(|t| tags.contains(&t.as_str()))
    }

    /// Whether the case belongs to the `crawler` profile, Shoal's target.
    pub fn is_crawler(&self) -> bool {
        !self.has_any_tag(&NOT_CRAWLER)
    }

    /// The robots.txt body as bytes.
    pub fn body(&self) -> Vec<u8> {
        match &self.robots_base64 {
            Some(b64) => decode_base64(b64),
            None => self.robots.clone().into_bytes(),
        }
    }
}

/// Every case, in file order.
pub fn load_corpus() -> Vec<Case> {
    let cases: Vec<Case> = CORPUS_TEXT
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| serde_json::from_str(line).unwrap_or_else(|e| panic!("{CORPUS}:{}: bad case: {e}", n + 1)))
        .collect();
    assert_eq!(
        cases.iter().filter(|c| c.is_crawler()).count(),
        CRAWLER_CASES,
        "the crawler profile of {CORPUS} should have {CRAWLER_CASES} cases; was the corpus changed?"
    );
    cases
}

/// Standard base64 (RFC 4648, with padding), enough for the corpus's three non-UTF-8 bodies.
pub fn decode_base64(text: &str) -> Vec<u8> {
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
