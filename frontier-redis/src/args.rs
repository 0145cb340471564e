//! The arguments the scripts read for tasks and completions: a completion's declared ones by name
//! ([`params::COMPLETE`]), then the tasks in runs, the events and the further tasks (whose layout
//! is complete.lua's header comment).

use crate::encode;
use crate::params;
use crate::scripts::Call;
use shoal_shared::frontier::{Completion, FollowUp, LaneRobots, Lease, Resolution, RobotsOutcome};
use shoal_shared::task::{Task, TaskKind};
use shoal_shared::time::UnixMs;
use std::time::Duration;

/// How a discovered task counts against the budgets, as the scripts read it: `p` page, `r`
/// resource, `x` external check (a resource-budget check that may open a lane for its host), `s`
/// sitemap (the sitemap budget).
pub fn kind_code(kind: TaskKind) -> &'static str {
    match kind {
        TaskKind::Page => "p",
        TaskKind::Resource { .. } => "r",
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

/// What consecutive tasks of a run share in the scripts' arguments: host, kind, depth, priority,
/// not-before and lane opener.
#[derive(Debug, PartialEq, Eq)]
struct RunHead {
    host: String,
    kind: &'static str,
    depth: u16,
    priority: u8,
    not_before: u64,
    opener: Vec<u8>,
}

impl RunHead {
    fn of(t: &Task) -> RunHead {
        RunHead {
            host: t.url.host_key().as_str().to_owned(),
            kind: kind_code(t.kind),
            depth: t.depth,
            priority: t.priority.0,
            not_before: t.not_before.0,
            opener: lane_opener(t),
        }
    }
}

/// Tasks as the scripts read them (offer_all in lua/offer.lua), in their order: runs of consecutive
/// tasks with the same [`RunHead`], each run its head (host, kind, depth, priority, not-before, lane
/// opener, how many tasks) and then per task its seen keys and blob. A page's links share all of
/// the head, so a link costs Redis three arguments instead of nine, and the script reads the
/// numbers of the head once per run (each argument is a string Redis makes and Lua interns).
pub(crate) struct TaskRuns<'t> {
    runs: Vec<(RunHead, &'t [&'t Task])>,
}

impl<'t> TaskRuns<'t> {
    pub(crate) fn of(tasks: &'t [&'t Task]) -> TaskRuns<'t> {
        let mut runs: Vec<(RunHead, &'t [&'t Task])> = Vec::new();
        let mut start = 0;
        while start < tasks.len() {
            let head = RunHead::of(tasks[start]);
            let mut end = start + 1;
            while end < tasks.len() && RunHead::of(tasks[end]) == head {
                end += 1;
            }
            runs.push((head, &tasks[start..end]));
            start = end;
        }
        TaskRuns { runs }
    }

    /// How many arguments [`TaskRuns::push`] adds: the scripts find what follows by it.
    pub(crate) fn span(&self) -> usize {
        self.runs.iter().map(|(_, ts)| params::RUN_HEAD.names.len() + params::RUN_TASK.names.len() * ts.len()).sum()
    }

    pub(crate) fn push(&self, inv: &mut Call) {
        for (h, ts) in &self.runs {
            inv.named(&params::RUN_HEAD)
                .set("host", h.host.as_str())
                .set("kind", h.kind)
                .set("depth", h.depth)
                .set("prio", h.priority)
                .set("not_before", h.not_before)
                .set("opener", h.opener.as_slice())
                .set("count", ts.len())
                .done();
            for t in *ts {
                let keys = t.seen_keys();
                inv.named(&params::RUN_TASK)
                    .set("fp", keys.own.to_be_bytes().as_slice())
                    .set("fp2", keys.blocked_by.map(|b| b.to_be_bytes().to_vec()).unwrap_or_default())
                    .set("blob", encode(t))
                    .done();
            }
        }
    }
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
    let mut a = inv.named(&params::COMPLETE);
    a.set("now", now.0).set("lease", lease.id.0);
    match c.resolved {
        None => a.set("resolved", "").set("resolved_ttl", 0),
        Some(Resolution::Failed) => a.set("resolved", "f").set("resolved_ttl", 0),
        Some(Resolution::Address { ip, ttl_ms }) => {
            let ttl = shoal_shared::pace::address_ttl(Duration::from_millis(ttl_ms));
            a.set("resolved", ip.to_string()).set("resolved_ttl", u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
        }
    };
    a.set("rate_limited", if c.rate_limited { "1" } else { "0" });
    match &c.robots {
        None => {
            a.set("robots_state", "").set("robots_blob", "").set("crawl_delay", "");
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
            a.set("robots_state", state)
                .set("robots_blob", encode(&LaneRobots::Known(outcome.clone())))
                .set("crawl_delay", delay);
        }
    }
    a.set("robots_fetched_at", c.robots_fetched_at.map(|t| t.0.to_string()).unwrap_or_default());
    a.set("sitemap_bytes", c.sitemap_bytes);
    match &c.requeue {
        None => {
            a.set("requeue_blob", "").set("requeue_is_robots", "0").set("requeue_prio", 0).set("requeue_not_before", 0);
        }
        Some(t) => {
            a.set("requeue_blob", encode(t))
                .set("requeue_is_robots", if t.kind == TaskKind::Robots { "1" } else { "0" })
                .set("requeue_prio", t.priority.0)
                .set("requeue_not_before", t.not_before.0);
        }
    }
    let runs = TaskRuns::of(discovered);
    a.set("discovered_span", runs.span()).set("n_events", usize::from(!c.events.is_empty())).set("ip_cap", ip_cap);
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    a.set("response_ms", opt(c.signals.response_ms.map(u64::from)))
        .set("quota_gap_ms", opt(c.signals.quota_gap_ms.map(u64::from)))
        .set("hold_until", opt(c.signals.hold_until.map(|t| t.0)));
    // Nothing was sent under the lease: the gap it took (its gap_ms) is given back (complete.lua).
    a.set("give_back", if c.sent_nothing { lease.gap_ms.to_string() } else { String::new() });
    let inv = a.done();
    runs.push(inv);
    if !c.events.is_empty() {
        inv.arg(crate::stream::pack_events(&c.events));
    }
    // What became of the further tasks; those not listed were not started. Their outcomes and
    // response times are one argument each (a batch brings up to 31), the requeues' tasks follow.
    let more = &c.more[..c.more.len().min(lease.more.len())];
    let outcomes: String = more.iter().map(|f| if matches!(f, FollowUp::Done { .. }) { 'd' } else { 'r' }).collect();
    let times: Vec<String> =
        more.iter().map(|f| f.response_ms().map_or_else(|| "-".to_owned(), |ms| ms.to_string())).collect();
    inv.named(&params::FURTHER).set("n", more.len()).set("outcomes", outcomes).set("times", times.join(",")).done();
    for f in more {
        if let FollowUp::Requeue { task, .. } = f {
            inv.named(&params::REQUEUE)
                .set("blob", encode(task))
                .set("prio", task.priority.0)
                .set("not_before", task.not_before.0)
                .done();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_tests::conformance::page;

    #[test]
    fn consecutive_tasks_sharing_a_head_make_one_run_in_their_order() {
        let a1 = page(1, 1, "http://a.test/1", 1);
        let a2 = page(1, 1, "http://a.test/2", 1);
        let deeper = page(1, 1, "http://a.test/3", 2);
        let other = page(1, 1, "http://b.test/1", 1);
        let a4 = page(1, 1, "http://a.test/4", 1);
        let tasks = [&a1, &a2, &deeper, &other, &a4];
        let runs = TaskRuns::of(&tasks);
        let sizes: Vec<usize> = runs.runs.iter().map(|(_, ts)| ts.len()).collect();
        assert_eq!(sizes, [2, 1, 1, 1], "a run ends where the head changes, and order is kept");
        assert_eq!(runs.span(), 4 * 7 + 5 * 3, "a head is 7 arguments, a task 3");
        assert_eq!(TaskRuns::of(&[]).span(), 0);
    }
}
