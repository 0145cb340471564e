//! The DNS part of SPEC §9's checks: the questions asked about a domain (NS, MX, TXT for SPF,
//! DMARC, DKIM, MTA-STS and TLS-RPT, CAA, DNSKEY) through the worker's one resolver, which is the
//! system's or the `--dns-server`s the operator named, like every other name Shoal resolves.
//!
//! Every question is bounded by the resolver's timeout and attempts; the whole inspection by the
//! number of questions (a fixed list, the DKIM selectors, at most [`MAX_SPF_RECORDS`] SPF records
//! walked, the addresses of at most [`NS_HOSTS_LOOKED_UP`] name servers and [`MX_HOSTS_LOOKED_UP`]
//! MX hosts however many records a zone publishes) and by time: [`DNS_CHECK_TIME`] for all its
//! questions together, and nothing more is asked of a zone that did not answer its NS question.
//! What DNS says (or fails to say) becomes [`DnsFacts`], which `shoal_shared::domain` judges;
//! questions without an answer are listed there, for one `dns_timeout`. A resolver that answers
//! nothing at all ([`Resolver`] watches for that) is the caller's concern: [`Silent`].

mod watch;

pub use watch::{LookupError, PROBE_EVERY, Resolver, Silent};

use hickory_resolver::lookup::Lookup;
use hickory_resolver::net::{DnsError, NetError};
use hickory_resolver::proto::op::ResponseCode;
use hickory_resolver::proto::rr::{RData, RecordType};
use shoal_shared::domain::records::Caa;
use shoal_shared::domain::spf::{SpfRecord, spf_records};
use shoal_shared::domain::{
    Answer, DKIM_SELECTORS, DNS_CHECK_TIME, DnsFacts, Dnssec, HostDnsFacts, Mx, NameServer, SpfWalk,
};
use std::collections::HashSet;
use std::sync::Mutex;
use tokio::time::Instant;

/// SPF records read at most while walking includes and redirects: past the 10-lookup limit
/// (each followed record costs one), so the count is right, and never a loop.
pub const MAX_SPF_RECORDS: usize = 16;
/// MX hosts whose addresses are looked up at most, the most preferred first (ties by name): the
/// mail servers talked to are the first of them that resolve, and the rest are checked for
/// `mx_unresolvable`. Why: a zone with 2,900 MX records had 2,900 hosts looked up for 2 used.
pub const MX_HOSTS_LOOKED_UP: usize = 8;
/// Name servers whose addresses are looked up at most, in the order of the answer.
pub const NS_HOSTS_LOOKED_UP: usize = 8;
/// DNS questions in flight at once for one inspection.
const PARALLEL: usize = 4;

/// What an answer's records were, kept to the types asked for.
fn records(r: Result<Lookup, NetError>) -> Answer<Vec<RData>> {
    match r {
        Ok(l) => {
            let want = l.query().query_type();
            let v: Vec<RData> =
                l.answers().iter().filter(|r| r.record_type() == want).map(|r| r.data.clone()).collect();
            if v.is_empty() { Answer::None } else { Answer::Found(v) }
        }
        // An empty answer is data only when the server said so (NXDOMAIN, or NOERROR without
        // records); REFUSED or SERVFAIL with no records says nothing about the domain.
        Err(NetError::Dns(DnsError::NoRecordsFound(n))) => match n.response_code {
            ResponseCode::NXDomain | ResponseCode::NoError => Answer::None,
            other => Answer::Failed(format!("the server answered {other}")),
        },
        Err(e) => Answer::Failed(e.to_string()),
    }
}

fn map<T, U>(a: Answer<T>, f: impl FnOnce(T) -> U) -> Answer<U> {
    match a {
        Answer::Found(t) => Answer::Found(f(t)),
        Answer::None => Answer::None,
        Answer::Failed(e) => Answer::Failed(e),
        Answer::TimedOut => Answer::TimedOut,
    }
}

/// Runs `f` over `items`, [`PARALLEL`] at a time, results in order.
async fn parallel<T, U, Fut>(items: Vec<T>, f: impl Fn(T) -> Fut) -> Vec<U>
where
    Fut: std::future::Future<Output = U>,
{
    let mut out = Vec::with_capacity(items.len());
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        let batch: Vec<Fut> = items.by_ref().take(PARALLEL).map(&f).collect();
        out.extend(futures_util::future::join_all(batch).await);
    }
    out
}

fn fqdn(name: &str) -> String {
    format!("{}.", name.trim_end_matches('.'))
}

fn txt_strings(data: &[RData]) -> Vec<String> {
    data.iter()
        .filter_map(|d| match d {
            RData::TXT(t) => {
                Some(t.txt_data.iter().map(|s| String::from_utf8_lossy(s).into_owned()).collect::<String>())
            }
            _ => None,
        })
        .collect()
}

/// The host names of MX records: (preference, exchange), without the final dot.
fn mx_names(data: Vec<RData>) -> Vec<(u16, String)> {
    data.into_iter()
        .filter_map(|r| match r {
            RData::MX(m) => Some((m.preference, m.exchange.to_ascii().trim_end_matches('.').to_ascii_lowercase())),
            _ => None,
        })
        .collect()
}

/// Asks DNS about domains.
#[derive(Debug, Clone)]
pub struct DnsInspector {
    resolver: Resolver,
}

/// One inspection's questions: the time they may take together, and what got no answer.
struct Asking<'a> {
    resolver: &'a Resolver,
    deadline: Instant,
    state: Mutex<Asked>,
}

#[derive(Debug, Default)]
struct Asked {
    unanswered: Vec<String>,
    not_asked: usize,
    /// The zone did not answer its NS question: nothing more is asked.
    stopped: bool,
    silent: Option<Silent>,
}

impl DnsInspector {
    /// An inspector asking through `resolver` (the fetcher's, so `--dns-server` holds here too,
    /// and a silent resolver is seen once for the whole worker).
    #[must_use]
    pub fn new(resolver: impl Into<Resolver>) -> DnsInspector {
        DnsInspector { resolver: resolver.into() }
    }

    fn asking(&self) -> Asking<'_> {
        Asking { resolver: &self.resolver, deadline: Instant::now() + DNS_CHECK_TIME, state: Mutex::default() }
    }

    /// The MX host names of `domain` (no address looked up), within [`DNS_CHECK_TIME`].
    pub async fn mx_names(&self, domain: &str) -> Answer<Vec<String>> {
        let a = self.asking();
        map(a.ask(domain, RecordType::MX).await, |d| mx_names(d).into_iter().map(|(_, name)| name).collect())
    }

    /// Everything the DNS check of `domain` (the registrable domain) and `start_host` asks, in
    /// [`DNS_CHECK_TIME`] at most.
    ///
    /// # Errors
    /// [`Silent`]: the resolver answers nothing at all, so nothing can be said about the domain.
    pub async fn inspect(&self, domain: &str, start_host: &str) -> Result<DnsFacts, Silent> {
        let a = self.asking();
        let ns = a.ask(domain, RecordType::NS).await;
        if ns == Answer::TimedOut {
            a.lock().stopped = true;
        }
        let ns = map(ns, |d| {
            d.into_iter()
                .filter_map(|r| match r {
                    RData::NS(n) => Some(n.0.to_ascii().trim_end_matches('.').to_ascii_lowercase()),
                    _ => None,
                })
                .collect::<Vec<_>>()
        });
        let ns = match ns {
            Answer::Found(names) => {
                let mut looked = parallel(names.iter().take(NS_HOSTS_LOOKED_UP).cloned().collect(), |name| {
                    let a = &a;
                    async move {
                        let resolves = a.address(&name).await.0;
                        NameServer { name, resolves }
                    }
                })
                .await;
                looked
                    .extend(names.into_iter().skip(NS_HOSTS_LOOKED_UP).map(|name| NameServer { name, resolves: None }));
                Answer::Found(looked)
            }
            other => map(other, |_| Vec::new()),
        };
        let mx = a.mx(domain).await;
        let txt = a.txt(domain).await;
        let spf_walk = match &txt {
            Answer::Found(t) => match spf_records(t).as_slice() {
                [one] => match SpfRecord::parse(one) {
                    Ok(r) => Some(a.spf_walk(domain, r).await),
                    Err(_) => None,
                },
                _ => None,
            },
            _ => None,
        };
        let dmarc = a.txt(&format!("_dmarc.{domain}")).await;
        let has_mail = mx.found().is_some_and(|m| !matches!(m.as_slice(), [only] if only.exchange.is_empty()));
        let dkim = if has_mail { a.dkim(domain).await } else { Answer::None };
        let caa = a.caa(domain, start_host).await;
        let dnssec = match a.ask(domain, RecordType::DNSKEY).await {
            Answer::Found(_) => Dnssec::Signed,
            Answer::None => Dnssec::Unsigned,
            Answer::Failed(_) | Answer::TimedOut => Dnssec::Unknown,
        };
        let mta_sts = a.txt(&format!("_mta-sts.{domain}")).await;
        let tls_rpt = a.txt(&format!("_smtp._tls.{domain}")).await;
        let asked = std::mem::take(&mut *a.lock());
        if let Some(silent) = asked.silent {
            return Err(silent);
        }
        Ok(DnsFacts {
            domain: domain.to_owned(),
            ns,
            mx,
            txt,
            spf_walk,
            dmarc,
            dkim,
            caa,
            dnssec,
            mta_sts,
            tls_rpt,
            unanswered: asked.unanswered,
            not_asked: asked.not_asked,
        })
    }
}

impl DnsInspector {
    /// What the DNS check of a site asks about its own host name when another site of the audit
    /// checks its registrable domain: the relevant CAA set, climbing from `start_host` to
    /// `domain`, in [`DNS_CHECK_TIME`] at most.
    ///
    /// # Errors
    /// [`Silent`]: the resolver answers nothing at all.
    pub async fn inspect_host(&self, domain: &str, start_host: &str) -> Result<HostDnsFacts, Silent> {
        let a = self.asking();
        let caa = a.caa(domain, start_host).await;
        let asked = std::mem::take(&mut *a.lock());
        if let Some(silent) = asked.silent {
            return Err(silent);
        }
        Ok(HostDnsFacts { domain: domain.to_owned(), caa, unanswered: asked.unanswered, not_asked: asked.not_asked })
    }
}

impl Asking<'_> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Asked> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One question, unless the zone fell silent, the resolver is silent or the time is up: the
    /// answer, or what stands for it when there is none.
    async fn lookup(&self, name: &str, t: RecordType) -> Result<Lookup, Answer<Vec<RData>>> {
        let question = format!("{t} {}", name.trim_end_matches('.'));
        {
            let mut s = self.lock();
            if s.stopped || s.silent.is_some() || Instant::now() >= self.deadline {
                s.not_asked += 1;
                return Err(Answer::TimedOut);
            }
        }
        match tokio::time::timeout_at(self.deadline, self.resolver.lookup(&fqdn(name), t)).await {
            Ok(Ok(l)) => Ok(l),
            Ok(Err(LookupError::Silent(s))) => {
                self.lock().silent = Some(s);
                Err(Answer::TimedOut)
            }
            Ok(Err(e)) if e.no_answer() => {
                self.lock().unanswered.push(question);
                Err(Answer::TimedOut)
            }
            Ok(Err(LookupError::Net(e))) => Err(records(Err(e))),
            Err(_) => {
                self.lock().unanswered.push(question);
                Err(Answer::TimedOut)
            }
        }
    }

    /// The records of one question.
    async fn ask(&self, name: &str, t: RecordType) -> Answer<Vec<RData>> {
        match self.lookup(name, t).await {
            Ok(l) => records(Ok(l)),
            Err(no_records) => no_records,
        }
    }

    /// TXT records of `name`, each record's strings joined.
    async fn txt(&self, name: &str) -> Answer<Vec<String>> {
        map(self.ask(name, RecordType::TXT).await, |d| txt_strings(&d))
    }

    /// Whether `name` has an address (`None`: no answer), and the alias it is if it is one.
    async fn address(&self, name: &str) -> (Option<bool>, Option<String>) {
        let (a, alias) = match self.lookup(name, RecordType::A).await {
            Ok(l) => {
                // The answer's CNAME records (filtered out of the A records below).
                let alias = l.answers().iter().find_map(|r| match &r.data {
                    RData::CNAME(c) => Some(c.0.to_ascii().trim_end_matches('.').to_owned()),
                    _ => None,
                });
                (records(Ok(l)), alias)
            }
            Err(no_records) => (no_records, None),
        };
        match a {
            Answer::Found(_) => return (Some(true), alias),
            Answer::TimedOut => return (None, alias),
            Answer::None | Answer::Failed(_) => {}
        }
        match self.ask(name, RecordType::AAAA).await {
            Answer::Found(_) => (Some(true), alias),
            Answer::TimedOut => (None, alias),
            Answer::None | Answer::Failed(_) => (Some(false), alias),
        }
    }

    /// The MX records of `domain`, most preferred first (ties by name), the addresses of the
    /// first [`MX_HOSTS_LOOKED_UP`] host names looked up.
    async fn mx(&self, domain: &str) -> Answer<Vec<Mx>> {
        let mut list = match map(self.ask(domain, RecordType::MX).await, mx_names) {
            Answer::Found(list) => list,
            other => return map(other, |_| Vec::new()),
        };
        list.sort();
        let mut out: Vec<Mx> = list
            .into_iter()
            .map(|(preference, exchange)| Mx { preference, exchange, cname: None, resolves: None })
            .collect();
        // The null MX and IP literals have no address to look up.
        let hosts: Vec<usize> = out
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.exchange.is_empty() && !m.is_ip())
            .map(|(i, _)| i)
            .take(MX_HOSTS_LOOKED_UP)
            .collect();
        let looked = parallel(hosts, |i| {
            let name = out[i].exchange.clone();
            async move { (i, self.address(&name).await) }
        })
        .await;
        for (i, (resolves, cname)) in looked {
            out[i].resolves = resolves;
            out[i].cname = cname;
        }
        Answer::Found(out)
    }

    /// The selectors of [`DKIM_SELECTORS`] with a key (`v=DKIM1` or a `p=` tag).
    async fn dkim(&self, domain: &str) -> Answer<Vec<String>> {
        let selectors: Vec<&'static str> = DKIM_SELECTORS.to_vec();
        let asked: Vec<(&'static str, Answer<Vec<String>>)> =
            parallel(selectors, |sel| async move { (sel, self.txt(&format!("{sel}._domainkey.{domain}")).await) })
                .await;
        let with_key = |txt: &Answer<Vec<String>>| {
            txt.found().is_some_and(|t| {
                t.iter().any(|r| {
                    let r = r.trim_start();
                    r.starts_with("v=DKIM1") || r.split(';').any(|p| p.trim().starts_with("p="))
                })
            })
        };
        let found: Vec<String> = asked.iter().filter(|(_, t)| with_key(t)).map(|(sel, _)| (*sel).to_owned()).collect();
        if !found.is_empty() {
            Answer::Found(found)
        } else if asked.iter().any(|(_, t)| *t == Answer::TimedOut) {
            Answer::TimedOut
        } else {
            Answer::None
        }
    }

    /// The relevant CAA set: climbing from the start host to the registrable domain (RFC 8659
    /// §3; above the registrable domain lie the registry's names, not the customer's).
    async fn caa(&self, domain: &str, start_host: &str) -> Answer<(String, Vec<Caa>)> {
        let mut name = start_host.trim_end_matches('.').to_ascii_lowercase();
        if name != domain && !name.ends_with(&format!(".{domain}")) {
            name = domain.to_owned();
        }
        loop {
            match self.ask(&name, RecordType::CAA).await {
                Answer::Found(d) => {
                    let set = d
                        .into_iter()
                        .filter_map(|r| match r {
                            RData::CAA(c) => Some(Caa {
                                critical: c.issuer_critical,
                                tag: c.tag.to_ascii_lowercase(),
                                value: String::from_utf8_lossy(&c.value).into_owned(),
                            }),
                            _ => None,
                        })
                        .collect();
                    return Answer::Found((name, set));
                }
                Answer::Failed(e) => return Answer::Failed(e),
                Answer::TimedOut => return Answer::TimedOut,
                Answer::None if name == domain => return Answer::None,
                Answer::None => match name.split_once('.') {
                    Some((_, parent)) => name = parent.to_owned(),
                    None => return Answer::None,
                },
            }
        }
    }

    /// Follows the includes and the redirect of the domain's SPF record, counting the
    /// DNS-querying terms of every record evaluated (RFC 7208 §4.6.4) and noting the records that
    /// are missing or malformed (each a permanent error for receivers).
    async fn spf_walk(&self, domain: &str, record: SpfRecord) -> SpfWalk {
        let mut walk = SpfWalk { lookups: record.lookup_terms(), errors: Vec::new(), all: record.all() };
        let mut redirect = record.redirect().map(str::to_owned);
        let mut queue: Vec<String> = record.followed().into_iter().map(str::to_owned).collect();
        // A record included twice is evaluated twice (and counted twice) by receivers; a loop
        // runs past the limit, as it does for them. The walk stops there either way.
        let mut read = 0;
        let mut broken: HashSet<String> = HashSet::new();
        while let Some(target) = queue.pop() {
            read += 1;
            if read > MAX_SPF_RECORDS || walk.lookups > shoal_shared::domain::spf::MAX_SPF_LOOKUPS {
                break;
            }
            if broken.contains(&target) {
                continue;
            }
            let txt = match self.txt(&target).await {
                Answer::Found(t) => t,
                Answer::None => Vec::new(),
                Answer::Failed(e) => {
                    broken.insert(target.clone());
                    walk.errors.push((target, format!("lookup failed: {e}")));
                    continue;
                }
                // Listed among the questions without an answer; receivers would retry later.
                Answer::TimedOut => continue,
            };
            let recs = spf_records(&txt);
            let rec = match recs.as_slice() {
                [one] => match SpfRecord::parse(one) {
                    Ok(r) => r,
                    Err(e) => {
                        broken.insert(target.clone());
                        walk.errors.push((target, e.to_string()));
                        continue;
                    }
                },
                [] => {
                    broken.insert(target.clone());
                    walk.errors.push((target, "no SPF record (a permanent error where it is included)".into()));
                    continue;
                }
                _ => {
                    broken.insert(target.clone());
                    walk.errors.push((target, "more than one SPF record".into()));
                    continue;
                }
            };
            tracing::trace!(domain, include = %target, "SPF record followed");
            walk.lookups += rec.lookup_terms();
            if redirect.as_deref() == Some(target.as_str()) {
                walk.all = rec.all();
                redirect = rec.redirect().map(str::to_owned);
            }
            queue.extend(rec.followed().into_iter().map(str::to_owned));
        }
        walk
    }
}
