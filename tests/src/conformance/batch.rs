//! Leases that carry several tasks of one lane ([`Lease::more`], `FrontierSettings::lease_batch`):
//! what a host and a site see must be what single leases give. Run on a frontier built with a
//! batch of 4; `batches` says whether the back end grants batches at all (the embedded one
//! leases one task at a time, and these checks then hold trivially for the parts about batches).

use super::{T0, complete, lease, ms, no_lease, page, pass_robots, seed, worker};
use shoal_shared::frontier::{Claim, Completed, Completion, FollowUp, Frontier, Lease};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::latency::ServerSignals;
use shoal_shared::task::TaskKind;
use shoal_shared::time::UnixMs;
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};

/// A site of `host` whose start page found `pages` more pages, after robots.txt; returns the
/// time reached.
async fn site_with_pages<F: Frontier>(f: &F, site: u64, host: &str, in_flight: u32, gap: u64, pages: u64) -> UnixMs {
    f.seed(seed(1, site, host, in_flight, gap, 100)).await.expect("seed");
    let ip = Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9)));
    pass_robots(f, T0, 2, ip).await;
    let now = T0.plus(ms(gap));
    let start = lease(f, now).await;
    assert!(start.more.is_empty(), "only one task is queued: {start:?}");
    let discovered = (1..=pages).map(|i| page(1, site, &format!("http://{host}/{i}"), 1)).collect();
    let c = Completion { discovered, ..Completion::default() };
    assert_eq!(
        complete(f, &start, c, now).await,
        Completed::Applied { enqueued: usize::try_from(pages).expect("fits") }
    );
    now.plus(ms(gap))
}

fn urls(l: &Lease) -> Vec<String> {
    std::iter::once(&l.task).chain(&l.more).map(|t| t.url.as_str().to_owned()).collect()
}

/// On a back end that batches (`batches`), a site of `a.test` at no gap with `pages` pages queued
/// and the first lease of them, which carries all of them up to the batch of 4; `None` elsewhere.
async fn first_batch<F: Frontier>(f: &F, pages: u64, batches: bool) -> Option<(UnixMs, Lease)> {
    let now = site_with_pages(f, 1, "a.test", 4, 0, pages).await;
    let l = lease(f, now).await;
    if !batches {
        return None;
    }
    assert_eq!(l.more.len(), usize::try_from(pages.min(4) - 1).expect("fits"), "{l:?}");
    Some((now, l))
}

/// At no gap, a lease takes up to the batch of the lane's queued tasks in their order, holds one
/// slot of the host for all of them, and its completion accounts for each: done, queued again as
/// the worker asks, or (not started) queued again as it was.
pub async fn a_batch_holds_one_slot_and_accounts_for_every_task<F: Frontier>(f: F, batches: bool) {
    let now = site_with_pages(&f, 1, "a.test", 1, 0, 6).await;
    let l = lease(&f, now).await;
    if !batches {
        assert!(l.more.is_empty());
        return;
    }
    assert_eq!(urls(&l), ["http://a.test/1", "http://a.test/2", "http://a.test/3", "http://a.test/4"]);
    assert!(l.more.iter().all(|t| t.kind == TaskKind::Page));
    assert_eq!(no_lease(&f, now).await, Claim::Idle, "one in flight: the batch holds the host's one slot");
    let p = f.progress(SiteId(1)).await.expect("progress").expect("site");
    assert_eq!((p.queued, p.leased), (2, 4), "every task of the batch counts as leased");
    let completed = p.completed;
    // The first and second done, the third to be tried again later, the fourth not started.
    let mut retry = l.more[1].clone();
    retry.retries += 1;
    retry.not_before = now.plus(ms(5_000));
    let c = Completion {
        discovered: vec![page(1, 1, "http://a.test/7", 2)],
        more: vec![
            FollowUp::Done { response_ms: Some(20) },
            FollowUp::Requeue { task: Box::new(retry), response_ms: None },
        ],
        ..Completion::default()
    };
    assert_eq!(complete(&f, &l, c, now).await, Completed::Applied { enqueued: 1 });
    let p = f.progress(SiteId(1)).await.expect("progress").expect("site");
    assert_eq!((p.queued, p.leased), (5, 0), "/5, /6, /7 and /3, /4 back: {p:?}");
    assert_eq!(p.completed, completed + 2, "/1 and /2 are done: {p:?}");
    // The rest: /5, /6, /4 given back, /7, and /3 once it is due.
    let mut seen = Vec::new();
    let mut t = now;
    for _ in 0..10 {
        match f.claim(&worker(), t).await.expect("claim") {
            Claim::Leased(l) => {
                assert!(l.more.len() < 4, "at most the batch of 4: {l:?}");
                seen.extend(urls(&l));
                assert_eq!(complete(&f, &l, Completion::default(), t).await, Completed::Applied { enqueued: 0 });
            }
            Claim::Wait(at) => t = at,
            Claim::Idle => break,
        }
    }
    let seen: BTreeSet<_> = seen.into_iter().collect();
    let want: BTreeSet<_> = (3..=7).map(|i| format!("http://a.test/{i}")).collect();
    assert_eq!(seen, want, "every task not done came back once");
    let p = f.progress(SiteId(1)).await.expect("progress").expect("site");
    assert!(p.done && p.queued == 0 && p.leased == 0, "{p:?}");
}

/// A host with a gap in force gets one task per lease (a gap between request starts cannot be
/// promised for requests the worker starts later), and so does a host whose address is due to be
/// looked up.
pub async fn no_batch_where_a_gap_is_in_force<F: Frontier>(f: F) {
    let now = site_with_pages(&f, 1, "a.test", 4, 300, 6).await;
    let l = lease(&f, now).await;
    assert!(l.more.is_empty(), "a gap of 300 ms: one task per lease, got {l:?}");
}

/// A reclaimed batch gives every task back, each with its expiry counted; tasks with expired
/// leases are leased one at a time afterwards.
pub async fn an_expired_batch_gives_every_task_back<F: Frontier>(f: F, batches: bool) {
    let Some((_, l)) = first_batch(&f, 3, batches).await else { return };
    assert_eq!(f.reap(l.deadline.plus(ms(1))).await.expect("reap"), 1);
    let later = l.deadline.plus(ms(2));
    let p = f.progress(SiteId(1)).await.expect("progress").expect("site");
    assert_eq!((p.queued, p.leased), (3, 0), "{p:?}");
    let mut again = Vec::new();
    while let Claim::Leased(x) = f.claim(&worker(), later).await.expect("claim") {
        assert!(x.more.is_empty(), "tasks whose leases expired go alone: {x:?}");
        assert_eq!(x.expired, 1, "{x:?}");
        again.push(x);
    }
    assert_eq!(again.len(), 3);
    assert_eq!(complete(&f, &l, Completion::default(), later).await, Completed::Stale, "the old batch is gone");
    for x in &again {
        complete(&f, x, Completion::default(), later).await;
    }
    assert!(f.progress(SiteId(1)).await.expect("progress").expect("site").done);
}

/// A 429 in a batch: the host goes into slow mode (one in flight, 3 s apart: no more batches),
/// and the tasks not started wait for the new pace.
pub async fn a_429_in_a_batch_slows_the_host<F: Frontier>(f: F, batches: bool) {
    let Some((now, l)) = first_batch(&f, 8, batches).await else { return };
    let c = Completion {
        rate_limited: true,
        signals: ServerSignals { hold_until: Some(now.plus(ms(10_000))), ..ServerSignals::default() },
        more: vec![FollowUp::Done { response_ms: None }],
        ..Completion::default()
    };
    complete(&f, &l, c, now).await;
    let p = f.progress(SiteId(1)).await.expect("progress").expect("site");
    assert_eq!((p.queued, p.leased), (6, 0), "4 left and the 2 not started: {p:?}");
    assert_eq!(no_lease(&f, now.plus(ms(9_999))).await, Claim::Wait(now.plus(ms(10_000))), "the hold");
    let slow = lease(&f, now.plus(ms(10_000))).await;
    assert!(slow.more.is_empty(), "slow mode has a 3 s gap: one task per lease, got {slow:?}");
    assert!(slow.gap_ms >= 3_000, "{slow:?}");
}

/// A batch completed after its audit was cancelled queues nothing again, and the site ends.
pub async fn a_cancelled_audit_keeps_nothing_of_a_batch<F: Frontier>(f: F, batches: bool) {
    let Some((now, l)) = first_batch(&f, 5, batches).await else { return };
    f.cancel(AuditId(1)).await.expect("cancel");
    let c = Completion {
        more: vec![FollowUp::Requeue { task: Box::new(l.more[0].clone()), response_ms: None }],
        ..Completion::default()
    };
    complete(&f, &l, c, now).await;
    let p = f.progress(SiteId(1)).await.expect("progress").expect("site");
    assert!(p.done && p.queued == 0 && p.leased == 0, "{p:?}");
    assert_eq!(no_lease(&f, now).await, Claim::Idle);
}

/// A worker that finds nothing while another holds the slots gets its share: the other's next
/// claim (also the one in its completion's step) leaves the freed slot to it. Without this, a
/// worker whose completions claim its next lease in the same step keeps every slot of a busy host
/// or IP, and a worker added to the fleet gets none.
pub async fn an_idle_worker_gets_its_share<F: Frontier>(f: F, fair: bool) {
    let now = site_with_pages(&f, 1, "a.test", 4, 0, 24).await;
    let x = shoal_shared::ids::WorkerId("x".into());
    let w = shoal_shared::ids::WorkerId("w".into());
    let mut held = Vec::new();
    while let Claim::Leased(l) = f.claim(&x, now).await.expect("claim") {
        held.push(*l);
        assert!(held.len() <= 4, "four in flight at most");
    }
    assert_eq!(held.len(), 4, "x holds the host's four slots");
    assert!(!matches!(f.claim(&w, now).await.expect("claim"), Claim::Leased(_)), "the host is full");
    if !fair {
        return;
    }
    let first = held.remove(0);
    let (_, next) = f.complete_and_claim(&first, &Completion::default(), &x, now).await.expect("complete and claim");
    assert!(matches!(next, Claim::Wait(_)), "x holds 3, w none and asked: the slot is left to w, got {next:?}");
    assert!(matches!(f.claim(&x, now).await.expect("claim"), Claim::Wait(_)), "x's own claim leaves it too");
    let got = f.claim(&w, now).await.expect("claim");
    assert!(matches!(got, Claim::Leased(_)), "w gets the slot: {got:?}");
    // Three and one: x's next freed slot goes to w too, once w has asked again and found nothing.
    assert!(!matches!(f.claim(&w, now).await.expect("claim"), Claim::Leased(_)));
    let second = held.remove(0);
    let (_, next) = f.complete_and_claim(&second, &Completion::default(), &x, now).await.expect("complete and claim");
    assert!(matches!(next, Claim::Wait(_)), "x 2, w 1: left to w, got {next:?}");
    assert!(matches!(f.claim(&w, now).await.expect("claim"), Claim::Leased(_)));
    // Two and two: shares are even, nobody leaves anything.
    assert!(!matches!(f.claim(&w, now).await.expect("claim"), Claim::Leased(_)));
    let third = held.remove(0);
    let (_, next) = f.complete_and_claim(&third, &Completion::default(), &x, now).await.expect("complete and claim");
    assert!(matches!(next, Claim::Leased(_)), "x 1, w 2: x claims, got {next:?}");
}

/// A request about to leave later than its slot asks the frontier when it may (`moves`: the back
/// end's requests leave from many processes; the embedded one's all leave from one, whose spacing
/// already holds them, and it answers "when you asked" and keeps nothing). Nothing started since
/// its slot: it leaves when it asked, and the host's next start moves a gap past that. Another
/// start given since: it leaves a gap after that one.
pub async fn a_late_request_leaves_a_gap_from_every_other<F: Frontier>(f: F, moves: bool) {
    let now = site_with_pages(&f, 1, "a.test", 3, 300, 4).await;
    let a = lease(&f, now).await;
    assert_eq!(no_lease(&f, now.plus(ms(299))).await, Claim::Wait(now.plus(ms(300))));
    assert_eq!(f.depart(&a, now, now.plus(ms(100))).await.expect("depart"), now.plus(ms(100)), "nothing since");
    if !moves {
        return;
    }
    assert_eq!(
        no_lease(&f, now.plus(ms(300))).await,
        Claim::Wait(now.plus(ms(400))),
        "the request leaves at +100: the next one a gap after it"
    );
    // Never earlier than it was.
    f.depart(&a, now.plus(ms(100)), now.plus(ms(50))).await.expect("depart");
    assert_eq!(no_lease(&f, now.plus(ms(399))).await, Claim::Wait(now.plus(ms(400))));
    let b = lease(&f, now.plus(ms(400))).await;
    assert!(b.more.is_empty());
    // `a` still has not left at +450 (a machine too busy to run it): `b` was given +400 since, so
    // `a` waits for a gap after `b`, and the next start after `a` is a gap later again.
    assert_eq!(
        f.depart(&a, now.plus(ms(100)), now.plus(ms(450))).await.expect("depart"),
        now.plus(ms(700)),
        "a start was given since: a gap after it"
    );
    assert_eq!(no_lease(&f, now.plus(ms(700))).await, Claim::Wait(now.plus(ms(1000))));
    assert!(matches!(f.claim(&worker(), now.plus(ms(1000))).await.expect("claim"), Claim::Leased(_)));
}

/// All the checks, on a frontier whose leases carry up to 4 tasks.
pub async fn run_batched<F, Fut, M>(mut make: M, batches: bool)
where
    F: Frontier,
    Fut: std::future::Future<Output = F>,
    M: FnMut() -> Fut,
{
    a_batch_holds_one_slot_and_accounts_for_every_task(make().await, batches).await;
    no_batch_where_a_gap_is_in_force(make().await).await;
    an_expired_batch_gives_every_task_back(make().await, batches).await;
    a_429_in_a_batch_slows_the_host(make().await, batches).await;
    a_cancelled_audit_keeps_nothing_of_a_batch(make().await, batches).await;
    an_idle_worker_gets_its_share(make().await, batches).await;
    a_late_request_leaves_a_gap_from_every_other(make().await, batches).await;
}
