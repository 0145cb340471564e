//! The end of a site, and its browser phase (`--browser-pages`): when the crawl has no work left,
//! a site that asked for browser pages publishes [`Event::CrawlDone`] and waits for the
//! coordinator to queue them ([`Frontier::queue_browser`](crate::frontier::Frontier::queue_browser));
//! it is done once they are. Browser tasks wait in a list of their own that only
//! [`Frontier::claim_browser`](crate::frontier::Frontier::claim_browser) reads, one lease per host
//! at a time, under the host's pace and at least [`BROWSER_MIN_GAP`](crate::frontier::BROWSER_MIN_GAP) apart.

use super::{EmbeddedFrontier, Grant, HostEntry, LaneKey, SiteEntry, State};
use crate::frontier::{Claim, LaneRobots, another_round, page_load_gap};
use crate::ids::{LeaseId, SiteId, WorkerId};
use crate::record::Event;
use crate::task::Task;
use crate::time::UnixMs;

/// Where a site stands with its browser pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Crawling (or no browser pages asked for).
    Crawling,
    /// The crawl ended and [`Event::CrawlDone`] was published: waiting for the coordinator.
    Awaiting,
    /// The browser tasks were queued: the site ends when they are done.
    Queued,
    /// A round of the rendered crawl was queued: once it and the crawl of what it found are done,
    /// [`Event::CrawlDone`] is published again ([`crate::frontier::another_round`]).
    Rendering,
}

/// What a site with no work queued or leased does next.
enum Step {
    /// It is done.
    Done,
    /// Its crawl just ended: publish [`Event::CrawlDone`] and wait.
    CrawlDone,
    /// It waits for its browser tasks.
    Wait,
}

fn next_step(site: &mut SiteEntry) -> Step {
    if !site.limits.needs_browser() || site.cancelled {
        return Step::Done;
    }
    match site.browser {
        Phase::Crawling | Phase::Rendering => {
            site.browser = Phase::Awaiting;
            Step::CrawlDone
        }
        Phase::Awaiting => Step::Wait,
        Phase::Queued => Step::Done,
    }
}

impl EmbeddedFrontier {
    pub(super) fn claim_browser_now(&self, worker: &WorkerId, now: UnixMs) -> Claim {
        let mut st = self.lock();
        if st.events.backlogged() {
            return Claim::Wait(now.plus(super::backlog::BACKLOG_WAIT));
        }
        let cap = self.settings.max_in_flight_per_ip;
        let mut earliest: Option<UnixMs> = None;
        let mut pick = None;
        for (i, (key, task)) in st.browser.iter().enumerate() {
            let Some(host) = st.hosts.get(&key.1) else {
                // Its lanes are gone (cannot happen while the site waits for it): take it, the
                // lease carries no address and the worker looks the host up.
                pick = Some(i);
                break;
            };
            if host.browser_lease.is_some() || host.resolving.is_some() {
                continue;
            }
            let Some(ready) = host.pace.ready_at() else { continue };
            if host.ip.is_some_and(|ip| !st.ips.get(&ip).copied().unwrap_or_default().has_room(cap, st.slow_start)) {
                continue;
            }
            let at = ready.max(task.not_before);
            if at > now {
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
                continue;
            }
            pick = Some(i);
            break;
        }
        let Some(i) = pick else {
            return earliest.map_or(Claim::Idle, Claim::Wait);
        };
        let (key, task) = st.browser.remove(i);
        let (expired, robots_at) = st.lanes.get(&key).map_or((0, UnixMs(0)), |l| {
            let robots_at = if l.robots == LaneRobots::Pending { UnixMs(0) } else { l.robots_at };
            (l.expired.get(&task.seen_key()).copied().unwrap_or(0), robots_at)
        });
        let grant = Grant { expired, robots_at, ttl: self.settings.lease_ttl() };
        let floor = page_load_gap(task.kind);
        let lease = st.lease(worker, key.1.clone(), task, now, grant);
        if let Some(h) = st.hosts.get_mut(&key.1) {
            h.browser_lease = Some((lease.id, floor));
            let gap = h.pace.gap().max(floor);
            h.pace.next_start_at = h.pace.next_start_at.max(now.plus(gap));
        }
        Claim::Leased(Box::new(lease))
    }

    pub(super) fn queue_browser_now(&self, site_id: SiteId, tasks: Vec<Task>, now: UnixMs) {
        let mut st = self.lock();
        let Some(site) = st.sites.get_mut(&site_id) else { return };
        if site.done || site.cancelled || site.browser != Phase::Awaiting {
            return;
        }
        site.browser = if another_round(&tasks) { Phase::Rendering } else { Phase::Queued };
        for task in tasks {
            if task.site == site_id && task.kind.is_browser() {
                let key = (site_id, task.url.host_key());
                st.push_browser(key, task, now);
            }
        }
        st.check_done(site_id);
    }
}

impl State {
    /// Queues a task again after a retry or an expired lease: a browser task in the browser
    /// list, any other in its lane.
    pub(super) fn push_any(&mut self, key: &LaneKey, task: Task, now: UnixMs) {
        if task.kind.is_browser() {
            self.push_browser(key.clone(), task, now);
        } else {
            self.push(key, task, now);
        }
    }

    fn push_browser(&mut self, key: LaneKey, task: Task, _now: UnixMs) {
        if let Some(s) = self.sites.get_mut(&key.0) {
            s.queued += 1;
        }
        self.browser.push((key, task));
    }

    /// Drops a site's waiting browser tasks (a cancel); returns how many.
    pub(super) fn drop_browser(&mut self, site: SiteId) -> u64 {
        let before = self.browser.len();
        self.browser.retain(|(k, _)| k.0 != site);
        (before - self.browser.len()) as u64
    }

    /// Ends the site if nothing of it is queued or leased: done, or (browser pages asked for and
    /// the crawl just ended) [`Event::CrawlDone`] published and waiting for its browser tasks.
    pub(super) fn check_done(&mut self, site_id: SiteId) {
        let Some(site) = self.sites.get_mut(&site_id) else {
            return;
        };
        if site.done || site.queued > 0 || site.leased > 0 {
            return;
        }
        let audit = site.audit;
        match next_step(site) {
            Step::Wait => return,
            Step::CrawlDone => {
                self.publish(Event::CrawlDone { audit, site: site_id });
                return;
            }
            Step::Done => {}
        }
        site.done = true;
        let hosts = site.hosts.clone();
        self.publish(Event::SiteDone { audit, site: site_id });
        // The site's lanes are finished: drop them so claims stop scanning them, and so their
        // hosts' pace no longer counts them.
        for h in hosts {
            if self.lanes.remove(&(site_id, h.clone())).is_some_and(|l| l.listed) {
                self.ended_in_order += 1;
            }
            if let Some(host) = self.hosts.get_mut(&h) {
                host.lanes.remove(&site_id);
                host.recompute();
            }
        }
        if self.ended_in_order * 2 > self.lane_order.len() {
            self.compact_lane_order();
        }
    }
}

/// A lease ends (completed or expired); if it was the host's page load, the next one starts at
/// least max(gap, [`BROWSER_MIN_GAP`](crate::frontier::BROWSER_MIN_GAP)) after this one's end, not its start (a render's:
/// [`crate::frontier::RENDER_MIN_GAP`], [`page_load_gap`]): a check fills seconds with requests
/// (the page, its resources, the reload after Reject), and the pause a site owner should see is
/// between the loads.
pub(super) fn page_load_ended(h: &mut HostEntry, id: LeaseId, now: UnixMs) {
    if let Some((lease, floor)) = h.browser_lease
        && lease == id
    {
        h.browser_lease = None;
        let gap = h.pace.gap().max(floor);
        h.pace.next_start_at = h.pace.next_start_at.max(now.plus(gap));
    }
}
