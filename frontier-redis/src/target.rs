//! Where the frontier's Redis is and how to trust it: the URL (`redis://`, `rediss://` for TLS,
//! `redis+unix://`; a password or ACL user in it is used) and, for TLS, the certificate
//! authority to verify the server against when it is not one the system trusts (`--redis-ca`).

use redis::{Client, RedisError, TlsCertificates};

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
    #[error("a Redis CA certificate was given, but {url} does not use TLS (rediss://)")]
    CaWithoutTls {
        /// The URL, password redacted.
        url: String,
    },
}

impl RedisTarget {
    /// The server at `url`, verified (for `rediss://`) against the system's certificate
    /// authorities.
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
        if target.url.starts_with("rediss://") {
            Ok(target)
        } else {
            Err(TargetError::CaWithoutTls { url: target.redacted() })
        }
    }

    /// The URL with its password replaced by `***`, for messages and logs.
    #[must_use]
    pub fn redacted(&self) -> String {
        crate::redact(&self.url)
    }

    /// A client for the target (nothing is connected yet).
    pub(crate) fn client(&self) -> Result<Client, RedisError> {
        match &self.ca_pem {
            None => Client::open(self.url.as_str()),
            Some(pem) => Client::build_with_tls(
                self.url.as_str(),
                TlsCertificates { client_tls: None, root_cert: Some(pem.clone()) },
            ),
        }
    }
}
