//! Link checks of a host whose name does not resolve fail together (issue 40): the first lookup's
//! failure is remembered for the audit, so the host's other checks are recorded with the same
//! error without a lookup or a request each, and without waiting out the host's gap each.

use crate::domain_world::{DEAD_HOST, DEAD_LINKS, DEAD_LINKS_SITE, World};
use shoal::Exit;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_checks_of_a_name_that_does_not_resolve_settle_together() {
    let world = World::start().await;
    // A gap the checks would each wait out one after another (DEAD_LINKS of them: 78 s) if they
    // were paced like requests.
    let gap_ms: i64 = 2_000;
    let mut args = world.args();
    let at = args.iter().position(|a| a == "--gap-ms").expect("the world sets a gap");
    args[at + 1] = gap_ms.to_string();
    args.push("--no-dns-checks".into());
    let run = world.audit_with(&[DEAD_LINKS_SITE], args).await;
    assert_eq!(run.exit, Exit::Ok);
    let questions = world.dns.questions();
    let _ = world.shutdown().await;

    let checks: Vec<(String, Option<String>, i64)> = crate::db::query(
        &run.db,
        "SELECT url, error, fetched_at_ms FROM pages WHERE url LIKE ?1 ORDER BY fetched_at_ms",
        [format!("http://{DEAD_HOST}:%")],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    );
    assert_eq!(checks.len(), DEAD_LINKS, "every link is checked and recorded: {checks:#?}");
    assert!(checks.iter().all(|(_, e, _)| e.as_deref() == Some("dns")), "each fails as a DNS failure: {checks:#?}");
    // One lookup (A, then AAAA) for the audit, not one per check: the zone lets the resolver keep
    // nothing, so each lookup would be in the log.
    let asked = questions.iter().filter(|q| q.name == DEAD_HOST).count();
    assert!((1..=2).contains(&asked), "{asked} questions about {DEAD_HOST} for {DEAD_LINKS} checks: {questions:#?}");
    // No check waited a paced turn: all of them started within one gap of the first.
    let (first, last) = (checks[0].2, checks[checks.len() - 1].2);
    assert!(last - first < gap_ms, "the checks were spread over {} ms, a gap is {gap_ms} ms", last - first);
    let broken = crate::db::query(
        &run.db,
        "SELECT COUNT(*) FROM findings WHERE url LIKE ?1",
        [format!("http://{DEAD_HOST}:%")],
        |r| r.get::<_, i64>(0),
    );
    assert_eq!(broken, vec![i64::try_from(DEAD_LINKS).expect("small")], "a broken-link finding per link");
}
