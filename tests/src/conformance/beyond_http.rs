//! The lanes of SPEC §9's checks: a DNS check or a mail conversation asks no web server, so its
//! lane has no robots.txt but still a host pace (and an address, for the per-IP cap); an HTTP
//! check of another host (the MTA-STS policy, the registry) opens its lane with robots.txt first.
//! None of them counts against the site's page or resource budgets.

use super::{T0, complete, lease, ms, no_lease, resolution, robots_ok, seed, url};
use shoal_shared::frontier::{Claim, Completed, Completion, Frontier, LaneRobots, RobotsOutcome};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::url::{HostKey, NormalizedUrl};

fn check(site: u64, u: NormalizedUrl, kind: TaskKind) -> Task {
    Task::new(AuditId(1), SiteId(site), u, kind, 0, FoundVia::Standard)
}

/// A seeded DNS check is leased at once (no robots.txt of its own, none of the site's first);
/// the mail servers it finds get lanes without robots.txt, one per site, sharing the mail
/// server's one pace; the MTA-STS policy's lane starts with that host's robots.txt.
pub async fn checks_beyond_http_open_their_own_lanes<F: Frontier>(f: F) {
    let mut s1 = seed(1, 1, "a.test", 4, 300, 10);
    s1.limits.max_resources = 0;
    let dns = NormalizedUrl::service("dns", "a.test", 53).expect("a service URL");
    s1.initial.push(check(1, dns.clone(), TaskKind::DomainDns));
    f.seed(s1).await.expect("seed");
    let mut s2 = seed(1, 2, "b.test", 4, 300, 10);
    s2.limits.max_resources = 0;
    f.seed(s2).await.expect("seed");

    // Four lanes may start: two robots.txt per site and the DNS check, in any order.
    let mut dns_lease = None;
    for _ in 0..5 {
        let l = lease(&f, T0).await;
        if l.task.kind == TaskKind::DomainDns {
            assert_eq!(l.host.as_str(), "a.test:53");
            dns_lease = Some(l);
        } else {
            assert_eq!(l.task.kind, TaskKind::Robots, "{l:?}");
            complete(&f, &l, robots_ok(&l, None), T0).await;
        }
    }
    let dns_lease = dns_lease.expect("the DNS check is leased without a robots.txt before it");
    let state = f.robots(SiteId(1), &HostKey::from_raw("a.test:53")).await.expect("robots").expect("lane");
    assert_eq!(state.robots, LaneRobots::Known(RobotsOutcome::AllowAll), "nothing to wait for");

    let mx = NormalizedUrl::service("smtp", "mx.shared.test", 2525).expect("a service URL");
    let policy = url("https://mta-sts.a.test/.well-known/mta-sts.txt");
    let found = vec![
        check(1, mx.clone(), TaskKind::Smtp),
        check(1, mx.clone(), TaskKind::Smtp),
        check(1, policy, TaskKind::MtaStsPolicy),
    ];
    let c = Completion { discovered: found, ..Completion::default() };
    assert_eq!(
        complete(&f, &dns_lease, c, T0).await,
        Completed::Applied { enqueued: 2 },
        "the same mail server once per site, and no budget applies"
    );
    // b.test's site asks the same mail server (its own DNS check would find it): its start page's
    // completion stands in for that check here.
    let mut smtp = Vec::new();
    let mut at = T0;
    for _ in 0..40 {
        match f.claim(&super::worker(), at).await.expect("claim") {
            Claim::Leased(l) if l.task.kind == TaskKind::Smtp => {
                assert_eq!(l.host.as_str(), "mx.shared.test:2525");
                smtp.push((at, l.resolve));
                complete(&f, &l, Completion { resolved: resolution(&l, None), ..Completion::default() }, at).await;
            }
            Claim::Leased(l) if l.task.kind == TaskKind::Robots => {
                assert_eq!(l.host.as_str(), "mta-sts.a.test", "the policy's host: robots.txt first");
                complete(&f, &l, robots_ok(&l, None), at).await;
            }
            Claim::Leased(l) if l.task.site == SiteId(2) && l.task.kind == TaskKind::Page => {
                let c = Completion { discovered: vec![check(2, mx.clone(), TaskKind::Smtp)], ..Completion::default() };
                assert_eq!(complete(&f, &l, c, at).await, Completed::Applied { enqueued: 1 });
            }
            Claim::Leased(l) => {
                complete(&f, &l, Completion { resolved: resolution(&l, None), ..Completion::default() }, at).await;
            }
            Claim::Wait(t) => at = t,
            Claim::Idle => break,
        }
    }
    assert_eq!(smtp.len(), 2, "one mail conversation per site: {smtp:?}");
    assert!(smtp[0].1, "the mail server's address is looked up for the per-IP cap");
    assert!(smtp[1].0 >= smtp[0].0.plus(ms(300)), "the mail server's gap holds across sites: {smtp:?}");
    no_lease(&f, at.plus(ms(10_000))).await;
    for site in [1, 2] {
        assert!(f.progress(SiteId(site)).await.expect("progress").expect("site").done, "site {site} ends");
    }
}
