//! Where the frontier's Redis is and how to trust it: the URL (`redis://`, `rediss://` for TLS,
//! `redis+unix://`; a password or ACL user in it is used; `redis+sentinel://` and
//! `rediss+sentinel://` for the master a group of Sentinels names) and, for TLS, the certificate
//! authority to verify the servers against when it is not one the system trusts (`--redis-ca`).

use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{Client, ConnectionAddr, RedisError, TlsCertificates, TlsMode};

/// The Sentinels' port when a URL names none (Redis' default for `--sentinel`).
pub const SENTINEL_PORT: u16 = 26379;

/// A Redis server to connect to.
#[derive(Clone)]
pub struct RedisTarget {
    url: String,
    /// PEM certificates to trust instead of the system's (`rediss://` only).
    ca_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for RedisTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTarget").field("url", &self.redacted()).field("ca", &self.ca_pem.is_some()).finish()
    }
}

/// Why a target cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// A CA was given for a URL that does not use TLS: it would be ignored, which hides a
    /// mistake (a `redis://` URL meant to be `rediss://`).
    #[error("a Redis CA certificate was given, but {url} does not use TLS (rediss:// or rediss+sentinel://)")]
    CaWithoutTls {
        /// The URL, password redacted.
        url: String,
    },
    /// A `redis+sentinel://` URL that does not say which Sentinels or which service.
    #[error(
        "{url}: {why} (the form is redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/SERVICE[?sentinel_password=P])"
    )]
    BadSentinelUrl {
        /// The URL, passwords redacted.
        url: String,
        /// What is wrong with it.
        why: String,
    },
}

/// Where a target's master is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// One server, at this URL.
    Server(String),
    /// The master the Sentinels name for a service.
    Sentinels(SentinelGroup),
}

/// A `redis+sentinel://` URL, read.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SentinelGroup {
    /// The Sentinels' addresses, in the URL's order (asked in turn).
    pub(crate) nodes: Vec<(String, u16)>,
    /// The name the Sentinels monitor the master under (`sentinel monitor NAME ...`).
    pub(crate) service: String,
    /// TLS to the Sentinels and to the master (`rediss+sentinel://`).
    pub(crate) tls: bool,
    /// The master's ACL user and password (`requirepass`), from the URL's user part.
    pub(crate) username: Option<String>,
    pub(crate) password: Option<String>,
    /// The Sentinels' own password (`sentinel_password=`), when they have one.
    pub(crate) sentinel_password: Option<String>,
}

impl std::fmt::Debug for SentinelGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelGroup")
            .field("nodes", &self.nodes)
            .field("service", &self.service)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

/// `%xx` escapes of a URL part decoded (a password may hold `@`, `:` or `,` escaped).
fn unescape(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map_or_else(|| s.to_owned(), |(_, v)| v.into_owned())
}

impl SentinelGroup {
    /// Reads a `redis+sentinel://` or `rediss+sentinel://` URL (`None` for any other scheme).
    fn parse(url: &str) -> Option<Result<SentinelGroup, String>> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("redis+sentinel://") {
            (false, r)
        } else if let Some(r) = url.strip_prefix("rediss+sentinel://") {
            (true, r)
        } else {
            return None;
        };
        Some(SentinelGroup::parse_rest(tls, rest))
    }

    fn parse_rest(tls: bool, rest: &str) -> Result<SentinelGroup, String> {
        let (authority, path) = rest.split_once('/').ok_or("no /SERVICE after the Sentinels' addresses")?;
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let service = unescape(path.trim_end_matches('/'));
        if service.is_empty() || service.contains('/') {
            return Err("the path must be the service's name, as the Sentinels monitor it".to_owned());
        }
        let (user, hosts) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (username, password) = match user.map(|u| u.split_once(':').unwrap_or((u, ""))) {
            None => (None, None),
            Some((u, p)) => {
                let some = |s: &str| (!s.is_empty()).then(|| unescape(s));
                (some(u), some(p))
            }
        };
        let mut nodes = Vec::new();
        for node in hosts.split(',') {
            let (host, port) = if let Some(v6) = node.strip_prefix('[') {
                let (h, after) = v6.split_once(']').ok_or_else(|| format!("{node:?}: no ] after an IPv6 address"))?;
                (h, after.strip_prefix(':'))
            } else {
                match node.rsplit_once(':') {
                    Some((h, p)) => (h, Some(p)),
                    None => (node, None),
                }
            };
            if host.is_empty() {
                return Err(format!("{node:?}: no host"));
            }
            let port = match port {
                None => SENTINEL_PORT,
                Some(p) => p.parse().ok().filter(|p| *p > 0).ok_or_else(|| format!("{node:?}: bad port {p:?}"))?,
            };
            nodes.push((host.to_owned(), port));
        }
        let mut sentinel_password = None;
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "sentinel_password" => sentinel_password = Some(v.into_owned()),
                other => return Err(format!("unknown option {other:?} (known: sentinel_password)")),
            }
        }
        Ok(SentinelGroup { nodes, service, tls, username, password, sentinel_password })
    }

    /// A client that asks the Sentinels for the master (nothing is connected yet).
    pub(crate) fn client(&self, ca_pem: Option<&[u8]>) -> Result<SentinelClient, RedisError> {
        let certs = || TlsCertificates { client_tls: None, root_cert: ca_pem.map(<[u8]>::to_vec) };
        let addrs = self.nodes.iter().map(|(host, port)| {
            if self.tls {
                ConnectionAddr::TcpTls { host: host.clone(), port: *port, insecure: false, tls_params: None }
            } else {
                ConnectionAddr::Tcp(host.clone(), *port)
            }
        });
        let mut b = SentinelClientBuilder::new(addrs, &self.service, SentinelServerType::Master)?;
        if let Some(u) = &self.username {
            b = b.set_client_to_redis_username(u);
        }
        if let Some(p) = &self.password {
            b = b.set_client_to_redis_password(p);
        }
        if let Some(p) = &self.sentinel_password {
            b = b.set_client_to_sentinel_password(p);
        }
        if self.tls {
            b = b.set_client_to_redis_tls_mode(TlsMode::Secure).set_client_to_sentinel_tls_mode(TlsMode::Secure);
            if ca_pem.is_some() {
                b = b.set_client_to_redis_certificates(certs()).set_client_to_sentinel_certificates(certs());
            }
        }
        b.build()
    }
}

impl RedisTarget {
    /// The server at `url`, verified (for `rediss://`) against the system's certificate
    /// authorities. A `redis+sentinel://` URL is read when it is used ([`RedisTarget::check`]
    /// says early whether it can be).
    #[must_use]
    pub fn new(url: impl Into<String>) -> RedisTarget {
        RedisTarget { url: url.into(), ca_pem: None }
    }

    /// The server at `url`, verified against the certificates of `ca_pem` (PEM) only.
    ///
    /// # Errors
    /// [`TargetError::CaWithoutTls`] when `url` is not a `rediss://` URL.
    pub fn with_ca(url: impl Into<String>, ca_pem: Vec<u8>) -> Result<RedisTarget, TargetError> {
        let target = RedisTarget { url: url.into(), ca_pem: Some(ca_pem) };
        if target.url.starts_with("rediss://") || target.url.starts_with("rediss+sentinel://") {
            Ok(target)
        } else {
            Err(TargetError::CaWithoutTls { url: target.redacted() })
        }
    }

    /// Whether the URL can be used as it is written (a Sentinel URL read; a server URL is checked
    /// by the Redis client when it connects).
    ///
    /// # Errors
    /// [`TargetError::BadSentinelUrl`], saying what is wrong.
    pub fn check(&self) -> Result<(), TargetError> {
        self.place().map(|_| ())
    }

    /// Where the target's master is.
    pub(crate) fn place(&self) -> Result<Place, TargetError> {
        match SentinelGroup::parse(&self.url) {
            None => Ok(Place::Server(self.url.clone())),
            Some(Ok(g)) => Ok(Place::Sentinels(g)),
            Some(Err(why)) => Err(TargetError::BadSentinelUrl { url: self.redacted(), why }),
        }
    }

    /// The CA certificates to trust, if given.
    pub(crate) fn ca_pem(&self) -> Option<&[u8]> {
        self.ca_pem.as_deref()
    }

    /// The URL with its passwords replaced by `***`, for messages and logs.
    #[must_use]
    pub fn redacted(&self) -> String {
        redact(&self.url)
    }

    /// A client for a one-server target (nothing is connected yet).
    pub(crate) fn server_client(url: &str, ca_pem: Option<&[u8]>) -> Result<Client, RedisError> {
        match ca_pem {
            None => Client::open(url),
            Some(pem) => {
                Client::build_with_tls(url, TlsCertificates { client_tls: None, root_cert: Some(pem.to_vec()) })
            }
        }
    }
}

/// A Redis URL without its passwords, for messages and logs.
#[must_use]
pub fn redact(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://")
        && scheme.ends_with("+sentinel")
    {
        // Several hosts (`a:1,b:2`) are no URL to the `url` crate: the user part is cut by hand.
        let (authority, tail) = rest.split_once('/').unwrap_or((rest, ""));
        let authority = match authority.rsplit_once('@') {
            Some((user, hosts)) => match user.split_once(':') {
                Some((name, _)) => format!("{name}:***@{hosts}"),
                None => format!("{user}@{hosts}"),
            },
            None => authority.to_owned(),
        };
        let tail = match tail.split_once("sentinel_password=") {
            Some((before, after)) => {
                let rest = after.find('&').map_or("", |i| &after[i..]);
                format!("{before}sentinel_password=***{rest}")
            }
            None => tail.to_owned(),
        };
        return format!("{scheme}://{authority}/{tail}");
    }
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(url: &str) -> SentinelGroup {
        match RedisTarget::new(url).place() {
            Ok(Place::Sentinels(g)) => g,
            other => panic!("{url}: {other:?}"),
        }
    }

    #[test]
    fn a_sentinel_url_names_every_sentinel_and_the_service() {
        let g = group("redis+sentinel://10.0.0.1:26380,sentinel-b,[::1]:5000/shoal");
        assert_eq!(
            g.nodes,
            vec![("10.0.0.1".to_owned(), 26380), ("sentinel-b".to_owned(), SENTINEL_PORT), ("::1".to_owned(), 5000)]
        );
        assert_eq!(g.service, "shoal");
        assert!(!g.tls);
        assert_eq!((g.username, g.password, g.sentinel_password), (None, None, None));
    }

    #[test]
    fn passwords_go_to_the_master_and_the_sentinels_apart() {
        let g = group("rediss+sentinel://app:p%40ss@a:1,b:2/main?sentinel_password=s3");
        assert!(g.tls);
        assert_eq!(g.username.as_deref(), Some("app"));
        assert_eq!(g.password.as_deref(), Some("p@ss"));
        assert_eq!(g.sentinel_password.as_deref(), Some("s3"));
        let g = group("redis+sentinel://:secret@a/main");
        assert_eq!((g.username, g.password.as_deref()), (None, Some("secret")));
    }

    #[test]
    fn a_bad_sentinel_url_says_what_is_wrong_without_its_password() {
        for (url, says) in [
            ("redis+sentinel://a:1,b:2", "no /SERVICE"),
            ("redis+sentinel://a:1/", "service's name"),
            ("redis+sentinel://:pw@a:x/svc", "bad port"),
            ("redis+sentinel://:pw@a:1,/svc", "no host"),
            ("redis+sentinel://a:1/svc?db=2", "unknown option"),
        ] {
            let e = RedisTarget::new(url).check().expect_err(url).to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains(":pw@"), "{url}: the password shows: {e}");
        }
    }

    #[test]
    fn other_urls_are_one_server() {
        for url in ["redis://127.0.0.1:6379/0", "rediss://:pw@host:6380", "redis+unix:///run/redis.sock"] {
            assert_eq!(RedisTarget::new(url).place().expect(url), Place::Server(url.to_owned()));
        }
    }

    #[test]
    fn a_ca_needs_tls_to_the_sentinels_too() {
        assert!(RedisTarget::with_ca("rediss+sentinel://a/svc", b"pem".to_vec()).is_ok());
        assert!(RedisTarget::with_ca("redis+sentinel://a/svc", b"pem".to_vec()).is_err());
    }
}
