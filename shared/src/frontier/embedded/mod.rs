//! The in-process frontier of `shoal audit`: the same meaning as the Redis back end, in one mutex.
//!
//! Every operation takes the lock once and does its work without awaiting, so each is atomic and
//! the arithmetic is the same pure code ([`crate::pace`]) the Redis scripts mirror.
//!
//! What it learns about hosts lives as long as a live audit uses them (see `HostEntry`): pace
//! limits combine among the lanes still open, slow mode belongs to the audits that saw the 429,
//! the address is looked up again when an audit joins and when its TTL runs out, and a host no
//! lane uses is dropped [`HOST_LINGER`](crate::pace::HOST_LINGER) after its next allowed start.

use super::{
    Claim, Completed, Completion, EventId, Frontier, FrontierError, FrontierSettings, LaneRobots, LaneRobotsState,
    Lease, Renewal, Resolution, RobotsOutcome, SiteInfo, SiteProgress, SiteSeed,
};
use crate::finding::Code;
use crate::ids::{AuditId, LeaseId, SiteId, WorkerId};
use crate::pace::{IpPace, LaneDemand, MIN_ADDRESS_TTL, address_ttl};
use crate::record::Event;
use crate::task::{SiteLimits, Task, TaskKind};
use crate::time::UnixMs;
use crate::url::HostKey;
use std::collections::{HashMap, HashSet};

/// The frontier's maps: foldhash, seeded per process, instead of SipHash (host keys are hashed on
/// every claim and completion; SipHash alone was 8 % of `shoal audit`'s CPU).
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
type Set<T> = HashSet<T, foldhash::fast::RandomState>;
use std::future::{Future, ready};
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

mod backlog;
mod browser;
mod cache;
mod ending;
mod lane;
mod order;

use order::{Park, Parked};

use lane::{Grant, HostEntry, Lane};

type LaneKey = (SiteId, HostKey);

#[derive(Debug)]
struct SiteEntry {
    audit: AuditId,
    start: crate::url::NormalizedUrl,
    limits: SiteLimits,
    custom: crate::custom::CustomRules,
    hosts: Vec<HostKey>,
    queued: u64,
    leased: u64,
    pages_enqueued: u64,
    resources_enqueued: u64,
    sitemaps_enqueued: u64,
    sitemap_bytes: u64,
    completed: u64,
    done: bool,
    cancelled: bool,
    reported: Set<Code>,
    browser: browser::Phase,
}

#[derive(Debug, Default)]
struct State {
    lanes: Map<LaneKey, Lane>,
    /// Claim's round-robin order of the lanes that may have work ([`Lane::listed`]). Entries of
    /// ended or unlisted lanes stay in it until they are half of it (claims skip them), so ending
    /// a site or emptying a lane costs O(1) amortised, not a pass over every lane: an audit of
    /// 40,000 sites would otherwise be quadratic.
    lane_order: Vec<LaneKey>,
    /// Entries of `lane_order` that claims skip (ended or unlisted lanes).
    ended_in_order: usize,
    /// Lanes with work that wait for a slot of their host or IP, listed again when a lease of
    /// that host or IP ends ([`State::release`]).
    parked: Parked,
    cursor: usize,
    hosts: Map<HostKey, HostEntry>,
    ips: Map<IpAddr, IpPace>,
    leases: Map<LeaseId, Lease>,
    seen: Map<AuditId, Set<u64>>,
    /// The hosts each live audit has lanes on (for a fresh address lookup when an audit joins a
    /// host, and to end its slow mode when it ends).
    audit_hosts: Map<AuditId, Set<HostKey>>,
    sites: Map<SiteId, SiteEntry>,
    events: backlog::Unread,
    cache: cache::ResultCache,
    /// Browser tasks waiting, in the order queued (a few per site): only
    /// [`Frontier::claim_browser`] takes them.
    browser: Vec<(LaneKey, Task)>,
    /// The workers that claim browser tasks, while their announcements last.
    browser_workers: crate::frontier::workers::BrowserWorkers,
    next_lease: u64,
    next_seq: u64,
    /// [`FrontierSettings::slow_start`].
    slow_start: bool,
}

/// The embedded frontier.
#[derive(Debug)]
pub struct EmbeddedFrontier {
    settings: FrontierSettings,
    state: Mutex<State>,
}

impl EmbeddedFrontier {
    /// An empty frontier.
    #[must_use]
    pub fn new(settings: FrontierSettings) -> EmbeddedFrontier {
        let state = State { slow_start: settings.slow_start, ..State::default() };
        EmbeddedFrontier { settings, state: Mutex::new(state) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock would be a bug in this file; the state is still
        // consistent per operation, so carry on rather than poison every worker.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn seed_now(&self, seed: SiteSeed) -> Result<(), FrontierError> {
        let mut st = self.lock();
        if st.sites.contains_key(&seed.site) {
            return Err(FrontierError::AlreadySeeded(seed.site));
        }
        let scope = seed.scope();
        let hosts = scope.host_keys();
        let pace = seed.limits.pace;
        st.sites.insert(
            seed.site,
            SiteEntry {
                audit: seed.audit,
                start: seed.start.clone(),
                limits: seed.limits,
                custom: seed.custom.clone(),
                hosts: hosts.clone(),
                queued: 0,
                leased: 0,
                pages_enqueued: 0,
                resources_enqueued: 0,
                sitemaps_enqueued: 0,
                sitemap_bytes: 0,
                completed: 0,
                done: false,
                cancelled: false,
                reported: Set::default(),
                browser: browser::Phase::Crawling,
            },
        );
        for host in &hosts {
            let Some(task) = super::robots_task(seed.audit, seed.site, seed.start.as_url().scheme(), host) else {
                continue;
            };
            st.open_lane(seed.audit, seed.site, host, pace, task, UnixMs(0));
        }
        for task in seed.initial {
            st.offer(task, UnixMs(0));
        }
        Ok(())
    }

    fn claim_now(&self, worker: &WorkerId, now: UnixMs) -> Claim {
        let mut st = self.lock();
        if st.events.backlogged() {
            return Claim::Wait(now.plus(backlog::BACKLOG_WAIT));
        }
        if st.ended_in_order * 2 > st.lane_order.len() {
            st.compact_lane_order();
        }
        let n = st.lane_order.len();
        let mut earliest: Option<UnixMs> = None;
        let cap = self.settings.max_in_flight_per_ip;
        // The first lane that could start now whose host already has a request in flight: taken
        // only when no lane of an idle host can start (see below).
        let mut busy: Option<usize> = None;
        let mut chosen = None;
        for i in 0..n {
            let idx = (st.cursor + i) % n;
            // Borrowed, not cloned: a claim may look at many lanes and takes one.
            let State { lanes, hosts, ips, sites, parked, ended_in_order, lane_order, slow_start, .. } = &mut *st;
            let key = &lane_order[idx];
            let (Some(lane), Some(host)) = (lanes.get_mut(key), hosts.get(&key.1)) else {
                continue;
            };
            if !lane.listed {
                continue;
            }
            if lane.len() == 0 || lane.is_closed() {
                // Nothing to claim until a task is queued here (State::push lists it again).
                lane.listed = false;
                *ended_in_order += 1;
                continue;
            }
            if lane.expire_robots(now)
                && let Some(s) = sites.get_mut(&key.0)
            {
                s.queued += 1;
            }
            let Some(due) = lane.next_due(now) else {
                continue;
            };
            // Blocked by its host (address being looked up, every slot taken) or its IP (at its
            // cap): the lane leaves the order until a lease of that host or IP ends, as Redis
            // parks it, so claims do not pass over it again and again (hundreds of hosts on one
            // shared-hosting IP made every claim a pass over all of them).
            let blocked = if host.resolving.is_some() || host.pace.ready_at().is_none() {
                Some(Park::Host(&key.1))
            } else {
                host.ip.filter(|ip| !ips.get(ip).copied().unwrap_or_default().has_room(cap, *slow_start)).map(Park::Ip)
            };
            if let Some(on) = blocked {
                lane.listed = false;
                *ended_in_order += 1;
                parked.park(on, key.clone());
                continue;
            }
            let Some(host_ready) = host.pace.ready_at() else { continue };
            let ip_ready = host.ip.and_then(|ip| ips.get(&ip)).map_or(UnixMs(0), |p| p.next_start_at);
            let at = due.max(host_ready).max(ip_ready);
            if at > now {
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
                continue;
            }
            // A free slot of an IP goes to a host that has nothing in flight before one that has:
            // sites on one server take turns instead of the hosts being fetched taking every
            // freed slot. Without this a 200-site farm on one IP at --in-flight 4 had two requests
            // in flight at some sites while others waited, and held 660 connections open where
            // one per site did (most of `shoal audit`'s peak memory on that farm).
            if host.pace.in_flight > 0 {
                busy = busy.or(Some(idx));
                continue;
            }
            chosen = Some(idx);
            break;
        }
        let Some(idx) = chosen.or(busy) else {
            return earliest.map_or(Claim::Idle, Claim::Wait);
        };
        let key = st.lane_order[idx].clone();
        let Some(lane) = st.lanes.get_mut(&key) else { return earliest.map_or(Claim::Idle, Claim::Wait) };
        let Some(task) = lane.pop() else { return earliest.map_or(Claim::Idle, Claim::Wait) };
        let expired = lane.expired.get(&task.seen_key()).copied().unwrap_or(0);
        let robots_at = if lane.robots == LaneRobots::Pending { UnixMs(0) } else { lane.robots_at };
        st.cursor = (idx + 1) % n;
        let grant = Grant { expired, robots_at, ttl: self.settings.lease_ttl() };
        Claim::Leased(Box::new(st.lease(worker, key.1, task, now, grant)))
    }

    fn complete_now(&self, lease: &Lease, c: Completion, now: UnixMs) -> Completed {
        let mut st = self.lock();
        let Some(lease) = st.leases.remove(&lease.id) else {
            return Completed::Stale;
        };
        // The answer's load, for the guard's slow start: our requests in flight to its host and IP
        // when it came, itself included (read before its slots are freed).
        let host_load = st.hosts.get(&lease.host).map_or(1, |h| h.pace.in_flight.max(1));
        let ip_load = lease.ip.and_then(|ip| st.ips.get(&ip)).map_or(1, |p| p.in_flight.max(1));
        st.release(&lease, self.settings.max_in_flight_per_ip, now);
        let site_id = lease.task.site;
        let audit = lease.task.audit;
        let key = (site_id, lease.host.clone());
        if let Some(lane) = st.lanes.get_mut(&key) {
            lane.expired.remove(&lease.task.seen_key());
        }
        let mut note = None;
        let mut host_base_ms = 0;
        if let Some(h) = st.hosts.get_mut(&lease.host) {
            host_base_ms = h.pace.guard.baseline_ms;
            match c.resolved {
                Some(Resolution::Address { ip, ttl_ms }) => {
                    h.ip = Some(ip);
                    h.ip_until = Some(now.plus(address_ttl(Duration::from_millis(ttl_ms))));
                }
                Some(Resolution::Failed) if h.ip.is_some() => h.ip_until = Some(now.plus(MIN_ADDRESS_TTL)),
                // No address, so the lease reached nobody: the gap it took is given back, and the
                // host's other checks settle one after another without waiting out a gap each
                // (the worker fails them from the audit's memory of the name, asking no one).
                Some(Resolution::Failed) => h.pace.next_start_at = h.pace.next_start_at.min(now),
                None => {}
            }
            if c.rate_limited {
                h.slow_audits.insert(audit);
                h.recompute();
                h.pace.enter_slow_mode(now);
            }
            note = h.pace.apply_signals(&c.signals, host_load, now);
        }
        let (host, ips) = (lease.host.as_str(), &mut st.ips);
        let server_ip_note = lease.ip.zip(c.signals.response_ms).and_then(|(ip, response_ms)| {
            let seen =
                crate::pace::Observed { tag: crate::latency::host_tag(host), response_ms, load: ip_load, host_base_ms };
            ips.get_mut(&ip)?.observe(ip, seen, now)
        });
        for change in note.into_iter().chain(server_ip_note) {
            st.publish(Event::Finding(crate::latency::guard_note(&lease.task, &change, now)));
        }
        if let Some(robots) = c.robots {
            let delay = match &robots {
                RobotsOutcome::Rules { crawl_delay_ms, .. } => *crawl_delay_ms,
                _ => None,
            };
            let mut closed = false;
            if let Some(lane) = st.lanes.get_mut(&key) {
                lane.robots = LaneRobots::Known(robots);
                lane.robots_at = c.robots_fetched_at.unwrap_or(lease.started_at);
                closed = lane.is_closed();
                if closed {
                    let dropped = lane.clear() as u64;
                    if let Some(s) = st.sites.get_mut(&site_id) {
                        s.queued -= dropped;
                    }
                }
            }
            if let Some(h) = st.hosts.get_mut(&lease.host) {
                if closed {
                    // A closed lane asks nothing of the host any more.
                    h.lanes.remove(&site_id);
                } else if let Some(d) = h.lanes.get_mut(&site_id) {
                    d.crawl_delay_ms = delay;
                }
                h.recompute();
                if delay.is_some() {
                    // Crawl-delay counts from the robots.txt request's start.
                    h.pace.next_start_at = h.pace.next_start_at.max(lease.started_at.plus(h.pace.gap()));
                }
            }
        }
        if c.sent_nothing
            && let Some(h) = st.hosts.get_mut(&lease.host)
        {
            h.pace.give_back(lease.started_at, Duration::from_millis(lease.gap_ms));
        }
        if let Some(s) = st.sites.get_mut(&site_id) {
            s.sitemap_bytes += c.sitemap_bytes;
        }
        let cancelled = st.sites.get(&site_id).is_none_or(|s| s.cancelled);
        let lane_open = st.lanes.get(&key).is_some_and(|l| !l.is_closed());
        match c.requeue {
            Some(task) if !cancelled && (lane_open || lease.task.kind == TaskKind::Robots) => {
                st.push_any(&key, task, now);
            }
            _ => {
                if let Some(s) = st.sites.get_mut(&site_id) {
                    s.completed += 1;
                }
            }
        }
        let mut enqueued = 0;
        if !cancelled {
            for task in c.discovered {
                enqueued += usize::from(st.offer(task, now));
            }
        }
        for e in c.events {
            st.publish(e);
        }
        st.check_done(site_id);
        Completed::Applied { enqueued }
    }

    fn reap_now(&self, now: UnixMs) -> usize {
        let mut st = self.lock();
        let expired: Vec<LeaseId> = st.leases.values().filter(|l| l.deadline <= now).map(|l| l.id).collect();
        for id in &expired {
            if let Some(lease) = st.leases.remove(id) {
                st.release(&lease, self.settings.max_in_flight_per_ip, now);
                let key = (lease.task.site, lease.host.clone());
                let cancelled = st.sites.get(&lease.task.site).is_none_or(|s| s.cancelled);
                if cancelled {
                    if let Some(s) = st.sites.get_mut(&lease.task.site) {
                        s.completed += 1;
                    }
                    st.check_done(lease.task.site);
                } else {
                    if let Some(lane) = st.lanes.get_mut(&key) {
                        *lane.expired.entry(lease.task.seen_key()).or_default() += 1;
                    }
                    st.push_any(&key, lease.task, now);
                }
            }
        }
        st.hosts.retain(|_, h| !h.is_unused(now));
        st.ips.retain(|_, p| !p.is_unused(now));
        expired.len()
    }

    fn renew_now(&self, worker: &WorkerId, ids: &[LeaseId], now: UnixMs) -> Renewal {
        let mut st = self.lock();
        let deadline = now.plus(self.settings.lease_ttl());
        let mut lost = Vec::new();
        for id in ids {
            match st.leases.get_mut(id) {
                Some(l) if l.worker == *worker => l.deadline = deadline,
                _ => lost.push(*id),
            }
        }
        Renewal { deadline, lost }
    }
}

impl State {
    fn lease(&mut self, worker: &WorkerId, host: HostKey, task: Task, now: UnixMs, grant: Grant) -> Lease {
        self.next_lease += 1;
        let id = LeaseId(self.next_lease);
        let (ip, gap, resolve) = self.hosts.get_mut(&host).map_or((None, 0, false), |h| {
            let gap = u64::try_from(h.pace.gap().as_millis()).unwrap_or(u64::MAX);
            h.pace.start(now);
            let resolve = h.resolve_due(now);
            if resolve {
                h.resolving = Some(id);
            }
            (h.ip, gap, resolve)
        });
        if let Some(ip) = ip {
            self.ips.entry(ip).or_default().start(now);
        }
        if let Some(s) = self.sites.get_mut(&task.site) {
            s.queued -= 1;
            s.leased += 1;
        }
        let lease = Lease {
            id,
            worker: worker.clone(),
            host,
            ip,
            task,
            started_at: now,
            deadline: now.plus(grant.ttl),
            gap_ms: gap,
            resolve,
            expired: grant.expired,
            robots_at: grant.robots_at,
            more: Vec::new(),
        };
        self.leases.insert(lease.id, lease.clone());
        lease
    }

    /// Frees the slots a lease held and wakes as many lanes parked on them as are free.
    fn release(&mut self, lease: &Lease, ip_cap: u16, now: UnixMs) {
        let mut host_room = 0;
        if let Some(h) = self.hosts.get_mut(&lease.host) {
            h.pace.finish();
            if h.resolving == Some(lease.id) {
                h.resolving = None;
            }
            browser::page_load_ended(h, lease.id, now);
            if h.resolving.is_none() {
                host_room = h.pace.room();
            }
        }
        if let Some(s) = self.sites.get_mut(&lease.task.site) {
            s.leased -= 1;
        }
        self.wake(Park::Host(&lease.host), host_room);
        if let Some(ip) = lease.ip {
            let p = self.ips.entry(ip).or_default();
            p.finish();
            let room = p.room(ip_cap, self.slow_start);
            self.wake(Park::Ip(ip), room);
        }
    }

    fn push(&mut self, key: &LaneKey, task: Task, now: UnixMs) {
        self.next_seq += 1;
        let seq = self.next_seq;
        if let Some(lane) = self.lanes.get_mut(key) {
            lane.push(task, seq, now);
            self.relist(key);
            if let Some(s) = self.sites.get_mut(&key.0) {
                s.queued += 1;
            }
        }
    }

    /// Creates a lane of `site` on `host` with its robots.txt task queued, and makes the host's
    /// pace account for it. An audit new to the host has its address looked up again.
    fn open_lane(
        &mut self,
        audit: AuditId,
        site: SiteId,
        host: &HostKey,
        pace: crate::pace::PaceLimits,
        robots: Task,
        now: UnixMs,
    ) {
        self.join_host(audit, site, host, pace);
        let key = (site, host.clone());
        self.lanes.insert(key.clone(), Lane::new(robots.clone()));
        // Listed by its first task.
        self.push(&key, robots, now);
    }

    /// Makes the host's pace account for a new lane of `site`; an audit new to the host has its
    /// address looked up again.
    fn join_host(&mut self, audit: AuditId, site: SiteId, host: &HostKey, pace: crate::pace::PaceLimits) {
        let joined = self.audit_hosts.entry(audit).or_default().insert(host.clone());
        let slow_start = self.slow_start;
        let h = self.hosts.entry(host.clone()).or_insert_with(|| HostEntry::new(pace, slow_start));
        h.lanes.insert(site, LaneDemand::new(pace));
        if joined {
            h.ip_until = None;
        }
        h.recompute();
    }

    /// Queues a discovered task if it is in a lane of its site, new to the audit and within the
    /// budgets. A task over the depth or page budget is not marked seen, so a shorter path found
    /// later can still queue it.
    fn offer(&mut self, task: Task, now: UnixMs) -> bool {
        let key = (task.site, task.url.host_key());
        if task.kind.opens_lane() && !self.lanes.contains_key(&key) {
            self.open_external_lane(&task, now);
        }
        let Some(lane) = self.lanes.get(&key) else {
            return false;
        };
        if lane.is_closed() {
            return false;
        }
        let Some(site) = self.sites.get(&task.site) else {
            return false;
        };
        if site.cancelled || site.done {
            return false;
        }
        let keys = task.seen_keys();
        let fp = keys.own;
        if self
            .seen
            .get(&task.audit)
            .is_some_and(|s| s.contains(&fp) || keys.blocked_by.is_some_and(|b| s.contains(&b)))
        {
            return false;
        }
        let counts = super::budget::BudgetCounts {
            pages: site.pages_enqueued,
            resources: site.resources_enqueued,
            sitemaps: site.sitemaps_enqueued,
            sitemap_bytes: site.sitemap_bytes,
        };
        if let Some(code) = super::budget::over_budget(task.kind, task.depth, &counts, &site.limits) {
            self.report_limit(task.site, code);
            return false;
        }
        self.seen.entry(task.audit).or_default().insert(fp);
        if let Some(site) = self.sites.get_mut(&task.site) {
            match task.kind {
                TaskKind::Page => site.pages_enqueued += 1,
                TaskKind::Sitemap { .. } => site.sitemaps_enqueued += 1,
                _ if task.kind.is_check() => site.resources_enqueued += 1,
                _ => {}
            }
        }
        self.push(&key, task, now);
        true
    }

    /// Opens a lane for another host of the site's, the first time a task needs one: another
    /// site's host one of the site's pages links to, or a host of SPEC §9's checks (a mail
    /// server, the registry). Its robots.txt first, like any host, under that host's one pace;
    /// a task that is no HTTP request (a DNS check, a mail conversation) gets a lane without
    /// robots.txt, paced all the same.
    fn open_external_lane(&mut self, task: &Task, now: UnixMs) {
        let Some(site) = self.sites.get(&task.site) else { return };
        if site.cancelled || site.done {
            return;
        }
        let pace = site.limits.pace;
        let host = task.url.host_key();
        if !task.kind.needs_robots() {
            if let Some(s) = self.sites.get_mut(&task.site) {
                s.hosts.push(host.clone());
            }
            self.join_host(task.audit, task.site, &host, pace);
            self.lanes.insert((task.site, host), Lane::without_robots(now));
            return;
        }
        let Some(robots) = super::robots_task_for(task) else { return };
        if let Some(s) = self.sites.get_mut(&task.site) {
            s.hosts.push(host.clone());
        }
        self.open_lane(task.audit, task.site, &host, pace, robots, now);
    }

    fn report_limit(&mut self, site_id: SiteId, code: Code) {
        let Some(site) = self.sites.get_mut(&site_id) else {
            return;
        };
        if !site.reported.insert(code) {
            return;
        }
        let f = super::limit_finding(site.audit, site_id, &site.start, &site.limits, code);
        self.publish(Event::Finding(f));
    }

    fn publish(&mut self, e: Event) {
        self.events.publish(e);
    }

    fn progress(&self, site: SiteId) -> Option<SiteProgress> {
        self.sites.get(&site).map(|s| SiteProgress {
            queued: s.queued,
            leased: s.leased,
            pages_enqueued: s.pages_enqueued,
            completed: s.completed,
            done: s.done,
            awaiting_browser: !s.done && s.browser == browser::Phase::Awaiting,
        })
    }
}

impl Frontier for EmbeddedFrontier {
    /// In process: a completion cannot fail, so it is handed over, not kept for a retry.
    const REMOTE: bool = false;

    fn seed(&self, seed: SiteSeed) -> impl Future<Output = Result<(), FrontierError>> + Send {
        ready(self.seed_now(seed))
    }

    fn seed_many(&self, seeds: Vec<SiteSeed>) -> impl Future<Output = Result<Vec<SiteId>, FrontierError>> + Send {
        let mut seeded = Vec::with_capacity(seeds.len());
        let mut result = Ok(());
        for seed in seeds {
            let site = seed.site;
            match self.seed_now(seed) {
                Ok(()) => seeded.push(site),
                Err(FrontierError::AlreadySeeded(_)) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        ready(result.map(|()| seeded))
    }

    fn claim(&self, worker: &WorkerId, now: UnixMs) -> impl Future<Output = Result<Claim, FrontierError>> + Send {
        ready(Ok(self.claim_now(worker, now)))
    }

    fn claim_browser(
        &self,
        worker: &WorkerId,
        now: UnixMs,
    ) -> impl Future<Output = Result<Claim, FrontierError>> + Send {
        ready(Ok(self.claim_browser_now(worker, now)))
    }

    fn queue_browser(
        &self,
        site: SiteId,
        tasks: Vec<Task>,
        now: UnixMs,
    ) -> impl Future<Output = Result<(), FrontierError>> + Send {
        self.queue_browser_now(site, tasks, now);
        ready(Ok(()))
    }

    fn announce_browser_worker(
        &self,
        worker: &WorkerId,
        now: UnixMs,
    ) -> impl Future<Output = Result<(), FrontierError>> + Send {
        self.lock().browser_workers.announce(worker, self.settings.browser_worker_expiry(now));
        ready(Ok(()))
    }

    fn withdraw_browser_worker(&self, worker: &WorkerId) -> impl Future<Output = Result<(), FrontierError>> + Send {
        self.lock().browser_workers.withdraw(worker);
        ready(Ok(()))
    }

    fn browser_workers(&self, now: UnixMs) -> impl Future<Output = Result<usize, FrontierError>> + Send {
        ready(Ok(self.lock().browser_workers.live(now)))
    }

    fn complete(
        &self,
        lease: &Lease,
        completion: Completion,
        now: UnixMs,
    ) -> impl Future<Output = Result<Completed, FrontierError>> + Send {
        ready(Ok(self.complete_now(lease, completion, now)))
    }

    fn reap(&self, now: UnixMs) -> impl Future<Output = Result<usize, FrontierError>> + Send {
        ready(Ok(self.reap_now(now)))
    }

    fn renew(
        &self,
        worker: &WorkerId,
        leases: &[LeaseId],
        now: UnixMs,
    ) -> impl Future<Output = Result<Renewal, FrontierError>> + Send {
        ready(Ok(self.renew_now(worker, leases, now)))
    }

    fn robots(
        &self,
        site: SiteId,
        host: &HostKey,
    ) -> impl Future<Output = Result<Option<LaneRobotsState>, FrontierError>> + Send {
        let st = self.lock();
        ready(Ok(st
            .lanes
            .get(&(site, host.clone()))
            .map(|l| LaneRobotsState { robots: l.robots.clone(), fetched_at: l.robots_at })))
    }

    fn site_info(&self, site: SiteId) -> impl Future<Output = Result<Option<SiteInfo>, FrontierError>> + Send {
        let st = self.lock();
        ready(Ok(st.sites.get(&site).map(|s| SiteInfo {
            audit: s.audit,
            start: s.start.clone(),
            limits: s.limits.clone(),
            custom: s.custom.clone(),
        })))
    }

    fn read_events(&self, max: usize) -> impl Future<Output = Result<Vec<(EventId, Event)>, FrontierError>> + Send {
        // Handed over, not copied (see `backlog`).
        ready(Ok(self.lock().events.take(max)))
    }

    fn ack_events(&self, _ids: &[EventId]) -> impl Future<Output = Result<(), FrontierError>> + Send {
        // Nothing is kept after a read to acknowledge.
        ready(Ok(()))
    }

    fn progress(&self, site: SiteId) -> impl Future<Output = Result<Option<SiteProgress>, FrontierError>> + Send {
        ready(Ok(self.lock().progress(site)))
    }

    fn progress_many(
        &self,
        sites: &[SiteId],
    ) -> impl Future<Output = Result<Vec<Option<SiteProgress>>, FrontierError>> + Send {
        let st = self.lock();
        ready(Ok(sites.iter().map(|s| st.progress(*s)).collect()))
    }

    fn cancel(&self, audit: AuditId) -> impl Future<Output = Result<(), FrontierError>> + Send {
        self.cancel_now(audit);
        ready(Ok(()))
    }

    fn forget(&self, audit: AuditId) -> impl Future<Output = Result<bool, FrontierError>> + Send {
        ready(Ok(self.forget_now(audit)))
    }

    fn cache_get(&self, key: &str, now: UnixMs) -> impl Future<Output = Result<Option<Vec<u8>>, FrontierError>> + Send {
        ready(Ok(self.lock().cache.get(key, now)))
    }

    fn cache_add(
        &self,
        key: &str,
        value: Vec<u8>,
        now: UnixMs,
        ttl: Duration,
    ) -> impl Future<Output = Result<bool, FrontierError>> + Send {
        ready(Ok(self.lock().cache.add(key, value, now, ttl)))
    }

    fn cache_put(
        &self,
        key: &str,
        value: Vec<u8>,
        now: UnixMs,
        ttl: Duration,
    ) -> impl Future<Output = Result<(), FrontierError>> + Send {
        self.lock().cache.put(key, value, now, ttl);
        ready(Ok(()))
    }
}
