//! SPEC §9 end to end through `shoal audit`: DNS, e-mail and domain checks of audited sites
//! against our own DNS server, mail servers, RDAP service and MTA-STS host on loopback
//! ([`crate::domain_world`]), judged from their logs and the audit database. Every code is raised
//! by the finding table (`finding_codes.rs`, audit `domain`); here: what is asked and how often.

use crate::domain_world::{AUDITED, ONE_DOMAIN, ONE_DOMAIN_SITES, World};
use hickory_server::proto::rr::RecordType;
use shoal::Exit;
use std::collections::BTreeSet;
use std::path::Path;

/// Findings of the DNS, mail and domain families of the site that starts at `start`.
fn domain_findings(db_path: &Path, start: &str) -> Vec<(String, String, String)> {
    crate::domain_world::domain_findings(db_path)
        .into_iter()
        .filter(|f| f.0 == start)
        .map(|(_, code, url, detail)| (code, url, detail))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_servers_hear_ehlo_starttls_quit_once_per_audit_and_nothing_else() {
    let world = World::start().await;
    let run = world.audit(AUDITED, &[]).await;
    assert_eq!(run.exit, Exit::Ok);
    let good = world.web.url("good.test", "/");
    let clean = domain_findings(&run.db, &good);
    let mx_good = world.mail_ip("mx.good.test");
    let mx_linked = world.mail_ip("mx.linked.test");
    let silent = world.mail_ip("mx-silent.mail2.test");
    let (connections_good, connections_linked, connections_silent) =
        (world.mail.connections(mx_good), world.mail.connections(mx_linked), world.mail.connections(silent));
    let (log, _, received) = world.shutdown().await;

    assert!(clean.is_empty(), "a clean domain raises no DNS, mail or domain finding: {clean:#?}");
    // good.test, twin1.test and twin2.test share one mail server: one conversation per audit.
    assert_eq!(connections_good, 1, "{received:#?}");
    assert_eq!(connections_silent, 1, "the silent server is not retried within the audit");
    // linked.test is only linked from good.test: its domain is never checked.
    assert_eq!(connections_linked, 0, "a linked site's mail server was contacted");
    assert_eq!(log.count("rdap.test", "/domain/linked.test"), 0, "a linked site's registration was asked");
    assert_eq!(log.count("rdap.test", "/domain/good.test"), 1, "{}", log.dump());
    for r in &received {
        let verb = r.line.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
        assert!(matches!(verb.as_str(), "EHLO" | "STARTTLS" | "QUIT"), "Shoal sent {:?} to {}", r.line, r.server);
        if verb == "EHLO" {
            assert_eq!(r.line, "EHLO audit.shoal.test", "--helo-name");
        }
    }
    let good_lines: Vec<&str> = received.iter().filter(|r| r.server == mx_good).map(|r| r.line.as_str()).collect();
    assert_eq!(
        good_lines,
        vec!["EHLO audit.shoal.test", "STARTTLS", "QUIT"],
        "banner, EHLO, STARTTLS, then QUIT over TLS"
    );
}

/// MTA-STS policies are ordinary requests: robots.txt of the policy host first, then the policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mta_sts_policy_follows_robots_txt_and_the_rdap_bootstrap_is_ours() {
    let world = World::start().await;
    // Without --rdap-url: the IANA bootstrap file's host resolves through our DNS server to this
    // world's HTTPS server, which names this world's RDAP service for `.test`.
    let mut args = world.args();
    let at = args.iter().position(|a| a == "--rdap-url").expect("the world names its RDAP service");
    args.drain(at..at + 2);
    let run = world.audit_with(&["good.test", "twin1.test"], args).await;
    assert_eq!(run.exit, Exit::Ok);
    let good = world.web.url("good.test", "/");
    let found = domain_findings(&run.db, &good);
    let (log, https, _) = world.shutdown().await;
    let sts = https.paths("mta-sts.good.test");
    assert_eq!(sts, vec!["/robots.txt".to_owned(), shoal_shared::domain::MTA_STS_PATH.to_owned()], "{}", https.dump());
    assert_eq!(
        https.paths("data.iana.org"),
        vec!["/robots.txt".to_owned(), "/rdap/dns.json".to_owned()],
        "the bootstrap file once for both sites, after its host's robots.txt"
    );
    assert_eq!(log.count("rdap.test", "/domain/good.test"), 1, "{}", log.dump());
    assert_eq!(log.count("rdap.test", "/domain/twin1.test"), 1, "{}", log.dump());
    assert!(found.is_empty(), "{found:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_smtp_and_no_dns_checks_are_honoured() {
    let world = World::start().await;
    let mx_good = world.mail_ip("mx.good.test");
    let no_smtp = world.audit(&["good.test"], &["--no-smtp"]).await;
    assert_eq!(no_smtp.exit, Exit::Ok);
    assert_eq!(world.mail.connections(mx_good), 0, "--no-smtp talked to a mail server");
    let no_checks = world.audit(&["weak.test"], &["--no-dns-checks"]).await;
    assert_eq!(no_checks.exit, Exit::Ok);
    let weak = world.web.url("weak.test", "/");
    assert_eq!(domain_findings(&no_checks.db, &weak), vec![], "--no-dns-checks still checked");
    let (log, _, received) = world.shutdown().await;
    assert!(received.is_empty(), "{received:#?}");
    assert_eq!(log.count("rdap.test", "/domain/weak.test"), 0);
    assert_eq!(log.count("rdap.test", "/domain/good.test"), 1, "--no-smtp keeps the other checks");
}

/// A hosting provider's customers on subdomains of one registrable domain (issue 40): the audit
/// asks about the domain once (its zone lets the resolver keep nothing, so the DNS server hears
/// every question asked), asks each site's own host about its CAA set, asks the registry once,
/// and every site carries the domain's findings, besides its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sites_of_one_registrable_domain_share_one_check_of_it() {
    let world = World::start().await;
    let run = world.audit(ONE_DOMAIN_SITES, &[]).await;
    assert_eq!(run.exit, Exit::Ok);
    let questions = world.dns.questions();
    let starts = world.starts(ONE_DOMAIN_SITES);
    let (log, _, received) = world.shutdown().await;
    let asked = |name: &str, kind: RecordType| questions.iter().filter(|q| q.name == name && q.kind == kind).count();

    let dmarc = format!("_dmarc.{ONE_DOMAIN}");
    for (name, kind) in
        [(ONE_DOMAIN, RecordType::NS), (ONE_DOMAIN, RecordType::DNSKEY), (dmarc.as_str(), RecordType::TXT)]
    {
        assert_eq!(asked(name, kind), 1, "{kind} {name} once for the three sites: {questions:#?}");
    }
    for host in ONE_DOMAIN_SITES {
        assert_eq!(asked(host, RecordType::CAA), 1, "each site's own host is asked for its CAA set");
    }
    assert_eq!(log.count("rdap.test", &format!("/domain/{ONE_DOMAIN}")), 1, "{}", log.dump());
    assert!(received.is_empty(), "the domain has the null MX: {received:#?}");

    let mut per_site = Vec::new();
    for start in &starts {
        let found: BTreeSet<(String, String)> =
            domain_findings(&run.db, start).into_iter().map(|(code, url, _)| (code, url)).collect();
        per_site.push(found);
    }
    let want: BTreeSet<(String, String)> = [
        ("caa_missing", ONE_DOMAIN.to_owned()),
        ("dmarc_policy_none", dmarc.clone()),
        ("domain_expiring", ONE_DOMAIN.to_owned()),
    ]
    .into_iter()
    .map(|(c, u)| (c.to_owned(), u))
    .collect();
    for (start, found) in starts.iter().zip(&per_site) {
        assert_eq!(found, &want, "{start} carries the domain's findings and its own CAA one");
    }
}
