//! The browser tasks of `--browser-pages`: a site that asks for them publishes `CrawlDone` when its
//! crawl has nothing left and waits; the coordinator queues them (even for URLs crawled already as
//! pages); only `claim_browser` hands them out, one per host at a time and at least
//! `BROWSER_MIN_GAP` apart; the site is done after them. The workers that claim them announce
//! themselves, and are counted while their announcement lasts.

use super::{T0, complete, drain_events, lease, ms, no_lease, pass_robots, seed, url, worker};
use shoal_shared::frontier::workers::BROWSER_WORKER_TTL_LEASES;
use shoal_shared::frontier::{BROWSER_MIN_GAP, Claim, Completion, Frontier, Lease, RENDER_MIN_GAP};
use shoal_shared::ids::{AuditId, SiteId, WorkerId};
use shoal_shared::record::Event;
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::time::UnixMs;

fn browser(site: u64, u: &str) -> Task {
    Task::new(AuditId(1), SiteId(site), url(u), TaskKind::Browser, 0, FoundVia::Standard)
}

async fn browser_lease<F: Frontier>(f: &F, now: UnixMs) -> Lease {
    match f.claim_browser(&worker(), now).await.expect("claim_browser works") {
        Claim::Leased(l) => *l,
        other => panic!("expected a browser lease at {now}, got {other:?}"),
    }
}

async fn no_browser_lease<F: Frontier>(f: &F, now: UnixMs) -> Claim {
    let c = f.claim_browser(&worker(), now).await.expect("claim_browser works");
    assert!(!matches!(c, Claim::Leased(_)), "expected no browser lease at {now}, got {c:?}");
    c
}

/// The whole browser phase of one site, on both claims.
pub async fn browser_tasks_after_the_crawl<F: Frontier>(f: F) {
    let mut s = seed(1, 1, "a.test", 4, 100, 10);
    s.limits.browser_pages = 2;
    f.seed(s).await.expect("seed");
    assert_eq!(no_browser_lease(&f, T0).await, Claim::Idle, "nothing for the browser during the crawl");
    pass_robots(&f, T0, 2, None).await;
    let p = lease(&f, T0.plus(ms(100))).await;
    assert_eq!(p.task.kind, TaskKind::Page);
    complete(&f, &p, Completion::default(), T0.plus(ms(150))).await;

    let events = drain_events(&f).await;
    assert!(events.contains(&Event::CrawlDone { audit: AuditId(1), site: SiteId(1) }), "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, Event::SiteDone { .. })), "not done before its browser pages");
    let progress = f.progress(SiteId(1)).await.expect("progress").expect("site");
    assert!(!progress.done, "{progress:?}");

    let t = T0.plus(ms(1_000));
    let tasks = vec![browser(1, "http://a.test/"), browser(1, "http://a.test/x")];
    f.queue_browser(SiteId(1), tasks.clone(), t).await.expect("queue");
    assert_eq!(no_lease(&f, t).await, Claim::Idle, "an ordinary claim never takes a browser task");
    let b1 = browser_lease(&f, t).await;
    assert_eq!((b1.task.kind, b1.task.url.as_str()), (TaskKind::Browser, "http://a.test/"), "crawled, still opened");
    assert!(!matches!(f.claim_browser(&worker(), t).await.expect("claim"), Claim::Leased(_)), "one at a time per host");
    complete(&f, &b1, Completion::default(), t.plus(ms(20))).await;
    assert_eq!(
        no_browser_lease(&f, t.plus(ms(20))).await,
        Claim::Wait(t.plus(ms(20)).plus(BROWSER_MIN_GAP)),
        "the next page load waits 3 s from the previous one's end, not the host's 100 ms gap"
    );
    // Queued again while the site waits for its last task: nothing changes.
    f.queue_browser(SiteId(1), tasks, t.plus(ms(30))).await.expect("queue again");
    let next = t.plus(ms(20)).plus(BROWSER_MIN_GAP);
    let b2 = browser_lease(&f, next).await;
    assert_eq!(b2.task.url.as_str(), "http://a.test/x");
    assert_eq!(no_browser_lease(&f, next).await, Claim::Idle, "nothing else queued");
    complete(&f, &b2, Completion::default(), t.plus(ms(4_000))).await;
    let events = drain_events(&f).await;
    assert_eq!(events, vec![Event::SiteDone { audit: AuditId(1), site: SiteId(1) }]);
}

/// A site whose crawl ended while it waits for its browser tasks ends when its audit is
/// cancelled; with no page to open it ends at once; an expired browser lease comes back to
/// `claim_browser` only.
pub async fn browser_phase_ends_on_cancel_or_nothing_to_open<F: Frontier>(f: F) {
    for (site, host) in [(1, "a.test"), (2, "b.test"), (3, "c.test")] {
        let mut s = seed(1, site, host, 4, 0, 10);
        s.limits.browser_pages = 3;
        f.seed(s).await.expect("seed");
    }
    pass_robots(&f, T0, 6, None).await;
    for _ in 0..3 {
        let p = lease(&f, T0).await;
        complete(&f, &p, Completion::default(), T0).await;
    }
    let crawl_done = drain_events(&f).await.iter().filter(|e| matches!(e, Event::CrawlDone { .. })).count();
    assert_eq!(crawl_done, 3);
    // Site 1: nothing to open.
    f.queue_browser(SiteId(1), Vec::new(), T0).await.expect("queue");
    assert_eq!(drain_events(&f).await, vec![Event::SiteDone { audit: AuditId(1), site: SiteId(1) }]);
    // Site 2: its lease expires and comes back to the browser claim, not the ordinary one.
    f.queue_browser(SiteId(2), vec![browser(2, "http://b.test/")], T0).await.expect("queue");
    let b = browser_lease(&f, T0).await;
    let ttl = ms(b.deadline.0 - b.started_at.0);
    f.reap(T0.plus(ttl)).await.expect("reap");
    assert_eq!(no_lease(&f, T0.plus(ttl)).await, Claim::Idle);
    let again = browser_lease(&f, T0.plus(ttl).plus(BROWSER_MIN_GAP)).await;
    assert_eq!((again.task.url.as_str(), again.expired), ("http://b.test/", 1));
    complete(&f, &again, Completion::default(), T0.plus(ttl).plus(BROWSER_MIN_GAP)).await;
    // Site 3: cancelled while it waits for its browser tasks.
    f.queue_browser(SiteId(3), vec![browser(3, "http://c.test/")], T0).await.expect("queue");
    f.cancel(AuditId(1)).await.expect("cancel");
    assert_eq!(no_browser_lease(&f, T0.plus(ms(60_000))).await, Claim::Idle, "a cancelled site's tasks are dropped");
    let done: Vec<u64> = drain_events(&f)
        .await
        .iter()
        .filter_map(|e| if let Event::SiteDone { site, .. } = e { Some(site.0) } else { None })
        .collect();
    assert_eq!(done, vec![2, 3]);
}

/// Whether the site waits for the coordinator to queue its browser tasks.
async fn awaiting<F: Frontier>(f: &F, site: SiteId) -> bool {
    f.progress(site).await.expect("progress").expect("site").awaiting_browser
}

fn render(site: u64, u: &str) -> Task {
    Task::new(AuditId(1), SiteId(site), url(u), TaskKind::Render, 0, FoundVia::Standard)
}

/// The rendered crawl's rounds (`--render`): a site that renders publishes `CrawlDone` after its
/// crawl; a round of render tasks is claimed by the browser claim only, and the pages its
/// completion discovers are crawled by the ordinary claim like any page's links; once the round
/// and that crawl are over, `CrawlDone` comes again (not `SiteDone`); a round with nothing to
/// render publishes it at once; the site ends after browser tasks that are no round.
pub async fn render_rounds_publish_the_crawls_end_again<F: Frontier>(f: F) {
    let mut s = seed(1, 1, "a.test", 4, 0, 10);
    s.limits.render = shoal_shared::render::RenderMode::Always;
    f.seed(s).await.expect("seed");
    pass_robots(&f, T0, 2, None).await;
    let p = lease(&f, T0).await;
    complete(&f, &p, Completion::default(), T0).await;
    let crawl_done = Event::CrawlDone { audit: AuditId(1), site: SiteId(1) };
    assert_eq!(drain_events(&f).await, vec![crawl_done.clone()], "the crawl's end, nothing else");
    assert!(awaiting(&f, SiteId(1)).await, "it waits for its browser tasks");

    let t = T0.plus(ms(1_000));
    f.queue_browser(SiteId(1), vec![render(1, "http://a.test/")], t).await.expect("queue a round");
    assert!(!awaiting(&f, SiteId(1)).await, "a round is queued: a CrawlDone delivered again plans nothing");
    assert_eq!(no_lease(&f, t).await, Claim::Idle, "an ordinary claim never takes a render task");
    let r = browser_lease(&f, t).await;
    assert_eq!((r.task.kind, r.task.url.as_str()), (TaskKind::Render, "http://a.test/"));
    let found = Task::new(
        AuditId(1),
        SiteId(1),
        url("http://a.test/only-after-js"),
        TaskKind::Page,
        1,
        FoundVia::Link { from: url("http://a.test/") },
    );
    let seen_already = Task::new(AuditId(1), SiteId(1), url("http://a.test/"), TaskKind::Page, 1, FoundVia::Standard);
    let done = Completion { discovered: vec![found, seen_already], ..Completion::default() };
    complete(&f, &r, done, t.plus(ms(10))).await;
    assert_eq!(drain_events(&f).await, Vec::<Event>::new(), "the page it found is crawled first");
    // A render rests the host RENDER_MIN_GAP (not the check's 3 s), ordinary requests included.
    let after = t.plus(ms(10)).plus(RENDER_MIN_GAP);
    assert_eq!(no_lease(&f, t.plus(ms(20))).await, Claim::Wait(after), "the host rests after the page load");
    let p = lease(&f, after).await;
    assert_eq!(p.task.url.as_str(), "http://a.test/only-after-js", "the seen set keeps the start page out");
    assert_eq!(no_lease(&f, after).await, Claim::Idle, "only the new page was queued");
    complete(&f, &p, Completion::default(), after.plus(ms(10))).await;
    assert_eq!(drain_events(&f).await, vec![crawl_done.clone()], "the round and its crawl are over: the next round");
    assert!(awaiting(&f, SiteId(1)).await, "waiting for the next round");

    // The next round finds nothing new: the crawl's end again, and the coordinator ends it.
    let t2 = after.plus(RENDER_MIN_GAP);
    assert_eq!(no_browser_lease(&f, after.plus(ms(10))).await, Claim::Idle, "no round queued yet");
    f.queue_browser(SiteId(1), vec![render(1, "http://a.test/only-after-js")], t2).await.expect("queue");
    let r2 = browser_lease(&f, t2).await;
    assert_eq!(
        no_browser_lease(&f, t2).await,
        Claim::Idle,
        "one page load at a time per host, and nothing else queued"
    );
    complete(&f, &r2, Completion::default(), t2.plus(ms(10))).await;
    assert_eq!(drain_events(&f).await, vec![crawl_done], "a round that found nothing ends at its completion");
    // Browser tasks that are no round (here none): the site is done.
    f.queue_browser(SiteId(1), Vec::new(), t2.plus(ms(20))).await.expect("queue the last");
    assert_eq!(drain_events(&f).await, vec![Event::SiteDone { audit: AuditId(1), site: SiteId(1) }]);
    assert!(!awaiting(&f, SiteId(1)).await, "done");
}

/// The live browser workers: an announcement made at `t` counts until `t` + 3 lease times
/// (`BROWSER_WORKER_TTL_LEASES`), the last millisecond included and not its end; announcing again
/// moves it; a worker counts once however often it announces; a withdrawal counts it out at once
/// and an expired one is not revived by a read at an earlier time.
pub async fn browser_workers_are_counted_while_announced<F: Frontier>(f: F) {
    let count = |now: UnixMs| {
        let f = &f;
        async move { f.browser_workers(now).await.expect("browser_workers works") }
    };
    // The lease time, as the back end applies it (its settings are the caller's): a renewal at
    // `T0` moves a deadline to `T0` + that.
    f.seed(seed(1, 1, "a.test", 4, 0, 10)).await.expect("seed");
    let l = lease(&f, T0).await;
    let renewed = f.renew(&worker(), &[l.id], T0).await.expect("renew");
    let ttl = (renewed.deadline.0 - T0.0) * u64::from(BROWSER_WORKER_TTL_LEASES);
    assert!(ttl > 0, "{renewed:?}");
    let (a, b) = (WorkerId("browser-a".into()), WorkerId("browser-b".into()));
    assert_eq!(count(T0).await, 0, "no worker announced");
    f.announce_browser_worker(&a, T0).await.expect("announce");
    assert_eq!(count(T0).await, 1);
    assert_eq!(count(T0.plus(ms(ttl - 1))).await, 1, "live through its last millisecond");
    assert_eq!(count(T0.plus(ms(ttl))).await, 0, "expired at T0 + {ttl} ms");
    assert_eq!(count(T0.plus(ms(ttl - 1))).await, 0, "an expired announcement was dropped, not revived");

    // A heartbeat renews it: announced again half a TTL later, it lasts a TTL from then.
    let t1 = T0.plus(ms(10 * ttl));
    f.announce_browser_worker(&a, t1).await.expect("announce");
    f.announce_browser_worker(&a, t1.plus(ms(ttl / 2))).await.expect("renew the announcement");
    assert_eq!(count(t1.plus(ms(ttl))).await, 1, "renewed past its first expiry");
    assert_eq!(count(t1.plus(ms(ttl / 2 + ttl - 1))).await, 1);
    assert_eq!(count(t1.plus(ms(ttl / 2 + ttl))).await, 0);

    // Two workers, each counted once; withdrawing one leaves the other.
    let t2 = T0.plus(ms(20 * ttl));
    for w in [&a, &b, &a] {
        f.announce_browser_worker(w, t2).await.expect("announce");
    }
    assert_eq!(count(t2).await, 2, "a worker that announces twice counts once");
    f.withdraw_browser_worker(&a).await.expect("withdraw");
    assert_eq!(count(t2).await, 1, "a withdrawn worker counts out at once");
    f.withdraw_browser_worker(&a).await.expect("withdrawing twice is harmless");
    assert_eq!(count(t2).await, 1);
    f.withdraw_browser_worker(&b).await.expect("withdraw");
    assert_eq!(count(t2).await, 0);
}
