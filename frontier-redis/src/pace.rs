//! The hosts this process lately found clear for a batch's next request, so the leases of one
//! host it runs side by side share one pace read instead of each making its own.
//!
//! A batch asks before each further request whether its host is still unslowed
//! ([`shoal_shared::frontier::Frontier::further_may_start`]): one round trip per request on hosts
//! that answer in a few milliseconds, several times a second for each of the host's slots. An
//! answer younger than [`FRESH`] is used again. That lets a 429, a hold or a slowed latency guard
//! that another process's completion wrote reach this process's batches up to [`FRESH`] later:
//! well inside the time a request already on its way takes to arrive, which any lease claimed
//! before the completion has anyway. This process's own answers that slow a host forget it at once
//! ([`PaceMemo::forget`]), before their completion is even sent.

use shoal_shared::url::HostKey;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a host found clear stays clear for this process's batches.
pub(crate) const FRESH: Duration = Duration::from_millis(10);
/// Hosts remembered before the stale ones are swept (each is only of use for [`FRESH`]).
const SWEEP_AT: usize = 1_024;

/// When each host was last read clear (the read's start).
#[derive(Debug, Default)]
pub(crate) struct PaceMemo {
    clear: HashMap<HostKey, Instant>,
}

impl PaceMemo {
    /// Whether `host` was read clear less than [`FRESH`] before `now`.
    pub(crate) fn fresh(&self, host: &HostKey, now: Instant) -> bool {
        self.clear.get(host).is_some_and(|at| now.saturating_duration_since(*at) < FRESH)
    }

    /// `host` was read clear by a read sent at `at`.
    pub(crate) fn clear_at(&mut self, host: &HostKey, at: Instant) {
        if self.clear.len() >= SWEEP_AT {
            self.clear.retain(|_, t| at.saturating_duration_since(*t) < FRESH);
        }
        self.clear.insert(host.clone(), at);
    }

    /// `host` is no longer known clear (it was read slowed, or this process's answer slowed it).
    pub(crate) fn forget(&mut self, host: &HostKey) {
        self.clear.remove(host);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.clear.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_shared::url::NormalizedUrl;

    fn host(i: usize) -> HostKey {
        NormalizedUrl::parse(&format!("http://h{i}.test/")).expect("test URL").host_key()
    }

    #[test]
    fn a_clear_read_serves_for_fresh_only_and_a_slowing_answer_ends_it() {
        let (mut memo, t0) = (PaceMemo::default(), Instant::now());
        assert!(!memo.fresh(&host(1), t0));
        memo.clear_at(&host(1), t0);
        assert!(memo.fresh(&host(1), t0 + FRESH / 2));
        assert!(!memo.fresh(&host(1), t0 + FRESH));
        assert!(!memo.fresh(&host(2), t0));
        memo.clear_at(&host(1), t0 + FRESH);
        memo.forget(&host(1));
        assert!(!memo.fresh(&host(1), t0 + FRESH));
    }

    #[test]
    fn stale_hosts_are_swept() {
        let (mut memo, t0) = (PaceMemo::default(), Instant::now());
        for i in 0..SWEEP_AT {
            memo.clear_at(&host(i), t0);
        }
        memo.clear_at(&host(SWEEP_AT), t0 + FRESH);
        assert_eq!(memo.len(), 1);
    }
}
