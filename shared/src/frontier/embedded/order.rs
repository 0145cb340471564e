//! Claim's round-robin order of the embedded frontier's lanes: which lanes claims look at, and
//! the lanes parked until a slot of their host or IP is free (as the Redis back end parks them).

use super::{Lane, LaneKey, State};
use crate::url::HostKey;
use std::collections::HashMap;
use std::net::IpAddr;

/// What a parked lane waits for: a free slot of its host or of its server IP.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Park {
    Host(HostKey),
    Ip(IpAddr),
}

impl State {
    /// Lists the lanes parked on `on` again (a slot of that host or IP is free).
    pub(super) fn wake(&mut self, on: &Park) {
        for key in self.parked.remove(on).unwrap_or_default() {
            self.relist(&key);
        }
    }

    /// Puts a lane back into claim's order, if it exists and is not there.
    pub(super) fn relist(&mut self, key: &LaneKey) {
        let Some(lane) = self.lanes.get_mut(key) else { return };
        if lane.listed {
            return;
        }
        lane.listed = true;
        if lane.in_order {
            // Its old entry is still in the order: it counts again.
            self.ended_in_order = self.ended_in_order.saturating_sub(1);
        } else {
            lane.in_order = true;
            self.lane_order.push(key.clone());
        }
    }

    /// Drops ended and unlisted lanes from the claim order, keeping the cursor on the same lane.
    pub(super) fn compact_lane_order(&mut self) {
        let lanes = &mut self.lanes;
        let listed = |lanes: &HashMap<LaneKey, Lane>, k: &LaneKey| lanes.get(k).is_some_and(|l| l.listed);
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
