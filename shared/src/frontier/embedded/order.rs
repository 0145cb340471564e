//! Claim's round-robin order of the embedded frontier's lanes: which lanes claims look at, and
//! the lanes parked until a slot of their host or IP is free (as the Redis back end parks them).
//!
//! A freed slot wakes as many parked lanes as there are free slots, longest parked first, not
//! every parked lane: with hundreds of hosts on one shared server at its IP cap, waking them all
//! made every completion relist hundreds of lanes and the next claim park them all again (a
//! fifth of `shoal audit`'s CPU on a 200-host farm).

use super::{Lane, LaneKey, Map, State};
use crate::url::HostKey;
use std::collections::VecDeque;
use std::net::IpAddr;

/// What a parked lane waits for: a free slot of its host or of its server IP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Park<'a> {
    Host(&'a HostKey),
    Ip(IpAddr),
}

/// Lanes waiting for a slot, per host and per IP, in the order they were parked.
#[derive(Debug, Default)]
pub(super) struct Parked {
    hosts: Map<HostKey, VecDeque<LaneKey>>,
    ips: Map<IpAddr, VecDeque<LaneKey>>,
}

impl Parked {
    pub(super) fn park(&mut self, on: Park<'_>, lane: LaneKey) {
        match on {
            Park::Host(h) => match self.hosts.get_mut(h) {
                Some(q) => q.push_back(lane),
                None => {
                    self.hosts.insert(h.clone(), VecDeque::from([lane]));
                }
            },
            Park::Ip(ip) => self.ips.entry(ip).or_default().push_back(lane),
        }
    }

    fn queue(&mut self, on: Park<'_>) -> Option<&mut VecDeque<LaneKey>> {
        match on {
            Park::Host(h) => self.hosts.get_mut(h),
            Park::Ip(ip) => self.ips.get_mut(&ip),
        }
    }

    fn drop_if_empty(&mut self, on: Park<'_>) {
        match on {
            Park::Host(h) => {
                if self.hosts.get(h).is_some_and(VecDeque::is_empty) {
                    self.hosts.remove(h);
                }
            }
            Park::Ip(ip) => {
                if self.ips.get(&ip).is_some_and(VecDeque::is_empty) {
                    self.ips.remove(&ip);
                }
            }
        }
    }
}

impl State {
    /// Lists again up to `room` lanes parked on `on` (that many of its slots are free), longest
    /// parked first. Entries of lanes that ended or were listed meanwhile do not count.
    ///
    /// On an IP, lanes of hosts with nothing in flight are woken before lanes of hosts that have
    /// (claim prefers them the same way), so the sites on one server take turns; the others keep
    /// their place at the front.
    pub(super) fn wake(&mut self, on: Park<'_>, room: u32) {
        let State { parked, lanes, lane_order, ended_in_order, hosts, .. } = self;
        let Some(queue) = parked.queue(on) else { return };
        let mut woken = 0;
        // At most one per slot of the IP has a request in flight, so this stays short.
        let mut passed: Vec<LaneKey> = Vec::new();
        while woken < room
            && let Some(key) = queue.pop_front()
        {
            if lanes.get(&key).is_none_or(|l| l.listed || l.len() == 0 || l.is_closed()) {
                // Ended, or listed again since it was parked (and perhaps leased dry since: a wake
                // spent on such a stale entry would leave a lane with work parked while nothing is
                // in flight to wake it, which at the slow start's IP cap of 1 stalled the IP).
                continue;
            }
            if matches!(on, Park::Ip(_)) && hosts.get(&key.1).is_some_and(|h| h.pace.in_flight > 0) {
                passed.push(key);
                continue;
            }
            if relist(lanes, lane_order, ended_in_order, key) {
                woken += 1;
            }
        }
        let mut passed = passed.into_iter();
        while woken < room
            && let Some(key) = passed.next()
        {
            if relist(lanes, lane_order, ended_in_order, key) {
                woken += 1;
            }
        }
        for key in passed.rev() {
            queue.push_front(key);
        }
        parked.drop_if_empty(on);
    }

    /// Puts a lane back into claim's order, if it exists and is not there.
    pub(super) fn relist(&mut self, key: &LaneKey) {
        if let Some(lane) = self.lanes.get_mut(key)
            && !lane.listed
        {
            list(lane, &mut self.lane_order, &mut self.ended_in_order, || key.clone());
        }
    }

    /// Drops ended and unlisted lanes from the claim order, keeping the cursor on the same lane.
    pub(super) fn compact_lane_order(&mut self) {
        let lanes = &mut self.lanes;
        let listed = |lanes: &Map<LaneKey, Lane>, k: &LaneKey| lanes.get(k).is_some_and(|l| l.listed);
        let before_cursor =
            self.lane_order[..self.cursor.min(self.lane_order.len())].iter().filter(|k| listed(lanes, k)).count();
        self.lane_order.retain(|k| {
            let keep = listed(lanes, k);
            if !keep && let Some(l) = lanes.get_mut(k) {
                l.in_order = false;
            }
            keep
        });
        self.ended_in_order = 0;
        self.cursor = if before_cursor >= self.lane_order.len() { 0 } else { before_cursor };
    }
}

/// Lists the lane `key` (taken by value from a park queue); false if it ended or is listed.
fn relist(lanes: &mut Map<LaneKey, Lane>, order: &mut Vec<LaneKey>, ended: &mut usize, key: LaneKey) -> bool {
    match lanes.get_mut(&key) {
        Some(lane) if !lane.listed => {
            list(lane, order, ended, || key);
            true
        }
        _ => false,
    }
}

fn list(lane: &mut Lane, order: &mut Vec<LaneKey>, ended: &mut usize, key: impl FnOnce() -> LaneKey) {
    lane.listed = true;
    if lane.in_order {
        // Its old entry is still in the order: it counts again.
        *ended = ended.saturating_sub(1);
    } else {
        lane.in_order = true;
        order.push(key());
    }
}
