//! How a lease of several tasks is kept in Redis (the lease hash's `n` and `mz`, its further tasks
//! in `leasem`): what its further tasks were when they go back to the queue, and leases of the
//! layouts before, which are refused (frontier schema 2).

use redis::AsyncCommands;
use shoal_frontier_redis::RedisFrontier;
use shoal_shared::frontier::{Claim, Completion, Frontier, FrontierSettings, Lease, RobotsOutcome};
use shoal_shared::ids::{SiteId, WorkerId};
use shoal_shared::task::{Priority, Task, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_tests::conformance::{page, resolution, seed};
use shoal_tests::redis::RedisServer;
use std::time::Duration;

fn worker() -> WorkerId {
    WorkerId("w".into())
}

/// A frontier on its own redis-server leasing up to 4 tasks at once, and site 1 (`a.test`) past
/// robots.txt, whose start page found `pages`: the first lease of them, and the time it was taken.
async fn first_batch(ns: &str, pages: Vec<Task>) -> (RedisServer, RedisFrontier, Lease, UnixMs) {
    let server = RedisServer::start().expect("redis-server starts");
    let settings = FrontierSettings { lease_batch: 4, ..FrontierSettings::default() };
    let f = RedisFrontier::connect(&server.url(), ns, settings, "coordinator").await.expect("connects");
    f.publish_settings().await.expect("settings");
    f.seed(seed(1, 1, "a.test", 4, 0, 100)).await.expect("seed");
    let t = UnixMs::from(std::time::SystemTime::now());
    let mut pages = Some(pages);
    for _ in 0..10 {
        let Claim::Leased(l) = f.claim(&worker(), t).await.expect("claim") else { panic!("a lease is due") };
        let mut c = Completion { resolved: resolution(&l, None), ..Completion::default() };
        match l.task.kind {
            TaskKind::Robots => c.robots = Some(RobotsOutcome::AllowAll),
            TaskKind::Page if l.task.depth == 0 => c.discovered = pages.take().expect("one start page"),
            _ => return (server, f, *l, t),
        }
        f.complete(&l, c, t).await.expect("complete");
    }
    panic!("no lease of the pages in 10 claims");
}

fn with_priority(name: &str, p: u8) -> Task {
    let mut task = page(1, 1, &format!("http://a.test/{name}"), 1);
    task.priority = Priority(p);
    task
}

/// The paths of a lease's tasks, in order.
fn paths(l: &Lease) -> Vec<String> {
    std::iter::once(&l.task).chain(&l.more).map(|t| t.url.as_url().path().to_owned()).collect()
}

/// How a version before this one kept a batch lease's further tasks in the lease hash.
#[derive(Debug, Clone, Copy)]
enum EarlierLayout {
    /// `mp`: blobs and queue scores, MessagePack strings one after another (packed by cmsgpack).
    Packed,
    /// `m1`..`mn` and `q1`..`qn`, a field per blob and priority.
    Fields,
}

/// A MessagePack string (cmsgpack reads strings, not bin) holding `bytes`.
fn mp_str(out: &mut Vec<u8>, bytes: &[u8]) {
    let n = bytes.len();
    if let Ok(n8) = u8::try_from(n) {
        out.extend([0xd9, n8]);
    } else if let Ok(n16) = u16::try_from(n) {
        out.push(0xda);
        out.extend(n16.to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend(u32::try_from(n).expect("a blob under 4 GiB").to_be_bytes());
    }
    out.extend_from_slice(bytes);
}

/// A batch lease of frontier schema 1 (its further tasks in the lease hash) is no longer read:
/// the reaper (the coordinator) and a completion (a worker) fail with an error that names the
/// schema and the upgrade step, and leave the lease, its site and its counts as they were (no
/// guess at the tasks, no quarantine: nothing is wrong with the site).
async fn an_earlier_batch_is_refused_saying_why(layout: EarlierLayout) {
    let pages = (1..=3).map(|i| with_priority(&i.to_string(), 1)).collect();
    let (_server, f, l, t) = first_batch(&format!("legacy-{layout:?}"), pages).await;
    assert_eq!(paths(&l), ["/1", "/2", "/3"], "one lease of the three pages");
    // The lease rewritten as the earlier version wrote it.
    let mut c = f.connection();
    let key = format!("{}:lease:{}", f.keys().prefix(), l.id.0);
    let more_key = format!("{}:leasem:{}", f.keys().prefix(), l.id.0);
    let more: Vec<(Vec<u8>, String)> = c.zrange_withscores(&more_key, 0, -1).await.expect("the further tasks");
    assert_eq!(more.len(), 2, "the two further tasks, kept apart from the lease hash");
    let _: () = c.del(&more_key).await.expect("del");
    let _: () = c.hdel(&key, "mz").await.expect("hdel");
    match layout {
        EarlierLayout::Packed => {
            let mut packed = Vec::new();
            for (blob, score) in &more {
                mp_str(&mut packed, blob);
                mp_str(&mut packed, score.as_bytes());
            }
            let _: () = c.hset(&key, "mp", packed).await.expect("hset");
        }
        EarlierLayout::Fields => {
            for (i, t) in l.more.iter().enumerate() {
                let blob = rmp_serde::to_vec_named(t).expect("encodes");
                let _: () = c.hset_multiple(&key, &[(format!("m{}", i + 1), blob)]).await.expect("hset");
                let _: () = c.hset(&key, format!("q{}", i + 1), "1").await.expect("hset");
            }
        }
    }
    let before: std::collections::HashMap<String, Vec<u8>> = c.hgetall(&key).await.expect("the lease");
    let says_why = |e: shoal_shared::frontier::FrontierError| {
        let text = e.to_string();
        let id = format!("lease {} is a batch lease of frontier schema 1", l.id.0);
        assert!(text.contains("shoal frontier schema 2") && text.contains(&id), "{text}");
        assert!(text.contains(r#"docs/runbook.md, "Upgrading""#), "names the upgrade step: {text}");
    };
    says_why(f.reap(l.deadline.plus(Duration::from_millis(1))).await.expect_err("the reaper refuses it"));
    says_why(f.complete(&l, Completion::default(), t).await.expect_err("the completion refuses it"));
    let e = f.complete_and_claim(&l, &Completion::default(), &worker(), t).await.expect_err("so does complete_claim");
    says_why(e);
    let after: std::collections::HashMap<String, Vec<u8>> = c.hgetall(&key).await.expect("the lease");
    assert_eq!(after, before, "the lease is left as it was");
    let p = f.progress(SiteId(1)).await.expect("progress").expect("site");
    assert_eq!((p.queued, p.leased, p.done), (0, 3, false), "the site's counts are untouched: {p:?}");
    assert!(f.quarantine(10).await.expect("quarantine").sites.is_empty(), "the site is not quarantined");
}

#[tokio::test]
async fn a_batch_granted_with_its_tasks_packed_in_the_lease_is_refused_saying_why() {
    an_earlier_batch_is_refused_saying_why(EarlierLayout::Packed).await;
}

#[tokio::test]
async fn a_batch_granted_with_a_field_per_task_is_refused_saying_why() {
    an_earlier_batch_is_refused_saying_why(EarlierLayout::Fields).await;
}

/// Further tasks of a batch that its worker never started go back to the queue with their
/// priorities (the lease keeps their queue scores): ahead of a task of lower priority queued
/// meanwhile and behind one of higher.
#[tokio::test]
async fn further_tasks_not_started_go_back_with_their_priority() {
    let pages = vec![with_priority("a1", 1), with_priority("a2", 1), with_priority("a3", 1), with_priority("b", 5)];
    let (_server, f, l, t) = first_batch("prio", pages).await;
    assert_eq!(paths(&l), ["/a1", "/a2", "/a3", "/b"], "one batch, in priority order");
    // Only the first task was fetched; it found a page of priority 3.
    let c = Completion { discovered: vec![with_priority("c", 3)], ..Completion::default() };
    f.complete(&l, c, t).await.expect("complete");
    let Claim::Leased(again) = f.claim(&worker(), t).await.expect("claim") else { panic!("the tasks are back") };
    assert_eq!(paths(&again), ["/a2", "/a3", "/c", "/b"], "each back with its own priority");
    assert_eq!(again.more[2].priority, Priority(5));
}
