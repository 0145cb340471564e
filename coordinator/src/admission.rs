//! Which sites of the running audits are in the frontier: at most a fixed number at once
//! ([`EngineConfig::max_active_sites`](crate::config::EngineConfig::max_active_sites)); the others wait in the coordinator's memory, in id order,
//! and are seeded as sites end, taking turns between audits.
//!
//! Why: a seeded site costs the frontier its records (about 8 KB in Redis) and the seed script's
//! time, whether or not a worker will reach it soon. Seeding a 100,000-site audit at once took
//! 18 s of Redis CPU and 785 MB of its memory before the first fetch; workers crawl a few
//! hundred sites at a time anyway. With a window, a submit costs database rows and one window of
//! seeds, Redis holds what is being crawled, and a small audit submitted beside a huge one starts
//! at once instead of behind it.
//!
//! Nothing here is durable, and nothing needs to be: a site is waiting exactly when it is running
//! in the database and has no frontier state, which is what [`Coordinator::recover`] reads back
//! after a restart or an emptied Redis.
//!
//! [`Coordinator::recover`]: crate::engine::Coordinator::recover

use crate::config::AuditSettings;
use crate::seed::site_seed;
use shoal_shared::frontier::SiteSeed;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::url::NormalizedUrl;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// Sites in the frontier at once unless configured (`--active-sites`); declared with the
/// configuration it defaults.
pub use crate::config::DEFAULT_MAX_ACTIVE_SITES;

/// One running audit's share: its settings, the sites still waiting, how many are in the frontier.
#[derive(Debug)]
struct AuditShare {
    config: Arc<AuditSettings>,
    waiting: VecDeque<(SiteId, NormalizedUrl)>,
    active: usize,
}

#[derive(Debug, Default)]
struct Inner {
    audits: BTreeMap<AuditId, AuditShare>,
    active: usize,
    /// The audit whose turn it is next (round robin in id order).
    turn: Option<AuditId>,
}

/// The admission window; see the module documentation.
#[derive(Debug)]
pub struct Admission {
    max_active: usize,
    inner: Mutex<Inner>,
}

/// Seeds taken from the window: hand them to the frontier, then to [`Admission::seeded`] (or
/// [`Admission::failed`]).
#[derive(Debug)]
pub struct Taken {
    /// The seeds, in the order taken.
    pub seeds: Vec<SiteSeed>,
}

impl Admission {
    /// A window of `max_active` sites (at least 1).
    #[must_use]
    pub fn new(max_active: usize) -> Admission {
        Admission { max_active: max_active.max(1), inner: Mutex::new(Inner::default()) }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds sites that wait for a place (in the order given), and `active` of the audit's sites
    /// that are in the frontier already (after a restart).
    pub fn add(&self, audit: AuditId, config: Arc<AuditSettings>, sites: Vec<(SiteId, NormalizedUrl)>, active: usize) {
        let mut st = self.lock();
        st.active += active;
        let share =
            st.audits.entry(audit).or_insert_with(|| AuditShare { config, waiting: VecDeque::new(), active: 0 });
        share.active += active;
        share.waiting.extend(sites);
    }

    /// Takes as many waiting sites as there are free places, one audit after the other, and counts
    /// them as active.
    pub fn take(&self) -> Taken {
        let mut st = self.lock();
        let mut free = self.max_active.saturating_sub(st.active);
        let mut seeds = Vec::new();
        while free > 0 {
            let ids: Vec<AuditId> = st.audits.iter().filter(|(_, s)| !s.waiting.is_empty()).map(|(a, _)| *a).collect();
            if ids.is_empty() {
                break;
            }
            // Start after the audit served last, so every audit gets places in turn.
            let from = st.turn.map_or(0, |t| ids.iter().position(|a| *a > t).unwrap_or(0));
            for audit in ids[from..].iter().chain(&ids[..from]) {
                if free == 0 {
                    break;
                }
                let Some(share) = st.audits.get_mut(audit) else { continue };
                let Some((site, start)) = share.waiting.pop_front() else { continue };
                seeds.push(site_seed(*audit, site, &start, &share.config));
                share.active += 1;
                st.active += 1;
                st.turn = Some(*audit);
                free -= 1;
            }
        }
        Taken { seeds }
    }

    /// The frontier seeded `taken`; sites it already held (`seeded` lacks them) were counted
    /// before, so their second count is taken back.
    pub fn seeded(&self, taken: &Taken, seeded: &[SiteId]) {
        let seeded: HashSet<SiteId> = seeded.iter().copied().collect();
        let mut st = self.lock();
        for seed in taken.seeds.iter().filter(|s| !seeded.contains(&s.site)) {
            st.active = st.active.saturating_sub(1);
            if let Some(share) = st.audits.get_mut(&seed.audit) {
                share.active = share.active.saturating_sub(1);
            }
        }
    }

    /// The frontier failed to seed `taken`: its sites wait again, first in line.
    pub fn failed(&self, taken: Taken) {
        let mut st = self.lock();
        for seed in taken.seeds.into_iter().rev() {
            st.active = st.active.saturating_sub(1);
            if let Some(share) = st.audits.get_mut(&seed.audit) {
                share.active = share.active.saturating_sub(1);
                share.waiting.push_front((seed.site, seed.start));
            }
        }
    }

    /// A site of `audit` in the frontier ended: its place is free.
    pub fn ended(&self, audit: AuditId) {
        let mut st = self.lock();
        if let Some(share) = st.audits.get_mut(&audit)
            && share.active > 0
        {
            share.active -= 1;
            st.active -= 1;
        }
    }

    /// The audit ended (done or cancelled): its waiting sites are dropped and its places freed.
    pub fn remove(&self, audit: AuditId) {
        let mut st = self.lock();
        if let Some(share) = st.audits.remove(&audit) {
            st.active -= share.active.min(st.active);
        }
    }

    /// Forgets everything (before [`Coordinator::recover`](crate::engine::Coordinator::recover)
    /// reads it back from the database and the frontier).
    pub fn clear(&self) {
        *self.lock() = Inner::default();
    }

    /// How many of the audit's sites wait for a place.
    #[must_use]
    pub fn waiting(&self, audit: AuditId) -> usize {
        self.lock().audits.get(&audit).map_or(0, |s| s.waiting.len())
    }

    /// How many of `sites` of the audit wait for a place (a site token's view of
    /// [`Admission::waiting`]).
    #[must_use]
    pub fn waiting_among(&self, audit: AuditId, sites: &HashSet<SiteId>) -> usize {
        self.lock().audits.get(&audit).map_or(0, |s| s.waiting.iter().filter(|(id, _)| sites.contains(id)).count())
    }

    /// Sites in the frontier now, over all audits.
    #[must_use]
    pub fn active(&self) -> usize {
        self.lock().active
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sites(audit: u64, n: u64) -> Vec<(SiteId, NormalizedUrl)> {
        (1..=n)
            .map(|i| {
                let site = SiteId(audit * 1000 + i);
                (site, NormalizedUrl::parse(&format!("http://s{site}.test/")).expect("url"))
            })
            .collect()
    }

    fn taken_sites(t: &Taken) -> Vec<u64> {
        t.seeds.iter().map(|s| s.site.0).collect()
    }

    #[test]
    fn the_window_fills_in_turn_and_refills_as_sites_end() {
        let a = Admission::new(4);
        let config = Arc::new(AuditSettings::default());
        a.add(AuditId(1), Arc::clone(&config), sites(1, 5), 0);
        let t = a.take();
        assert_eq!(taken_sites(&t), vec![1001, 1002, 1003, 1004]);
        a.seeded(&t, &t.seeds.iter().map(|s| s.site).collect::<Vec<_>>());
        assert_eq!((a.active(), a.waiting(AuditId(1))), (4, 1));
        // A second audit arrives: it gets the next free places in turn with the first.
        a.add(AuditId(2), Arc::clone(&config), sites(2, 3), 0);
        assert!(a.take().seeds.is_empty(), "no place is free");
        a.ended(AuditId(1));
        a.ended(AuditId(1));
        let t = a.take();
        assert_eq!(taken_sites(&t), vec![2001, 1005]);
        a.seeded(&t, &[SiteId(2001), SiteId(1005)]);
        a.ended(AuditId(1));
        a.ended(AuditId(2));
        let t = a.take();
        assert_eq!(taken_sites(&t), vec![2002, 2003]);
        // The frontier held 2003 already (a replay): it is not counted twice.
        a.seeded(&t, &[SiteId(2002)]);
        assert_eq!(a.active(), 3);
    }

    #[test]
    fn a_failed_seed_waits_again_and_an_ended_audit_frees_its_places() {
        let a = Admission::new(3);
        let config = Arc::new(AuditSettings::default());
        a.add(AuditId(1), Arc::clone(&config), sites(1, 4), 0);
        let t = a.take();
        a.failed(t);
        assert_eq!((a.active(), a.waiting(AuditId(1))), (0, 4));
        assert_eq!(taken_sites(&a.take()), vec![1001, 1002, 1003], "first in line again");
        a.remove(AuditId(1));
        assert_eq!((a.active(), a.waiting(AuditId(1))), (0, 0));
        // After a restart: sites already in the frontier count, the rest wait.
        a.add(AuditId(2), config, sites(2, 3), 2);
        assert_eq!(taken_sites(&a.take()), vec![2001]);
    }
}
