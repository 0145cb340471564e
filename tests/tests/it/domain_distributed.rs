//! SPEC §9 in distributed mode: a real `shoal coordinator` and `shoal worker` on a private
//! `redis-server` run the DNS, mail and domain checks as frontier tasks, and find what `shoal
//! audit` finds; a mail server shared by several audited domains is talked to once per audit.

use crate::distributed::SERIAL;
use crate::domain_world::{ONE_DOMAIN, World};
use crate::procs::{Coordinator, Proc, ensure_built};
use serde_json::json;
use shoal_tests::redis::RedisServer;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// Each its own domain, and two sites of one domain (checked once, the findings on both).
const DOMAINS: &[&str] =
    &["good.test", "weak.test", "twin1.test", "mail2.test", "broken.test", "a.provider.test", "b.provider.test"];

/// (start URL, code, url) of the DNS, mail and domain findings of every site.
fn domain_rows(db_path: &Path) -> BTreeSet<(String, String, String)> {
    crate::domain_world::domain_findings(db_path).into_iter().map(|(s, c, u, _)| (s, c, u)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinator_and_worker_find_what_shoal_audit_finds() {
    let _serial = SERIAL.lock().await;
    ensure_built().await;
    let world = World::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("coordinator.db");
    let redis = RedisServer::start().expect("redis-server starts");
    let ns = "domains";
    // The coordinator seeds the checks (--dns-server says the test serves DNS); the worker asks.
    let settings = world.args();
    let dns = world.dns.addr().to_string();
    let coord =
        Coordinator::start(dir.path(), "coordinator", &redis.url(), ns, &db_path, &["--dns-server", &dns]).await;
    let mut args: Vec<String> =
        ["worker", "--redis", &redis.url(), "--namespace", ns, "--id", "w1", "--lease-ttl-s", "5"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
    args.extend(settings.into_iter().filter(|a| a != "--no-progress"));
    let mut w: Proc = Proc::spawn(dir.path(), "w1", &args);
    let audit = coord.submit(&world.starts(DOMAINS), json!({"gap_ms": 0})).await;
    let finished = coord.wait_finished(audit, Duration::from_secs(60)).await;
    w.kill();
    let distributed = domain_rows(&db_path);
    let mx_good = world.mail_ip("mx.good.test");
    let after_distributed = world.mail.connections(mx_good);

    let local = world.audit(DOMAINS, &[]).await;
    let in_process = domain_rows(&local.db);
    let after_both = world.mail.connections(mx_good);
    let (_, _, received) = world.shutdown().await;

    let (view, _) = finished.unwrap_or_else(|e| panic!("{e}\n{}\n{}", coord.proc.tail(40), w.tail(40)));
    assert_eq!(view["status"], "done", "{view}");
    assert!(!distributed.is_empty(), "the distributed audit ran no domain checks\n{}", w.tail(40));
    assert_eq!(distributed, in_process, "the same domain findings on either back end");
    let dmarc_none = |host: &str| {
        distributed.iter().any(|(s, c, u)| {
            s.contains(&format!("://{host}:")) && c == "dmarc_policy_none" && *u == format!("_dmarc.{ONE_DOMAIN}")
        })
    };
    assert!(
        dmarc_none("a.provider.test") && dmarc_none("b.provider.test"),
        "both sites of one domain carry its findings: {distributed:#?}"
    );
    assert_eq!(after_distributed, 1, "good.test and twin1.test share a mail server: one conversation");
    assert_eq!(after_both, 2, "one more for the second audit");
    assert!(
        received.iter().all(|r| matches!(r.line.split(' ').next(), Some("EHLO" | "STARTTLS" | "QUIT"))),
        "{received:#?}"
    );
}
