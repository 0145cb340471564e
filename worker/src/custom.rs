//! The audit's own extraction and search rules (`--extract`, `--search`) on one HTML page: the
//! "custom" finding family.
//!
//! Rules arrive as typed [`CustomRules`] with the site's info and are compiled once per audit by
//! [`compile`] (the configuration calls it too, so a rule that does not compile is refused before
//! the audit starts, with its name). [`CompiledRules::apply`] runs on the tree [`crate::extract`]
//! already built, so a page is parsed once whatever the rules.
//!
//! Bounded work on hostile pages:
//! - **Regular expressions** use the `regex` crate, which matches in time linear in the input
//!   (no backtracking), with its compiled size, lazy-DFA cache and nesting capped per rule
//!   ([`REGEX_SIZE_LIMIT`], [`REGEX_DFA_LIMIT`], [`REGEX_NEST_LIMIT`]). The input itself is at
//!   most the body cap.
//! - **CSS selectors** are at most 512 bytes; the first match in document order is read, and its
//!   text is collected only up to the value cap. Matching an element costs about the selector's
//!   length times the tree's depth (at most 512, `crate::parse`); `:nth-*()` indices are cached
//!   per sibling run. Two constructs would make each element a search of its siblings or its
//!   subtree, quadratic on a flat page of 200,000 list items, and are refused: `:has()` and the
//!   general sibling combinator `~` (`[attr~=word]` is fine).
//! - **Values** are cut at [`MAX_VALUE_BYTES`] (at a character boundary).
//!
//! What a rule reads: `css:SELECTOR` the whitespace-collapsed text of the first matching element,
//! `css:SELECTOR@ATTR` that element's attribute; `regex:RE` the first match in the HTML source (its
//! first capture group if it has one). A search rule matches its expression against the page's
//! visible text (the `<body>` text outside scripts, styles, `<noscript>` and `<template>`, words
//! joined by single spaces).

use regex::{Regex, RegexBuilder};
use scraper::{ElementRef, Html, Node, Selector};
use shoal_shared::custom::{CustomRules, Extractor, MAX_VALUE_BYTES, RuleError, cut_value};
use std::ops::Deref;

/// A rule's compiled regular expression program, at most (bytes); the crate's default is 10 MiB.
pub const REGEX_SIZE_LIMIT: usize = 256 * 1024;
/// A rule's lazy DFA cache, at most (bytes), per thread matching it.
pub const REGEX_DFA_LIMIT: usize = 1024 * 1024;
/// Groups nested this deep at most.
pub const REGEX_NEST_LIMIT: u32 = 64;
/// Characters of a search rule's expression quoted in its finding.
const QUOTED_CHARS: usize = 120;

/// Elements whose text is not page text.
const NOT_TEXT: &[&str] = &["script", "style", "noscript", "template", "textarea"];

/// One compiled extraction rule.
#[derive(Debug)]
enum Reader {
    Css { selector: Selector, attribute: Option<String> },
    Regex { regex: Regex, group: bool },
}

/// One compiled search rule.
#[derive(Debug)]
struct Search {
    name: String,
    regex: Regex,
    absent: bool,
    quoted: String,
}

/// An audit's rules, ready to run on pages.
#[derive(Debug, Default)]
pub struct CompiledRules {
    extract: Vec<(String, Reader)>,
    search: Vec<Search>,
}

/// What the rules found on one page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CustomValues {
    /// (rule name, value) for each extraction rule that found something, in rule order.
    pub extracted: Vec<(String, String)>,
    /// The `custom_search` detail of each search rule that flags the page, in rule order.
    pub flagged: Vec<String>,
}

fn regex(pattern: &str, rule: String) -> Result<Regex, RuleError> {
    RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_LIMIT)
        .nest_limit(REGEX_NEST_LIMIT)
        .build()
        .map_err(|e| {
            let why = match e {
                regex::Error::CompiledTooBig(limit) => {
                    format!("the regular expression compiles to more than {} KiB; make it simpler", limit / 1024)
                }
                e => format!(
                    "not a valid regular expression: {}",
                    e.to_string().split_whitespace().collect::<Vec<_>>().join(" ")
                ),
            };
            RuleError::Invalid { rule, why }
        })
}

fn selector(text: &str, rule: String) -> Result<Selector, RuleError> {
    let costly = if text.contains(":has(") {
        Some(":has()")
    } else if has_sibling_combinator(text) {
        Some("the ~ combinator")
    } else {
        None
    };
    if let Some(what) = costly {
        return Err(RuleError::Invalid {
            rule,
            why: format!(
                "{what} is not supported: it makes every element a search of the elements around it, \
                 which takes hours on a page of many elements; name the element more directly"
            ),
        });
    }
    Selector::parse(text).map_err(|e| RuleError::Invalid { rule, why: format!("not a valid CSS selector: {e}") })
}

/// Whether a selector uses the general sibling combinator `~` (outside quotes and attribute
/// brackets, where `~=` is the cheap word-in-list test).
fn has_sibling_combinator(text: &str) -> bool {
    let (mut brackets, mut quote) = (0u32, None);
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => brackets += 1,
            (None, ']') => brackets = brackets.saturating_sub(1),
            (None, '~') if brackets == 0 => return true,
            _ => {}
        }
    }
    false
}

/// Compiles an audit's rules.
///
/// # Errors
/// [`RuleError::Invalid`] naming the first rule whose selector or expression does not compile
/// (or compiles too large).
pub fn compile(rules: &CustomRules) -> Result<CompiledRules, RuleError> {
    let mut out = CompiledRules::default();
    for rule in rules.extract() {
        let reader = match &rule.extractor {
            Extractor::Css { selector: text, attribute } => {
                Reader::Css { selector: selector(text, rule.to_string())?, attribute: attribute.clone() }
            }
            Extractor::Regex(pattern) => {
                let regex = regex(pattern, rule.to_string())?;
                Reader::Regex { group: regex.captures_len() > 1, regex }
            }
        };
        out.extract.push((rule.name.to_string(), reader));
    }
    for rule in rules.search() {
        out.search.push(Search {
            name: rule.name.to_string(),
            regex: regex(&rule.pattern, rule.to_string())?,
            absent: rule.absent,
            quoted: rule.pattern.chars().take(QUOTED_CHARS).collect(),
        });
    }
    Ok(out)
}

impl CompiledRules {
    /// No rule at all: nothing to run.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.extract.is_empty() && self.search.is_empty()
    }

    /// Runs every rule on a page: `doc` is its parsed tree, `source` the decoded HTML it was
    /// parsed from.
    #[must_use]
    pub fn apply(&self, doc: &Html, source: &str) -> CustomValues {
        let mut out = CustomValues::default();
        for (name, reader) in &self.extract {
            if let Some(value) = read(reader, doc, source) {
                out.extracted.push((name.clone(), value));
            }
        }
        if !self.search.is_empty() {
            let text = page_text(doc);
            for s in &self.search {
                let found = s.regex.is_match(&text);
                if found != s.absent {
                    let what = if found { "the text matches" } else { "the text has no match for" };
                    out.flagged.push(format!("{}: {what} {}", s.name, s.quoted));
                }
            }
        }
        out
    }
}

fn read(reader: &Reader, doc: &Html, source: &str) -> Option<String> {
    match reader {
        Reader::Css { selector, attribute } => {
            let el = doc.select(selector).next()?;
            match attribute {
                Some(a) => el.value().attr(a).map(|v| cut_value(v.trim()).to_owned()),
                None => Some(element_text(el)),
            }
        }
        Reader::Regex { regex, group } => {
            let value = if *group {
                let caps = regex.captures(source)?;
                caps.get(1).or_else(|| caps.get(0))?.as_str()
            } else {
                regex.find(source)?.as_str()
            };
            Some(cut_value(value).to_owned())
        }
    }
}

/// An element's text, whitespace collapsed, read only up to the value cap.
fn element_text(el: ElementRef<'_>) -> String {
    let mut out = String::new();
    let mut space = false;
    'pieces: for piece in el.text() {
        for ch in piece.chars() {
            if ch.is_whitespace() {
                space = !out.is_empty();
                continue;
            }
            let needed = ch.len_utf8() + usize::from(space);
            if out.len() + needed > MAX_VALUE_BYTES {
                break 'pieces;
            }
            if std::mem::take(&mut space) {
                out.push(' ');
            }
            out.push(ch);
        }
    }
    out
}

/// The visible text of the page's `<body>` (outside [`NOT_TEXT`] elements), words joined by single
/// spaces. Walked with an explicit stack: parsed trees are at most 512 deep, but no call stack
/// should depend on that.
fn page_text(doc: &Html) -> String {
    let mut out = String::new();
    let Some(body) = doc.root_element().children().filter_map(ElementRef::wrap).find(|e| e.value().name() == "body")
    else {
        return out;
    };
    let mut stack = vec![*body.deref()];
    while let Some(node) = stack.pop() {
        match node.value() {
            Node::Text(t) => {
                for word in t.split_whitespace() {
                    if !out.is_empty() {
                        out.push(' ');
                    }
                    out.push_str(word);
                }
            }
            Node::Element(e) if NOT_TEXT.contains(&e.name()) => {}
            _ => {
                let first = stack.len();
                stack.extend(node.children());
                stack[first..].reverse();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(extract: &[&str], search: &[&str]) -> CompiledRules {
        compile(&CustomRules::parse(extract, search).expect("valid rules")).expect("compiles")
    }

    fn run(extract: &[&str], search: &[&str], html: &str) -> CustomValues {
        rules(extract, search).apply(&Html::parse_document(html), html)
    }

    const SHOP: &str = "<html><head><meta itemprop=price content=' 19.99 '><script>var gtm='GTM-AB12';</script>\
        </head><body><h1>Blue   kettle</h1><p class=price>€ 19.99</p><p class=price>€ 24.99</p>\
        <script>document.write('out of stock')</script><p>In stock</p></body></html>";

    #[test]
    fn extraction_reads_the_first_match() {
        let got = run(
            &[
                "price=css:.price",
                "meta=css:meta[itemprop=price]@content",
                "gtm=regex:GTM-[A-Z0-9]+",
                "id=regex:gtm='([^']*)'",
                "missing=css:.sku",
                "title=css:h1",
            ],
            &[],
            SHOP,
        );
        let pairs: Vec<(&str, &str)> = got.extracted.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("price", "€ 19.99"),
                ("meta", "19.99"),
                ("gtm", "GTM-AB12"),
                ("id", "GTM-AB12"),
                ("title", "Blue kettle")
            ]
        );
    }

    #[test]
    fn search_reads_the_visible_text_only() {
        let got = run(&[], &["oos=regex:(?i)out of stock", "instock=regex:In stock", "nokettle=!regex:teapot"], SHOP);
        assert_eq!(
            got.flagged,
            ["instock: the text matches In stock", "nokettle: the text has no match for teapot"],
            "a script's text is not the page's"
        );
    }

    #[test]
    fn word_in_list_attributes_are_not_sibling_combinators() {
        let got = run(&["price=css:p[class~=price]", "q=css:[data-x=\"a~b\"]"], &[], SHOP);
        assert_eq!(got.extracted.first().map(|(_, v)| v.as_str()), Some("€ 19.99"));
    }

    #[test]
    fn values_are_cut_at_the_cap() {
        let long = format!("<body><p>{}</p><i title='{}'></i></body>", "word ".repeat(1000), "x".repeat(5000));
        let got = run(&["p=css:p", "t=css:i@title", "r=regex:(?s)<p>.*</p>"], &[], &long);
        for (name, value) in &got.extracted {
            assert!(value.len() <= MAX_VALUE_BYTES && value.len() > MAX_VALUE_BYTES - 8, "{name}: {}", value.len());
        }
    }

    #[test]
    fn rules_that_do_not_compile_are_refused_by_name() {
        let deep = format!("deep=regex:{}{}", "(".repeat(100), ")".repeat(100));
        for (extract, search, says) in [
            (vec!["p=css:p[[["], vec![], "not a valid CSS selector"),
            (vec!["p=css:div:has(> p)"], vec![], ":has() is not supported"),
            (vec!["p=css:h1 ~ p"], vec![], "the ~ combinator is not supported"),
            (vec!["p=css::not(h1~p)"], vec![], "the ~ combinator is not supported"),
            (vec!["r=regex:(unclosed"], vec![], "not a valid regular expression"),
            (vec![], vec!["big=regex:\\w{1000}\\w{1000}\\w{1000}"], "compiles to more than 256 KiB"),
            (vec![], vec![deep.as_str()], "not a valid regular expression"),
        ] {
            let set = CustomRules::parse(&extract, &search).expect("well-formed");
            let e = compile(&set).expect_err("refused").to_string();
            assert!(e.contains(says), "{e}");
            let name = extract.first().or(search.first()).map(|r| r.split('=').next().unwrap_or_default());
            assert!(e.contains(&format!("`{}=", name.unwrap_or_default())), "names the rule: {e}");
        }
    }
}
