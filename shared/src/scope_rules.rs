//! The user's scope rules: `--include REGEX`, `--exclude REGEX` and `--strip-query PARAM`, which
//! narrow what a crawl requests within a site (SPEC §5, "include/exclude patterns").
//!
//! Why here: the rules travel with an audit (they are part of [`SiteLimits`](crate::task::SiteLimits),
//! so the site info every worker reads carries them) and the worker applies them to every URL it
//! is about to offer to the frontier. Neither the frontier nor its Lua scripts know them, and
//! nothing in Redis grows per page: an excluded URL simply never becomes a task.
//!
//! Decisions:
//! - **Validated once into typed rules.** [`ScopeRules::new`] compiles every pattern with the
//!   `regex` crate's limits ([`MAX_PATTERN_BYTES`], [`REGEX_SIZE_LIMIT`], [`REGEX_NEST_LIMIT`],
//!   at most [`MAX_RULES`] a list) and names the pattern that does not compile. The rules are
//!   stored as their pattern texts and compiled again, under the same limits, wherever they are
//!   read back (a worker decoding the site info, a coordinator reading an audit's options): a
//!   [`ScopeRules`] value always holds compiled, bounded patterns. The `regex` crate matches in
//!   time linear in the URL (at most 4 KiB), so no pattern can make matching slow.
//! - **What a pattern sees**: the whole normalised URL (`https://example.com/shop/?page=2`),
//!   after `--strip-query`. A pattern matches anywhere in it (`/cart` excludes every URL containing
//!   `/cart`); anchor it with `^` and `$` to match the whole URL.
//! - **Include and exclude**: with include rules, a URL must match at least one of them; a URL
//!   that matches an exclude rule is out, whatever the include rules say.
//! - **Strip-query**: a parameter name (`utm_source`), a prefix ending in `*` (`utm_*`), or `*`
//!   alone for the whole query. Names are compared as written in the normalised URL,
//!   case-sensitively (servers tell `ID` from `id`).

use crate::url::NormalizedUrl;
use regex::{RegexSet, RegexSetBuilder};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Patterns a list may hold at most (`--include` or `--exclude`), and parameters `--strip-query`.
pub const MAX_RULES: usize = 64;
/// The longest pattern or parameter name accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1_024;
/// The most memory one list's compiled patterns may take together (the `regex` crate's
/// `size_limit`): far more than any sensible list needs, little enough that every site of every
/// live audit a worker holds can carry its rules.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// The most memory one list's lazily built matching automaton may take (`dfa_size_limit`).
pub const REGEX_DFA_LIMIT: usize = 1 << 20;
/// How deeply a pattern may nest groups and repetitions (`nest_limit`).
pub const REGEX_NEST_LIMIT: u32 = 64;

/// Which list a rule belongs to; named in errors and findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleList {
    /// `--include`.
    Include,
    /// `--exclude`.
    Exclude,
    /// `--strip-query`.
    StripQuery,
}

impl RuleList {
    /// The setting's name (the flag without its dashes, the API's field with `_`).
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            RuleList::Include => "include",
            RuleList::Exclude => "exclude",
            RuleList::StripQuery => "strip-query",
        }
    }
}

impl fmt::Display for RuleList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rule that cannot be used, naming it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// More rules in one list than [`MAX_RULES`].
    #[error("{list}: {count} rules, at most {MAX_RULES}")]
    TooMany {
        /// The list.
        list: RuleList,
        /// How many were given.
        count: usize,
    },
    /// A pattern or parameter over [`MAX_PATTERN_BYTES`], or empty.
    #[error("{list} {rule:?}: {why}")]
    Invalid {
        /// The list.
        list: RuleList,
        /// The rule as given (cut to 80 characters).
        rule: String,
        /// What is wrong.
        why: String,
    },
}

fn cut(s: &str) -> String {
    s.chars().take(80).collect()
}

/// One list of URL patterns, compiled into one set under the limits above.
#[derive(Clone)]
pub struct Patterns {
    sources: Vec<String>,
    set: RegexSet,
}

impl Patterns {
    /// Compiles `sources` as the list `list`; an error names the first pattern that does not
    /// compile (each is tried alone first, so the message is about that one).
    pub fn new(list: RuleList, sources: &[String]) -> Result<Patterns, RuleError> {
        if sources.len() > MAX_RULES {
            return Err(RuleError::TooMany { list, count: sources.len() });
        }
        for s in sources {
            if s.is_empty() || s.len() > MAX_PATTERN_BYTES {
                let why = if s.is_empty() {
                    "an empty pattern matches every URL".to_owned()
                } else {
                    format!("{} bytes, at most {MAX_PATTERN_BYTES}", s.len())
                };
                return Err(RuleError::Invalid { list, rule: cut(s), why });
            }
            builder(std::slice::from_ref(s)).build().map_err(|e| RuleError::Invalid {
                list,
                rule: cut(s),
                why: regex_error(&e),
            })?;
        }
        let set = builder(sources).build().map_err(|e| RuleError::Invalid {
            list,
            rule: format!("{} patterns together", sources.len()),
            why: regex_error(&e),
        })?;
        Ok(Patterns { sources: sources.to_vec(), set })
    }

    /// No patterns.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// The first pattern (in the order given) that matches `url`.
    #[must_use]
    pub fn first_match(&self, url: &str) -> Option<&str> {
        self.set.matches(url).iter().next().and_then(|i| self.sources.get(i)).map(String::as_str)
    }

    /// The patterns as given.
    #[must_use]
    pub fn sources(&self) -> &[String] {
        &self.sources
    }
}

fn builder(sources: &[String]) -> RegexSetBuilder {
    let mut b = RegexSetBuilder::new(sources);
    b.size_limit(REGEX_SIZE_LIMIT).dfa_size_limit(REGEX_DFA_LIMIT).nest_limit(REGEX_NEST_LIMIT);
    b
}

/// The `regex` crate's message on one line (its syntax errors draw the pattern over several).
fn regex_error(e: &regex::Error) -> String {
    match e {
        regex::Error::CompiledTooBig(limit) => {
            format!("the compiled pattern would be over {limit} bytes: simplify it (fewer repetitions or classes)")
        }
        other => other.to_string().lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" "),
    }
}

impl Default for Patterns {
    fn default() -> Self {
        Patterns { sources: Vec::new(), set: RegexSet::empty() }
    }
}

impl fmt::Debug for Patterns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.sources).finish()
    }
}

impl PartialEq for Patterns {
    fn eq(&self, other: &Self) -> bool {
        self.sources == other.sources
    }
}

impl Eq for Patterns {}

/// Which query parameters are removed from a URL before it is queued.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StripQuery {
    /// As given: names, prefixes ending in `*`, or `*`.
    params: Vec<String>,
}

impl StripQuery {
    /// Checks the names given to `--strip-query`.
    pub fn new(params: &[String]) -> Result<StripQuery, RuleError> {
        let list = RuleList::StripQuery;
        if params.len() > MAX_RULES {
            return Err(RuleError::TooMany { list, count: params.len() });
        }
        for p in params {
            let bad = p.is_empty() || p.len() > MAX_PATTERN_BYTES || p.contains(['&', '=', '#', ' ']);
            if bad {
                let why = "a parameter name, a prefix ending in *, or * for the whole query (no &, =, # or space)";
                return Err(RuleError::Invalid { list, rule: cut(p), why: why.to_owned() });
            }
        }
        Ok(StripQuery { params: params.to_vec() })
    }

    /// Nothing is stripped.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    fn strips(&self, name: &str) -> bool {
        self.params.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => p == name,
        })
    }

    /// `url` without the parameters these rules name, or `None` when none of them is in it.
    #[must_use]
    pub fn apply(&self, url: &NormalizedUrl) -> Option<NormalizedUrl> {
        let query = url.as_url().query()?;
        if self.is_empty() {
            return None;
        }
        let kept: Vec<&str> =
            query.split('&').filter(|part| !self.strips(part.split('=').next().unwrap_or(""))).collect();
        if kept.len() == query.split('&').count() {
            return None;
        }
        let mut stripped = url.as_url().clone();
        if kept.iter().all(|p| p.is_empty()) {
            stripped.set_query(None);
        } else {
            stripped.set_query(Some(&kept.join("&")));
        }
        NormalizedUrl::from_url(stripped).ok()
    }
}

/// Why a URL may not be requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exclusion<'a> {
    /// It matches this `--exclude` pattern.
    Excluded(&'a str),
    /// There are `--include` patterns and it matches none.
    NotIncluded,
}

impl fmt::Display for Exclusion<'_> {
    /// The detail of a `url_excluded` finding: stable, it names the rule, not the URL.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exclusion::Excluded(p) => write!(f, "matches the exclude rule {p}"),
            Exclusion::NotIncluded => f.write_str("matches no include rule"),
        }
    }
}

/// An audit's scope rules, compiled. The default has none: every URL of the site is in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeRules {
    include: Patterns,
    exclude: Patterns,
    strip_query: StripQuery,
}

impl ScopeRules {
    /// Validates and compiles the three lists.
    ///
    /// # Errors
    /// [`RuleError`] naming the list and the rule that cannot be used.
    pub fn new(include: &[String], exclude: &[String], strip_query: &[String]) -> Result<ScopeRules, RuleError> {
        Ok(ScopeRules {
            include: Patterns::new(RuleList::Include, include)?,
            exclude: Patterns::new(RuleList::Exclude, exclude)?,
            strip_query: StripQuery::new(strip_query)?,
        })
    }

    /// No rule at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.include.is_empty() && self.exclude.is_empty() && self.strip_query.is_empty()
    }

    /// The URL as it may be queued: without the parameters `--strip-query` names.
    #[must_use]
    pub fn strip(&self, url: NormalizedUrl) -> NormalizedUrl {
        self.strip_query.apply(&url).unwrap_or(url)
    }

    /// Why `url` (already [stripped](Self::strip)) may not be requested, or `None` if it may.
    #[must_use]
    pub fn exclusion(&self, url: &NormalizedUrl) -> Option<Exclusion<'_>> {
        if let Some(p) = self.exclude.first_match(url.as_str()) {
            return Some(Exclusion::Excluded(p));
        }
        (!self.include.is_empty() && self.include.first_match(url.as_str()).is_none()).then_some(Exclusion::NotIncluded)
    }

    /// The include patterns as given.
    #[must_use]
    pub fn include(&self) -> &[String] {
        self.include.sources()
    }

    /// The exclude patterns as given.
    #[must_use]
    pub fn exclude(&self) -> &[String] {
        self.exclude.sources()
    }

    /// The strip-query parameters as given.
    #[must_use]
    pub fn strip_query(&self) -> &[String] {
        &self.strip_query.params
    }
}

/// The stored form: the three lists as given (empty lists left out).
#[derive(Serialize, Deserialize, Default)]
struct Stored {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    include: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    exclude: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    strip_query: Vec<String>,
}

impl Serialize for ScopeRules {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Stored {
            include: self.include.sources.clone(),
            exclude: self.exclude.sources.clone(),
            strip_query: self.strip_query.params.clone(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ScopeRules {
    /// Compiles the stored lists under the same limits as [`ScopeRules::new`]: a stored rule
    /// that no longer passes them is a decoding error, never a rule applied without limits.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ScopeRules, D::Error> {
        let s = Stored::deserialize(deserializer)?;
        ScopeRules::new(&s.include, &s.exclude, &s.strip_query).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> NormalizedUrl {
        NormalizedUrl::parse(s).expect("a URL")
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn exclude_wins_over_include_and_include_narrows() {
        let r = ScopeRules::new(&strings(&["/shop/", "/blog/"]), &strings(&["/shop/cart", r"\?sort="]), &[])
            .expect("valid rules");
        assert_eq!(r.exclusion(&u("http://a.test/shop/shoes")), None);
        assert_eq!(r.exclusion(&u("http://a.test/blog/")), None);
        assert_eq!(r.exclusion(&u("http://a.test/shop/cart/1")), Some(Exclusion::Excluded("/shop/cart")));
        assert_eq!(r.exclusion(&u("http://a.test/shop/?sort=price")), Some(Exclusion::Excluded(r"\?sort=")));
        assert_eq!(r.exclusion(&u("http://a.test/about")), Some(Exclusion::NotIncluded));
        assert_eq!(Exclusion::Excluded("/x").to_string(), "matches the exclude rule /x");
        let none = ScopeRules::default();
        assert!(none.is_empty());
        assert_eq!(none.exclusion(&u("http://a.test/anything")), None);
    }

    #[test]
    fn strip_query_removes_names_prefixes_or_everything() {
        let r = ScopeRules::new(&[], &[], &strings(&["utm_*", "sid"])).expect("valid");
        let s = |x: &str| r.strip(u(x)).to_string();
        assert_eq!(s("http://a.test/p?utm_source=x&id=3&sid=9&utm_medium=y"), "http://a.test/p?id=3");
        assert_eq!(s("http://a.test/p?sid=1"), "http://a.test/p");
        assert_eq!(s("http://a.test/p?SID=1&sidx=2"), "http://a.test/p?SID=1&sidx=2", "names are exact");
        assert_eq!(s("http://a.test/p"), "http://a.test/p");
        let all = ScopeRules::new(&[], &[], &strings(&["*"])).expect("valid");
        assert_eq!(all.strip(u("http://a.test/p?a=1&b=2")).to_string(), "http://a.test/p");
    }

    #[test]
    fn a_bad_rule_is_an_error_naming_it() {
        let e = ScopeRules::new(&[], &strings(&["/ok", "(unclosed"]), &[]).expect_err("does not compile");
        let msg = e.to_string();
        assert!(msg.starts_with("exclude \"(unclosed\""), "{msg}");
        assert!(!msg.contains('\n'), "one line: {msg}");
        let e = ScopeRules::new(&strings(&[""]), &[], &[]).expect_err("empty");
        assert!(e.to_string().contains("include"), "{e}");
        let many: Vec<String> = (0..=MAX_RULES).map(|i| format!("/{i}")).collect();
        assert!(matches!(ScopeRules::new(&many, &[], &[]), Err(RuleError::TooMany { .. })));
        let e = ScopeRules::new(&[], &[], &strings(&["a=b"])).expect_err("not a name");
        assert!(e.to_string().starts_with("strip-query"), "{e}");
    }

    #[test]
    fn pathological_patterns_are_refused_or_bounded() {
        // Too big once compiled: refused with a clear reason.
        let huge = r"(\w{1,100}){1,100}".to_owned();
        let e = ScopeRules::new(&[], &[huge], &[]).expect_err("over the size limit");
        assert!(e.to_string().contains("compiled pattern would be over"), "{e}");
        // Nested too deep.
        let deep = format!("{}a{}", "(".repeat(200), ")".repeat(200));
        assert!(ScopeRules::new(&[], &[deep], &[]).is_err());
        // Catastrophic for a backtracking engine, linear here.
        let r = ScopeRules::new(&[], &strings(&["(a+)+$"]), &[]).expect("compiles");
        let url = u(&format!("http://a.test/{}!", "a".repeat(4_000)));
        assert_eq!(r.exclusion(&url), None);
    }

    #[test]
    fn stored_form_round_trips_and_is_compiled_again() {
        let r = ScopeRules::new(&strings(&["/a"]), &strings(&["/b"]), &strings(&["utm_*"])).expect("valid");
        let json = serde_json::to_string(&r).expect("encodes");
        assert_eq!(json, r#"{"include":["/a"],"exclude":["/b"],"strip_query":["utm_*"]}"#);
        let back: ScopeRules = serde_json::from_str(&json).expect("decodes");
        assert_eq!(back, r);
        assert_eq!(back.exclusion(&u("http://a.test/b")), Some(Exclusion::Excluded("/b")));
        let rmp = rmp_serde::to_vec_named(&r).expect("encodes");
        assert_eq!(rmp_serde::from_slice::<ScopeRules>(&rmp).expect("decodes"), r);
        assert_eq!(serde_json::to_string(&ScopeRules::default()).expect("encodes"), "{}");
        let e = serde_json::from_str::<ScopeRules>(r#"{"exclude":["("]}"#).expect_err("checked again");
        assert!(e.to_string().contains("exclude"), "{e}");
    }
}
