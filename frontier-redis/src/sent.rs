//! The links a frontier client has already handed to Redis, per audit, so a completion leaves
//! them out.
//!
//! Most links a page brings are already known: navigation, footers and breadcrumbs repeat on every
//! page of a site, and on a site whose pages each link five others four of the five were seen
//! before. Each one the `complete` script reads costs it nine arguments turned into Lua strings, a
//! Lua table and a member of its `SMISMEMBER`: a large share of what a batch's call costs Redis
//! (docs/redis.md, "Cost per request"). What the script decides for a link it has seen is final
//! (the audit's seen set only grows, its page, resource and sitemap counts only grow, a lane that
//! robots.txt closed stays closed, a site that ended takes nothing more), so a link this client
//! sent before at the same or a smaller depth would only be turned away again. The seen set in
//! Redis stays the one authority: this is a per-process shortcut, never a reason to queue.
//!
//! Only links to the lease's own host are remembered: its lane exists (the lease came from it),
//! so the script's verdict does not depend on a lane another link may open later.
//!
//! Only within one epoch of Redis' state (every lease carries it, `epoch` in common.lua): when
//! Redis was emptied and the audits seeded again, everything sent before is new to it, and the
//! memo is dropped at the first lease of the new epoch.
//!
//! What it holds ends: an audit's entries go when it has had no completion for [`IDLE`], and
//! all audits together keep at most [`CAP`] entries (the least recently used audit is dropped
//! first; dropping only costs Redis a few more members to check).

use shoal_shared::frontier::Lease;
use shoal_shared::ids::AuditId;
use shoal_shared::task::Task;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::{Duration, Instant};

/// Entries kept for all audits together (about 16 bytes each in the maps, so a few MB at most).
pub(crate) const CAP: usize = 262_144;
/// An audit with no completion for this long is forgotten (it ended, or this worker no longer
/// gets its leases).
pub(crate) const IDLE: Duration = Duration::from_secs(600);

/// A link as the filter knows it: its seen key and kind folded into one number (a page and a
/// sitemap of one URL share a seen key but not their budget, so they are told apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct SentKey(u64);

impl SentKey {
    fn of(t: &Task) -> SentKey {
        let salt =
            crate::args::kind_code(t.kind).bytes().fold(0u64, |a, b| a.wrapping_mul(31).wrapping_add(u64::from(b)));
        SentKey(t.seen_keys().own ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }
}

/// The links of one completion that go to Redis, and what to remember once Redis took them.
#[derive(Debug)]
pub(crate) struct Outgoing<'a> {
    /// The tasks to send, in the completion's order.
    pub tasks: Vec<&'a Task>,
    /// Those of them to remember, with their depth, once the completion was applied.
    pub remember: Vec<(SentKey, u16)>,
    audit: AuditId,
}

#[derive(Debug)]
struct AuditSent {
    used: Instant,
    depths: HashMap<SentKey, u16>,
}

/// Per audit, the smallest depth at which each link was sent.
#[derive(Debug, Default)]
pub(crate) struct Sent {
    audits: HashMap<AuditId, AuditSent>,
    total: usize,
}

impl Sent {
    /// The discovered tasks of a completion of `lease` that Redis has to see: all but the links to
    /// the lease's host sent before at a depth no greater (and repeats within the list).
    pub(crate) fn outgoing<'a>(&self, lease: &Lease, discovered: &'a [Task]) -> Outgoing<'a> {
        let audit = lease.task.audit;
        let known = self.audits.get(&audit);
        let mut out = Outgoing { tasks: Vec::with_capacity(discovered.len()), remember: Vec::new(), audit };
        let mut here: HashMap<SentKey, u16> = HashMap::new();
        for t in discovered {
            if t.audit != audit || t.site != lease.task.site || t.url.host_key() != lease.host {
                out.tasks.push(t);
                continue;
            }
            let key = SentKey::of(t);
            let before = known.and_then(|a| a.depths.get(&key)).copied();
            if before.into_iter().chain(here.get(&key).copied()).any(|d| d <= t.depth) {
                continue;
            }
            out.tasks.push(t);
            here.insert(key, t.depth);
        }
        out.remember = here.into_iter().collect();
        out
    }

    /// Remembers what `out` sent, once Redis applied the completion (a failed or stale call
    /// remembers nothing, so a retry sends everything again).
    pub(crate) fn sent(&mut self, out: Outgoing<'_>, now: Instant) {
        self.forget_idle(now);
        let audit = out.audit;
        if out.remember.is_empty() {
            if let Some(a) = self.audits.get_mut(&audit) {
                a.used = now;
            }
            return;
        }
        while self.total + out.remember.len() > CAP && !self.audits.is_empty() {
            self.drop_least_recent();
        }
        let a = self.audits.entry(audit).or_insert_with(|| AuditSent { used: now, depths: HashMap::new() });
        a.used = now;
        for (key, depth) in out.remember.into_iter().take(CAP) {
            match a.depths.entry(key) {
                Entry::Vacant(v) => {
                    v.insert(depth);
                    self.total += 1;
                }
                Entry::Occupied(mut o) => {
                    let d = o.get_mut();
                    *d = (*d).min(depth);
                }
            }
        }
    }

    /// Forgets everything (Redis' state began again: see `RedisFrontier::saw_epoch`).
    pub(crate) fn clear(&mut self) {
        self.audits.clear();
        self.total = 0;
    }

    /// Entries held for all audits.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.total
    }

    fn forget_idle(&mut self, now: Instant) {
        let mut freed = 0;
        self.audits.retain(|_, a| {
            let keep = now.saturating_duration_since(a.used) < IDLE;
            if !keep {
                freed += a.depths.len();
            }
            keep
        });
        self.total -= freed;
    }

    fn drop_least_recent(&mut self) {
        let oldest = self.audits.iter().min_by_key(|(_, a)| a.used).map(|(id, _)| *id);
        if let Some(a) = oldest.and_then(|id| self.audits.remove(&id)) {
            self.total -= a.depths.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_shared::ids::{LeaseId, SiteId, WorkerId};
    use shoal_shared::task::{FoundVia, TaskKind};
    use shoal_shared::time::UnixMs;
    use shoal_shared::url::NormalizedUrl;

    fn task(audit: u64, url: &str, kind: TaskKind, depth: u16) -> Task {
        let url = NormalizedUrl::parse(url).expect("test URL");
        Task::new(AuditId(audit), SiteId(audit), url, kind, depth, FoundVia::Standard)
    }

    fn lease(audit: u64) -> Lease {
        let task = task(audit, "http://a.test/", TaskKind::Page, 0);
        Lease {
            id: LeaseId(1),
            worker: WorkerId("w".into()),
            host: task.url.host_key(),
            ip: None,
            task,
            started_at: UnixMs(0),
            deadline: UnixMs(60_000),
            gap_ms: 0,
            resolve: false,
            expired: 0,
            robots_at: UnixMs(0),
            more: Vec::new(),
        }
    }

    fn urls(out: &Outgoing<'_>) -> Vec<String> {
        out.tasks.iter().map(|t| format!("{}@{}", t.url, t.depth)).collect()
    }

    /// Sends `links` for a completion of `lease` that Redis applied; returns what went out.
    fn complete(sent: &mut Sent, lease: &Lease, links: &[Task], now: Instant) -> Vec<String> {
        let out = sent.outgoing(lease, links);
        let shown = urls(&out);
        sent.sent(out, now);
        shown
    }

    #[test]
    fn a_link_of_the_host_goes_once_per_audit_unless_found_nearer() {
        let (mut sent, now, l) = (Sent::default(), Instant::now(), lease(1));
        let first = [task(1, "http://a.test/x", TaskKind::Page, 2), task(1, "http://a.test/x", TaskKind::Page, 2)];
        assert_eq!(complete(&mut sent, &l, &first, now), ["http://a.test/x@2"], "a repeat within one completion");
        let again = [
            task(1, "http://a.test/x", TaskKind::Page, 3),
            task(1, "http://a.test/x", TaskKind::Page, 2),
            task(1, "http://a.test/x", TaskKind::Page, 1),
            // Same seen key, other budget: Redis decides.
            task(1, "http://a.test/x", TaskKind::Sitemap { index_depth: 0 }, 2),
        ];
        let shown = complete(&mut sent, &l, &again, now);
        assert_eq!(shown, ["http://a.test/x@1", "http://a.test/x@2"]);
        assert_eq!(complete(&mut sent, &l, &again, now), Vec::<String>::new());
        assert_eq!(sent.len(), 2);
    }

    #[test]
    fn links_of_other_hosts_sites_and_audits_always_go() {
        let (mut sent, now, l) = (Sent::default(), Instant::now(), lease(1));
        let mut other_site = task(1, "http://a.test/y", TaskKind::Page, 1);
        other_site.site = SiteId(9);
        let links = [
            task(1, "http://b.test/", TaskKind::External, 1),
            task(2, "http://a.test/y", TaskKind::Page, 1),
            other_site,
        ];
        for _ in 0..2 {
            assert_eq!(complete(&mut sent, &l, &links, now).len(), 3);
        }
        assert_eq!(sent.len(), 0);
    }

    #[test]
    fn nothing_is_remembered_of_a_completion_redis_did_not_apply() {
        let (mut sent, now, l) = (Sent::default(), Instant::now(), lease(1));
        let links = [task(1, "http://a.test/z", TaskKind::Page, 1)];
        let out = sent.outgoing(&l, &links);
        assert_eq!(out.tasks.len(), 1);
        drop(out); // the call failed or the lease was stale
        assert_eq!(complete(&mut sent, &l, &links, now).len(), 1, "sent again on the retry");
        assert_eq!(complete(&mut sent, &l, &links, now).len(), 0);
    }

    #[test]
    fn an_idle_audit_is_forgotten_and_the_cap_holds() {
        let (mut sent, now) = (Sent::default(), Instant::now());
        let links = [task(1, "http://a.test/z", TaskKind::Page, 1)];
        complete(&mut sent, &lease(1), &links, now);
        complete(&mut sent, &lease(2), &[task(2, "http://a.test/z", TaskKind::Page, 1)], now + IDLE);
        assert_eq!(sent.len(), 1, "audit 1 had no completion for IDLE");
        assert_eq!(complete(&mut sent, &lease(1), &links, now + IDLE).len(), 1);

        let many: Vec<Task> =
            (0..CAP + 10).map(|i| task(3, &format!("http://a.test/p{i}"), TaskKind::Page, 1)).collect();
        let later = now + IDLE + Duration::from_secs(1);
        assert_eq!(complete(&mut sent, &lease(3), &many, later).len(), CAP + 10);
        assert!(sent.len() <= CAP, "{} entries", sent.len());
        assert!(!sent.audits.contains_key(&AuditId(1)) && !sent.audits.contains_key(&AuditId(2)));
    }
}
