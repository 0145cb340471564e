//! A small internet on loopback for the DNS, e-mail and domain checks (SPEC §9): our DNS server
//! with one zone per test domain, mail servers behaving each its own way, an RDAP service, the
//! MTA-STS policies over HTTPS on port 443 of a loopback address of their own, and the web
//! server of every audited site. Every audited name resolves through the DNS server
//! (`--dns-server`), so nothing is given with `--resolve` except a domain outside every zone.
//!
//! Each world takes a /24 of 127.0.0.0/8 of its own (`127.X.Y.0`), so worlds of tests running at
//! once never share an address or the port-443 listener.

#![allow(dead_code, reason = "each test uses a different part of the world")]

use crate::common::Audited;
use crate::finding_support::Where;
use shoal_shared::finding::Code;
use shoal_tests::dnsserver::{DnsServer, Zone};
use shoal_tests::log::RequestLog;
use shoal_tests::smtpserver::{Mail, MailFleet};
use shoal_tests::testsite::{Route, Site, TestCa, TestServer, TlsConfig};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};

static NEXT_NET: AtomicU8 = AtomicU8::new(0);

/// The audited sites: each a domain of its own.
pub const AUDITED: &[&str] = &[
    "good.test",
    "weak.test",
    "mail2.test",
    "mail3.test",
    "mail4.test",
    "mail5.test",
    "nomail.test",
    "nomx.test",
    "broken.test",
    "multi.test",
    "lookups.test",
    "softfail.test",
    "neutral.test",
    "twin1.test",
    "twin2.test",
    "gone.test",
    "refused.zz",
    "silent.test",
];

/// Sites of one registrable domain ([`ONE_DOMAIN`]), a hosting provider's customers: the audit
/// checks the domain once and gives every one of them its findings. Not audited by default.
pub const ONE_DOMAIN_SITES: &[&str] = &["a.provider.test", "b.provider.test", "c.provider.test"];
/// Their registrable domain, whose zone keeps nothing in a resolver's cache
/// ([`Zone::uncached`]): the DNS server's log shows every question asked.
pub const ONE_DOMAIN: &str = "provider.test";

/// A site whose start page links [`DEAD_LINKS`] times to [`DEAD_HOST`], a name that does not
/// resolve (in a zone that lets resolvers keep nothing, so every lookup reaches the DNS server's
/// log). Not audited by default.
pub const DEAD_LINKS_SITE: &str = "deadlinks.test";
/// The name that does not resolve.
pub const DEAD_HOST: &str = "www.dead.test";
/// How many links [`DEAD_LINKS_SITE`]'s start page has to it.
pub const DEAD_LINKS: usize = 40;

/// A domain whose zone publishes [`BIG_MX`] MX records, not audited by default: the red team's
/// 2,900 MX hosts, of which two are talked to. Its name and its MX hosts' names are short:
/// hickory's server stops compressing names past the first 16 KiB of a message, and 2,900
/// records must fit the 64 KiB a DNS message can hold.
pub const BIG_MX_DOMAIN: &str = "b.x";
/// How many MX records [`BIG_MX_DOMAIN`] has.
pub const BIG_MX: usize = 2_900;

/// The MX hosts of [`BIG_MX_DOMAIN`], in order of name: one label each (`aaa`, `aab`, ...).
pub fn big_mx_hosts() -> Vec<String> {
    let letter = |n: usize| char::from(b'a' + u8::try_from(n % 26).expect("below 26"));
    (0..BIG_MX).map(|i| format!("{}{}{}", letter(i / 676), letter(i / 26), letter(i))).collect()
}

/// The running world.
pub struct World {
    /// The /24 of this world: `127.net.0/24`.
    net: [u8; 2],
    pub dns: DnsServer,
    pub mail: MailFleet,
    pub web: TestServer,
    pub sts: TestServer,
    pub ca_file: PathBuf,
    _dir: tempfile::TempDir,
}

/// What each mail server is, by host name, and its address's last byte.
const MAIL_HOSTS: &[(&str, u8)] = &[
    ("mx.good.test", 10),
    ("mx-plain.weak.test", 11),
    ("mx-expired.weak.test", 12),
    ("mx-wrongname.mail2.test", 13),
    ("mx-silent.mail2.test", 14),
    ("mx-refuse.mail3.test", 15),
    ("mx-notls.mail3.test", 16),
    ("mx-self.mail4.test", 17),
    ("mx-soon.mail4.test", 18),
    ("mx-old.mail5.test", 19),
    ("mx.linked.test", 20),
];

const DAY_MS: u64 = 86_400_000;

fn rdap_json(domain: &str, expires_in_days: i64, status: &[&str]) -> String {
    let now = shoal_shared::time::UnixMs::from(std::time::SystemTime::now());
    let at = i128::from(now.0) + i128::from(expires_in_days) * i128::from(DAY_MS);
    let at = shoal_shared::time::UnixMs(u64::try_from(at).expect("after 1970"));
    let status: Vec<String> = status.iter().map(|s| format!("\"{s}\"")).collect();
    format!(
        r#"{{"objectClassName":"domain","ldhName":"{domain}","status":[{}],"events":[{{"eventAction":"registration","eventDate":"2001-02-03T04:05:06Z"}},{{"eventAction":"expiration","eventDate":"{}"}}]}}"#,
        status.join(","),
        at.to_rfc3339()
    )
}

impl World {
    fn ip(&self, last: u8) -> Ipv4Addr {
        Ipv4Addr::new(127, self.net[0], self.net[1], last)
    }

    /// Starts every server of the world.
    pub async fn start() -> World {
        let n = NEXT_NET.fetch_add(1, Ordering::Relaxed);
        let net = [u8::try_from(64 + std::process::id() % 128).unwrap_or(64), n.wrapping_mul(7).wrapping_add(3)];
        let ip = |last: u8| Ipv4Addr::new(127, net[0], net[1], last);
        let dir = tempfile::tempdir().expect("temp dir");
        let ca = TestCa::new("Shoal domain test CA");
        let ca_file = ca.write_pem(dir.path(), "ca.pem").expect("CA file");

        // Mail servers.
        let leaf = |name: &str| ca.leaf(&[name]).build();
        let mail_of = |host: &str| -> Mail {
            match host {
                "mx.good.test" | "mx.linked.test" => Mail::Starttls(leaf(host)),
                "mx-plain.weak.test" => Mail::Plain,
                "mx-expired.weak.test" => Mail::Starttls(ca.leaf(&[host]).expired().build()),
                "mx-wrongname.mail2.test" => Mail::Starttls(leaf("other.test")),
                "mx-silent.mail2.test" => Mail::Silent,
                "mx-refuse.mail3.test" => Mail::Refuses,
                "mx-notls.mail3.test" => Mail::StarttlsRefused,
                "mx-self.mail4.test" => Mail::Starttls(ca.leaf(&[host]).self_signed().build()),
                "mx-soon.mail4.test" => Mail::Starttls(ca.leaf(&[host]).expiring_in_days(10).build()),
                _ => Mail::Tls10,
            }
        };
        let fleet: Vec<(IpAddr, Mail)> =
            MAIL_HOSTS.iter().map(|(h, last)| (IpAddr::V4(ip(*last)), mail_of(h))).collect();
        let mail = MailFleet::start(fleet).await.expect("mail servers start");

        // MTA-STS policies over HTTPS, port 443 of their own address, and the IANA RDAP
        // bootstrap file naming this world's RDAP service for `.test`.
        let web_port = crate::procs::free_port();
        let bootstrap = format!(
            r#"{{"version":"1.0","publication":"2026-12-01T00:00:00Z","services":[[["org","com"],["https://rdap.example.invalid/"]],[["test"],["http://rdap.test:{web_port}/"]]]}}"#
        );
        let sts_names = ["mta-sts.good.test", "mta-sts.mail2.test", "mta-sts.mail3.test", "data.iana.org"];
        let policy = |mode: &str, mx: &[&str]| {
            let mut p = format!("version: STSv1\r\nmode: {mode}\r\n");
            for m in mx {
                p.push_str(&format!("mx: {m}\r\n"));
            }
            p.push_str("max_age: 604800\r\n");
            Route::text(p)
        };
        let path = shoal_shared::domain::MTA_STS_PATH;
        let sts_sites = vec![
            Site::new("mta-sts.good.test").route(path, policy("enforce", &["mx.good.test"])),
            Site::new("mta-sts.mail2.test").route(path, policy("testing", &["mx-wrongname.mail2.test"])),
            Site::new("mta-sts.mail3.test"),
            Site::new("data.iana.org").route("/rdap/dns.json", Route::bytes("application/json", bootstrap)),
        ];
        let sts = TestServer::start_tls_on((ip(2), 443).into(), sts_sites, TlsConfig::new(ca.leaf(&sts_names).build()))
            .await
            .expect("the MTA-STS server binds port 443 of its loopback address (the tests run as root)");

        // The web server: every audited site, the linked one, and the RDAP service.
        let mut sites: Vec<Site> = Vec::new();
        let linked = format!("http://linked.test:{web_port}/");
        let dead: String =
            (0..DEAD_LINKS).map(|i| format!("<a href=\"http://{DEAD_HOST}:{web_port}/{i}\">{i}</a>")).collect();
        for d in AUDITED.iter().chain(["linked.test", BIG_MX_DOMAIN, DEAD_LINKS_SITE].iter()).chain(ONE_DOMAIN_SITES) {
            let body = match *d {
                "good.test" => format!("<a href=\"{linked}\">a friend</a>"),
                DEAD_LINKS_SITE => dead.clone(),
                _ => String::new(),
            };
            sites.push(Site::new(d).page("/", &crate::finding_support::clean_page(d, &body)));
        }
        let json =
            |d: &str, days: i64, status: &[&str]| Route::bytes("application/rdap+json", rdap_json(d, days, status));
        sites.push(
            Site::new("rdap.test")
                .route("/domain/good.test", json("good.test", 400, &["active"]))
                .route("/domain/weak.test", json("weak.test", 10, &["client transfer prohibited"]))
                .route("/domain/mail2.test", json("mail2.test", -3, &["server hold"]))
                .route(
                    "/domain/mail3.test",
                    Route::bytes("application/rdap+json", "{\"objectClassName\": \"domain\", \"events\": ["),
                )
                .route("/domain/mail4.test", Route::status(404))
                .route(&format!("/domain/{ONE_DOMAIN}"), json(ONE_DOMAIN, 10, &["active"]))
                .fallback(Route::bytes("application/rdap+json", rdap_json("any.test", 400, &["active"]))),
        );
        let web = TestServer::start_on((ip(1), web_port).into(), sites).await.expect("web server starts");

        let dns = DnsServer::start(zones(&ip)).await.expect("DNS server starts");
        World { net, dns, mail, web, sts, ca_file, _dir: dir }
    }

    /// The audited sites' start URLs.
    pub fn starts(&self, domains: &[&str]) -> Vec<String> {
        domains.iter().map(|d| self.web.url(d, "/")).collect()
    }

    /// The arguments every audit of the world takes (after the start URLs).
    pub fn args(&self) -> Vec<String> {
        let web = self.web.port();
        vec![
            "--dns-server".into(),
            self.dns.addr().to_string(),
            "--smtp-port".into(),
            self.mail.port().to_string(),
            "--helo-name".into(),
            "audit.shoal.test".into(),
            "--rdap-url".into(),
            format!("http://rdap.test:{web}/"),
            "--ca-file".into(),
            self.ca_file.display().to_string(),
            "--allow-private".into(),
            "--resolve".into(),
            format!("refused.zz={}", self.ip(1)),
            // The web host of the silent zone is found without it: only its DNS check meets the
            // silence.
            "--resolve".into(),
            format!("silent.test={}", self.ip(1)),
            "--gap-ms".into(),
            "0".into(),
            "--timeout-s".into(),
            "3".into(),
            "--no-progress".into(),
        ]
    }

    /// `shoal audit` of `domains` in this process, with [`World::args`] and `extra`.
    pub async fn audit(&self, domains: &[&str], extra: &[&str]) -> Audited {
        let mut args = self.args();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        self.audit_with(domains, args).await
    }

    /// [`World::args`] with every name sent to `dns_server` instead of the world's DNS server.
    pub fn args_with_dns_server(&self, dns_server: std::net::SocketAddr) -> Vec<String> {
        let mut args = self.args();
        let at = args.iter().position(|a| a == "--dns-server").expect("the world names its DNS server");
        args[at + 1] = dns_server.to_string();
        args
    }

    /// `shoal audit` of `domains` in this process, with exactly `options`.
    pub async fn audit_with(&self, domains: &[&str], options: Vec<String>) -> Audited {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("audit.db");
        let mut args: Vec<String> = vec!["shoal".into(), "audit".into()];
        args.extend(self.starts(domains));
        args.extend(["--db".into(), db.display().to_string()]);
        args.extend(options);
        crate::common::run_audit(&args, db, dir).await
    }

    /// Where each code of SPEC §9 must be raised (every one of them), for the finding table.
    pub fn cases(&self) -> Vec<(Code, Where)> {
        let smtp = |host: &str| Where::Url(format!("smtp://{host}:{}", self.mail.port()));
        let name = |n: &str| Where::Url(n.to_owned());
        let sts = |d: &str| Where::Url(format!("https://mta-sts.{d}{}", shoal_shared::domain::MTA_STS_PATH));
        use Code as K;
        vec![
            (K::DnsNameServers, name("weak.test")),
            (K::DnsNameServers, name("broken.test")),
            (K::DnsDomainMissing, name("gone.test")),
            (K::DnsLookupFailed, name("refused.zz")),
            (K::DnsTimeout, name("silent.test")),
            (K::DnssecUnsigned, name("weak.test")),
            (K::CaaMissing, name("weak.test")),
            (K::CaaIodefMissing, name("nomx.test")),
            (K::CaaInvalid, name("broken.test")),
            (K::MxMissing, name("nomx.test")),
            (K::MxCname, name("alias.weak.test")),
            (K::MxIpAddress, name("broken.test")),
            (K::MxUnresolvable, name("nowhere.broken.test")),
            (K::SpfMissing, name("nomx.test")),
            (K::SpfMultiple, name("multi.test")),
            (K::SpfInvalid, name("broken.test")),
            (K::SpfTooManyLookups, name("lookups.test")),
            (K::SpfPassAll, name("weak.test")),
            (K::SpfNeutralAll, name("neutral.test")),
            (K::SpfSoftfailAll, name("softfail.test")),
            (K::DmarcMissing, name("_dmarc.nomx.test")),
            (K::DmarcInvalid, name("_dmarc.broken.test")),
            (K::DmarcPolicyNone, name("_dmarc.weak.test")),
            (K::DmarcReportsMissing, name("_dmarc.weak.test")),
            (K::DmarcSubdomainPolicyNone, name("_dmarc.multi.test")),
            (K::DkimNotFound, name("_domainkey.weak.test")),
            (K::MtaStsMissing, name("_mta-sts.weak.test")),
            (K::MtaStsInvalid, name("_mta-sts.mail5.test")),
            (K::MtaStsInvalid, sts("mail3.test")),
            (K::MtaStsMxMismatch, sts("mail2.test")),
            (K::MtaStsTesting, sts("mail2.test")),
            (K::TlsRptMissing, name("_smtp._tls.weak.test")),
            (K::TlsRptInvalid, name("_smtp._tls.mail5.test")),
            (K::SmtpUnreachable, smtp("mx-silent.mail2.test")),
            (K::SmtpProtocolError, smtp("mx-refuse.mail3.test")),
            (K::SmtpStarttlsMissing, smtp("mx-plain.weak.test")),
            (K::SmtpStarttlsFailed, smtp("mx-notls.mail3.test")),
            (K::SmtpCertificateExpired, smtp("mx-expired.weak.test")),
            (K::SmtpCertificateExpiring, smtp("mx-soon.mail4.test")),
            (K::SmtpCertificateUntrusted, smtp("mx-self.mail4.test")),
            (K::SmtpCertificateHostname, smtp("mx-wrongname.mail2.test")),
            (K::SmtpTlsOldVersion, smtp("mx-old.mail5.test")),
            (K::DomainExpiring, name("weak.test")),
            (K::DomainExpired, name("mail2.test")),
            (K::DomainHold, name("mail2.test")),
            (K::DomainTransferBlocked, name("weak.test")),
            (K::DomainRdapFailed, name("mail3.test")),
            (K::DomainRdapFailed, name("mail4.test")),
        ]
    }

    /// The address of a mail server of [`MAIL_HOSTS`].
    pub fn mail_ip(&self, host: &str) -> IpAddr {
        let last = MAIL_HOSTS.iter().find(|(h, _)| *h == host).map(|(_, l)| *l).expect("a mail host of the world");
        IpAddr::V4(self.ip(last))
    }

    /// Stops every server: the web server's log (sites and RDAP), the HTTPS server's (MTA-STS
    /// policies, the bootstrap file) and what the mail servers received.
    pub async fn shutdown(self) -> (RequestLog, RequestLog, Vec<shoal_tests::smtpserver::Received>) {
        let log = self.web.shutdown().await;
        let https = self.sts.shutdown().await;
        let received = self.mail.shutdown().await;
        self.dns.shutdown().await;
        (log, https, received)
    }
}

/// The findings of the DNS, mail and domain families in an audit database: (start URL of the
/// site, code, URL, detail), in that order.
pub fn domain_findings(db_path: &std::path::Path) -> Vec<(String, String, String, String)> {
    crate::db::query(
        db_path,
        "SELECT s.start_url, f.code, f.url, f.detail FROM findings f JOIN sites s ON s.id = f.site_id
          ORDER BY s.start_url, f.code, f.url, f.detail",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )
    .into_iter()
    .filter(|(_, code, _, _): &(String, String, String, String)| {
        Code::parse(code).is_some_and(|c| matches!(c.family(), "dns" | "mail" | "domain"))
    })
    .collect()
}

/// One zone per domain (SOA, NS, web address) plus what each domain is about, and `test.` for the
/// names no zone holds (NXDOMAIN) and the RDAP service.
fn zones(ip: &dyn Fn(u8) -> Ipv4Addr) -> Vec<Zone> {
    let web = ip(1);
    let base = |d: &str, ns: usize| {
        let mut z = Zone::new(d).a(d, web);
        for i in 1..=ns {
            let host = format!("ns{i}.{d}");
            z = z.ns(&host).a(&host, web);
        }
        z
    };
    let mail = |z: Zone, host: &str| {
        let last = MAIL_HOSTS.iter().find(|(h, _)| *h == host).map(|(_, l)| *l).expect("a mail host");
        z.a(host, ip(last))
    };
    let clean = |d: &str| {
        base(d, 2)
            .txt(d, "v=spf1 mx -all")
            .txt(&format!("_dmarc.{d}"), &format!("v=DMARC1; p=reject; rua=mailto:dmarc@{d}"))
            .txt(&format!("default._domainkey.{d}"), "v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC")
            .caa(false, "issue", "ca.test")
            .caa(false, "iodef", &format!("mailto:security@{d}"))
            .dnskey()
            .txt(&format!("_smtp._tls.{d}"), &format!("v=TLSRPTv1; rua=mailto:tls@{d}"))
    };
    let sts =
        |z: Zone, d: &str| z.txt(&format!("_mta-sts.{d}"), "v=STSv1; id=20261203").a(&format!("mta-sts.{d}"), ip(2));
    let good = sts(mail(clean("good.test").mx(10, "mx.good.test"), "mx.good.test"), "good.test");
    let weak = base("weak.test", 1)
        .mx(10, "mx-plain.weak.test")
        .mx(20, "mx-expired.weak.test")
        .mx(30, "alias.weak.test")
        .cname("alias.weak.test", "mx-plain.weak.test")
        .txt("weak.test", "v=spf1 a mx +all")
        .txt("_dmarc.weak.test", "v=DMARC1; p=none");
    let weak = mail(mail(weak, "mx-plain.weak.test"), "mx-expired.weak.test");
    let mail2 = sts(clean("mail2.test").mx(10, "mx-wrongname.mail2.test").mx(20, "mx-silent.mail2.test"), "mail2.test");
    let mail2 = mail(mail(mail2, "mx-wrongname.mail2.test"), "mx-silent.mail2.test");
    let mail3 = sts(clean("mail3.test").mx(10, "mx-refuse.mail3.test").mx(20, "mx-notls.mail3.test"), "mail3.test");
    let mail3 = mail(mail(mail3, "mx-refuse.mail3.test"), "mx-notls.mail3.test");
    let mail4 = clean("mail4.test").mx(10, "mx-self.mail4.test").mx(20, "mx-soon.mail4.test");
    let mail4 = mail(mail(mail4, "mx-self.mail4.test"), "mx-soon.mail4.test");
    let mail5 = base("mail5.test", 2)
        .mx(10, "mx-old.mail5.test")
        .txt("mail5.test", "v=spf1 mx -all")
        .txt("_dmarc.mail5.test", "v=DMARC1; p=reject; rua=mailto:d@mail5.test")
        .txt("_mta-sts.mail5.test", "v=STSv1; id=not-valid!")
        .txt("_smtp._tls.mail5.test", "v=TLSRPTv1; rua=gopher://reports.mail5.test");
    let mail5 = mail(mail5, "mx-old.mail5.test");
    let nomail = base("nomail.test", 2)
        .mx(0, ".")
        .txt("nomail.test", "v=spf1 -all")
        .txt("_dmarc.nomail.test", "v=DMARC1; p=reject; rua=mailto:d@nomail.test")
        .caa(false, "issue", "ca.test")
        .caa(false, "iodef", "mailto:s@nomail.test")
        .dnskey();
    let nomx = base("nomx.test", 2).caa(false, "issue", "ca.test").dnskey();
    let broken = Zone::new("broken.test")
        .a("broken.test", web)
        .ns("ns1.broken.test")
        .a("ns1.broken.test", web)
        .ns("ns2.broken.test")
        .mx(10, "192.0.2.1")
        .mx(20, "nowhere.broken.test")
        .txt("broken.test", "v=spf1 ip4:999.1.1.1 -all")
        .txt("_dmarc.broken.test", "v=DMARC1; p=maybe")
        .caa(true, "tbs", "unknown")
        .dnskey();
    let multi = base("multi.test", 2)
        .mx(0, ".")
        .txt("multi.test", "v=spf1 mx -all")
        .txt("multi.test", "v=spf1 a -all")
        .txt("_dmarc.multi.test", "v=DMARC1; p=reject; sp=none; rua=mailto:d@multi.test")
        .caa(false, "issue", "ca.test")
        .caa(false, "iodef", "mailto:s@multi.test")
        .dnskey();
    let lookups = base("lookups.test", 2)
        .mx(0, ".")
        .txt("_dmarc.lookups.test", "v=DMARC1; p=reject; rua=mailto:d@lookups.test")
        .caa(false, "issue", "ca.test")
        .caa(false, "iodef", "mailto:s@lookups.test")
        .dnskey()
        .txt("lookups.test", "v=spf1 include:l1.lookups.test include:l2.lookups.test -all")
        .txt("l1.lookups.test", "v=spf1 a mx ptr exists:x.lookups.test include:l3.lookups.test -all")
        .txt("l2.lookups.test", "v=spf1 a -all")
        .txt("l3.lookups.test", "v=spf1 a mx a:b.lookups.test mx:c.lookups.test -all");
    let softfail = base("softfail.test", 2)
        .mx(0, ".")
        .txt("softfail.test", "v=spf1 a ~all")
        .txt("_dmarc.softfail.test", "v=DMARC1; p=reject; rua=mailto:d@softfail.test")
        .caa(false, "issue", "ca.test")
        .caa(false, "iodef", "mailto:s@softfail.test")
        .dnskey();
    let neutral = base("neutral.test", 2)
        .mx(0, ".")
        .txt("neutral.test", "v=spf1 a ?all")
        .txt("_dmarc.neutral.test", "v=DMARC1; p=reject; rua=mailto:d@neutral.test")
        .caa(false, "issue", "ca.test")
        .caa(false, "iodef", "mailto:s@neutral.test")
        .dnskey();
    // Two more customers of good.test's mail server: it is talked to once per audit.
    let twin = |d: &str| clean(d).mx(10, "mx.good.test");
    let linked = mail(clean("linked.test").mx(10, "mx.linked.test"), "mx.linked.test");
    let tld = Zone::new("test").a("rdap.test", web).ns("ns.test").a("ns.test", web);
    // The IANA bootstrap file's host, served by the HTTPS server of this world: the bootstrap
    // path is tested without a byte leaving the machine.
    let iana = Zone::new("data.iana.org").a("data.iana.org", ip(2));
    // Name servers that never answer.
    let silent = Zone::new("silent.test").silent();
    // All of equal preference; the first ten by name have an address (each a zone of its own),
    // the others are in no zone (their lookups are refused).
    let mut big = clean(BIG_MX_DOMAIN);
    let mut targets = Vec::new();
    for (i, host) in big_mx_hosts().iter().enumerate() {
        big = big.mx(10, host);
        if i < 10 {
            targets.push(Zone::new(host).a(host, web));
        }
    }
    // A provider's customers under one domain: no mail, a DMARC record that only monitors, no
    // CAA record anywhere.
    let mut provider = base(ONE_DOMAIN, 2)
        .mx(0, ".")
        .txt(ONE_DOMAIN, "v=spf1 -all")
        .txt(&format!("_dmarc.{ONE_DOMAIN}"), &format!("v=DMARC1; p=none; rua=mailto:d@{ONE_DOMAIN}"))
        .dnskey()
        .uncached();
    for host in ONE_DOMAIN_SITES {
        provider = provider.a(host, web);
    }
    let mut zones = vec![
        provider,
        clean(DEAD_LINKS_SITE),
        Zone::new("dead.test").uncached(),
        tld,
        iana,
        good,
        weak,
        mail2,
        mail3,
        mail4,
        mail5,
        nomail,
        nomx,
        broken,
        multi,
        lookups,
        softfail,
        neutral,
        twin("twin1.test"),
        twin("twin2.test"),
        linked,
        silent,
        big,
    ];
    zones.extend(targets);
    zones
}
