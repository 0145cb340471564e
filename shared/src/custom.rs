//! The user's own extraction and search rules (`--extract NAME=css:SELECTOR`, `--search
//! NAME=regex:RE`): parsed once from their text into typed rules, carried to the workers with the
//! audit, compiled there (`shoal_worker::custom`).
//!
//! Everything is bounded so that a rule set stays small on the wire (it travels in every site's
//! [`SiteInfo`](crate::frontier::SiteInfo)) and cheap on a page: at most [`MAX_RULES`] rules,
//! names of at most [`MAX_NAME_BYTES`] bytes, expressions of at most [`MAX_EXPR_BYTES`], values cut
//! at [`MAX_VALUE_BYTES`]. This module checks the syntax of a rule (its name, its kind, its size);
//! whether its selector or regular expression compiles is the worker's to say, and the
//! configuration asks it before an audit starts, so a bad rule is an error naming it, never a
//! surprise in the crawl.
//!
//! On the wire and in the audit's stored options each rule is its own text (`price=css:.price`), so
//! what a user wrote is what every report shows.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Extraction and search rules together, at most.
pub const MAX_RULES: usize = 20;
/// A rule's name, at most (bytes).
pub const MAX_NAME_BYTES: usize = 64;
/// A rule's selector or expression, at most (bytes).
pub const MAX_EXPR_BYTES: usize = 512;
/// An extracted value is cut to at most this many bytes (at a character boundary).
pub const MAX_VALUE_BYTES: usize = 1024;

/// Why a rule, or a set of rules, is refused. Every message names the rule as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// Not `NAME=KIND:EXPR`.
    #[error("rule `{rule}`: expected NAME={forms}")]
    Shape {
        /// The rule as written.
        rule: String,
        /// The accepted forms.
        forms: &'static str,
    },
    /// A name that is empty, too long or has characters other than letters, digits, `_` and `-`.
    #[error(
        "rule `{rule}`: the name must be 1-{MAX_NAME_BYTES} letters, digits, '_' or '-' (it becomes a JSON key and a CSV value)"
    )]
    Name {
        /// The rule as written.
        rule: String,
    },
    /// A kind this rule type does not take.
    #[error("rule `{rule}`: {why}")]
    Kind {
        /// The rule as written.
        rule: String,
        /// What is wrong, and what is accepted.
        why: String,
    },
    /// An empty expression, or one over [`MAX_EXPR_BYTES`].
    #[error("rule `{rule}`: the expression must be 1-{MAX_EXPR_BYTES} bytes")]
    Size {
        /// The rule as written.
        rule: String,
    },
    /// More than [`MAX_RULES`] rules.
    #[error("{count} extraction and search rules: at most {MAX_RULES} are allowed")]
    TooMany {
        /// How many were given.
        count: usize,
    },
    /// Two rules with one name.
    #[error("two rules are named `{name}`: names must be unique across --extract and --search")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// The selector or expression does not compile (said by the worker that compiles it).
    #[error("rule `{rule}`: {why}")]
    Invalid {
        /// The rule as written.
        rule: String,
        /// What the compiler said.
        why: String,
    },
}

/// A rule's name: a JSON key of `pages[].extracted` and a value in CSV cells.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuleName(String);

impl RuleName {
    /// The name, as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn parse(name: &str, rule: &str) -> Result<RuleName, RuleError> {
        let ok = !name.is_empty()
            && name.len() <= MAX_NAME_BYTES
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if ok { Ok(RuleName(name.to_owned())) } else { Err(RuleError::Name { rule: rule.to_owned() }) }
    }
}

impl fmt::Display for RuleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an extraction rule reads from a page.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Extractor {
    /// The first element matching a CSS selector: its text, or the value of `attribute`
    /// (`css:meta[itemprop=price]@content`).
    Css {
        /// The selector.
        selector: String,
        /// The attribute to read instead of the text.
        attribute: Option<String>,
    },
    /// The first match of a regular expression in the page's HTML source: its first capture group
    /// if it has one, else the whole match.
    Regex(String),
}

/// `--extract NAME=css:SELECTOR[@ATTR]` or `--extract NAME=regex:RE`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExtractRule {
    /// Its name.
    pub name: RuleName,
    /// What it reads.
    pub extractor: Extractor,
}

/// `--search NAME=regex:RE` (flags pages whose text matches) or `--search NAME=!regex:RE` (flags
/// pages whose text does not).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SearchRule {
    /// Its name.
    pub name: RuleName,
    /// The regular expression, matched against the page's visible text.
    pub pattern: String,
    /// Flags the pages that do *not* match.
    pub absent: bool,
}

const EXTRACT_FORMS: &str = "css:SELECTOR, NAME=css:SELECTOR@ATTRIBUTE or NAME=regex:EXPRESSION";
const SEARCH_FORMS: &str = "regex:EXPRESSION or NAME=!regex:EXPRESSION";

/// Why `xpath:` is refused, in the error the user sees.
const NO_XPATH: &str = "xpath: is not supported: no well-kept Rust crate evaluates XPath on the HTML5 tree Shoal \
                        parses (docs/extraction.md says why); write the rule as css:SELECTOR";

/// `NAME=REST`, the name checked, and the expression size checked.
fn split<'a>(rule: &'a str, forms: &'static str) -> Result<(RuleName, &'a str), RuleError> {
    let (name, rest) = rule.split_once('=').ok_or_else(|| RuleError::Shape { rule: rule.to_owned(), forms })?;
    Ok((RuleName::parse(name.trim(), rule)?, rest))
}

fn expression<'a>(expr: &'a str, rule: &str) -> Result<&'a str, RuleError> {
    if expr.trim().is_empty() || expr.len() > MAX_EXPR_BYTES {
        return Err(RuleError::Size { rule: rule.to_owned() });
    }
    Ok(expr)
}

/// Splits `SELECTOR@ATTR` at its last `@` when what follows is an attribute name and the `@` is
/// not inside brackets or quotes (`a[href^="mailto:x@y"]` has no attribute part).
fn css_attribute(expr: &str) -> (&str, Option<&str>) {
    let Some(at) = expr.rfind('@') else { return (expr, None) };
    let (selector, attr) = (&expr[..at], &expr[at + 1..]);
    let is_name =
        !attr.is_empty() && attr.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':' | b'.'));
    let (mut depth, mut quote) = (0i32, None);
    for c in selector.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '(') => depth += 1,
            (None, ']' | ')') => depth -= 1,
            _ => {}
        }
    }
    if is_name && depth == 0 && quote.is_none() && !selector.trim().is_empty() {
        (selector.trim_end(), Some(attr))
    } else {
        (expr, None)
    }
}

impl FromStr for ExtractRule {
    type Err = RuleError;

    fn from_str(rule: &str) -> Result<ExtractRule, RuleError> {
        let (name, rest) = split(rule, EXTRACT_FORMS)?;
        let (kind, expr) =
            rest.split_once(':').ok_or_else(|| RuleError::Shape { rule: rule.to_owned(), forms: EXTRACT_FORMS })?;
        let expr = expression(expr, rule)?;
        let extractor = match kind.trim() {
            "css" => {
                let (selector, attribute) = css_attribute(expr);
                Extractor::Css { selector: selector.trim().to_owned(), attribute: attribute.map(str::to_owned) }
            }
            "regex" => Extractor::Regex(expr.to_owned()),
            "xpath" => return Err(RuleError::Kind { rule: rule.to_owned(), why: NO_XPATH.to_owned() }),
            other => {
                return Err(RuleError::Kind {
                    rule: rule.to_owned(),
                    why: format!("unknown kind {other:?}: use css: or regex:"),
                });
            }
        };
        Ok(ExtractRule { name, extractor })
    }
}

impl fmt::Display for ExtractRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.extractor {
            Extractor::Css { selector, attribute: None } => write!(f, "{}=css:{selector}", self.name),
            Extractor::Css { selector, attribute: Some(a) } => write!(f, "{}=css:{selector}@{a}", self.name),
            Extractor::Regex(re) => write!(f, "{}=regex:{re}", self.name),
        }
    }
}

impl FromStr for SearchRule {
    type Err = RuleError;

    fn from_str(rule: &str) -> Result<SearchRule, RuleError> {
        let (name, rest) = split(rule, SEARCH_FORMS)?;
        let (absent, rest) = match rest.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let Some(pattern) = rest.strip_prefix("regex:") else {
            let why = if rest.starts_with("css:") || rest.starts_with("xpath:") {
                "a search rule matches the page's text: use regex: (or !regex: to flag pages without a match)"
            } else {
                "expected regex:EXPRESSION or !regex:EXPRESSION"
            };
            return Err(RuleError::Kind { rule: rule.to_owned(), why: why.to_owned() });
        };
        let pattern = expression(pattern, rule)?.to_owned();
        Ok(SearchRule { name, pattern, absent })
    }
}

impl fmt::Display for SearchRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bang = if self.absent { "!" } else { "" };
        write!(f, "{}={bang}regex:{}", self.name, self.pattern)
    }
}

/// Serialises a rule as its text and reads it back through [`FromStr`], so a stored or received
/// rule is checked again like a typed one.
macro_rules! as_text {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$ty, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

as_text!(ExtractRule);
as_text!(SearchRule);

/// An audit's extraction and search rules: at most [`MAX_RULES`], names unique. Empty by default.
///
/// Shared, not copied: every site of an audit carries the same set ([`SiteInfo`](crate::frontier::SiteInfo)),
/// so a clone is a reference count.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CustomRules(Arc<RuleSet>);

#[derive(Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct RuleSet {
    #[serde(default)]
    extract: Vec<ExtractRule>,
    #[serde(default)]
    search: Vec<SearchRule>,
}

impl Serialize for CustomRules {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CustomRules {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<CustomRules, D::Error> {
        let raw = RuleSet::deserialize(deserializer)?;
        CustomRules::new(raw.extract, raw.search).map_err(serde::de::Error::custom)
    }
}

impl CustomRules {
    /// A rule set, checked: at most [`MAX_RULES`] rules, no name twice.
    ///
    /// # Errors
    /// [`RuleError::TooMany`] or [`RuleError::Duplicate`].
    pub fn new(extract: Vec<ExtractRule>, search: Vec<SearchRule>) -> Result<CustomRules, RuleError> {
        let count = extract.len() + search.len();
        if count > MAX_RULES {
            return Err(RuleError::TooMany { count });
        }
        let mut names = std::collections::HashSet::new();
        for name in extract.iter().map(|r| &r.name).chain(search.iter().map(|r| &r.name)) {
            if !names.insert(name) {
                return Err(RuleError::Duplicate { name: name.to_string() });
            }
        }
        Ok(CustomRules(Arc::new(RuleSet { extract, search })))
    }

    /// Parses the texts of `--extract` and `--search` rules.
    ///
    /// # Errors
    /// The first rule that is wrong, named; or the set breaks a rule of [`CustomRules::new`].
    pub fn parse<E: AsRef<str>, S: AsRef<str>>(extract: &[E], search: &[S]) -> Result<CustomRules, RuleError> {
        if extract.len() + search.len() > MAX_RULES {
            return Err(RuleError::TooMany { count: extract.len() + search.len() });
        }
        let extract = extract.iter().map(|r| r.as_ref().parse()).collect::<Result<Vec<_>, _>>()?;
        let search = search.iter().map(|r| r.as_ref().parse()).collect::<Result<Vec<_>, _>>()?;
        CustomRules::new(extract, search)
    }

    /// No rule at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.extract.is_empty() && self.0.search.is_empty()
    }

    /// The extraction rules, in the order given.
    #[must_use]
    pub fn extract(&self) -> &[ExtractRule] {
        &self.0.extract
    }

    /// The search rules, in the order given.
    #[must_use]
    pub fn search(&self) -> &[SearchRule] {
        &self.0.search
    }
}

/// Cuts `value` to at most [`MAX_VALUE_BYTES`] bytes, at a character boundary.
#[must_use]
pub fn cut_value(value: &str) -> &str {
    if value.len() <= MAX_VALUE_BYTES {
        return value;
    }
    let mut end = MAX_VALUE_BYTES;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    &value[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extract(s: &str) -> Result<ExtractRule, RuleError> {
        s.parse()
    }

    #[test]
    fn extraction_rules_parse_and_print_back() {
        for (text, extractor) in [
            ("price=css:.price", Extractor::Css { selector: ".price".into(), attribute: None }),
            (
                "price=css:meta[itemprop=price]@content",
                Extractor::Css { selector: "meta[itemprop=price]".into(), attribute: Some("content".into()) },
            ),
            (
                "mail=css:a[href^=\"mailto:x@y\"]",
                Extractor::Css { selector: "a[href^=\"mailto:x@y\"]".into(), attribute: None },
            ),
            ("gtm=regex:GTM-[A-Z0-9]+", Extractor::Regex("GTM-[A-Z0-9]+".into())),
            ("eq=regex:a=b", Extractor::Regex("a=b".into())),
        ] {
            let rule = extract(text).expect(text);
            assert_eq!(rule.extractor, extractor, "{text}");
            assert_eq!(rule.to_string(), text);
            let json = serde_json::to_string(&rule).expect("encodes");
            assert_eq!(json, serde_json::to_string(text).expect("a string"));
            assert_eq!(serde_json::from_str::<ExtractRule>(&json).expect("decodes"), rule);
        }
    }

    #[test]
    fn bad_rules_say_what_is_wrong_and_name_the_rule() {
        let long = format!("x=css:{}", "a".repeat(MAX_EXPR_BYTES + 1));
        for (text, says) in [
            ("price", "expected NAME="),
            ("=css:.p", "the name must be"),
            ("pr ice=css:.p", "the name must be"),
            ("price=css:", "the expression must be"),
            (long.as_str(), "the expression must be"),
            ("price=xpath://span", "xpath: is not supported"),
            ("price=jq:.a", "unknown kind \"jq\""),
            ("price=.price", "expected NAME="),
        ] {
            let e = extract(text).expect_err(text).to_string();
            assert!(e.contains(says), "{text}: {e}");
            if text.len() < 100 {
                assert!(e.contains(&format!("`{text}`")), "names the rule: {e}");
            }
        }
        let e = "found=css:.x".parse::<SearchRule>().expect_err("css search").to_string();
        assert!(e.contains("use regex:"), "{e}");
    }

    #[test]
    fn search_rules_parse_with_and_without_negation() {
        let hit: SearchRule = "oos=regex:(?i)out of stock".parse().expect("parses");
        assert_eq!((hit.pattern.as_str(), hit.absent), ("(?i)out of stock", false));
        let miss: SearchRule = "no-price=!regex:€\\s*\\d".parse().expect("parses");
        assert!(miss.absent);
        assert_eq!(miss.to_string(), "no-price=!regex:€\\s*\\d");
    }

    #[test]
    fn sets_are_bounded_and_names_unique() {
        let many: Vec<String> = (0..=MAX_RULES).map(|i| format!("r{i}=css:p")).collect();
        assert_eq!(CustomRules::parse(&many, &[] as &[&str]), Err(RuleError::TooMany { count: MAX_RULES + 1 }));
        let e = CustomRules::parse(&["a=css:p"], &["a=regex:x"]).expect_err("duplicate");
        assert_eq!(e, RuleError::Duplicate { name: "a".into() });
        let rules = CustomRules::parse(&["a=css:p"], &["b=!regex:x"]).expect("valid");
        let json = serde_json::to_value(&rules).expect("encodes");
        assert_eq!(json, serde_json::json!({"extract": ["a=css:p"], "search": ["b=!regex:x"]}));
        assert_eq!(serde_json::from_value::<CustomRules>(json).expect("decodes"), rules);
        let rmp = rmp_serde::to_vec_named(&rules).expect("encodes");
        assert_eq!(rmp_serde::from_slice::<CustomRules>(&rmp).expect("decodes"), rules);
        let twice = serde_json::json!({"extract": ["a=css:p", "a=css:q"]});
        assert!(serde_json::from_value::<CustomRules>(twice).is_err(), "decoding checks the set too");
        assert!(serde_json::from_str::<CustomRules>("{}").expect("empty").is_empty());
    }

    #[test]
    fn values_are_cut_at_a_character_boundary() {
        let euros = "€".repeat(400);
        let cut = cut_value(&euros);
        assert!(cut.len() <= MAX_VALUE_BYTES && cut.len() > MAX_VALUE_BYTES - 3);
        assert_eq!(cut_value("19.99"), "19.99");
    }
}
