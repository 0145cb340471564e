//! The DNS part of SPEC §9's checks: the questions asked about a domain (NS, MX, TXT for SPF,
//! DMARC, DKIM, MTA-STS and TLS-RPT, CAA, DNSKEY) through the worker's one resolver, which is the
//! system's or the `--dns-server`s the operator named, like every other name Shoal resolves.
//!
//! Every question is bounded by the resolver's timeout and attempts; the whole inspection by the
//! number of questions (a fixed list, the DKIM selectors, and at most [`MAX_SPF_RECORDS`] SPF
//! records walked). What DNS says (or fails to say) becomes [`DnsFacts`], which
//! `shoal_shared::domain` judges; only a missing resolver is the caller's concern.

use hickory_resolver::TokioResolver;
use hickory_resolver::net::{DnsError, NetError};
use hickory_resolver::proto::op::ResponseCode;
use hickory_resolver::proto::rr::{RData, RecordType};
use shoal_shared::domain::records::Caa;
use shoal_shared::domain::spf::{SpfRecord, spf_records};
use shoal_shared::domain::{Answer, DKIM_SELECTORS, DnsFacts, Dnssec, Mx, NameServer, SpfWalk};
use std::collections::HashSet;

/// SPF records read at most while walking includes and redirects: past the 10-lookup limit
/// (each followed record costs one), so the count is right, and never a loop.
pub const MAX_SPF_RECORDS: usize = 16;
/// DNS questions in flight at once for one inspection.
const PARALLEL: usize = 4;

/// What an answer's records were, kept to the types asked for.
fn records(r: &Result<hickory_resolver::lookup::Lookup, NetError>) -> Answer<Vec<RData>> {
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

/// Asks DNS about domains.
#[derive(Debug, Clone)]
pub struct DnsInspector {
    resolver: TokioResolver,
}

impl DnsInspector {
    /// An inspector asking through `resolver` (the fetcher's, so `--dns-server` holds here too).
    #[must_use]
    pub fn new(resolver: TokioResolver) -> DnsInspector {
        DnsInspector { resolver }
    }

    async fn ask(&self, name: &str, t: RecordType) -> Answer<Vec<RData>> {
        records(&self.resolver.lookup(fqdn(name), t).await)
    }

    /// TXT records of `name`, each record's strings joined.
    pub async fn txt(&self, name: &str) -> Answer<Vec<String>> {
        map(self.ask(name, RecordType::TXT).await, |d| txt_strings(&d))
    }

    /// Whether `name` has an address, and the alias it is if it is one.
    async fn address(&self, name: &str) -> (bool, Option<String>) {
        let a = self.resolver.lookup(fqdn(name), RecordType::A).await;
        let alias = a.as_ref().ok().and_then(|l| {
            l.answers().iter().find_map(|r| match &r.data {
                RData::CNAME(c) => Some(c.0.to_ascii().trim_end_matches('.').to_owned()),
                _ => None,
            })
        });
        if matches!(records(&a), Answer::Found(_)) {
            return (true, alias);
        }
        let aaaa = self.ask(name, RecordType::AAAA).await;
        (matches!(aaaa, Answer::Found(_)), alias)
    }

    /// The MX hosts of `domain`, with their addresses and aliases.
    pub async fn mx(&self, domain: &str) -> Answer<Vec<Mx>> {
        let raw = map(self.ask(domain, RecordType::MX).await, |d| {
            d.into_iter()
                .filter_map(|r| match r {
                    RData::MX(m) => {
                        Some((m.preference, m.exchange.to_ascii().trim_end_matches('.').to_ascii_lowercase()))
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
        });
        let Answer::Found(list) = raw else { return map(raw, |_| Vec::new()) };
        let looked: Vec<Mx> = parallel(list, |(preference, exchange)| {
            let me = self.clone();
            async move {
                let probe = !exchange.is_empty() && exchange.parse::<std::net::IpAddr>().is_err();
                let (resolves, cname) = if probe { me.address(&exchange).await } else { (false, None) };
                Mx { preference, exchange, cname, resolves }
            }
        })
        .await;
        Answer::Found(looked)
    }

    /// Everything the DNS check of `domain` (the registrable domain) and `start_host` asks.
    /// `mail_checks` false skips DKIM (a domain without mail needs none).
    pub async fn inspect(&self, domain: &str, start_host: &str) -> DnsFacts {
        let ns = map(self.ask(domain, RecordType::NS).await, |d| {
            d.into_iter()
                .filter_map(|r| match r {
                    RData::NS(n) => Some(n.0.to_ascii().trim_end_matches('.').to_ascii_lowercase()),
                    _ => None,
                })
                .collect::<Vec<_>>()
        });
        let ns = match ns {
            Answer::Found(names) => Answer::Found(
                parallel(names, |name| {
                    let me = self.clone();
                    async move {
                        let resolves = me.address(&name).await.0;
                        NameServer { name, resolves }
                    }
                })
                .await,
            ),
            Answer::None => Answer::None,
            Answer::Failed(e) => Answer::Failed(e),
        };
        let mx = self.mx(domain).await;
        let txt = self.txt(domain).await;
        let spf_walk = match &txt {
            Answer::Found(t) => match spf_records(t).as_slice() {
                [one] => match SpfRecord::parse(one) {
                    Ok(r) => Some(self.spf_walk(domain, r).await),
                    Err(_) => None,
                },
                _ => None,
            },
            _ => None,
        };
        let dmarc = self.txt(&format!("_dmarc.{domain}")).await;
        let has_mail = mx.found().is_some_and(|m| !matches!(m.as_slice(), [only] if only.exchange.is_empty()));
        let dkim = if has_mail { self.dkim(domain).await } else { Vec::new() };
        let caa = self.caa(domain, start_host).await;
        let dnssec = match self.ask(domain, RecordType::DNSKEY).await {
            Answer::Found(_) => Dnssec::Signed,
            Answer::None => Dnssec::Unsigned,
            Answer::Failed(_) => Dnssec::Unknown,
        };
        let mta_sts = self.txt(&format!("_mta-sts.{domain}")).await;
        let tls_rpt = self.txt(&format!("_smtp._tls.{domain}")).await;
        DnsFacts { domain: domain.to_owned(), ns, mx, txt, spf_walk, dmarc, dkim, caa, dnssec, mta_sts, tls_rpt }
    }

    /// The selectors of [`DKIM_SELECTORS`] with a key (`v=DKIM1` or a `p=` tag).
    async fn dkim(&self, domain: &str) -> Vec<String> {
        let selectors: Vec<&'static str> = DKIM_SELECTORS.to_vec();
        let found: Vec<Option<String>> = parallel(selectors, |sel| {
            let me = self.clone();
            let sel: String = sel.to_owned();
            let name = format!("{sel}._domainkey.{domain}");
            async move {
                let txt = me.txt(&name).await;
                let key = txt.found().is_some_and(|t| {
                    t.iter().any(|r| {
                        let r = r.trim_start();
                        r.starts_with("v=DKIM1") || r.split(';').any(|p| p.trim().starts_with("p="))
                    })
                });
                key.then_some(sel)
            }
        })
        .await;
        found.into_iter().flatten().collect()
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
    pub async fn spf_walk(&self, domain: &str, record: SpfRecord) -> SpfWalk {
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
