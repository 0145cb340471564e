//! The embedded frontier's lanes and hosts: what each holds and the small rules about it.

use super::{Map, Set};
use crate::frontier::{LaneRobots, RobotsOutcome};
use crate::ids::{AuditId, LeaseId, SiteId};
use crate::pace::{HOST_LINGER, HostPace, LaneDemand};
use crate::robots::ROBOTS_MAX_AGE;
use crate::task::{Priority, Task, TaskKind};
use crate::time::UnixMs;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// One host of one site: its robots.txt state and its queue.
#[derive(Debug)]
pub(super) struct Lane {
    pub(super) robots: LaneRobots,
    /// When the rules in force were fetched.
    pub(super) robots_at: UnixMs,
    /// The robots.txt task while it waits; `None` while leased (or done).
    pub(super) robots_task: Option<Task>,
    /// The lane's first robots.txt task, queued again when its rules are [`ROBOTS_MAX_AGE`] old.
    pub(super) robots_template: Option<Task>,
    pub(super) ready: BTreeMap<(Priority, u64), Task>,
    pub(super) delayed: BTreeMap<(UnixMs, u64), Task>,
    /// Expired leases per task (by seen key), against [`crate::frontier::MAX_LEASE_EXPIRIES`].
    pub(super) expired: Map<u64, u8>,
    /// The lane has an entry in claim's round-robin order (maybe a stale one, see `listed`).
    pub(super) in_order: bool,
    /// Claims look at the lane: it may have work. A lane with nothing queued (its site's other
    /// host once robots.txt is read, a lane whose pages are all leased) leaves the order until
    /// a task is queued in it, so a claim does not pass over hundreds of idle lanes.
    pub(super) listed: bool,
}

impl Lane {
    /// A lane whose robots.txt (`template`) is still to be queued.
    pub(super) fn new(template: Task) -> Lane {
        Lane { robots_template: Some(template), ..Lane::new_empty() }
    }

    /// A lane whose tasks are no HTTP requests (DNS checks, a mail conversation): no robots.txt
    /// to wait for, none to read again.
    pub(super) fn without_robots(now: UnixMs) -> Lane {
        Lane {
            robots: LaneRobots::Known(RobotsOutcome::AllowAll),
            robots_at: now,
            robots_template: None,
            ..Lane::new_empty()
        }
    }

    fn new_empty() -> Lane {
        Lane {
            robots: LaneRobots::Pending,
            robots_at: UnixMs(0),
            robots_template: None,
            robots_task: None,
            ready: BTreeMap::new(),
            delayed: BTreeMap::new(),
            expired: Map::default(),
            in_order: false,
            listed: false,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.ready.len() + self.delayed.len() + usize::from(self.robots_task.is_some())
    }

    pub(super) fn is_closed(&self) -> bool {
        matches!(self.robots, LaneRobots::Known(RobotsOutcome::OffLimits | RobotsOutcome::NotPartOfSite))
    }

    /// Rules [`ROBOTS_MAX_AGE`] old are fetched again before anything else of the lane: the lane
    /// is pending again with its first robots.txt task queued (only when it has work queued: an
    /// idle lane asks nothing of the site). Returns true if that happened.
    pub(super) fn expire_robots(&mut self, now: UnixMs) -> bool {
        let idle = self.ready.is_empty() && self.delayed.is_empty();
        if idle || self.robots == LaneRobots::Pending || self.is_closed() || self.robots_at.plus(ROBOTS_MAX_AGE) > now {
            return false;
        }
        let Some(t) = self.robots_template.clone() else { return false };
        self.robots = LaneRobots::Pending;
        self.robots_task = Some(t);
        true
    }

    pub(super) fn promote(&mut self, now: UnixMs) {
        while let Some(entry) = self.delayed.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((_, seq), task) = entry.remove_entry();
            self.ready.insert((task.priority, seq), task);
        }
    }

    /// When the lane's next task could start, as far as the lane is concerned.
    pub(super) fn next_due(&mut self, now: UnixMs) -> Option<UnixMs> {
        if self.robots == LaneRobots::Pending {
            return self.robots_task.as_ref().map(|t| t.not_before.max(now));
        }
        if self.is_closed() {
            return None;
        }
        self.promote(now);
        if self.ready.is_empty() { self.delayed.keys().next().map(|(t, _)| *t) } else { Some(now) }
    }

    pub(super) fn pop(&mut self) -> Option<Task> {
        if self.robots == LaneRobots::Pending {
            return self.robots_task.take();
        }
        self.ready.pop_first().map(|(_, t)| t)
    }

    pub(super) fn push(&mut self, task: Task, seq: u64, now: UnixMs) {
        if task.kind == TaskKind::Robots {
            self.robots_task = Some(task);
        } else if task.not_before > now {
            self.delayed.insert((task.not_before, seq), task);
        } else {
            self.ready.insert((task.priority, seq), task);
        }
    }

    pub(super) fn clear(&mut self) -> usize {
        let n = self.len();
        self.ready.clear();
        self.delayed.clear();
        self.robots_task = None;
        n
    }
}

/// One host's state, shared by every audit that uses it, and only while one does.
#[derive(Debug)]
pub(super) struct HostEntry {
    pub(super) pace: HostPace,
    pub(super) ip: Option<IpAddr>,
    /// Until when the address may be used without a fresh lookup; `None`: look it up before the
    /// next request (never looked up, a new audit joined, or the last lookup failed).
    pub(super) ip_until: Option<UnixMs>,
    /// The one lease out that looks the address up; the host's other lanes wait for it.
    pub(super) resolving: Option<LeaseId>,
    /// What each live lane of the host asks (by site: a lane is one host of one site).
    pub(super) lanes: Map<SiteId, LaneDemand>,
    /// Live audits that saw a 429 from the host: slow mode while any is left.
    pub(super) slow_audits: Set<AuditId>,
    /// The one browser page load out on the host (they are serialised).
    pub(super) browser_lease: Option<(LeaseId, std::time::Duration)>,
}

impl HostEntry {
    pub(super) fn new(limits: crate::pace::PaceLimits, slow_start: bool) -> HostEntry {
        HostEntry {
            pace: HostPace { slow_start, ..HostPace::new(limits) },
            ip: None,
            ip_until: None,
            resolving: None,
            lanes: Map::default(),
            slow_audits: Set::default(),
            browser_lease: None,
        }
    }

    pub(super) fn resolve_due(&self, now: UnixMs) -> bool {
        self.resolving.is_none() && self.ip_until.is_none_or(|t| t <= now)
    }

    /// The limits in force from the live lanes and audits (pure arithmetic in `pace`).
    pub(super) fn recompute(&mut self) {
        let slow = !self.slow_audits.is_empty();
        self.pace.combine(self.lanes.values().copied(), slow);
    }

    pub(super) fn is_unused(&self, now: UnixMs) -> bool {
        self.lanes.is_empty()
            && self.slow_audits.is_empty()
            && self.pace.in_flight == 0
            && self.resolving.is_none()
            && self.pace.next_start_at.plus(HOST_LINGER) <= now
    }
}

/// What a lease carries besides its task, from the lane it was taken from.
pub(super) struct Grant {
    pub(super) expired: u8,
    pub(super) robots_at: UnixMs,
    pub(super) ttl: std::time::Duration,
}
