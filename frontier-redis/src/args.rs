//! The arguments the scripts read for tasks and completions (their order is each script's
//! header comment).

use crate::encode;
use crate::scripts::Call;
use shoal_shared::frontier::{Completion, FollowUp, LaneRobots, Lease, Resolution, RobotsOutcome};
use shoal_shared::task::{Task, TaskKind};
use shoal_shared::time::UnixMs;
use std::time::Duration;

/// How a discovered task counts against the budgets, as the scripts read it: `p` page, `r`
/// resource, `x` external check (a resource-budget check that may open a lane for its host), `s`
/// sitemap (the sitemap budget).
pub(crate) fn kind_code(kind: TaskKind) -> &'static str {
    match kind {
        TaskKind::Page => "p",
        TaskKind::Resource => "r",
        TaskKind::External => "x",
        TaskKind::Sitemap { .. } => "s",
        _ => "o",
    }
}

/// How the script opens the lane of a task that may be the first of its host's lane
/// ([`TaskKind::opens_lane`]): an HTTP check's robots.txt task (the lane starts with it), or `-`
/// and the lane's robots state for a task that is no HTTP request (the lane opens with its robots
/// known, so nothing waits for a robots.txt). Empty for tasks that never open a lane.
fn lane_opener(t: &Task) -> Vec<u8> {
    if !t.kind.opens_lane() {
        Vec::new()
    } else if t.kind.needs_robots() {
        shoal_shared::frontier::robots_task_for(t).map(|r| encode(&r)).unwrap_or_default()
    } else {
        let mut v = b"-".to_vec();
        v.extend(encode(&LaneRobots::Known(RobotsOutcome::AllowAll)));
        v
    }
}

/// A task's nine arguments (seed.lua, complete.lua): host, seen keys, kind, depth, priority,
/// not-before, the task and its lane opener.
pub(crate) fn push_task(inv: &mut Call, t: &Task) {
    let keys = t.seen_keys();
    inv.arg(t.url.host_key().as_str())
        .arg(keys.own.to_be_bytes().as_slice())
        .arg(keys.blocked_by.map(|b| b.to_be_bytes().to_vec()).unwrap_or_default())
        .arg(kind_code(t.kind))
        .arg(t.depth)
        .arg(t.priority.0)
        .arg(t.not_before.0)
        .arg(encode(t));
    inv.arg(lane_opener(t));
}

/// The arguments of `complete` (see complete.lua) for `lease` and `c`, with `discovered` (the
/// completion's links that Redis has to see, [`crate::sent`]) in place of all of them.
pub(crate) fn completion(
    inv: &mut Call,
    lease: &Lease,
    c: &Completion,
    discovered: &[&Task],
    ip_cap: u16,
    now: UnixMs,
) {
    inv.arg(now.0).arg(lease.id.0);
    match c.resolved {
        None => inv.arg("").arg(0),
        Some(Resolution::Failed) => inv.arg("f").arg(0),
        Some(Resolution::Address { ip, ttl_ms }) => {
            let ttl = shoal_shared::pace::address_ttl(Duration::from_millis(ttl_ms));
            inv.arg(ip.to_string()).arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
        }
    };
    inv.arg(if c.rate_limited { "1" } else { "0" });
    match &c.robots {
        None => {
            inv.arg("").arg("").arg("");
        }
        Some(outcome) => {
            let state = match outcome {
                RobotsOutcome::Rules { .. } | RobotsOutcome::AllowAll => "k",
                RobotsOutcome::OffLimits | RobotsOutcome::NotPartOfSite => "c",
            };
            let delay = match outcome {
                RobotsOutcome::Rules { crawl_delay_ms: Some(d), .. } => d.to_string(),
                _ => String::new(),
            };
            inv.arg(state).arg(encode(&LaneRobots::Known(outcome.clone()))).arg(delay);
        }
    }
    inv.arg(c.robots_fetched_at.map(|t| t.0.to_string()).unwrap_or_default());
    inv.arg(c.sitemap_bytes);
    match &c.requeue {
        None => {
            inv.arg("").arg("0").arg(0).arg(0);
        }
        Some(t) => {
            inv.arg(encode(t))
                .arg(if t.kind == TaskKind::Robots { "1" } else { "0" })
                .arg(t.priority.0)
                .arg(t.not_before.0);
        }
    }
    inv.arg(discovered.len()).arg(usize::from(!c.events.is_empty())).arg(ip_cap);
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    inv.arg(opt(c.signals.response_ms.map(u64::from)))
        .arg(opt(c.signals.quota_gap_ms.map(u64::from)))
        .arg(opt(c.signals.hold_until.map(|t| t.0)));
    for t in discovered {
        push_task(inv, t);
    }
    if !c.events.is_empty() {
        inv.arg(crate::stream::pack_events(&c.events));
    }
    // What became of the further tasks; those not listed were not started.
    inv.arg(c.more.len().min(lease.more.len()));
    for f in c.more.iter().take(lease.more.len()) {
        match f {
            FollowUp::Done { .. } => inv.arg("d").arg("").arg(0).arg(0),
            FollowUp::Requeue { task, .. } => {
                inv.arg("r").arg(encode(task)).arg(task.priority.0).arg(task.not_before.0)
            }
        };
        inv.arg(opt(f.response_ms().map(u64::from)));
    }
}
