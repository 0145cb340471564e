//! URL normalisation, host keys and site scope.
//!
//! Normalisation is deliberately conservative: it removes only differences that can never matter
//! to a server (fragment, default port, case of percent-encoding hex, percent-encoded unreserved
//! characters, dot segments), never `www.`, trailing slashes or the scheme, because those are exactly
//! the differences an audit has to report.

use serde::{Deserialize, Serialize};
use std::fmt;
use url::{Host, Url};

/// The longest URL Shoal will queue or request. Longer ones are reported, not followed.
pub const MAX_URL_LEN: usize = 4096;

/// Why a string is not a crawlable URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// Not a URL at all.
    #[error("not a valid URL: {0}")]
    Parse(String),
    /// A scheme other than http or https.
    #[error("unsupported scheme {scheme:?}: only http and https are crawled")]
    Scheme {
        /// The scheme found.
        scheme: String,
    },
    /// No host name.
    #[error("URL has no host")]
    NoHost,
    /// Longer than [`MAX_URL_LEN`].
    #[error("URL is {len} bytes long, over the {max}-byte cap")]
    TooLong {
        /// Its length.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// User name or password in the URL: Shoal never sends credentials.
    #[error("URL carries credentials, which Shoal never sends")]
    Credentials,
}

/// An http(s) URL in Shoal's canonical form: the unit of deduplication and of requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct NormalizedUrl(Url);

impl NormalizedUrl {
    /// Parses and normalises an absolute URL.
    pub fn parse(s: &str) -> Result<NormalizedUrl, UrlError> {
        let url = Url::parse(s.trim()).map_err(|e| UrlError::Parse(format!("{s:?}: {e}")))?;
        NormalizedUrl::from_url(url)
    }

    /// Resolves `href` against `base` (as a browser would) and normalises the result.
    pub fn join(base: &Url, href: &str) -> Result<NormalizedUrl, UrlError> {
        let url = base.join(href.trim()).map_err(|e| UrlError::Parse(format!("{href:?}: {e}")))?;
        NormalizedUrl::from_url(url)
    }

    /// Normalises an already parsed URL.
    pub fn from_url(mut url: Url) -> Result<NormalizedUrl, UrlError> {
        match url.scheme() {
            "http" | "https" => {}
            other => {
                return Err(UrlError::Scheme { scheme: other.to_owned() });
            }
        }
        if url.host().is_none() {
            return Err(UrlError::NoHost);
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(UrlError::Credentials);
        }
        normalize(&mut url);
        let len = url.as_str().len();
        if len > MAX_URL_LEN {
            return Err(UrlError::TooLong { len, max: MAX_URL_LEN });
        }
        Ok(NormalizedUrl(url))
    }

    /// The URL.
    #[must_use]
    pub fn as_url(&self) -> &Url {
        &self.0
    }

    /// The URL as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The host this URL is paced under.
    #[must_use]
    pub fn host_key(&self) -> HostKey {
        HostKey::of(&self.0)
    }

    /// A 64-bit hash of the URL text, stable across processes and versions (xxh3), for compact
    /// seen sets.
    #[must_use]
    pub fn fingerprint(&self) -> u64 {
        xxhash_rust::xxh3::xxh3_64(self.0.as_str().as_bytes())
    }
}

impl fmt::Display for NormalizedUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

impl TryFrom<String> for NormalizedUrl {
    type Error = UrlError;
    /// The stored form: an http(s) URL, or a service URL ([`NormalizedUrl::service`]) of a task
    /// that talks to something other than a web server.
    fn try_from(s: String) -> Result<Self, Self::Error> {
        match NormalizedUrl::parse(&s) {
            Err(UrlError::Scheme { scheme }) if SERVICE_SCHEMES.contains(&scheme.as_str()) => {
                let url = Url::parse(s.trim()).map_err(|e| UrlError::Parse(format!("{s:?}: {e}")))?;
                let host = url.host_str().ok_or(UrlError::NoHost)?;
                let port = url.port().ok_or_else(|| UrlError::Parse(format!("{s:?}: a service URL names its port")))?;
                NormalizedUrl::service(&scheme, host, port)
            }
            other => other,
        }
    }
}

/// Schemes of the tasks that talk to something other than a web server (SPEC §9): `dns` (the DNS
/// checks of a domain) and `smtp` (one conversation with a mail server). Such URLs are built only
/// by [`NormalizedUrl::service`]; [`NormalizedUrl::parse`] and [`NormalizedUrl::join`] refuse
/// them, so a link or a start URL can never become one.
pub const SERVICE_SCHEMES: &[&str] = &["dns", "smtp"];

impl NormalizedUrl {
    /// The URL of a task that is not an HTTP request: `smtp://mx.example.net:25/` (the mail server
    /// it talks to) or `dns://example.com:53/` (the domain it checks). The port is always written,
    /// so the task's [`HostKey`] (`mx.example.net:25`) never shares a pace with the same name's
    /// web server.
    pub fn service(scheme: &str, host: &str, port: u16) -> Result<NormalizedUrl, UrlError> {
        if !SERVICE_SCHEMES.contains(&scheme) {
            return Err(UrlError::Scheme { scheme: scheme.to_owned() });
        }
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let valid = !host.is_empty()
            && host.len() <= 253
            && host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
        if !valid {
            return Err(UrlError::Parse(format!("{host:?} is not a host name")));
        }
        let url = Url::parse(&format!("{scheme}://{host}:{port}/")).map_err(|e| UrlError::Parse(e.to_string()))?;
        Ok(NormalizedUrl(url))
    }
}

impl From<NormalizedUrl> for String {
    fn from(u: NormalizedUrl) -> String {
        u.0.into()
    }
}

/// Normalises what the `url` crate leaves alone (it already lower-cases scheme and host, drops
/// the default port and resolves dot segments): drops the fragment, upper-cases percent-encoding
/// hex and decodes percent-encoded unreserved characters (RFC 3986 §2.3: `A-Z a-z 0-9 - . _ ~`)
/// in path and query. The query is otherwise kept as written (no sorting): parameter order can
/// matter to a server, and an audit must not merge URLs a server could tell apart.
pub fn normalize(url: &mut Url) {
    url.set_fragment(None);
    if let Some(path) = normalize_percent(url.path()) {
        url.set_path(&path);
    }
    if let Some(query) = url.query().and_then(normalize_percent) {
        url.set_query(Some(&query));
    }
}

/// The normalised form of `s`, or `None` if it is already normal.
fn normalize_percent(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let needs_work = bytes.windows(3).any(|w| {
        w[0] == b'%'
            && w[1].is_ascii_hexdigit()
            && w[2].is_ascii_hexdigit()
            && (w[1].is_ascii_lowercase() || w[2].is_ascii_lowercase() || is_unreserved(hex_pair(w[1], w[2])))
    });
    if !needs_work {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('%') {
        out.push_str(&rest[..pos]);
        let tail = &rest.as_bytes()[pos..];
        match (tail.get(1), tail.get(2)) {
            (Some(&h), Some(&l)) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => {
                let value = hex_pair(h, l);
                // Decoding a hex digit right after a stray `%` or `%X` would create a new escape
                // (`%a%30` → `%a0`), so that one stays encoded: normalising twice changes nothing.
                let would_form_escape = value.is_ascii_hexdigit() && {
                    let b = out.as_bytes();
                    b.last() == Some(&b'%')
                        || (b.len() >= 2 && b[b.len() - 2] == b'%' && b[b.len() - 1].is_ascii_hexdigit())
                };
                if is_unreserved(value) && !would_form_escape {
                    out.push(char::from(value));
                } else {
                    out.push('%');
                    out.push(char::from(h.to_ascii_uppercase()));
                    out.push(char::from(l.to_ascii_uppercase()));
                }
                // The three bytes are ASCII, so this stays on a char boundary.
                rest = &rest[pos + 3..];
            }
            _ => {
                out.push('%');
                rest = &rest[pos + 1..];
            }
        }
    }
    out.push_str(rest);
    Some(out)
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Value of two ASCII hex digits (callers check `is_ascii_hexdigit` first).
fn hex_pair(h: u8, l: u8) -> u8 {
    fn digit(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => 0,
        }
    }
    digit(h) * 16 + digit(l)
}

/// The unit of politeness: a host name and port (`example.com`, `a.test:8080`), lower-case.
///
/// http and https of one host share one key and therefore one pace: it is one server either way.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HostKey(String);

impl HostKey {
    /// The key of a URL's host.
    #[must_use]
    pub fn of(url: &Url) -> HostKey {
        let host = url.host_str().unwrap_or("").to_ascii_lowercase();
        let key = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host,
        };
        HostKey(key)
    }

    /// Builds a key from its text form (as stored).
    #[must_use]
    pub fn from_raw(s: impl Into<String>) -> HostKey {
        HostKey(s.into())
    }

    /// The text form.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The host name without the port.
    #[must_use]
    pub fn host_name(&self) -> &str {
        match self.0.rsplit_once(':') {
            Some((h, p))
                if !h.is_empty()
                    && !p.is_empty()
                    && p.bytes().all(|c| c.is_ascii_digit())
                    && (h.ends_with(']') || !h.contains(':')) =>
            {
                h
            }
            _ => &self.0,
        }
    }
}

impl fmt::Display for HostKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The www/apex twin of a host: `www.example.com` ↔ `example.com`. None for IP addresses, for
/// `localhost`-style single labels, and when the host is neither the registrable domain nor its
/// `www.` child (a subdomain such as `blog.example.com` has no twin).
#[must_use]
pub fn twin_host(url: &Url) -> Option<String> {
    let host = match url.host()? {
        Host::Domain(d) => d.to_ascii_lowercase(),
        Host::Ipv4(_) | Host::Ipv6(_) => return None,
    };
    let registrable = psl::domain_str(&host)?.to_ascii_lowercase();
    if host == registrable {
        Some(format!("www.{host}"))
    } else if host.strip_prefix("www.") == Some(registrable.as_str()) {
        Some(registrable)
    } else {
        None
    }
}

/// A site's scope: its start host and that host's www/apex twin, over http and https, same port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    hosts: Vec<String>,
    port: Option<u16>,
}

impl Scope {
    /// The scope of a site that starts at `start`.
    #[must_use]
    pub fn of(start: &Url) -> Scope {
        let mut hosts = vec![start.host_str().unwrap_or("").to_ascii_lowercase()];
        if let Some(t) = twin_host(start) {
            hosts.push(t);
        }
        Scope { hosts, port: start.port() }
    }

    /// Whether `url` belongs to this site.
    #[must_use]
    pub fn contains(&self, url: &Url) -> bool {
        let Some(h) = url.host_str() else {
            return false;
        };
        matches!(url.scheme(), "http" | "https")
            && self.hosts.iter().any(|s| s.eq_ignore_ascii_case(h))
            && (url.port() == self.port || self.port.is_none() && url.port().is_none())
    }

    /// The host keys of the site: start host first, then the twin if any.
    #[must_use]
    pub fn host_keys(&self) -> Vec<HostKey> {
        self.hosts
            .iter()
            .map(|h| match self.port {
                Some(p) => HostKey(format!("{h}:{p}")),
                None => HostKey(h.clone()),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> String {
        NormalizedUrl::parse(s).expect("valid").to_string()
    }

    #[test]
    fn normalisation_table() {
        let cases = [
            ("HTTP://Example.COM:80/a/./b/../c#frag", "http://example.com/a/c"),
            ("https://example.com:443/", "https://example.com/"),
            ("http://example.com/%7euser/%2f%41?q=%7e%2a", "http://example.com/~user/%2FA?q=~%2A"),
            ("http://example.com", "http://example.com/"),
            ("http://example.com/caf%c3%a9", "http://example.com/caf%C3%A9"),
            ("http://example.com/a%", "http://example.com/a%"),
            ("http://example.com/a%2", "http://example.com/a%2"),
            ("http://example.com/?b=2&a=1", "http://example.com/?b=2&a=1"),
            ("http://example.com/%a%30", "http://example.com/%a%30"),
            ("http://example.com/%%41", "http://example.com/%%41"),
            ("http://www.example.com/x/", "http://www.example.com/x/"),
        ];
        for (input, want) in cases {
            assert_eq!(n(input), want, "normalising {input}");
        }
    }

    #[test]
    fn rejects_what_is_not_crawlable() {
        assert!(matches!(NormalizedUrl::parse("mailto:a@b.c"), Err(UrlError::Scheme { .. })));
        assert!(matches!(NormalizedUrl::parse("not a url"), Err(UrlError::Parse(_))));
        assert!(matches!(NormalizedUrl::parse("http://u:p@example.com/"), Err(UrlError::Credentials)));
        let long = format!("http://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert!(matches!(NormalizedUrl::parse(&long), Err(UrlError::TooLong { .. })));
    }

    #[test]
    fn service_urls_are_built_not_parsed() {
        let smtp = NormalizedUrl::service("smtp", "MX1.Example.NET.", 25).expect("a mail server");
        assert_eq!(smtp.as_str(), "smtp://mx1.example.net:25/");
        assert_eq!(smtp.host_key(), HostKey::from_raw("mx1.example.net:25"));
        assert_eq!(smtp.host_key().host_name(), "mx1.example.net");
        let dns = NormalizedUrl::service("dns", "example.com", 53).expect("a domain");
        assert_eq!(dns.host_key().as_str(), "example.com:53");
        // Stored and read back (tasks in Redis, events).
        let back = NormalizedUrl::try_from(smtp.to_string()).expect("reads back");
        assert_eq!(back, smtp);
        // Never from a link or a start URL.
        assert!(matches!(NormalizedUrl::parse("smtp://mx.example.net:25/"), Err(UrlError::Scheme { .. })));
        let base = Url::parse("http://a.test/").expect("base");
        assert!(NormalizedUrl::join(&base, "dns://example.com:53/").is_err());
        assert!(NormalizedUrl::service("ftp", "a.test", 21).is_err());
        assert!(NormalizedUrl::service("smtp", "a b", 25).is_err());
        assert!(NormalizedUrl::service("smtp", "", 25).is_err());
        assert!(NormalizedUrl::try_from("smtp://mx.example.net/".to_owned()).is_err(), "a service URL names its port");
    }

    #[test]
    fn relative_resolution() {
        let base = Url::parse("http://example.com/a/b/c.html").expect("base");
        let cases = [
            ("../d", "http://example.com/a/d"),
            ("./e?x=1", "http://example.com/a/b/e?x=1"),
            ("//other.org/x", "http://other.org/x"),
            ("?q", "http://example.com/a/b/c.html?q"),
            ("#top", "http://example.com/a/b/c.html"),
            ("/abs", "http://example.com/abs"),
        ];
        for (href, want) in cases {
            assert_eq!(NormalizedUrl::join(&base, href).expect("joins").as_str(), want, "{href}");
        }
    }

    #[test]
    fn twins_and_scope() {
        let u = |s: &str| Url::parse(s).expect("url");
        assert_eq!(twin_host(&u("http://example.com/")).as_deref(), Some("www.example.com"));
        assert_eq!(twin_host(&u("http://www.example.co.uk/")).as_deref(), Some("example.co.uk"));
        assert_eq!(twin_host(&u("http://blog.example.com/")), None);
        assert_eq!(twin_host(&u("http://127.0.0.1/")), None);
        assert_eq!(twin_host(&u("http://a.test:8080/")).as_deref(), Some("www.a.test"));
        let scope = Scope::of(&u("https://a.test:8080/"));
        assert!(scope.contains(&u("http://www.a.test:8080/x")));
        assert!(scope.contains(&u("https://A.test:8080/")));
        assert!(!scope.contains(&u("http://a.test:9090/")));
        assert!(!scope.contains(&u("http://blog.a.test:8080/")));
        assert_eq!(scope.host_keys(), vec![HostKey::from_raw("a.test:8080"), HostKey::from_raw("www.a.test:8080")]);
        assert_eq!(HostKey::from_raw("a.test:8080").host_name(), "a.test");
        assert_eq!(HostKey::from_raw("a.test").host_name(), "a.test");
    }
}
