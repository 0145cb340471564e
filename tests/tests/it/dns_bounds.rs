//! The DNS checks are bounded (issue 36): the red team's hostile DNS, each on loopback through our
//! own DNS server ([`crate::domain_world`]). A zone with 2,900 MX records gets a few of its hosts
//! looked up, not 2,900; a zone whose servers never answer ends its check within
//! [`DNS_CHECK_TIME`] with `dns_timeout` (not as work abandoned after lease expiries); a
//! `--dns-server` that never answers is reported once for the audit, and the audit ends without
//! every site waiting out its own timeouts.

use crate::domain_world::{BIG_MX, BIG_MX_DOMAIN, World, big_mx_hosts, domain_findings};
use hickory_server::proto::rr::RecordType;
use shoal::Exit;
use shoal_shared::domain::DNS_CHECK_TIME;
use shoal_shared::finding::Code;
use shoal_tests::dnsserver::DeadResolver;
use shoal_worker::dns::MX_HOSTS_LOOKED_UP;
use std::path::Path;
use std::time::Duration;

/// A finding: (start URL of its site, code, URL, detail).
type Row = (String, String, String, String);

/// The audit's findings.
fn findings(db: &Path) -> Vec<Row> {
    crate::db::query(
        db,
        "SELECT s.start_url, f.code, f.url, f.detail FROM findings f JOIN sites s ON s.id = f.site_id
          ORDER BY s.start_url, f.code, f.url",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )
}

fn with_code(all: &[Row], code: Code) -> Vec<&Row> {
    all.iter().filter(|f| f.1 == code.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zone_with_2900_mx_records_gets_only_its_most_preferred_mx_hosts_looked_up() {
    let world = World::start().await;
    let run = world.audit(&[BIG_MX_DOMAIN], &["--no-smtp"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let questions = world.dns.questions();
    let start = world.web.url(BIG_MX_DOMAIN, "/");
    let found: Vec<_> = domain_findings(&run.db).into_iter().filter(|f| f.0 == start).collect();
    world.shutdown().await;

    assert!(
        questions.iter().any(|q| q.name == BIG_MX_DOMAIN && q.kind == RecordType::MX),
        "the MX records were asked for"
    );
    let hosts = big_mx_hosts();
    let mx_host = |name: &str| hosts.iter().any(|h| h == name);
    let address_questions: Vec<&str> = questions
        .iter()
        .filter(|q| matches!(q.kind, RecordType::A | RecordType::AAAA) && mx_host(&q.name))
        .map(|q| q.name.as_str())
        .collect();
    // Each host: A (found here), AAAA only when A finds nothing; a retry may repeat a question.
    assert!(!address_questions.is_empty(), "no MX host was looked up at all: {found:#?}");
    assert!(
        address_questions.len() <= 2 * MX_HOSTS_LOOKED_UP,
        "{} address questions about the {BIG_MX} MX hosts (at most {MX_HOSTS_LOOKED_UP} hosts are looked up)",
        address_questions.len()
    );
    // The most preferred: all have preference 10, so the first names in order.
    let first = &hosts[..MX_HOSTS_LOOKED_UP];
    for q in &address_questions {
        assert!(first.iter().any(|n| n == q), "{q} is not among the {MX_HOSTS_LOOKED_UP} most preferred MX hosts");
    }
    // The hosts looked up have addresses; those not looked up raise nothing (no mx_unresolvable).
    let mail: Vec<_> = found.iter().filter(|f| f.1.starts_with("mx_") || f.1.starts_with("dns_")).collect();
    assert!(mail.is_empty(), "{found:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zone_that_never_answers_ends_its_check_with_dns_timeout_within_the_check_time() {
    let world = World::start().await;
    // The check's own bound, plus the crawl of one small site and the audit's start and end.
    let bound = DNS_CHECK_TIME + Duration::from_secs(30);
    let run = tokio::time::timeout(bound, world.audit(&["silent.test"], &[]))
        .await
        .unwrap_or_else(|_| panic!("the audit of a silent zone took longer than {bound:?}"));
    assert_eq!(run.exit, Exit::Ok);
    let questions = world.dns.questions();
    let all = findings(&run.db);
    world.shutdown().await;

    let timeouts = with_code(&all, Code::DnsTimeout);
    assert_eq!(timeouts.len(), 1, "{all:#?}");
    assert_eq!(timeouts[0].2, "silent.test");
    assert!(timeouts[0].3.starts_with("no answer to NS silent.test"), "{}", timeouts[0].3);
    for code in [Code::FetchAbandoned, Code::DnsLookupFailed, Code::DnsResolverSilent, Code::StartUnreachable] {
        assert!(with_code(&all, code).is_empty(), "{}: {all:#?}", code.as_str());
    }
    // Nothing more was asked of a zone that did not answer its NS question (the crawl looks up
    // the www twin of the start host, which --resolve does not name: that is not the check).
    let asked: Vec<(&str, RecordType)> = questions
        .iter()
        .filter(|q| (q.name == "silent.test" || q.name.ends_with(".silent.test")) && q.name != "www.silent.test")
        .map(|q| (q.name.as_str(), q.kind))
        .collect();
    assert!(!asked.is_empty(), "the silent zone was never asked");
    assert!(asked.iter().all(|(_, k)| *k == RecordType::NS), "asked the silent zone {asked:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dns_server_that_never_answers_is_reported_once_for_the_audit() {
    const SITES: usize = 200;
    const CONCURRENCY: usize = 8;
    let world = World::start().await;
    let dead = DeadResolver::start().await.expect("a port for the dead resolver");
    let mut args = world.args_with_dns_server(dead.addr());
    args.extend(["--concurrency".into(), CONCURRENCY.to_string()]);
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    let mut cli: Vec<String> = vec!["shoal".into(), "audit".into()];
    cli.extend((0..SITES).map(|i| world.web.url(&format!("site{i}.test"), "/")));
    cli.extend(["--db".into(), db.display().to_string()]);
    cli.extend(args);
    // A hang guard, not a measurement: without the watch, 2 * 200 tasks each wait out their own
    // timeouts (10 s a question), 8 at a time.
    let bound = Duration::from_secs(100);
    let run = tokio::time::timeout(bound, crate::common::run_audit(&cli, db, dir))
        .await
        .unwrap_or_else(|_| panic!("an audit with a silent resolver took longer than {bound:?}"));
    assert_eq!(run.exit, Exit::Ok);
    let asked = dead.names();
    let datagrams = dead.datagrams();
    let all = findings(&run.db);
    let done =
        crate::db::query(&run.db, "SELECT COUNT(*) FROM sites WHERE status = 'done'", [], |r| r.get::<_, i64>(0));
    world.shutdown().await;

    assert_eq!(done, vec![i64::try_from(SITES).expect("small")], "every site ends");
    let silent = with_code(&all, Code::DnsResolverSilent);
    assert_eq!(silent.len(), 1, "the silent resolver is reported once for the audit: {silent:#?}");
    assert_eq!(silent[0].2, dead.addr().to_string(), "the finding names the resolver");
    for code in [Code::DnsTimeout, Code::DnsLookupFailed, Code::FetchAbandoned] {
        assert!(with_code(&all, code).is_empty(), "{}: {:#?}", code.as_str(), with_code(&all, code));
    }
    let unreachable = with_code(&all, Code::StartUnreachable);
    assert_eq!(unreachable.len(), SITES, "each site says why it was not reached");
    for f in &unreachable {
        assert!(f.3.contains("dns_resolver_silent"), "a site's own failure, not the resolver's: {f:?}");
    }
    // The names asked of the dead server: those of the leases in flight before its silence was
    // known (at most CONCURRENCY of them) and the probes' own, not every site's.
    let sites_asked = asked.iter().filter(|n| n.starts_with("site")).count();
    assert!(
        sites_asked <= CONCURRENCY,
        "{sites_asked} sites' names reached the dead resolver ({datagrams} datagrams): {asked:?}"
    );
}
