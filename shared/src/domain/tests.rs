use super::*;

fn clean() -> DnsFacts {
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    DnsFacts {
        domain: "good.test".into(),
        ns: Answer::Found(vec![
            NameServer { name: "ns1.good.test".into(), resolves: Some(true) },
            NameServer { name: "ns2.good.test".into(), resolves: Some(true) },
        ]),
        mx: Answer::Found(vec![Mx {
            preference: 10,
            exchange: "mx.good.test".into(),
            cname: None,
            resolves: Some(true),
        }]),
        txt: Answer::Found(s(&["v=spf1 mx -all", "some-verification=1"])),
        spf_walk: Some(SpfWalk { lookups: 1, errors: vec![], all: Some(Qualifier::Fail) }),
        dmarc: Answer::Found(s(&["v=DMARC1; p=reject; rua=mailto:d@good.test"])),
        dkim: Answer::Found(vec!["default".into()]),
        caa: Answer::Found((
            "good.test".into(),
            vec![
                Caa { critical: false, tag: "issue".into(), value: "ca.test".into() },
                Caa { critical: false, tag: "iodef".into(), value: "mailto:s@good.test".into() },
            ],
        )),
        dnssec: Dnssec::Signed,
        mta_sts: Answer::Found(s(&["v=STSv1; id=1"])),
        tls_rpt: Answer::Found(s(&["v=TLSRPTv1; rua=mailto:t@good.test"])),
        unanswered: vec![],
        not_asked: 0,
    }
}

fn codes(f: &DnsFacts) -> Vec<Code> {
    f.issues().into_iter().map(|i| i.code).collect()
}

#[test]
fn a_clean_domain_raises_nothing() {
    assert_eq!(clean().issues(), vec![]);
}

#[test]
fn each_problem_raises_its_code() {
    let txt = |v: &[&str]| Answer::Found(v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>());
    type Edit = fn(&mut DnsFacts);
    let cases: Vec<(&str, Edit, Vec<Code>)> = vec![
        (
            "one NS",
            |f| f.ns = Answer::Found(vec![NameServer { name: "ns1.x".into(), resolves: Some(true) }]),
            vec![Code::DnsNameServers],
        ),
        (
            "dead NS",
            |f| {
                if let Answer::Found(n) = &mut f.ns {
                    n[1].resolves = Some(false)
                }
            },
            vec![Code::DnsNameServers],
        ),
        ("NS failed", |f| f.ns = Answer::Failed("timeout".into()), vec![Code::DnsLookupFailed]),
        (
            "MX cname",
            |f| {
                if let Answer::Found(m) = &mut f.mx {
                    m[0].cname = Some("real.test".into())
                }
            },
            vec![Code::MxCname],
        ),
        (
            "MX ip",
            |f| {
                if let Answer::Found(m) = &mut f.mx {
                    m[0].exchange = "192.0.2.1".into()
                }
            },
            vec![Code::MxIpAddress],
        ),
        (
            "MX dead",
            |f| {
                if let Answer::Found(m) = &mut f.mx {
                    m[0].resolves = Some(false)
                }
            },
            vec![Code::MxUnresolvable],
        ),
        (
            "SPF multiple",
            |f| f.txt = Answer::Found(vec!["v=spf1 -all".into(), "v=spf1 mx -all".into()]),
            vec![Code::SpfMultiple],
        ),
        ("SPF bad", |f| f.txt = Answer::Found(vec!["v=spf1 mx -alll".into()]), vec![Code::SpfInvalid]),
        (
            "SPF lookups",
            |f| f.spf_walk = Some(SpfWalk { lookups: 11, errors: vec![], all: Some(Qualifier::Fail) }),
            vec![Code::SpfTooManyLookups],
        ),
        (
            "SPF include broken",
            |f| {
                f.spf_walk = Some(SpfWalk {
                    lookups: 2,
                    errors: vec![("x.test".into(), "no SPF record".into())],
                    all: Some(Qualifier::Fail),
                })
            },
            vec![Code::SpfInvalid],
        ),
        (
            "SPF +all",
            |f| f.spf_walk = Some(SpfWalk { lookups: 1, errors: vec![], all: Some(Qualifier::Pass) }),
            vec![Code::SpfPassAll],
        ),
        (
            "SPF ?all",
            |f| f.spf_walk = Some(SpfWalk { lookups: 1, errors: vec![], all: Some(Qualifier::Neutral) }),
            vec![Code::SpfNeutralAll],
        ),
        (
            "SPF no all",
            |f| f.spf_walk = Some(SpfWalk { lookups: 1, errors: vec![], all: None }),
            vec![Code::SpfNeutralAll],
        ),
        (
            "SPF ~all",
            |f| f.spf_walk = Some(SpfWalk { lookups: 1, errors: vec![], all: Some(Qualifier::SoftFail) }),
            vec![Code::SpfSoftfailAll],
        ),
        (
            "DMARC none",
            |f| f.dmarc = Answer::Found(vec!["v=DMARC1; p=none; rua=mailto:a@b.test".into()]),
            vec![Code::DmarcPolicyNone],
        ),
        (
            "DMARC no rua",
            |f| f.dmarc = Answer::Found(vec!["v=DMARC1; p=quarantine".into()]),
            vec![Code::DmarcReportsMissing],
        ),
        (
            "DMARC sp none",
            |f| f.dmarc = Answer::Found(vec!["v=DMARC1; p=reject; sp=none; rua=mailto:a@b.test".into()]),
            vec![Code::DmarcSubdomainPolicyNone],
        ),
        ("DMARC bad", |f| f.dmarc = Answer::Found(vec!["v=DMARC1; p=maybe".into()]), vec![Code::DmarcInvalid]),
        (
            "DMARC two",
            |f| f.dmarc = Answer::Found(vec!["v=DMARC1; p=reject".into(), "v=DMARC1; p=none".into()]),
            vec![Code::DmarcInvalid],
        ),
        ("DMARC missing", |f| f.dmarc = Answer::None, vec![Code::DmarcMissing]),
        ("DKIM", |f| f.dkim = Answer::None, vec![Code::DkimNotFound]),
        ("CAA missing", |f| f.caa = Answer::None, vec![Code::CaaMissing]),
        (
            "CAA no iodef",
            |f| {
                f.caa = Answer::Found((
                    "good.test".into(),
                    vec![Caa { critical: false, tag: "issue".into(), value: "ca.test".into() }],
                ))
            },
            vec![Code::CaaIodefMissing],
        ),
        (
            "CAA critical",
            |f| {
                if let Answer::Found((_, s)) = &mut f.caa {
                    s.push(Caa { critical: true, tag: "x".into(), value: String::new() })
                }
            },
            vec![Code::CaaInvalid],
        ),
        ("unsigned", |f| f.dnssec = Dnssec::Unsigned, vec![Code::DnssecUnsigned]),
        ("MTA-STS missing", |f| f.mta_sts = Answer::None, vec![Code::MtaStsMissing]),
        ("MTA-STS bad", |f| f.mta_sts = Answer::Found(vec!["v=STSv1; id=!".into()]), vec![Code::MtaStsInvalid]),
        ("TLS-RPT missing", |f| f.tls_rpt = Answer::Found(vec!["unrelated".into()]), vec![Code::TlsRptMissing]),
        (
            "TLS-RPT bad",
            |f| f.tls_rpt = Answer::Found(vec!["v=TLSRPTv1; rua=gopher://x".into()]),
            vec![Code::TlsRptInvalid],
        ),
    ];
    for (name, edit, want) in cases {
        let mut f = clean();
        edit(&mut f);
        assert_eq!(codes(&f), want, "{name}");
    }
    let _ = txt;
}

#[test]
fn a_domain_without_mail_gets_only_what_it_needs() {
    let mut f = clean();
    f.mx = Answer::Found(vec![Mx { preference: 0, exchange: String::new(), cname: None, resolves: Some(false) }]);
    f.dkim = Answer::None;
    f.mta_sts = Answer::None;
    f.tls_rpt = Answer::None;
    assert_eq!(codes(&f), vec![], "the null MX: no mail checks, no errors");
    assert!(!f.has_mail() && f.mail_servers().is_empty());
    f.mx = Answer::None;
    f.txt = Answer::None;
    assert_eq!(codes(&f), vec![Code::MxMissing, Code::SpfMissing]);
    f.ns = Answer::None;
    assert_eq!(codes(&f), vec![Code::DnsDomainMissing], "a domain that does not exist: one finding");
}

#[test]
fn mail_servers_are_ordered_by_preference_then_name() {
    let mut f = clean();
    let mx = |p, e: &str| Mx { preference: p, exchange: e.into(), cname: None, resolves: Some(true) };
    f.mx = Answer::Found(vec![mx(20, "b.test"), mx(10, "z.test"), mx(10, "a.test"), mx(5, "192.0.2.1")]);
    let order: Vec<&str> = f.mail_servers().iter().map(|m| m.exchange.as_str()).collect();
    assert_eq!(order, vec!["a.test", "z.test", "b.test"]);
}

#[test]
fn a_zone_that_does_not_answer_ns_gets_one_dns_timeout_and_nothing_else() {
    let mut f = clean();
    f.ns = Answer::TimedOut;
    f.mx = Answer::TimedOut;
    f.txt = Answer::TimedOut;
    f.dmarc = Answer::TimedOut;
    f.dkim = Answer::None;
    f.caa = Answer::TimedOut;
    f.dnssec = Dnssec::Unknown;
    f.unanswered = vec!["NS good.test".into()];
    f.not_asked = 7;
    let issues = f.issues();
    assert_eq!(issues.len(), 1, "{issues:#?}");
    assert_eq!(issues[0].code, Code::DnsTimeout);
    assert_eq!(issues[0].about, "good.test");
    assert_eq!(
        issues[0].detail,
        "no answer to NS good.test; 7 further questions not asked (the check waits at most 30 s in all)"
    );
}

#[test]
fn questions_without_an_answer_raise_one_dns_timeout_and_no_false_findings() {
    let mut f = clean();
    // What got no answer is neither missing nor failed: no dmarc_missing, dkim_not_found,
    // caa_missing, tls_rpt_missing or dns_lookup_failed for it.
    f.dmarc = Answer::TimedOut;
    f.dkim = Answer::TimedOut;
    f.caa = Answer::TimedOut;
    f.tls_rpt = Answer::TimedOut;
    if let Answer::Found(m) = &mut f.mx {
        m[0].resolves = None;
    }
    if let Answer::Found(n) = &mut f.ns {
        n[0].resolves = None;
    }
    f.unanswered = (1..=7).map(|i| format!("TXT s{i}._domainkey.good.test")).collect();
    let issues = f.issues();
    assert_eq!(codes(&f), vec![Code::DnsTimeout], "{issues:#?}");
    assert_eq!(
        issues[0].detail,
        "no answer to TXT s1._domainkey.good.test, TXT s2._domainkey.good.test, TXT s3._domainkey.good.test, \
         TXT s4._domainkey.good.test, TXT s5._domainkey.good.test and 2 more (the check waits at most 30 s in all)"
    );
    f.unanswered.clear();
    f.not_asked = 3;
    assert_eq!(
        f.issues()[0].detail,
        "the check's time ran out; 3 further questions not asked (the check waits at most 30 s in all)"
    );
}

/// What the domain's check gives every site under it and what stays with one host (issue 40): the
/// CAA set is the host's, everything else the domain's; a site that only checks its own host
/// gets the same CAA findings, and a `dns_timeout` for its own questions.
#[test]
fn the_caa_set_is_the_hosts_and_the_rest_the_domains() {
    let mut f = clean();
    f.caa = Answer::None;
    f.dmarc = Answer::None;
    let domain: Vec<Code> = f.domain_issues().into_iter().map(|i| i.code).collect();
    let host: Vec<Code> = f.host_issues().into_iter().map(|i| i.code).collect();
    assert_eq!(domain, vec![Code::DmarcMissing]);
    assert_eq!(host, vec![Code::CaaMissing]);
    assert_eq!(codes(&f), vec![Code::DmarcMissing, Code::CaaMissing]);
    f.ns = Answer::None;
    assert!(f.host_issues().is_empty(), "a domain that does not exist has only that finding");

    let own = HostDnsFacts { domain: "good.test".into(), caa: Answer::None, unanswered: vec![], not_asked: 0 };
    assert_eq!(
        own.issues(),
        vec![issue(Code::CaaMissing, "good.test", "no CAA record on the start host or its parents")]
    );
    let silent = HostDnsFacts { caa: Answer::TimedOut, unanswered: vec!["CAA shop.good.test".into()], ..own };
    let found: Vec<(Code, String)> = silent.issues().into_iter().map(|i| (i.code, i.detail)).collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, Code::DnsTimeout);
    assert!(found[0].1.contains("CAA shop.good.test"), "{found:?}");
}
