//! Dashboard sessions: what the login form's cookie names, and the CSRF value bound to it.
//!
//! The cookie carries a random session id, not the bearer token: a cookie that leaks (a shared
//! browser profile, a backup) then opens the dashboard for at most [`SESSION_TTL`] and never the
//! JSON API, and logging out really ends it. Sessions live in memory only; a restarted coordinator
//! asks everyone to log in again, which costs a human one form.

use std::collections::HashMap;
use std::io::Read;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The session cookie's name.
pub const COOKIE: &str = "shoal_session";
/// How long a session lasts after login (also the cookie's `Max-Age`).
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Sessions kept at most; logging in past this ends the one closest to expiry. Bounds the memory a
/// holder of the token could make the coordinator spend by logging in in a loop.
const MAX_SESSIONS: usize = 1024;

#[derive(Debug)]
struct Session {
    csrf: String,
    expires: Instant,
}

/// The live sessions, keyed by the cookie's value.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

/// A session just started: the cookie value and the CSRF value forms must echo.
#[derive(Debug, Clone)]
pub(crate) struct NewSession {
    pub(crate) id: String,
    pub(crate) csrf: String,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts a session (after the token was checked).
    ///
    /// # Errors
    /// When the operating system's random source cannot be read.
    pub(crate) fn start(&self) -> std::io::Result<NewSession> {
        let new = NewSession { id: random_hex()?, csrf: random_hex()? };
        let now = Instant::now();
        let mut map = self.lock();
        map.retain(|_, s| s.expires > now);
        while map.len() >= MAX_SESSIONS {
            let Some(oldest) = map.iter().min_by_key(|(_, s)| s.expires).map(|(k, _)| k.clone()) else { break };
            map.remove(&oldest);
        }
        map.insert(new.id.clone(), Session { csrf: new.csrf.clone(), expires: now + SESSION_TTL });
        Ok(new)
    }

    /// The CSRF value of a live session, or `None` for an unknown or expired one.
    pub(crate) fn csrf(&self, id: &str) -> Option<String> {
        let mut map = self.lock();
        let live = map.get(id).map(|s| (s.expires > Instant::now(), s.csrf.clone()));
        match live {
            Some((true, csrf)) => Some(csrf),
            Some((false, _)) => {
                map.remove(id);
                None
            }
            None => None,
        }
    }

    /// Ends a session (logout).
    pub(crate) fn end(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// 256 random bits from the operating system, as 64 hex digits.
fn random_hex() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub(crate) fn cookie<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim_matches('"'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderMap, HeaderValue, header};

    #[test]
    fn sessions_start_check_and_end() {
        let s = Sessions::default();
        let a = s.start().expect("random source");
        let b = s.start().expect("random source");
        assert_eq!(a.id.len(), 64);
        assert_ne!(a.id, b.id);
        assert_ne!(a.id, a.csrf);
        assert_eq!(s.csrf(&a.id).as_deref(), Some(a.csrf.as_str()));
        assert_eq!(s.csrf("nope"), None);
        s.end(&a.id);
        assert_eq!(s.csrf(&a.id), None);
        assert_eq!(s.csrf(&b.id).as_deref(), Some(b.csrf.as_str()));
    }

    #[test]
    fn sessions_are_bounded() {
        let s = Sessions::default();
        let first = s.start().expect("random source");
        for _ in 0..MAX_SESSIONS {
            s.start().expect("random source");
        }
        assert_eq!(s.lock().len(), MAX_SESSIONS);
        assert_eq!(s.csrf(&first.id), None, "the oldest session made room");
    }

    #[test]
    fn cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.append(header::COOKIE, HeaderValue::from_static("a=1; shoal_session=abc ; b=2"));
        assert_eq!(cookie(&h, COOKIE), Some("abc"));
        assert_eq!(cookie(&h, "b"), Some("2"));
        assert_eq!(cookie(&h, "shoal"), None);
        let mut h = HeaderMap::new();
        h.append(header::COOKIE, HeaderValue::from_static("x=1"));
        h.append(header::COOKIE, HeaderValue::from_static("shoal_session=def"));
        assert_eq!(cookie(&h, COOKIE), Some("def"));
    }
}
