//! The embedded frontier's shared result cache: what the Redis back end keeps under its cache keys
//! (external link checks, robots.txt of other sites' hosts), with their expiry, bounded in size.

use super::Map;
use crate::frontier::audit_of_cache_key;
use crate::ids::AuditId;
use crate::time::UnixMs;
use std::time::Duration;

/// Entries the shared result cache holds at most in one process (external checks, robots.txt of
/// other sites' hosts); expired ones are dropped first, and past this new results are not cached.
const MAX_CACHE_ENTRIES: usize = 200_000;

/// Values by key with the time each expires.
#[derive(Debug, Default)]
pub(super) struct ResultCache {
    entries: Map<String, (Vec<u8>, UnixMs)>,
}

impl ResultCache {
    /// The live value of `key`; an expired one is dropped on the way.
    pub(super) fn get(&mut self, key: &str, now: UnixMs) -> Option<Vec<u8>> {
        match self.entries.get(key) {
            Some((v, expires)) if *expires > now => Some(v.clone()),
            Some(_) => {
                self.entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Stores `value` unless a live value is there already; true when it stored it.
    pub(super) fn add(&mut self, key: &str, value: Vec<u8>, now: UnixMs, ttl: Duration) -> bool {
        let live = self.entries.get(key).is_some_and(|(_, expires)| *expires > now);
        if !live {
            self.insert(key, value, now, ttl);
        }
        !live
    }

    /// Stores `value` for `ttl`, replacing what was there.
    pub(super) fn put(&mut self, key: &str, value: Vec<u8>, now: UnixMs, ttl: Duration) {
        self.insert(key, value, now, ttl);
    }

    /// Drops the entries scoped to `audit` (its key names it) when the audit is forgotten.
    pub(super) fn forget_audit(&mut self, audit: AuditId) {
        self.entries.retain(|k, _| audit_of_cache_key(k) != Some(audit));
    }

    /// Stores an entry, dropping expired ones first when the cache is full; past
    /// [`MAX_CACHE_ENTRIES`] live entries, new ones are not cached.
    fn insert(&mut self, key: &str, value: Vec<u8>, now: UnixMs, ttl: Duration) {
        if self.entries.len() >= MAX_CACHE_ENTRIES {
            self.entries.retain(|_, (_, e)| *e > now);
        }
        if self.entries.len() < MAX_CACHE_ENTRIES || self.entries.contains_key(key) {
            self.entries.insert(key.to_owned(), (value, now.plus(ttl)));
        }
    }
}
