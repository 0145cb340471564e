//! robots.txt verdicts (RFC 9309), exactly as Shoal's crawler uses them.
//!
//! The RFC work is done by [`robotxt`]: the 500 KiB parsing limit, groups, longest match with
//! `Allow` winning a tie, `*` and `$`, percent-encoding normalised on both sides, and
//! `/robots.txt` always allowed. This module wraps it in the shape the crawler needs (a
//! [`Verdict`] that names the blocking rule, a [`RobotsStatus`] for each HTTP status class) and
//! corrects it where SPEC §3 asks for more:
//!
//! - **Product tokens in robots.txt.** `User-agent: ShoalBot/2.1` is a group for the `ShoalBot`
//!   product, but robotxt compares the whole value, so Shoal would miss its own group and obey
//!   `*` instead. Before the file reaches robotxt, every `User-agent` value is cut to its product
//!   token: the leading run of `[A-Za-z_-]`, as Google's reference parser reads it (`*` followed
//!   by nothing or a space stays `*`).
//! - **Crawl-delay lines do not split a group.** robotxt ends the run of `User-agent` lines at a
//!   `Crawl-delay`, so in `User-agent: A / Crawl-delay: 5 / User-agent: B / Disallow: /` it
//!   gives `A` no rules. Only `Allow` and `Disallow` end that run (as Google reads it, and as
//!   the conformance corpus expects), so the wrapper hides `Crawl-delay` lines from robotxt and
//!   reads them itself.
//! - **Crawl-delay values.** robotxt keeps the *smallest* delay among the groups that apply and
//!   drops values it cannot represent (`1e400`, `10s`). A site that asks twice has asked for
//!   the slower pace, and a huge value must not turn into "no delay", so Shoal keeps the
//!   largest, reads a leading number (`10s` is 10 s) and saturates at [`MAX_CRAWL_DELAY`].
//! - **Literal `*` and `$` in URLs.** RFC 9309 §2.2.3: a rule matches a literal `*` or `$` in
//!   a URL by writing it `%2A` or `%24`. robotxt compares the URL's raw `*`/`$` with those
//!   escapes and misses; the wrapper escapes them in the URL before matching (and, so that a
//!   `$` in the middle of a pattern keeps its Google meaning of a literal `$`, in the pattern).
//! - **URL strings** (for the `shoal robots` CLI) that are not absolute `http(s)` URLs are
//!   reduced to a path the way Google's reference library does, instead of failing.
//!
//! Nothing here does I/O or reads the clock: the fetcher decides what to fetch and when, and
//! hands the status and body to [`rules_for_status`].

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use url::{Position, Url};

/// The longest `Crawl-delay` we represent. Larger values (including `inf`) are clamped to it.
///
/// Any value above 60 s already puts the host off limits (SPEC §3), so clamping never makes
/// Shoal faster than asked; it only keeps `Instant + delay` arithmetic from overflowing.
pub const MAX_CRAWL_DELAY: Duration = Duration::from_secs(24 * 60 * 60);

/// robots.txt rules are never used longer than this after they were fetched (SPEC §3), also
/// inside an audit that runs longer: the frontier then has the lane's robots.txt fetched again
/// before anything else of it, and a shared copy is never older either.
pub const ROBOTS_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// The product token we match robots.txt groups with, e.g. `ShoalBot`.
///
/// RFC 9309 §2.2.1 matches groups by product token, case-insensitively; a full `User-Agent`
/// header is never compared. Keeping the token as its own type means the crawler cannot pass
/// its header string by mistake.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProductToken(String);

impl ProductToken {
    /// Takes the product token from a bare token (`ShoalBot`) or a full user-agent string
    /// (`ShoalBot/0.1 (+https://…)` gives `ShoalBot`).
    ///
    /// The token is the leading run of `[A-Za-z_-]`, the characters RFC 9309 allows in one.
    /// For a browser-style string (`Mozilla/5.0 (compatible; FooBot/1.0; +https://…)`) the token
    /// after `compatible;` is taken, since obeying a `Mozilla` group would be obeying the wrong
    /// robot. The result may be empty (`""`, `"42"`); an empty token matches no named group, so
    /// only the `*` group applies.
    #[must_use]
    pub fn from_agent(agent: &str) -> Self {
        let agent = agent.trim();
        let agent = compatible_product(agent).unwrap_or(agent);
        let len = agent.bytes().take_while(|&b| is_token_byte(b)).count();
        Self(agent[..len].to_owned())
    }

    /// The token, as matched against `User-agent` lines (case-insensitively).
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ProductToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The part of `Mozilla/5.0 (…; compatible; FooBot/1.0; …)` after `compatible;`, if the agent
/// is written that way.
fn compatible_product(agent: &str) -> Option<&str> {
    const MARKER: &str = "compatible;";
    if !agent.get(..8)?.eq_ignore_ascii_case("mozilla/") {
        return None;
    }
    let at = agent.to_ascii_lowercase().find(MARKER)?;
    Some(agent[at + MARKER.len()..].trim_start())
}

/// The characters of a product token (RFC 9309 §2.2.1).
const fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'-'
}

/// Whether the crawler may fetch a URL, and if not, which rule says so.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// No rule forbids the URL (or an `Allow` rule wins).
    Allowed,
    /// A `Disallow` rule wins; the report says "blocked by rule `rule`".
    Disallowed {
        /// The winning `Disallow` pattern, as normalised for matching: it starts with `/`,
        /// and percent-escapes are canonical (`*.gif$` is reported as `/*.gif$`).
        rule: String,
    },
}

impl Verdict {
    /// True for [`Verdict::Allowed`]: the frontier only needs the yes/no.
    #[must_use]
    pub const fn is_allowed(&self) -> bool {
        matches!(self, Self::Allowed)
    }
}

/// The line `shoal robots` prints for a URL: `allowed URL` or `disallowed URL`.
///
/// The conformance runner (`run_cli.py`) reads the first word, so the format is fixed here
/// rather than in the CLI.
#[must_use]
pub fn verdict_line(v: &Verdict, url: &str) -> String {
    let word = if v.is_allowed() { "allowed" } else { "disallowed" };
    format!("{word} {url}")
}

/// The rules of one host's robots.txt for Shoal's product token, parsed once.
///
/// Only our group (or `*`) is kept, so checking a URL never re-reads the file; checks are a
/// scan of that group's rules, cheap enough for every link on every page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RobotsRules {
    robots: robotxt::Robots,
    crawl_delay: Option<Duration>,
}

impl RobotsRules {
    /// Parses a robots.txt body (a 2xx response) for `token`.
    ///
    /// The first 500 KiB ([`robotxt::BYTE_LIMIT`]) are parsed and the rest ignored, including a
    /// line cut by the limit (RFC 9309 §2.5). A UTF-8 BOM, CR, LF and CRLF line ends and
    /// invalid UTF-8 are all accepted. Never panics: a body that is not a robots.txt at all
    /// simply has no rules.
    #[must_use]
    pub fn parse(body: &[u8], token: &ProductToken) -> Self {
        let body = truncate(body);
        let body = strip_bom(body);
        let (mut shimmed, mut directives) = shim(body, true);
        if shimmed.len() > robotxt::BYTE_LIMIT {
            // Escaping literal `$`s pushed a file near the limit past it, and robotxt would cut
            // its tail. Every line within 500 KiB must count, so do without the escapes: the
            // few rules with a `$` mid-pattern then never match, which is what robotxt does.
            (shimmed, directives) = shim(body, false);
        }
        let robots = robotxt::Robots::parse(&shimmed, token.as_str());
        let crawl_delay = crawl_delay_for(&directives, robots.user_agent());
        Self { robots, crawl_delay }
    }

    /// Rules that allow everything: what a 4xx robots.txt (other than 429) means.
    #[must_use]
    pub fn allow_all() -> Self {
        Self { robots: robotxt::Robots::allow_all(), crawl_delay: None }
    }

    /// The verdict for `url` (its path and query; the rules are assumed to be this URL's
    /// host's). `/robots.txt` itself is always allowed.
    #[must_use]
    pub fn check(&self, url: &Url) -> Verdict {
        self.check_path(&url[Position::BeforePath..Position::AfterQuery])
    }

    /// The verdict for a URL given as text, for the CLI.
    ///
    /// An absolute `http`/`https` URL is checked exactly as [`check`](Self::check) would.
    /// Anything else (`/a?b`, `example.com/a`, `//host/a`, `""`) is reduced to a path the way
    /// Google's reference library reads it, so an operator can ask about a bare path; `""`
    /// and a bare host mean `/`. The crawler itself only ever checks parsed URLs.
    #[must_use]
    pub fn check_str(&self, url: &str) -> Verdict {
        match Url::parse(url) {
            Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => self.check(&parsed),
            _ => self.check_path(&path_params_query(url)),
        }
    }

    /// The verdict for a path with optional query (`/a/b?c`).
    fn check_path(&self, path: &str) -> Verdict {
        let path = escape_url_specials(path);
        let path = path.as_ref();
        if self.robots.is_allowed(path) {
            return Verdict::Allowed;
        }
        // `is_allowed` is false only when a rule matched and it is a `Disallow` (its shortcut
        // for "everything disallowed" implies a universal `Disallow`), so a rule is found.
        let rule = self.robots.matching_rule(path).map_or_else(|| "/".to_owned(), |rule| rule.pattern().to_owned());
        Verdict::Disallowed { rule }
    }

    /// The `Crawl-delay` of our group (or `*`), fractional seconds kept.
    ///
    /// If the groups that apply give several, the largest wins: each is something the site
    /// asked for, and SPEC §3 says never crawl faster than asked.
    #[must_use]
    pub const fn crawl_delay(&self) -> Option<Duration> {
        self.crawl_delay
    }

    /// Every valid `Sitemap` URL in the file, in file order, whatever group it sits in.
    ///
    /// Values that are not absolute URLs are dropped (RFC 9309 §2.2.4 requires fully
    /// qualified URLs); a trailing `# comment` is not part of the URL.
    #[must_use]
    pub fn sitemaps(&self) -> Vec<String> {
        self.robots.sitemaps().iter().map(|url| url.as_str().to_owned()).collect()
    }

    /// The `User-agent` value of the group obeyed, lower-cased: our token, or `*` when the
    /// file has no group for us. Reports show it so a site owner sees which group applied.
    #[must_use]
    pub fn group(&self) -> &str {
        self.robots.user_agent()
    }
}

/// Which of `tokens` the file's `User-agent` lines name (case-insensitively, as product tokens,
/// read by the same lexer as [`RobotsRules::parse`], within the same 500 KiB): a crawler whose
/// token is not named has no group of its own and obeys `*`. One pass over the file, whatever
/// the number of tokens, and nothing kept but the answers.
#[must_use]
pub fn names_agents(body: &[u8], tokens: &[&str]) -> Vec<bool> {
    let mut named = vec![false; tokens.len()];
    for line in strip_bom(truncate(body)).split(|&b| is_line_end(b)) {
        if let Some((Key::UserAgent, value)) = directive(line) {
            let agent = user_agent_token(value);
            for (slot, token) in named.iter_mut().zip(tokens) {
                *slot |= agent.eq_ignore_ascii_case(token.as_bytes());
            }
        }
    }
    named
}

/// What a robots.txt response means for the crawl (RFC 9309 §2.3.1, SPEC §3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RobotsStatus {
    /// 2xx: obey these rules.
    Rules(RobotsRules),
    /// 4xx other than 429: there are no rules, everything may be crawled.
    AllowAll,
    /// 429, 5xx, or anything else: the file could not be read. Retry on the SPEC §4 schedule;
    /// if it keeps failing the host is off limits. Never "allow all".
    Retry,
}

/// Maps the final response for robots.txt to what it means for the crawl.
///
/// Redirects are followed by the fetcher (up to 5 hops), so a 3xx that reaches here means it
/// gave up. RFC 9309 lets a crawler treat that as "unavailable" (allow all), but SPEC §3 allows
/// everything only on a 4xx, so it is [`RobotsStatus::Retry`]: when in doubt, don't crawl.
#[must_use]
pub fn rules_for_status(status: u16, body: &[u8], token: &ProductToken) -> RobotsStatus {
    match status {
        200..=299 => RobotsStatus::Rules(RobotsRules::parse(body, token)),
        429 => RobotsStatus::Retry,
        400..=499 => RobotsStatus::AllowAll,
        _ => RobotsStatus::Retry,
    }
}

/// The UTF-8 byte order mark, skipped at the start of the file.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// Skips a UTF-8 BOM at the start of the file, or a truncated one (`EF BB`, `EF`) as Google
/// does: without it the first line is garbage, and a `User-agent` line lost that way would
/// lose its rules too. No directive starts with a non-ASCII byte, so nothing else can be lost.
fn strip_bom(body: &[u8]) -> &[u8] {
    let len = body.iter().zip(BOM).take_while(|(a, b)| a == b).count();
    &body[len..]
}

/// Cuts the body at the last line end within [`robotxt::BYTE_LIMIT`] bytes, as robotxt does,
/// so that our pre-pass and robotxt see the same lines (and the rewritten body stays within
/// the limit, which robotxt then leaves alone).
fn truncate(body: &[u8]) -> &[u8] {
    let Some(window) = body.get(..=robotxt::BYTE_LIMIT) else {
        return body;
    };
    let end = window.iter().rposition(|&b| is_line_end(b)).unwrap_or(0);
    &body[..end]
}

/// The bytes that end a line for robotxt's lexer.
const fn is_line_end(b: u8) -> bool {
    matches!(b, b'\r' | b'\n' | b'\0')
}

/// What a robots.txt line means to the group logic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    UserAgent,
    /// `Allow`: ends the run of `User-agent` lines that opens a group.
    Allow,
    /// `Disallow`: likewise.
    Disallow,
    /// `Crawl-delay`: a group member, but it does not end the run of `User-agent` lines.
    CrawlDelay,
    /// `Sitemap`: belongs to no group and ends nothing.
    Sitemap,
}

/// Every key spelling robotxt 0.7's lexer accepts, with what it means. Kept identical to the
/// crate's list so the pre-pass sees the same directives robotxt will. (A wrong entry here
/// shows up in the `robots_fuzz` property test, which compares with raw robotxt.)
const SPELLINGS: &[(&str, Key)] = &[
    ("user-agent", Key::UserAgent),
    ("user agent", Key::UserAgent),
    ("useragent", Key::UserAgent),
    ("allow", Key::Allow),
    ("alow", Key::Allow),
    ("allaw", Key::Allow),
    ("disallow", Key::Disallow),
    ("dissallow", Key::Disallow),
    ("dissalow", Key::Disallow),
    ("disalow", Key::Disallow),
    ("diasllow", Key::Disallow),
    ("disallaw", Key::Disallow),
    ("crawl-delay", Key::CrawlDelay),
    ("crawl delay", Key::CrawlDelay),
    ("crawldelay", Key::CrawlDelay),
    ("sitemap", Key::Sitemap),
    ("site-map", Key::Sitemap),
    ("site map", Key::Sitemap),
];

/// Skips leading spaces and tabs (robotxt trims nothing else before the key).
fn trim_spaces(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| b != b' ' && b != b'\t').unwrap_or(s.len());
    &s[start..]
}

/// Reads one line (without its line end) as `key: value # comment` or `key value`, the way
/// robotxt's lexer does. Returns the key and the value without comment or outer whitespace.
fn directive(line: &[u8]) -> Option<(Key, &[u8])> {
    let line = trim_spaces(line);
    let &(spelling, key) = SPELLINGS.iter().find(|(spelling, _)| {
        line.get(..spelling.len()).is_some_and(|k| k.eq_ignore_ascii_case(spelling.as_bytes()))
    })?;
    let rest = &line[spelling.len()..];
    let after_spaces = trim_spaces(rest);
    let value = match after_spaces.strip_prefix(b":") {
        Some(value) => value,
        None if after_spaces.len() < rest.len() => after_spaces,
        None => return None,
    };
    let value = value.split(|&b| b == b'#').next().unwrap_or_default();
    Some((key, value.trim_ascii()))
}

/// The product token a `User-agent` value names: `*` for the global group (also `* …`, as
/// Google reads it), otherwise the leading run of `[A-Za-z_-]`, possibly empty.
fn user_agent_token(value: &[u8]) -> &[u8] {
    match value {
        [b'*'] => b"*",
        [b'*', next, ..] if next.is_ascii_whitespace() => b"*",
        _ => {
            let len = value.iter().take_while(|&&b| is_token_byte(b)).count();
            &value[..len]
        }
    }
}

/// Prepares the body for robotxt and collects what the wrapper reads itself. Line ends are kept,
/// so robotxt sees the same lines:
///
/// - `User-agent` lines become `useragent:<token>`, so robotxt's exact match compares product
///   tokens (SPEC §3: `ShoalBot/2.1` is our group);
/// - `Crawl-delay` lines become empty, so robotxt does not end a group at them;
/// - with `escape_dollars`, a `$` other than the last character of an `Allow`/`Disallow` value
///   becomes `%24` (see [`escape_inner_dollars`]);
/// - lines robotxt would ignore (comments, unknown keys) become empty.
///
/// Only the `%24` escapes make a line longer, and every other change makes it shorter or keeps
/// it, so without `escape_dollars` the result is never longer than `body`.
///
/// Returns the new body and the directives, in order, for the crawl-delay replay, with
/// `User-agent` values already reduced to tokens.
fn shim(body: &[u8], escape_dollars: bool) -> (Vec<u8>, Vec<(Key, &[u8])>) {
    let mut out = Vec::with_capacity(body.len());
    let mut directives = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let end = rest.iter().position(|&b| is_line_end(b)).unwrap_or(rest.len());
        let (line, tail) = rest.split_at(end);
        match directive(line) {
            Some((Key::UserAgent, value)) => {
                // The shortest spelling: never longer than the line it replaces.
                let token = user_agent_token(value);
                out.extend_from_slice(b"useragent:");
                out.extend_from_slice(token);
                directives.push((Key::UserAgent, token));
            }
            Some((Key::CrawlDelay, value)) => directives.push((Key::CrawlDelay, value)),
            Some((key @ (Key::Allow | Key::Disallow), value)) => {
                match escape_inner_dollars(value).filter(|_| escape_dollars) {
                    Some(escaped) => {
                        let name: &[u8] = if key == Key::Allow { b"allow:" } else { b"disallow:" };
                        out.extend_from_slice(name);
                        out.extend_from_slice(&escaped);
                    }
                    None => out.extend_from_slice(line),
                }
                directives.push((key, value));
            }
            Some((Key::Sitemap, value)) => {
                out.extend_from_slice(line);
                directives.push((Key::Sitemap, value));
            }
            None => {}
        }
        let ends = tail.iter().take_while(|&&b| is_line_end(b)).count();
        out.extend_from_slice(&tail[..ends]);
        rest = &tail[ends..];
    }
    (out, directives)
}

/// A rule pattern with every `$` but a final one written `%24`, or `None` if it has none.
///
/// Only a final `$` anchors a pattern; elsewhere it is a literal `$` (as Google reads it), and
/// URLs have their literal `$` escaped before matching, so the pattern must be too.
fn escape_inner_dollars(value: &[u8]) -> Option<Vec<u8>> {
    let (&last, inner) = value.split_last()?;
    if !inner.contains(&b'$') {
        return None;
    }
    let mut out = Vec::with_capacity(value.len() + 4);
    for &b in inner {
        if b == b'$' {
            out.extend_from_slice(b"%24");
        } else {
            out.push(b);
        }
    }
    out.push(last);
    Some(out)
}

/// Escapes the literal `*` and `$` of a URL path as `%2A` and `%24` (RFC 9309 §2.2.3), so that
/// rules written with those escapes match them, and pattern wildcards never see a raw `*`/`$`.
fn escape_url_specials(path: &str) -> Cow<'_, str> {
    if !path.contains(['*', '$']) {
        return Cow::Borrowed(path);
    }
    let mut out = String::with_capacity(path.len() + 8);
    for c in path.chars() {
        match c {
            '*' => out.push_str("%2A"),
            '$' => out.push_str("%24"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Replays the group logic over the directives to find the `Crawl-delay` lines of the groups
/// named `group` (the value robotxt selected), and keeps the largest. As in robotxt, a group
/// opens with a run of `User-agent` lines that only `Allow` or `Disallow` ends.
fn crawl_delay_for(directives: &[(Key, &[u8])], group: &str) -> Option<Duration> {
    let mut delay: Option<Duration> = None;
    let mut in_agents = false;
    let mut applies = false;
    for &(key, value) in directives {
        match key {
            Key::UserAgent => {
                if !in_agents {
                    in_agents = true;
                    applies = false;
                }
                applies |= value.eq_ignore_ascii_case(group.as_bytes());
            }
            Key::Allow | Key::Disallow => in_agents = false,
            Key::CrawlDelay => {
                if applies && let Some(d) = parse_crawl_delay(value) {
                    delay = Some(delay.map_or(d, |prev| prev.max(d)));
                }
            }
            Key::Sitemap => {}
        }
    }
    delay
}

/// Reads a `Crawl-delay` value in seconds: a number (`10`, `2.5`, `1e3`), or failing that its
/// leading digits (`10s`). Negative and NaN values are ignored; huge ones are clamped to
/// [`MAX_CRAWL_DELAY`].
fn parse_crawl_delay(value: &[u8]) -> Option<Duration> {
    let whole = std::str::from_utf8(value).ok().and_then(|s| s.parse::<f64>().ok());
    let secs = whole.or_else(|| leading_number(value))?;
    if secs.is_nan() || secs < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(secs).map_or(MAX_CRAWL_DELAY, |d| d.min(MAX_CRAWL_DELAY)))
}

/// The number at the start of `value` (digits with at most one `.`), if there is one.
fn leading_number(value: &[u8]) -> Option<f64> {
    let mut seen_dot = false;
    let len = value
        .iter()
        .take_while(|&&b| {
            let dot = b == b'.' && !seen_dot;
            seen_dot |= dot;
            b.is_ascii_digit() || dot
        })
        .count();
    let digits = std::str::from_utf8(&value[..len]).ok()?;
    digits.parse().ok()
}

/// The path and query of a URL string that is not an absolute `http(s)` URL, as Google's
/// reference library reads it (`GetPathParamsQuery`): a leading `//` is skipped, a scheme
/// ends at `://` unless a `/`, `?` or `;` comes first, the host runs to the next `/`, `?` or
/// `;`, and the fragment is dropped. The result starts with `/`; no path at all gives `/`.
fn path_params_query(url: &str) -> String {
    const PATH_START: [char; 3] = ['/', '?', ';'];
    let search_start = if url.starts_with("//") { 2 } else { 0 };
    let rest = &url[search_start..];
    let early_path = rest.find(PATH_START);
    let authority = match rest.find("://") {
        Some(scheme_end) if early_path.is_none_or(|p| p > scheme_end) => scheme_end + 3,
        _ => 0,
    };
    let Some(path_start) = rest[authority..].find(PATH_START).map(|p| p + authority) else {
        return "/".to_owned();
    };
    let hash = rest.find('#');
    if hash.is_some_and(|h| h < path_start) {
        return "/".to_owned();
    }
    let path = &rest[path_start..hash.unwrap_or(rest.len())];
    if path.starts_with('/') { path.to_owned() } else { format!("/{path}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn product_token_from_agent_strings() {
        for (agent, token) in [
            ("ShoalBot", "ShoalBot"),
            ("ShoalBot/0.1 (+https://example.com/bot)", "ShoalBot"),
            ("  Foo_Bar-baz/2 ", "Foo_Bar-baz"),
            ("Foo Bar", "Foo"),
            ("Mozilla/5.0 (compatible; FooBot/1.0; +https://x.test/)", "FooBot"),
            ("Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0", "Mozilla"),
            ("", ""),
            ("42bot", ""),
            ("ツbot", ""),
        ] {
            assert_eq!(ProductToken::from_agent(agent).as_str(), token, "{agent:?}");
        }
    }

    #[test]
    fn user_agent_values_reduce_to_tokens() {
        for (value, token) in [
            (&b"ShoalBot/2.1"[..], &b"ShoalBot"[..]),
            (b"*", b"*"),
            (b"* (everyone)", b"*"),
            (b"*bot", b""),
            (b"FOO BAR", b"FOO"),
            (b"", b""),
        ] {
            assert_eq!(user_agent_token(value), token);
        }
    }

    #[test]
    fn directive_lines_match_robotxt_lexer() {
        assert_eq!(directive(b"  User-Agent : a/1 # c"), Some((Key::UserAgent, &b"a/1"[..])));
        assert_eq!(directive(b"useragent x"), Some((Key::UserAgent, &b"x"[..])));
        assert_eq!(directive(b"crawl delay: 5"), Some((Key::CrawlDelay, &b"5"[..])));
        assert_eq!(directive(b"user-agentx: a"), None);
        assert_eq!(directive(b"# user-agent: a"), None);
        assert_eq!(directive(b"Dissallow:/x"), Some((Key::Disallow, &b"/x"[..])));
        assert_eq!(directive(b"alow /x"), Some((Key::Allow, &b"/x"[..])));
    }

    #[test]
    fn special_characters_are_escaped() {
        assert_eq!(escape_url_specials("/a/b?c"), "/a/b?c");
        assert_eq!(escape_url_specials("/a*b$c"), "/a%2Ab%24c");
        assert_eq!(escape_inner_dollars(b"/a$"), None);
        assert_eq!(escape_inner_dollars(b"/a$b$"), Some(b"/a%24b$".to_vec()));
        assert_eq!(escape_inner_dollars(b"/$$"), Some(b"/%24$".to_vec()));
        assert_eq!(escape_inner_dollars(b""), None);
    }

    #[test]
    fn crawl_delay_values() {
        let secs = |v: &[u8]| parse_crawl_delay(v).map(|d| d.as_secs_f64());
        assert_eq!(secs(b"10"), Some(10.0));
        assert_eq!(secs(b"2.5"), Some(2.5));
        assert_eq!(secs(b"10s"), Some(10.0));
        assert_eq!(secs(b".5 seconds"), Some(0.5));
        assert_eq!(secs(b"0"), Some(0.0));
        assert_eq!(secs(b"-1"), None);
        assert_eq!(secs(b"NaN"), None);
        assert_eq!(secs(b"soon"), None);
        assert_eq!(parse_crawl_delay(b"1e400"), Some(MAX_CRAWL_DELAY));
        assert_eq!(parse_crawl_delay(b"inf"), Some(MAX_CRAWL_DELAY));
        assert_eq!(parse_crawl_delay(b"99999999999999999999"), Some(MAX_CRAWL_DELAY));
    }

    /// Google's `TestGetPathParamsQuery` expectations.
    #[test]
    fn path_params_query_like_google() {
        for (url, path) in [
            ("", "/"),
            ("http://www.example.com", "/"),
            ("http://www.example.com/", "/"),
            ("http://www.example.com/a", "/a"),
            ("http://www.example.com/a/", "/a/"),
            ("http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/"),
            ("http://www.example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
            ("example.com", "/"),
            ("example.com/", "/"),
            ("example.com/a", "/a"),
            ("example.com/a/", "/a/"),
            ("example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"),
            ("a", "/"),
            ("a/", "/"),
            ("/a", "/a"),
            ("a/b", "/b"),
            ("example.com?a", "/?a"),
            ("example.com/a;b#c", "/a;b"),
            ("//a/b/c", "/b/c"),
            ("a#b/c", "/"),
        ] {
            assert_eq!(path_params_query(url), path, "{url:?}");
        }
    }

    #[test]
    fn whole_and_partial_boms_are_skipped() {
        assert_eq!(strip_bom(b"\xef\xbb\xbfUser"), b"User");
        assert_eq!(strip_bom(b"\xef\xbbUser"), b"User");
        assert_eq!(strip_bom(b"\xefUser"), b"User");
        assert_eq!(strip_bom(b"\xef\x11\xbfUser"), b"\x11\xbfUser");
        assert_eq!(strip_bom(b""), b"");
    }

    #[test]
    fn shim_never_grows_the_body_without_escapes() {
        let body = b"User-agent: ShoalBot/2.1 # us\r\nuseragent x\n# comment\nHost: a\n\
                     Crawl-delay: 5\nalow:/a$b$\nSitemap: https://a.test/s.xml\n";
        let (out, _) = shim(body, false);
        assert!(out.len() <= body.len());
        assert_eq!(out, b"useragent:ShoalBot\r\nuseragent:x\n\n\n\nalow:/a$b$\nSitemap: https://a.test/s.xml\n");
        let (escaped, _) = shim(body, true);
        assert!(escaped.ends_with(b"\nallow:/a%24b$\nSitemap: https://a.test/s.xml\n"));
    }

    #[test]
    fn a_file_that_escaping_would_push_past_the_limit_is_still_read_to_500_kib() {
        let mut body = b"User-agent: *\n".to_vec();
        while body.len() < robotxt::BYTE_LIMIT - 100 {
            body.extend_from_slice(b"Disallow: /$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$/\n");
        }
        body.extend_from_slice(b"Disallow: /last\n");
        let rules = RobotsRules::parse(&body, &ProductToken::from_agent("ShoalBot"));
        assert!(!rules.check_str("https://a.test/last").is_allowed());
    }

    #[test]
    fn truncation_keeps_whole_lines_only() {
        let limit = robotxt::BYTE_LIMIT;
        let mut body = vec![b'#'; limit - 1];
        body.extend_from_slice(b"\nDisallow: /cut\n");
        assert_eq!(truncate(&body).len(), limit - 1);
        assert_eq!(truncate(b"short\nfile"), b"short\nfile");
    }

    #[test]
    fn status_classes() {
        let token = ProductToken::from_agent("ShoalBot");
        let body = b"User-agent: *\nDisallow: /";
        assert!(matches!(rules_for_status(200, body, &token), RobotsStatus::Rules(_)));
        assert!(matches!(rules_for_status(204, b"", &token), RobotsStatus::Rules(_)));
        for status in [400, 401, 403, 404, 410, 451] {
            assert_eq!(rules_for_status(status, body, &token), RobotsStatus::AllowAll);
        }
        for status in [100, 301, 308, 429, 500, 503, 599, 600] {
            assert_eq!(rules_for_status(status, body, &token), RobotsStatus::Retry);
        }
    }
}
