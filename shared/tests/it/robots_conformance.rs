//! The robots.txt conformance corpus (`test-support/data/robots/cases.jsonl`, the project's own
//! copy; see the README beside it), run through exactly the API the crawler and `shoal robots` use:
//! `ProductToken::from_agent`, `RobotsRules::parse`, `check_str`, `sitemaps` and `crawl_delay`.
//!
//! The `crawler` profile (every case not tagged `google-specific` or `api-edge`) is Shoal's
//! target and must pass in full. Of the other cases, Shoal fails only the few where Google's
//! reference library departs from RFC 9309; the second test pins that list.

use std::fmt::Write as _;

use shoal_shared::robots::{ProductToken, RobotsRules};

use shoal_test_support::robots_corpus::{CORPUS, CRAWLER_CASES, Case, NOT_CRAWLER, NOT_GOOGLE, load_corpus};

/// Runs the case through the library; `Err` describes every check that failed.
fn run(case: &Case) -> Result<(), String> {
    let token = ProductToken::from_agent(&case.agent);
    let rules = RobotsRules::parse(&case.body(), &token);
    let mut problems = Vec::new();

    let verdict = rules.check_str(&case.url);
    if verdict.is_allowed() != case.allowed {
        problems.push(format!("expected {}, got {verdict:?}", if case.allowed { "allowed" } else { "disallowed" }));
    }
    if let Some(expected) = &case.sitemaps {
        let got = rules.sitemaps();
        if &got != expected {
            problems.push(format!("sitemaps: expected {expected:?}, got {got:?}"));
        }
    }
    if let Some(expected) = case.crawl_delay {
        let got = rules.crawl_delay().map(|d| d.as_secs_f64());
        if got.is_none_or(|got| (got - expected).abs() > 1e-6) {
            problems.push(format!("crawl-delay: expected {expected}, got {got:?}"));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
}

/// Runs the cases and returns the failures as `(case, message)`.
fn failures<'a>(cases: impl IntoIterator<Item = &'a Case>) -> Vec<(&'a Case, String)> {
    cases.into_iter().filter_map(|case| run(case).err().map(|msg| (case, msg))).collect()
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
            case.is_some_and(|c| c.has_any_tag(&["google-specific"]) && run(c).is_err()),
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
