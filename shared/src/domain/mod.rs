//! The checks of SPEC §9 that are pure: what the DNS records of a domain, its mail servers'
//! answers and its registry's RDAP record mean for the audit. The worker gathers the facts (DNS
//! lookups, one SMTP conversation, one RDAP request) and this module turns them into findings,
//! with the time passed in, so every rule is unit-tested without a network.

pub mod rdap;
pub mod records;
pub mod spf;

use crate::finding::Code;
use records::{
    Caa, Dmarc, DmarcPolicy, check_mta_sts_record, check_tls_rpt, is_dmarc, is_mta_sts, is_tls_rpt, summarize_caa,
};
use spf::{MAX_SPF_LOOKUPS, Qualifier, SpfRecord, spf_records};

/// The DKIM selectors tried, in order (the defaults of common mail services and software:
/// Microsoft 365, Google Workspace, Mailchimp/Mandrill, Amazon SES-style `s1`/`s2`, cPanel and
/// Plesk's `default`, rspamd/OpenDKIM's `dkim` and `mail`). A key under another selector is not
/// found; `dkim_not_found` says so and is a notice, never an error.
pub const DKIM_SELECTORS: &[&str] =
    &["default", "selector1", "selector2", "google", "k1", "k2", "s1", "s2", "dkim", "mail", "smtp", "mandrill"];

/// The port written in a DNS check's task URL (`dns://<start host>:53/`): the task asks the
/// worker's resolver, not this port, but the lane's host key must differ from the web server's.
pub const DNS_TASK_PORT: u16 = 53;

/// The registrable domain (public suffix list) of a host name whose DNS an audit checks; `None`
/// for IP addresses and names with no registrable part (`localhost`, a bare suffix).
#[must_use]
pub fn registrable_domain(host: &str) -> Option<String> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') || !host.contains('.') {
        return None;
    }
    psl::domain_str(&host).map(str::to_owned)
}

/// The path of a domain's MTA-STS policy on `mta-sts.<domain>` (RFC 8461 §3.2).
pub const MTA_STS_PATH: &str = "/.well-known/mta-sts.txt";
/// Bytes of an MTA-STS policy read at most (RFC 8461 §3.2 lets senders stop at 64 KiB).
pub const MTA_STS_MAX_BYTES: u64 = 64 * 1024;

/// How long one domain's DNS check may ask questions, all of them together. Why: a zone whose
/// servers never answer cost the resolver's whole timeout per question, one question after
/// another (minutes per site, past the worker's processing limit); what has no answer by then is
/// reported once (`dns_timeout`), and the check ends.
pub const DNS_CHECK_TIME: std::time::Duration = std::time::Duration::from_secs(30);
/// Questions without an answer named in a `dns_timeout` finding's detail (the rest are counted).
const UNANSWERED_NAMED: usize = 5;

/// What one DNS question got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer<T> {
    /// Records (never empty).
    Found(T),
    /// The name exists with no such records, or does not exist.
    None,
    /// An answer that says nothing (SERVFAIL, REFUSED, a reply that did not decode).
    Failed(String),
    /// No answer in time (the resolver gave up, or the check's [`DNS_CHECK_TIME`] ran out), or
    /// not asked after the zone fell silent: nothing can be said, and `dns_timeout` says so once
    /// for the whole check ([`DnsFacts::unanswered`]).
    TimedOut,
}

impl<T> Answer<T> {
    /// The records, if any were found.
    #[must_use]
    pub fn found(&self) -> Option<&T> {
        match self {
            Answer::Found(t) => Some(t),
            _ => None,
        }
    }
}

/// One name server of the domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameServer {
    /// Its host name.
    pub name: String,
    /// Whether its own name has an address; `None` when not looked up (past the number of name
    /// servers looked up, or no answer in time).
    pub resolves: Option<bool>,
}

/// One MX record, with what was learnt about its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mx {
    /// Preference (lower first).
    pub preference: u16,
    /// The target host name, without the final dot (`""` for the null MX's `.`).
    pub exchange: String,
    /// The target is an alias (the CNAME's target).
    pub cname: Option<String>,
    /// The target has an address (A or AAAA); `None` when not looked up (only the most preferred
    /// MX hosts are, however many records there are) or no answer came in time.
    pub resolves: Option<bool>,
}

impl Mx {
    /// The target is written as an IP address (which MX records must not be).
    #[must_use]
    pub fn is_ip(&self) -> bool {
        self.exchange.parse::<std::net::IpAddr>().is_ok()
    }
}

/// What the walk through an SPF record's `include:`s and `redirect=` found (done by the worker,
/// which asks DNS; see [`spf::SpfRecord::followed`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpfWalk {
    /// DNS-querying terms of every record evaluated (the domain's and those it reaches).
    pub lookups: usize,
    /// Records reached that receivers would reject: (domain, why).
    pub errors: Vec<(String, String)>,
    /// The `all` in force: the record's own, else its redirect target's.
    pub all: Option<Qualifier>,
}

/// Whether the domain is DNSSEC-signed, as far as DNS says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dnssec {
    /// A DNSKEY record set at the apex.
    Signed,
    /// No DNSKEY at the apex.
    Unsigned,
    /// The lookup failed.
    Unknown,
}

/// Everything the DNS check of one domain learnt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsFacts {
    /// The registrable domain.
    pub domain: String,
    /// NS of the domain.
    pub ns: Answer<Vec<NameServer>>,
    /// MX of the domain.
    pub mx: Answer<Vec<Mx>>,
    /// TXT of the domain (each record's strings joined).
    pub txt: Answer<Vec<String>>,
    /// The SPF walk, when the domain has exactly one SPF record that parses.
    pub spf_walk: Option<SpfWalk>,
    /// TXT of `_dmarc.<domain>`.
    pub dmarc: Answer<Vec<String>>,
    /// DKIM selectors with a key; `None` when none of [`DKIM_SELECTORS`] has one (or the domain
    /// has no mail, when none are tried); `TimedOut` when none has one and some got no answer.
    pub dkim: Answer<Vec<String>>,
    /// The relevant CAA set (RFC 8659 §3: the first found climbing from the start host up to the
    /// domain), with the name it was found at.
    pub caa: Answer<(String, Vec<Caa>)>,
    /// DNSSEC.
    pub dnssec: Dnssec,
    /// TXT of `_mta-sts.<domain>`.
    pub mta_sts: Answer<Vec<String>>,
    /// TXT of `_smtp._tls.<domain>`.
    pub tls_rpt: Answer<Vec<String>>,
    /// The questions that got no answer in time (`MX example.com`), in the order asked: what
    /// they fed is [`Answer::TimedOut`] (or unknown), and one `dns_timeout` names them.
    pub unanswered: Vec<String>,
    /// Questions not asked at all: the zone had not answered its NS question, or the check's
    /// time had run out.
    pub not_asked: usize,
}

/// One problem found, about one DNS name (or URL), ready to be a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// The code.
    pub code: Code,
    /// What it is about: the name asked (`_dmarc.example.com`), a URL, or `smtp://host:port`.
    pub about: String,
    /// Specifics.
    pub detail: String,
}

fn issue(code: Code, about: impl Into<String>, detail: impl Into<String>) -> Issue {
    Issue { code, about: about.into(), detail: detail.into() }
}

impl DnsFacts {
    /// The domain receives mail: it has MX records other than the null MX (RFC 7505).
    #[must_use]
    pub fn has_mail(&self) -> bool {
        self.mx.found().is_some_and(|m| !is_null_mx(m))
    }

    /// The MX hosts mail is delivered to, most preferred first (ties by name), without IP
    /// literals and the null MX.
    #[must_use]
    pub fn mail_servers(&self) -> Vec<&Mx> {
        let mut m: Vec<&Mx> = self
            .mx
            .found()
            .map(|m| m.iter().filter(|x| !x.exchange.is_empty() && !x.is_ip()).collect())
            .unwrap_or_default();
        m.sort_by(|a, b| (a.preference, &a.exchange).cmp(&(b.preference, &b.exchange)));
        m
    }

    /// The findings the DNS records give: [`DnsFacts::domain_issues`] and
    /// [`DnsFacts::host_issues`].
    #[must_use]
    pub fn issues(&self) -> Vec<Issue> {
        let mut out = self.domain_issues();
        out.extend(self.host_issues());
        out
    }

    /// The findings about the start host's own name: its CAA set (RFC 8659 climbs from the host,
    /// so two hosts of one domain may have different ones). None when the domain does not exist
    /// or its zone did not answer (the domain's findings say so).
    #[must_use]
    pub fn host_issues(&self) -> Vec<Issue> {
        if matches!(self.ns, Answer::None | Answer::TimedOut) {
            return Vec::new();
        }
        caa_issues(&self.domain, &self.caa)
    }

    /// The findings about the registrable domain, the same for every site under it (NS, mail,
    /// SPF, DMARC, DKIM, DNSSEC, MTA-STS, TLS-RPT, and one `dns_timeout` for every question of
    /// the check without an answer). A domain that does not exist gets that one finding; a
    /// domain without mail (no MX, or the null MX) gets the checks that still matter to it (SPF
    /// and DMARC, which stop others from sending as it), not the mail server ones.
    #[must_use]
    pub fn domain_issues(&self) -> Vec<Issue> {
        let d = self.domain.as_str();
        let mut out = Vec::new();
        match &self.ns {
            Answer::None => {
                out.push(issue(
                    Code::DnsDomainMissing,
                    d,
                    "no NS records: the domain does not exist or is not delegated",
                ));
                return out;
            }
            Answer::Failed(e) => out.push(issue(Code::DnsLookupFailed, d, format!("NS: {e}"))),
            // The zone does not answer: nothing else was asked, nothing else can be said.
            Answer::TimedOut => {
                out.extend(self.timeout_issue());
                return out;
            }
            Answer::Found(ns) => {
                let dead: Vec<&str> =
                    ns.iter().filter(|n| n.resolves == Some(false)).map(|n| n.name.as_str()).collect();
                if ns.len() < 2 || !dead.is_empty() {
                    let mut detail =
                        format!("{} name server(s): {}", ns.len(), names(ns.iter().map(|n| n.name.as_str())));
                    if !dead.is_empty() {
                        detail.push_str(&format!("; without an address: {}", dead.join(", ")));
                    }
                    out.push(issue(Code::DnsNameServers, d, detail));
                }
            }
        }
        self.mx_issues(&mut out);
        self.spf_issues(&mut out);
        self.dmarc_issues(&mut out);
        let mail = self.has_mail();
        if mail && self.dkim == Answer::None {
            out.push(issue(
                Code::DkimNotFound,
                format!("_domainkey.{d}"),
                format!("selectors tried: {}", DKIM_SELECTORS.join(", ")),
            ));
        }
        if self.dnssec == Dnssec::Unsigned {
            out.push(issue(Code::DnssecUnsigned, d, "no DNSKEY records at the zone apex"));
        }
        if mail {
            txt_check(
                &mut out,
                &self.mta_sts,
                format!("_mta-sts.{d}"),
                is_mta_sts,
                check_mta_sts_record,
                Code::MtaStsMissing,
                Code::MtaStsInvalid,
            );
            txt_check(
                &mut out,
                &self.tls_rpt,
                format!("_smtp._tls.{d}"),
                is_tls_rpt,
                check_tls_rpt,
                Code::TlsRptMissing,
                Code::TlsRptInvalid,
            );
        }
        out.extend(self.timeout_issue());
        out
    }

    /// One `dns_timeout` for every question of the check that got no answer (or was not asked).
    fn timeout_issue(&self) -> Option<Issue> {
        timeout_issue(&self.domain, &self.unanswered, self.not_asked)
    }

    fn mx_issues(&self, out: &mut Vec<Issue>) {
        let d = self.domain.as_str();
        match &self.mx {
            Answer::None => out.push(issue(
                Code::MxMissing,
                d,
                "no MX record; if the domain sends and receives no mail, publish the null MX (\"0 .\", RFC 7505)",
            )),
            Answer::Failed(e) => out.push(issue(Code::DnsLookupFailed, d, format!("MX: {e}"))),
            Answer::TimedOut => {}
            Answer::Found(mx) if is_null_mx(mx) => {}
            Answer::Found(mx) => {
                for m in mx {
                    if m.is_ip() {
                        out.push(issue(Code::MxIpAddress, d, format!("MX {} {}", m.preference, m.exchange)));
                    } else if m.exchange.is_empty() {
                        out.push(issue(Code::MxUnresolvable, d, "a null MX (\".\") beside other MX records"));
                    } else if let Some(target) = &m.cname {
                        out.push(issue(Code::MxCname, m.exchange.as_str(), format!("an alias of {target}")));
                    } else if m.resolves == Some(false) {
                        out.push(issue(Code::MxUnresolvable, m.exchange.as_str(), "no A or AAAA record"));
                    }
                }
            }
        }
    }

    fn spf_issues(&self, out: &mut Vec<Issue>) {
        let d = self.domain.as_str();
        let Some(txt) = txt_or_report(&self.txt, d, out) else { return };
        let records = spf_records(txt);
        let record = match records.as_slice() {
            [] => {
                // Whether the domain has mail is unknown when MX got no usable answer.
                let why = if self.has_mail() || matches!(self.mx, Answer::Failed(_) | Answer::TimedOut) {
                    "no v=spf1 record"
                } else {
                    "no v=spf1 record; a domain without mail should publish \"v=spf1 -all\""
                };
                out.push(issue(Code::SpfMissing, d, why));
                return;
            }
            [one] => *one,
            many => {
                out.push(issue(Code::SpfMultiple, d, many.join(" | ")));
                return;
            }
        };
        if let Err(e) = SpfRecord::parse(record) {
            out.push(issue(Code::SpfInvalid, d, e.to_string()));
            return;
        }
        let Some(walk) = &self.spf_walk else { return };
        for (at, why) in &walk.errors {
            out.push(issue(Code::SpfInvalid, at.as_str(), why.clone()));
        }
        if walk.lookups > MAX_SPF_LOOKUPS {
            out.push(issue(
                Code::SpfTooManyLookups,
                d,
                format!("{} DNS-querying terms (at most {MAX_SPF_LOOKUPS})", walk.lookups),
            ));
        }
        match walk.all {
            Some(Qualifier::Pass) => out.push(issue(Code::SpfPassAll, d, record)),
            Some(Qualifier::Neutral) => out.push(issue(Code::SpfNeutralAll, d, record)),
            None => out.push(issue(Code::SpfNeutralAll, d, format!("no all: {record}"))),
            Some(Qualifier::SoftFail) => out.push(issue(Code::SpfSoftfailAll, d, record)),
            Some(Qualifier::Fail) => {}
        }
    }

    fn dmarc_issues(&self, out: &mut Vec<Issue>) {
        let at = format!("_dmarc.{}", self.domain);
        let Some(txt) = txt_or_report(&self.dmarc, &at, out) else { return };
        let records: Vec<&String> = txt.iter().filter(|t| is_dmarc(t)).collect();
        let record = match records.as_slice() {
            [] => return out.push(issue(Code::DmarcMissing, at, "no v=DMARC1 record")),
            [one] => one.as_str(),
            many => return out.push(issue(Code::DmarcInvalid, at, format!("{} DMARC records", many.len()))),
        };
        match Dmarc::parse(record) {
            Err(e) => out.push(issue(Code::DmarcInvalid, at, format!("{e}: {record}"))),
            Ok(dm) => {
                if dm.policy == DmarcPolicy::None {
                    out.push(issue(Code::DmarcPolicyNone, at.clone(), record));
                }
                if !dm.reports {
                    out.push(issue(Code::DmarcReportsMissing, at.clone(), record));
                }
                if dm.policy != DmarcPolicy::None && dm.subdomain_policy == Some(DmarcPolicy::None) {
                    out.push(issue(Code::DmarcSubdomainPolicyNone, at, record));
                }
            }
        }
    }
}

/// The TXT records of an answer (none when there are none); `None`, with `dns_lookup_failed`
/// reported about `at`, when the lookup failed (and without, when no answer came: `dns_timeout`
/// covers it).
fn txt_or_report<'a>(answer: &'a Answer<Vec<String>>, at: &str, out: &mut Vec<Issue>) -> Option<&'a [String]> {
    match answer {
        Answer::Found(t) => Some(t.as_slice()),
        Answer::None => Some(&[]),
        Answer::Failed(e) => {
            out.push(issue(Code::DnsLookupFailed, at, format!("TXT: {e}")));
            None
        }
        Answer::TimedOut => None,
    }
}

/// The null MX: one record, target `.` (RFC 7505).
fn is_null_mx(mx: &[Mx]) -> bool {
    matches!(mx, [only] if only.exchange.is_empty())
}

fn names<'a>(it: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<&str> = it.collect();
    if v.is_empty() { "none".into() } else { v.join(", ") }
}

fn txt_check(
    out: &mut Vec<Issue>,
    answer: &Answer<Vec<String>>,
    at: String,
    is: fn(&str) -> bool,
    check: fn(&str) -> Result<(), String>,
    missing: Code,
    invalid: Code,
) {
    match answer {
        Answer::Failed(e) => out.push(issue(Code::DnsLookupFailed, at, format!("TXT: {e}"))),
        Answer::TimedOut => {}
        Answer::None => out.push(issue(missing, at, "no record")),
        Answer::Found(txt) => {
            let records: Vec<&String> = txt.iter().filter(|t| is(t)).collect();
            match records.as_slice() {
                [] => out.push(issue(missing, at, "no record with the right version")),
                [one] => {
                    if let Err(e) = check(one) {
                        out.push(issue(invalid, at, format!("{e}: {one}")));
                    }
                }
                many => out.push(issue(invalid, at, format!("{} records", many.len()))),
            }
        }
    }
}

/// The findings of a relevant CAA set (`caa`, climbed to from a host of `domain`).
fn caa_issues(domain: &str, caa: &Answer<(String, Vec<Caa>)>) -> Vec<Issue> {
    let mut out = Vec::new();
    match caa {
        Answer::None => out.push(issue(Code::CaaMissing, domain, "no CAA record on the start host or its parents")),
        Answer::Failed(e) => out.push(issue(Code::DnsLookupFailed, domain, format!("CAA: {e}"))),
        Answer::TimedOut => {}
        Answer::Found((at, set)) => {
            let s = summarize_caa(set);
            for p in &s.problems {
                out.push(issue(Code::CaaInvalid, at.as_str(), p.clone()));
            }
            if !s.iodef {
                out.push(issue(
                    Code::CaaIodefMissing,
                    at.as_str(),
                    format!("issuers: {}", names(s.issuers.iter().map(String::as_str))),
                ));
            }
        }
    }
    out
}

/// One `dns_timeout` about `domain` for the questions of a check that got no answer
/// (`unanswered`) or were not asked (`not_asked`); none if every question was answered.
fn timeout_issue(domain: &str, unanswered: &[String], not_asked: usize) -> Option<Issue> {
    if unanswered.is_empty() && not_asked == 0 {
        return None;
    }
    let mut detail = match unanswered {
        [] => "the check's time ran out".to_owned(),
        some => {
            let named = some.iter().take(UNANSWERED_NAMED).map(String::as_str).collect::<Vec<_>>().join(", ");
            let more = some.len().saturating_sub(UNANSWERED_NAMED);
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            format!("no answer to {named}{more}")
        }
    };
    if not_asked > 0 {
        detail.push_str(&format!("; {} further questions not asked", not_asked));
    }
    detail.push_str(&format!(" (the check waits at most {} s in all)", DNS_CHECK_TIME.as_secs()));
    Some(issue(Code::DnsTimeout, domain, detail))
}

/// What the DNS check of one site's own host name learnt, for a site whose registrable domain
/// another site of the same audit checks ([`DnsFacts::domain_issues`] are that site's, shared):
/// the host's CAA set, the one thing of SPEC §9 that differs between hosts of one domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostDnsFacts {
    /// The registrable domain (where the CAA climb stops).
    pub domain: String,
    /// The relevant CAA set, as in [`DnsFacts::caa`].
    pub caa: Answer<(String, Vec<Caa>)>,
    /// Questions without an answer in time, as in [`DnsFacts::unanswered`].
    pub unanswered: Vec<String>,
    /// Questions not asked (the check's time ran out).
    pub not_asked: usize,
}

impl HostDnsFacts {
    /// The host's findings: its CAA set's, and one `dns_timeout` for its questions without an answer.
    #[must_use]
    pub fn issues(&self) -> Vec<Issue> {
        let mut out = caa_issues(&self.domain, &self.caa);
        out.extend(timeout_issue(&self.domain, &self.unanswered, self.not_asked));
        out
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod registrable {
    #[test]
    fn registrable_domains() {
        use super::registrable_domain as r;
        assert_eq!(r("www.Example.co.uk."), Some("example.co.uk".into()));
        assert_eq!(r("good.test"), Some("good.test".into()));
        assert_eq!(r("a.b.good.test"), Some("good.test".into()));
        assert_eq!(r("127.0.0.1"), None);
        assert_eq!(r("[::1]"), None);
        assert_eq!(r("localhost"), None);
    }
}
