//! Wall-clock instants as plain numbers, passed in by the caller.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Milliseconds since the Unix epoch.
///
/// A plain number rather than `Instant` because it is shared between processes and machines (leases,
/// not-before times, the next allowed start of a host) and stored in Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct UnixMs(pub u64);

impl UnixMs {
    /// The instant `d` after `self`, saturating instead of overflowing.
    #[must_use]
    pub fn plus(self, d: Duration) -> UnixMs {
        UnixMs(self.0.saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)))
    }

    /// How long from `earlier` until `self`; zero if `earlier` is later.
    #[must_use]
    pub fn since(self, earlier: UnixMs) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }

    /// The current wall-clock time. The only place the clock is read in this crate, kept here so
    /// callers outside it (binaries, workers) read it one way; pure code takes `now` as a parameter.
    #[must_use]
    pub fn now() -> UnixMs {
        let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        UnixMs(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

impl std::fmt::Display for UnixMs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}ms", self.0)
    }
}
