//! API tokens with scopes (issue 40, schema version 13): made, listed, removed and looked up by
//! their secret, which is stored only as its SHA-256.
//!
//! Why SHA-256 and not a slow password hash (Argon2, bcrypt): the secret is 32 bytes from the
//! operating system's CSPRNG, not something a person chose, so there is no dictionary to try and
//! 2^256 guesses to make; a slow hash protects low-entropy secrets and would only cost every API
//! request its time. The hash is what a stolen copy of the database holds: no usable secret.
//!
//! Why the lookup by hash needs no constant-time comparison: SQLite compares hashes of what the
//! client sent, and how long that takes tells an attacker how many leading bytes of a SHA-256
//! matched, which says nothing about any secret (finding a secret for a hash prefix is a preimage
//! search).

use crate::read::{SITE_COLUMNS, site_from_row};
use crate::{AuditDb, DbError, SiteSummary, int, sql_err, to_json, uint};
use shoal_shared::ids::{AuditId, TokenId};
use shoal_shared::time::UnixMs;
use shoal_shared::token::{HostList, Scope};
use std::fmt;

/// What every secret starts with, so a leaked one is recognisable (secret scanners, logs) and a
/// bearer value of another shape is refused without a database read.
pub const SECRET_PREFIX: &str = "shoal_";
/// Random bytes in a secret (256 bits), written as 64 hex digits after [`SECRET_PREFIX`].
const SECRET_BYTES: usize = 32;
/// Tokens one database holds at most (one per customer of a large hosting provider fits).
pub const MAX_TOKENS: u64 = 1_000_000;

/// A token's secret. Shown once, when made ([`Secret::expose`]); `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A new secret from the operating system's CSPRNG.
    ///
    /// # Errors
    /// The random source cannot be read.
    pub fn generate() -> Result<Secret, ring::error::Unspecified> {
        let mut bytes = [0u8; SECRET_BYTES];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)?;
        let mut s = String::with_capacity(SECRET_PREFIX.len() + 2 * SECRET_BYTES);
        s.push_str(SECRET_PREFIX);
        for b in bytes {
            s.push_str(&format!("{b:02x}"));
        }
        Ok(Secret(s))
    }

    /// `given` as a secret if it has a secret's shape (prefix, 64 lowercase hex digits).
    #[must_use]
    pub fn parse(given: &str) -> Option<Secret> {
        let hex = given.strip_prefix(SECRET_PREFIX)?;
        (hex.len() == 2 * SECRET_BYTES && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
            .then(|| Secret(given.to_owned()))
    }

    /// The secret itself: to show once, or to send.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// What the database stores and looks it up by.
    fn sha256(&self) -> Vec<u8> {
        ring::digest::digest(&ring::digest::SHA256, self.0.as_bytes()).as_ref().to_vec()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// A stored token (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRow {
    /// Its id.
    pub id: TokenId,
    /// Its name.
    pub name: String,
    /// What it may do.
    pub scope: Scope,
    /// When it was made.
    pub created_at: UnixMs,
}

/// The sites whose start URL is in a range, of one audit or any (`?3` NULL).
const SITES_IN_RANGE: &str = "WHERE start_url >= ?1 AND start_url < ?2 AND (?3 IS NULL OR audit_id = ?3)";

const TOKEN_COLUMNS: &str = "id, name, scope, hosts_json, created_at_ms";

fn token_from_row(db: &AuditDb, r: &rusqlite::Row<'_>) -> Result<TokenRow, DbError> {
    let op = "read tokens";
    let path = &db.path;
    let id = TokenId(uint(r.get(0).map_err(sql_err(path, op))?));
    let scope: String = r.get(2).map_err(sql_err(path, op))?;
    let hosts_json: String = r.get(3).map_err(sql_err(path, op))?;
    let corrupt = |detail: String| DbError::Corrupt { path: path.clone(), what: "tokens.scope", detail };
    let hosts: Vec<String> =
        serde_json::from_str(&hosts_json).map_err(|e| corrupt(format!("token {id}: hosts {hosts_json:?}: {e}")))?;
    let scope = Scope::parse(&scope, &hosts).map_err(|e| corrupt(format!("token {id}: {e}")))?;
    Ok(TokenRow {
        id,
        name: r.get(1).map_err(sql_err(path, op))?,
        scope,
        created_at: UnixMs(uint(r.get(4).map_err(sql_err(path, op))?)),
    })
}

/// Why a token could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AddTokenError {
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The random source could not be read.
    #[error("cannot read the operating system's random source for a token's secret")]
    Random,
    /// [`MAX_TOKENS`] are stored already.
    #[error("the audit database holds {MAX_TOKENS} tokens already; remove some first")]
    Full,
}

impl AuditDb {
    /// Makes a token: a new secret from the CSPRNG, stored as its SHA-256. The secret is returned
    /// here and never again.
    ///
    /// # Errors
    /// [`AddTokenError`].
    pub fn add_token(&mut self, name: &str, scope: &Scope, now: UnixMs) -> Result<(TokenRow, Secret), AddTokenError> {
        let secret = Secret::generate().map_err(|_| AddTokenError::Random)?;
        let path = &self.path;
        let count: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM tokens", [], |r| r.get(0))
            .map_err(sql_err(path, "count tokens"))?;
        if uint(count) >= MAX_TOKENS {
            return Err(AddTokenError::Full);
        }
        let hosts: Vec<&str> = scope.hosts().iter().map(|h| h.as_str()).collect();
        self.conn
            .execute(
                "INSERT INTO tokens (name, scope, hosts_json, secret_sha256, created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![name, scope.name(), to_json(&hosts), secret.sha256(), int(now.0)],
            )
            .map_err(sql_err(path, "add a token"))?;
        let id = TokenId(uint(self.conn.last_insert_rowid()));
        Ok((TokenRow { id, name: name.to_owned(), scope: scope.clone(), created_at: now }, secret))
    }

    /// Every token, oldest first.
    ///
    /// # Errors
    /// [`DbError::Sql`], or [`DbError::Corrupt`] for a row edited by hand.
    pub fn tokens(&self) -> Result<Vec<TokenRow>, DbError> {
        let op = "read tokens";
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY id"))
            .map_err(sql_err(&self.path, op))?;
        let mut rows = stmt.query([]).map_err(sql_err(&self.path, op))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(sql_err(&self.path, op))? {
            out.push(token_from_row(self, r)?);
        }
        Ok(out)
    }

    /// Removes a token: the next request with its secret is refused. `false` if there was none.
    ///
    /// # Errors
    /// [`DbError::Sql`].
    pub fn remove_token(&mut self, id: TokenId) -> Result<bool, DbError> {
        let n = self
            .conn
            .execute("DELETE FROM tokens WHERE id = ?1", [int(id.0)])
            .map_err(sql_err(&self.path, "remove a token"))?;
        Ok(n > 0)
    }

    /// The token whose secret is `given`, if any (a value without a secret's shape is none, with
    /// no read). One lookup in the hash's unique index.
    ///
    /// # Errors
    /// [`DbError::Sql`], or [`DbError::Corrupt`] for a row edited by hand.
    pub fn token_by_secret(&self, given: &str) -> Result<Option<TokenRow>, DbError> {
        let Some(secret) = Secret::parse(given) else { return Ok(None) };
        let op = "look up a token";
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE secret_sha256 = ?1"))
            .map_err(sql_err(&self.path, op))?;
        let mut rows = stmt.query([secret.sha256()]).map_err(sql_err(&self.path, op))?;
        match rows.next().map_err(sql_err(&self.path, op))? {
            Some(r) => Ok(Some(token_from_row(self, r)?)),
            None => Ok(None),
        }
    }

    /// The sites `hosts` cover ([`HostList::covers`]), of one audit or of all, in audit then site
    /// order. Read by the `sites_by_start_url` index: one range per start host, scheme and "with
    /// or without a port", then checked exactly, so its cost follows the sites found, not the
    /// database.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`].
    pub fn sites_of_hosts(&self, hosts: &HostList, audit: Option<AuditId>) -> Result<Vec<SiteSummary>, DbError> {
        let op = "read a token's sites";
        let path = &self.path;
        // `https://h/…` sorts from `https://h/` to before `https://h0` ('0' follows '/'), and
        // `https://h:port/…` from `https://h:` to before `https://h;` (';' follows ':'). One range
        // per statement: each is a search of the index, where an OR of ranges may not be.
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {SITE_COLUMNS} FROM sites {SITES_IN_RANGE}"))
            .map_err(sql_err(path, op))?;
        let mut out: Vec<SiteSummary> = Vec::new();
        for host in hosts.start_hosts() {
            for scheme in ["http", "https"] {
                for (from, to) in [('/', '0'), (':', ';')] {
                    let params = rusqlite::params![
                        format!("{scheme}://{host}{from}"),
                        format!("{scheme}://{host}{to}"),
                        audit.map(|a| int(a.0))
                    ];
                    let mut rows = stmt.query(params).map_err(sql_err(path, op))?;
                    while let Some(r) = rows.next().map_err(sql_err(path, op))? {
                        let site = site_from_row(r, path)?;
                        if hosts.covers(&site.start_url) {
                            out.push(site);
                        }
                    }
                }
            }
        }
        out.sort_by_key(|s| (s.audit, s.id));
        out.dedup_by_key(|s| s.id);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A site token's sites are a search of `sites_by_start_url`, never a scan of every site.
    #[test]
    fn a_site_tokens_sites_are_read_by_index() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = AuditDb::open(&dir.path().join("a.db")).expect("open");
        for audit in [None, Some(1_i64)] {
            let sql = format!("EXPLAIN QUERY PLAN SELECT {SITE_COLUMNS} FROM sites {SITES_IN_RANGE}");
            let mut stmt = db.conn.prepare(&sql).expect("explain");
            let rows = stmt
                .query_map(rusqlite::params!["https://a/", "https://a0", audit], |r| r.get::<_, String>(3))
                .expect("a plan");
            let steps: Vec<String> = rows.map(|r| r.expect("a step")).collect();
            assert!(
                steps.len() == 1 && steps[0].starts_with("SEARCH") && steps[0].contains("INDEX sites_by_start_url"),
                "{steps:?}"
            );
        }
    }

    #[test]
    fn secrets_have_one_shape_and_differ() {
        let a = Secret::generate().expect("random");
        let b = Secret::generate().expect("random");
        assert_ne!(a, b);
        assert_eq!(a.expose().len(), SECRET_PREFIX.len() + 64);
        assert_eq!(Secret::parse(a.expose()), Some(a.clone()));
        assert!(!format!("{a:?}").contains(&a.expose()[SECRET_PREFIX.len()..]), "Debug hides it");
        for bad in
            ["", "shoal_", "shoal_XYZ", &a.expose().to_uppercase(), &a.expose()[1..], &format!("{}0", a.expose())]
        {
            assert_eq!(Secret::parse(bad), None, "{bad:?}");
        }
    }
}
