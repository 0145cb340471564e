//! What each finding means, why it matters and how to fix it, as the reports show it beside each
//! issue group.
//!
//! The text lives in one place, `docs/findings.md`, which users read too and which a test in
//! `shared` keeps equal to the code list: each family section opens with a `Why it matters:`
//! paragraph, and each code's table row has "what it means" and "how to fix it". The page is
//! compiled into the report crate and read once, on first use, so a code added to the page (with
//! its row) is explained in reports without a second copy of the text here. A code this build does
//! not know, or a family without a paragraph, simply has no text: reports then show what the
//! finding row itself carries.

use std::collections::HashMap;
use std::sync::LazyLock;

/// `docs/findings.md`, compiled in.
const FINDINGS_MD: &str = include_str!("../../docs/findings.md");

/// The prefix of a family's paragraph in `docs/findings.md`.
const WHY_PREFIX: &str = "Why it matters: ";

/// The explanation of one code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeText {
    /// The family the page lists the code under.
    pub family: &'static str,
    /// "What it means": one sentence.
    pub what: &'static str,
    /// "How to fix it".
    pub fix: &'static str,
}

/// Everything `docs/findings.md` says, by code and by family.
#[derive(Debug, Default)]
struct Guide {
    codes: HashMap<&'static str, CodeText>,
    why: HashMap<&'static str, &'static str>,
}

static GUIDE: LazyLock<Guide> = LazyLock::new(|| parse(FINDINGS_MD));

/// Reads the page: `## family` headings, the `Why it matters:` line under each, and the table
/// rows `` | `code` | severity | what | fix | ``.
fn parse(page: &'static str) -> Guide {
    let mut guide = Guide::default();
    let mut family = "";
    for line in page.lines() {
        if let Some(name) = line.strip_prefix("## ") {
            family = name.trim();
        } else if let Some(why) = line.strip_prefix(WHY_PREFIX) {
            if !family.is_empty() {
                guide.why.insert(family, why.trim());
            }
        } else if line.starts_with("| `") {
            let cells: Vec<&'static str> = line.split('|').map(str::trim).collect();
            let (Some(code), Some(what), Some(fix)) = (cells.get(1), cells.get(3), cells.get(4)) else { continue };
            let Some(code) = code.strip_prefix('`').and_then(|c| c.strip_suffix('`')) else { continue };
            guide.codes.insert(code, CodeText { family, what, fix });
        }
    }
    guide
}

/// What `docs/findings.md` says about `code`, if it lists it.
#[must_use]
pub fn code_text(code: &str) -> Option<CodeText> {
    GUIDE.codes.get(code).copied()
}

/// Why the findings of `family` matter, if `docs/findings.md` says.
#[must_use]
pub fn why(family: &str) -> Option<&'static str> {
    GUIDE.why.get(family).copied()
}

/// Markdown code spans as plain text: the page writes `` `Disallow: /` ``, a report shows
/// `Disallow: /` (escaped like any other text).
#[must_use]
pub fn plain(markdown: &str) -> String {
    markdown.replace('`', "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_shared::finding::Code;

    #[test]
    fn every_code_has_its_meaning_fix_and_why() {
        for code in Code::ALL {
            let text = code_text(code.as_str()).unwrap_or_else(|| panic!("{} not in docs/findings.md", code.as_str()));
            assert_eq!(text.family, code.family(), "{} is listed under its family", code.as_str());
            assert!(!text.what.is_empty() && !text.fix.is_empty(), "{}", code.as_str());
            assert!(why(code.family()).is_some_and(|w| w.len() > 20), "family {} has a why", code.family());
        }
        assert_eq!(code_text("no_such_code"), None);
        assert_eq!(why("no_such_family"), None);
    }

    #[test]
    fn the_parser_reads_headings_paragraphs_and_rows_only() {
        let page = "# Title\n\n## fam\n\nWhy it matters: because.\n\n| code | severity | what it means | how to fix it |\n|---|---|---|---|\n| `a_b` | error | It is `x`. | Do `y`. |\n| not a code | x | y | z |\n";
        let g = parse(page);
        assert_eq!(g.why.get("fam"), Some(&"because."));
        assert_eq!(g.codes.get("a_b"), Some(&CodeText { family: "fam", what: "It is `x`.", fix: "Do `y`." }));
        assert_eq!(g.codes.len(), 1);
        assert_eq!(plain("Do `y`."), "Do y.");
    }
}
