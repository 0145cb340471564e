//! The registry of live browser workers: who can claim browser tasks
//! ([`Frontier::claim_browser`](super::Frontier::claim_browser)) now.
//!
//! Why: browser tasks are claimed only by workers started with `--browser`. Without one, an audit
//! that needs a browser ([`SiteLimits::needs_browser`](crate::task::SiteLimits::needs_browser))
//! would crawl and then wait forever for its browser pages; the coordinator asks this registry at
//! submit and refuses such an audit instead. A worker announces itself with an expiry and renews
//! it with its heartbeat, so a worker that dies is no longer counted a little later, and nothing
//! is kept of workers that are gone: each read drops the expired entries (the Redis back end's
//! sorted set, `…:bworkers`, also expires whole after the last announcement).

use super::FrontierSettings;
use crate::ids::WorkerId;
use crate::time::UnixMs;
use std::collections::HashMap;
use std::time::Duration;

/// An announcement lasts this many lease times. The heartbeat that renews it beats every third of
/// a lease time, so several beats in a row may fail (a Redis hiccup) before a live worker stops
/// being counted; a dead one stops being counted within this time.
pub const BROWSER_WORKER_TTL_LEASES: u32 = 3;

impl FrontierSettings {
    /// How long a browser worker's announcement lasts ([`BROWSER_WORKER_TTL_LEASES`] lease times).
    #[must_use]
    pub fn browser_worker_ttl(&self) -> Duration {
        self.lease_ttl().saturating_mul(BROWSER_WORKER_TTL_LEASES)
    }

    /// When an announcement made at `now` expires: it is live at every time before this one.
    #[must_use]
    pub fn browser_worker_expiry(&self, now: UnixMs) -> UnixMs {
        now.plus(self.browser_worker_ttl())
    }
}

/// The embedded frontier's registry: each announced worker with the time its announcement
/// expires. Holds only workers announced within the last TTL once read
/// ([`BrowserWorkers::live`]).
#[derive(Debug, Default)]
pub struct BrowserWorkers {
    expiry: HashMap<WorkerId, UnixMs>,
}

impl BrowserWorkers {
    /// Records `worker` as live until `until` (replacing its earlier announcement).
    pub fn announce(&mut self, worker: &WorkerId, until: UnixMs) {
        self.expiry.insert(worker.clone(), until);
    }

    /// Forgets `worker` (its clean shutdown).
    pub fn withdraw(&mut self, worker: &WorkerId) {
        self.expiry.remove(worker);
    }

    /// The workers live at `now` (their announcement expires after it); the expired ones are
    /// dropped.
    pub fn live(&mut self, now: UnixMs) -> usize {
        self.expiry.retain(|_, until| *until > now);
        self.expiry.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announcement_lasts_three_lease_times_and_no_longer() {
        let settings = FrontierSettings { lease_ttl_ms: 10_000, ..FrontierSettings::default() };
        assert_eq!(settings.browser_worker_expiry(UnixMs(1_000)), UnixMs(31_000));
        let mut reg = BrowserWorkers::default();
        let a = WorkerId("a".into());
        reg.announce(&a, settings.browser_worker_expiry(UnixMs(1_000)));
        assert_eq!(reg.live(UnixMs(30_999)), 1);
        assert_eq!(reg.live(UnixMs(31_000)), 0);
        assert!(reg.expiry.is_empty(), "an expired worker is dropped when read");
    }
}
