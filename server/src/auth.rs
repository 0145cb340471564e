//! Who may use the coordinator: the admin bearer token, checked in one place for the API and the
//! dashboard, the scoped API tokens' rules ([`access`]), and the dashboard's login sessions and
//! login throttle. The dashboard takes the admin token only.
//!
//! The API takes `Authorization: Bearer <token>` only; the dashboard also takes a session cookie
//! set by its login form ([`session`]), whose attempts are throttled ([`throttle`]). Comparisons
//! of secrets run in time that does not depend on how much of the secret was guessed.

pub mod access;
pub mod session;
pub mod throttle;

use axum::http::header;

/// The shortest API token accepted (the coordinator's `--token`, also what `submit` and `status`
/// send, and what the dashboard's login form takes). 16 hex characters are 64 bits: out of reach of
/// guessing through a throttled login form, and of guessing through the API within any lifetime.
pub const MIN_TOKEN_LEN: usize = 16;

/// Why a token is refused (the message never shows the token).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadToken(pub String);

/// Checks the API token: at least [`MIN_TOKEN_LEN`] characters, all visible ASCII (letters,
/// digits, punctuation). Spaces and other characters are refused because they cannot travel
/// intact in an `Authorization` header: HTTP strips spaces at its ends, and a non-ASCII character
/// makes the header unreadable, so such a token would never be accepted. The message never shows
/// the token.
///
/// # Errors
/// [`BadToken`] saying what is wrong and how to make a good token.
pub fn check_token(token: &str) -> Result<(), BadToken> {
    const HOW: &str = "make one with `openssl rand -hex 32`";
    let len = token.chars().count();
    if len == 0 {
        return Err(BadToken(format!("--token (or SHOAL_TOKEN) is required: {HOW}")));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(BadToken(format!(
            "--token (or SHOAL_TOKEN) may hold only visible ASCII characters (letters, digits, punctuation; \
             no spaces): {HOW}"
        )));
    }
    if len < MIN_TOKEN_LEN {
        return Err(BadToken(format!(
            "--token (or SHOAL_TOKEN) is {len} character{} long; it must be at least {MIN_TOKEN_LEN}: {HOW}",
            if len == 1 { "" } else { "s" }
        )));
    }
    Ok(())
}

/// Whether `given` equals the secret `want`, in time that depends only on `given`'s length: the
/// token (or a CSRF value) can be guessed neither byte by byte nor by its length from response
/// times. Every byte of `given` is compared with a byte of `want` (cycling), and the lengths are
/// compared without a branch.
pub fn same(given: &[u8], want: &[u8]) -> bool {
    let Some(&first) = want.first() else { return given.is_empty() };
    let mut diff = u8::from(given.len() != want.len());
    for (i, g) in given.iter().enumerate() {
        // `want` is not empty, so `get` always finds a byte; `first` keeps the loop branch-free.
        diff |= g ^ want.get(i % want.len()).copied().unwrap_or(first);
    }
    std::hint::black_box(diff) == 0
}

/// The value of `Authorization: Bearer <value>`, if the header has that form.
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "))
}

/// Whether `headers` carry `Authorization: Bearer <token>` (constant-time; an empty `token` never
/// matches). Shared with the dashboard, which also accepts the header.
pub fn bearer_ok(headers: &axum::http::HeaderMap, token: &str) -> bool {
    let given = bearer(headers).unwrap_or("");
    !token.is_empty() && same(given.as_bytes(), token.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_compares_whole_values() {
        assert!(same(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!same(b"0123456789abcdeF", b"0123456789abcdef"));
        assert!(!same(b"0123456789abcde", b"0123456789abcdef"), "a prefix");
        assert!(!same(b"0123456789abcdef0", b"0123456789abcdef"), "longer");
        assert!(!same(b"01234567", b"0123456701234567"), "the first half of a repeating token");
        assert!(!same(b"", b"x"));
        assert!(same(b"", b""));
        assert!(!same(b"x", b""));
    }

    #[test]
    fn bearer_needs_the_exact_token() {
        let mut h = axum::http::HeaderMap::new();
        assert!(!bearer_ok(&h, "0123456789abcdef"));
        h.insert(header::AUTHORIZATION, axum::http::HeaderValue::from_static("Bearer 0123456789abcdef"));
        assert!(bearer_ok(&h, "0123456789abcdef"));
        assert!(!bearer_ok(&h, "0123456789abcdeX"));
        assert!(!bearer_ok(&h, ""), "an empty token never matches");
        h.insert(header::AUTHORIZATION, axum::http::HeaderValue::from_static("Bearer "));
        assert!(!bearer_ok(&h, ""), "not even an empty header");
    }
}
