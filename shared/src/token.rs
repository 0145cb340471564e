//! API tokens with scopes (issue 40): what a token besides the coordinator's admin token may do,
//! as types that cannot hold a wrong state, and the API's wire types for managing them.
//!
//! | scope | may |
//! |---|---|
//! | [`Scope::Read`] | every audit's list, status and reports (whole-audit and per-site); no writes |
//! | [`Scope::Submit`] | what `read` may, and submit and cancel audits |
//! | [`Scope::Sites`] | only the sites of its hosts: the audits that hold one (status and totals of those sites alone) and those sites' JSON and HTML reports |
//!
//! Only the admin token manages tokens, schedules and opens the dashboard. A site token's host
//! covers a site whose start host is that host or its www/apex twin ([`twin_host`]), the same pair
//! a site's crawl covers; `blog.example.com` is not covered by `example.com`.
//!
//! Pure: parsing and matching only. The secrets, their hashes and their storage are the audit
//! database's (`shoal_store::tokens`).

use crate::url::twin_host;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Hosts one site token is bound to at most: a customer's few sites, not a directory of them (the
/// token's view is read by index once per host and twin on every request).
pub const MAX_HOSTS: usize = 100;
/// Characters of a token's name at most.
pub const MAX_NAME: usize = 200;

/// Every scope's name, as [`Scope::parse`] takes them and [`Scope::name`] gives them (a test
/// holds the three to these): what the API's document lists for a token's `scope`.
pub const SCOPE_NAMES: [&str; 3] = ["read", "submit", "site"];

/// The API document's schema of a token's `scope`: one of [`SCOPE_NAMES`].
#[cfg(feature = "openapi")]
fn scope_schema() -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(SCOPE_NAMES))
        .description(Some("`read`, `submit` or `site` (docs/api.md, \"Tokens with scopes\")"))
        .build()
}

/// Why a token's scope, host or name is refused (the API answers 400, the CLI exits 3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScopeError {
    /// Not one of the scope names.
    #[error("unknown scope {0:?}: use read, submit or site")]
    UnknownScope(String),
    /// A `site` token without a host.
    #[error("a site token needs at least one host (--host example.com)")]
    NoHosts,
    /// Hosts given for a scope that sees every audit.
    #[error("only a site token is bound to hosts; a {0} token sees every audit (drop --host)")]
    HostsWithoutSite(&'static str),
    /// More than [`MAX_HOSTS`].
    #[error("a site token is bound to at most {MAX_HOSTS} hosts, not {0}")]
    TooManyHosts(usize),
    /// Not a host name or address.
    #[error("{host:?} is not a host: {why} (give a name such as example.com)")]
    BadHost {
        /// As given.
        host: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A name too long or with control characters.
    #[error("a token's name has at most {MAX_NAME} characters and no control characters")]
    BadName,
}

/// A host a site token sees: lower case, IDNA (`bücher.example` is `xn--bcher-kva.example`), no
/// scheme, port or path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct TokenHost(String);

impl TokenHost {
    /// Parses a host as a URL parser would read it after `http://`.
    ///
    /// # Errors
    /// [`ScopeError::BadHost`] for an empty value, a URL, a port or path, or what is no host.
    pub fn parse(given: &str) -> Result<TokenHost, ScopeError> {
        let bad = |why| ScopeError::BadHost { host: given.to_owned(), why };
        let s = given.trim();
        if s.is_empty() {
            return Err(bad("it is empty"));
        }
        if s.contains("://") {
            return Err(bad("it is a URL, not a host"));
        }
        if s.contains(['/', '?', '#', '@', '\\']) || s.chars().any(char::is_whitespace) {
            return Err(bad("a host has no path, query, user or spaces"));
        }
        let url = url::Url::parse(&format!("http://{s}/")).map_err(|_| bad("it does not parse as a host name"))?;
        if url.port().is_some() || (s.contains(':') && !s.starts_with('[')) {
            return Err(bad("a token covers a host on every port; leave the port out"));
        }
        let host = url.host_str().filter(|h| !h.is_empty()).ok_or_else(|| bad("it does not parse as a host name"))?;
        Ok(TokenHost(host.trim_end_matches('.').to_ascii_lowercase()))
    }

    /// The host as URLs spell it.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TokenHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The hosts of a site token: at least one, at most [`MAX_HOSTS`], sorted, no duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct HostList(Vec<TokenHost>);

impl HostList {
    /// Parses and checks the hosts.
    ///
    /// # Errors
    /// [`ScopeError::NoHosts`], [`ScopeError::TooManyHosts`], or the first bad host.
    pub fn new<S: AsRef<str>>(given: &[S]) -> Result<HostList, ScopeError> {
        let mut hosts = given.iter().map(|h| TokenHost::parse(h.as_ref())).collect::<Result<Vec<_>, _>>()?;
        hosts.sort();
        hosts.dedup();
        match hosts.len() {
            0 => Err(ScopeError::NoHosts),
            n if n > MAX_HOSTS => Err(ScopeError::TooManyHosts(n)),
            _ => Ok(HostList(hosts)),
        }
    }

    /// The hosts, sorted.
    #[must_use]
    pub fn hosts(&self) -> &[TokenHost] {
        &self.0
    }

    /// The start hosts whose sites this list covers: each host and its www/apex twin, sorted, no
    /// duplicates (what the audit database looks sites up by).
    #[must_use]
    pub fn start_hosts(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::with_capacity(self.0.len() * 2);
        for h in &self.0 {
            all.push(h.0.clone());
            if let Some(t) = url::Url::parse(&format!("http://{}/", h.0)).ok().as_ref().and_then(twin_host) {
                all.push(t);
            }
        }
        all.sort();
        all.dedup();
        all
    }

    /// Whether the site that starts at `start_url` is one of this list's: its host, or that host's
    /// www/apex twin, is in the list. A start URL that does not parse is nobody's.
    #[must_use]
    pub fn covers(&self, start_url: &str) -> bool {
        let Ok(url) = url::Url::parse(start_url) else { return false };
        let Some(host) = url.host_str().map(|h| h.trim_end_matches('.').to_ascii_lowercase()) else {
            return false;
        };
        let listed = |h: &str| self.0.binary_search_by(|t| t.0.as_str().cmp(h)).is_ok();
        listed(&host) || twin_host(&url).is_some_and(|t| listed(&t))
    }
}

/// What a token other than the admin token may do (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every audit, read only.
    Read,
    /// Every audit, read, submit and cancel.
    Submit,
    /// The sites of these hosts, read only.
    Sites(HostList),
}

impl Scope {
    /// The scope named `name` (`read`, `submit`, `site`), with `hosts` for a site token.
    ///
    /// # Errors
    /// [`ScopeError`] for an unknown name, a site token without hosts, hosts for another scope.
    pub fn parse<S: AsRef<str>>(name: &str, hosts: &[S]) -> Result<Scope, ScopeError> {
        let scope = match name.trim() {
            "read" => Scope::Read,
            "submit" => Scope::Submit,
            "site" => return HostList::new(hosts).map(Scope::Sites),
            other => return Err(ScopeError::UnknownScope(other.to_owned())),
        };
        if hosts.is_empty() { Ok(scope) } else { Err(ScopeError::HostsWithoutSite(scope.name())) }
    }

    /// Its name as the API, the CLI and the database spell it.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Submit => "submit",
            Scope::Sites(_) => "site",
        }
    }

    /// A site token's hosts; none for the others.
    #[must_use]
    pub fn hosts(&self) -> &[TokenHost] {
        match self {
            Scope::Sites(h) => h.hosts(),
            Scope::Read | Scope::Submit => &[],
        }
    }
}

/// Checks a token's name: at most [`MAX_NAME`] characters, no control characters (it is printed
/// in a terminal table).
///
/// # Errors
/// [`ScopeError::BadName`].
pub fn check_name(name: &str) -> Result<(), ScopeError> {
    if name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(ScopeError::BadName);
    }
    Ok(())
}

/// A request to create a token (`POST /v1/tokens`).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRequest {
    /// A name for people (who holds it); empty if absent.
    #[serde(default)]
    pub name: String,
    /// `read`, `submit` or `site`.
    #[cfg_attr(feature = "openapi", schema(schema_with = scope_schema))]
    pub scope: String,
    /// A site token's hosts (at least one); empty for the others.
    #[serde(default)]
    pub hosts: Vec<String>,
}

/// A token as listed: never its secret, which is shown once, when it is made ([`NewToken`]).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenView {
    /// Its id (what `shoal token remove` takes).
    pub id: u64,
    /// Its name.
    pub name: String,
    /// `read`, `submit` or `site`.
    #[cfg_attr(feature = "openapi", schema(schema_with = scope_schema))]
    pub scope: String,
    /// A site token's hosts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// When it was made (ms since the epoch).
    pub created_at_ms: u64,
}

/// A token just made, with its secret: the only time the secret is shown.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewToken {
    /// The token.
    #[serde(flatten)]
    pub token: TokenView,
    /// What to send as `Authorization: Bearer <secret>`.
    pub secret: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_names_are_the_ones_parse_takes_and_name_gives() {
        for name in SCOPE_NAMES {
            let hosts: &[&str] = if name == "site" { &["example.com"] } else { &[] };
            assert_eq!(Scope::parse(name, hosts).map(|s| s.name()), Ok(name));
        }
        for other in ["admin", "Read", "sites", ""] {
            assert!(Scope::parse(other, &["example.com"]).is_err(), "{other:?}");
        }
    }

    #[test]
    fn hosts_are_normalised_and_urls_ports_paths_refused() {
        assert_eq!(TokenHost::parse(" Example.COM ").map(|h| h.0), Ok("example.com".to_owned()));
        assert_eq!(TokenHost::parse("bücher.example").map(|h| h.0), Ok("xn--bcher-kva.example".to_owned()));
        assert_eq!(TokenHost::parse("example.com.").map(|h| h.0), Ok("example.com".to_owned()));
        assert_eq!(TokenHost::parse("127.0.0.1").map(|h| h.0), Ok("127.0.0.1".to_owned()));
        for bad in
            ["", "https://example.com/", "example.com/x", "example.com:8080", "a b", "user@example.com", "exa mple"]
        {
            assert!(matches!(TokenHost::parse(bad), Err(ScopeError::BadHost { .. })), "{bad:?}");
        }
    }

    #[test]
    fn a_site_scope_always_has_hosts_and_others_never() {
        assert_eq!(Scope::parse::<&str>("site", &[]), Err(ScopeError::NoHosts));
        assert_eq!(Scope::parse("read", &["example.com"]), Err(ScopeError::HostsWithoutSite("read")));
        assert_eq!(Scope::parse::<&str>("admin", &[]), Err(ScopeError::UnknownScope("admin".into())));
        assert_eq!(Scope::parse::<&str>("submit", &[]), Ok(Scope::Submit));
        let s = Scope::parse("site", &["b.example", "A.example", "a.example"]).expect("site");
        let hosts: Vec<&str> = s.hosts().iter().map(TokenHost::as_str).collect();
        assert_eq!(hosts, ["a.example", "b.example"], "sorted, deduplicated");
        let many: Vec<String> = (0..=MAX_HOSTS).map(|i| format!("h{i}.example")).collect();
        assert_eq!(Scope::parse("site", &many), Err(ScopeError::TooManyHosts(MAX_HOSTS + 1)));
    }

    #[test]
    fn a_host_covers_itself_and_its_www_twin_only() {
        let list = HostList::new(&["example.com", "shop.example.org"]).expect("hosts");
        for yes in [
            "https://example.com/",
            "http://www.example.com:8080/x",
            "https://EXAMPLE.com/a?b",
            "https://shop.example.org/",
        ] {
            assert!(list.covers(yes), "{yes}");
        }
        for no in [
            "https://blog.example.com/",
            "https://example.net/",
            "https://www.shop.example.org/",
            "not a url",
            "https://example.com.evil.net/",
        ] {
            assert!(!list.covers(no), "{no}");
        }
        assert_eq!(list.start_hosts(), ["example.com", "shop.example.org", "www.example.com"]);
    }

    #[test]
    fn names_are_bounded() {
        assert!(check_name("panel: customer 42").is_ok());
        assert!(check_name(&"x".repeat(MAX_NAME + 1)).is_err());
        assert!(check_name("a\nb").is_err());
    }
}
