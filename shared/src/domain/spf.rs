//! SPF records (RFC 7208): which TXT records are SPF, their terms, and what evaluating them costs.
//!
//! Only what an audit needs: the syntax (a record receivers would reject is a finding), the terms
//! that make a receiver query DNS (at most 10 in one evaluation, §4.6.4), and the `all` the
//! record ends in. The DNS walk through `include:` and `redirect=` belongs to the worker; the
//! count is [`SpfRecord::lookup_terms`] per record.

use std::net::{Ipv4Addr, Ipv6Addr};

/// The most DNS-querying terms one SPF evaluation may use (RFC 7208 §4.6.4).
pub const MAX_SPF_LOOKUPS: usize = 10;

/// A directive's qualifier (§4.6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Qualifier {
    /// `+` (the default).
    Pass,
    /// `-`.
    Fail,
    /// `~`.
    SoftFail,
    /// `?`.
    Neutral,
}

/// A mechanism (§5), with the domain it names where it names one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mechanism {
    /// `all`.
    All,
    /// `include:<domain>`.
    Include(String),
    /// `a[:<domain>][/cidr]`.
    A(Option<String>),
    /// `mx[:<domain>][/cidr]`.
    Mx(Option<String>),
    /// `ptr[:<domain>]` (deprecated, but valid).
    Ptr(Option<String>),
    /// `ip4:<network>`.
    Ip4,
    /// `ip6:<network>`.
    Ip6,
    /// `exists:<domain>`.
    Exists(String),
}

/// One term of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// A qualifier and a mechanism.
    Directive(Qualifier, Mechanism),
    /// `redirect=<domain>`.
    Redirect(String),
    /// `exp=<domain>` or an unknown modifier (both cost no lookup while evaluating).
    Modifier,
}

/// A parsed SPF record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpfRecord {
    /// Its terms, in order.
    pub terms: Vec<Term>,
}

/// Why a record is not valid SPF: the term and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {term:?}")]
pub struct SpfError {
    /// The offending term (or the record's start).
    pub term: String,
    /// What is wrong.
    pub what: &'static str,
}

/// The SPF records among a name's TXT records (each record's strings already joined): those whose
/// version is exactly `v=spf1` (case-insensitive), followed by a space or nothing.
#[must_use]
pub fn spf_records(txt: &[String]) -> Vec<&str> {
    txt.iter()
        .map(String::as_str)
        .filter(|t| {
            let t = t.trim_start();
            t.len() >= 6
                && t.is_char_boundary(6)
                && t[..6].eq_ignore_ascii_case("v=spf1")
                && t[6..].chars().next().is_none_or(|c| c == ' ')
        })
        .collect()
}

impl SpfRecord {
    /// Parses one record (starting with `v=spf1`).
    ///
    /// # Errors
    /// [`SpfError`] naming the first term receivers would reject.
    pub fn parse(record: &str) -> Result<SpfRecord, SpfError> {
        let mut words = record.split(' ').filter(|w| !w.is_empty());
        match words.next() {
            Some(v) if v.eq_ignore_ascii_case("v=spf1") => {}
            other => return Err(SpfError { term: other.unwrap_or("").to_owned(), what: "not an SPF record" }),
        }
        let mut terms = Vec::new();
        let (mut redirects, mut exps) = (0, 0);
        for w in words {
            if !w.is_ascii() || w.chars().any(char::is_control) {
                return Err(SpfError { term: w.to_owned(), what: "characters outside printable ASCII" });
            }
            let t = term(w)?;
            match &t {
                Term::Redirect(_) => redirects += 1,
                Term::Modifier if w.to_ascii_lowercase().starts_with("exp=") => exps += 1,
                _ => {}
            }
            if redirects > 1 || exps > 1 {
                return Err(SpfError { term: w.to_owned(), what: "a modifier given twice" });
            }
            terms.push(t);
        }
        Ok(SpfRecord { terms })
    }

    /// Terms that make a receiver query DNS: `include`, `a`, `mx`, `ptr`, `exists` and
    /// `redirect` (a redirect beside an `all` is never followed, §6.1).
    #[must_use]
    pub fn lookup_terms(&self) -> usize {
        let has_all = self.all().is_some();
        self.terms
            .iter()
            .filter(|t| match t {
                Term::Directive(_, m) => !matches!(m, Mechanism::All | Mechanism::Ip4 | Mechanism::Ip6),
                Term::Redirect(_) => !has_all,
                Term::Modifier => false,
            })
            .count()
    }

    /// The qualifier of the record's `all`, if it has one.
    #[must_use]
    pub fn all(&self) -> Option<Qualifier> {
        self.terms.iter().find_map(|t| match t {
            Term::Directive(q, Mechanism::All) => Some(*q),
            _ => None,
        })
    }

    /// The redirect target, if the record has one and no `all` (which makes it ignored).
    #[must_use]
    pub fn redirect(&self) -> Option<&str> {
        if self.all().is_some() {
            return None;
        }
        self.terms.iter().find_map(|t| match t {
            Term::Redirect(d) => Some(d.as_str()),
            _ => None,
        })
    }

    /// The domains whose SPF records evaluating this one reads: every `include`, then the
    /// redirect. Targets with macros (`%{d}`) depend on the message and are left out.
    #[must_use]
    pub fn followed(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .terms
            .iter()
            .filter_map(|t| match t {
                Term::Directive(_, Mechanism::Include(d)) => Some(d.as_str()),
                _ => None,
            })
            .collect();
        out.extend(self.redirect());
        out.retain(|d| !d.contains('%'));
        out
    }
}

fn term(w: &str) -> Result<Term, SpfError> {
    let bad = |what| SpfError { term: w.to_owned(), what };
    // A modifier is `name=value` whose name starts with a letter and has no ':' or '/' before '='.
    if let Some((name, value)) = w.split_once('=')
        && !name.contains([':', '/'])
    {
        if name.is_empty()
            || !name.starts_with(|c: char| c.is_ascii_alphabetic())
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(bad("a malformed modifier name"));
        }
        return match name.to_ascii_lowercase().as_str() {
            "redirect" => Ok(Term::Redirect(domain_spec(value).ok_or_else(|| bad("redirect names no domain"))?)),
            "exp" => domain_spec(value).map(|_| Term::Modifier).ok_or_else(|| bad("exp names no domain")),
            _ => Ok(Term::Modifier),
        };
    }
    let (q, rest) = match w.as_bytes().first() {
        Some(b'+') => (Qualifier::Pass, &w[1..]),
        Some(b'-') => (Qualifier::Fail, &w[1..]),
        Some(b'~') => (Qualifier::SoftFail, &w[1..]),
        Some(b'?') => (Qualifier::Neutral, &w[1..]),
        _ => (Qualifier::Pass, w),
    };
    let (name, arg) = match rest.find([':', '/']) {
        Some(i) => (&rest[..i], Some(&rest[i..])),
        None => (rest, None),
    };
    let m = match name.to_ascii_lowercase().as_str() {
        "all" if arg.is_none() => Mechanism::All,
        "include" => Mechanism::Include(
            required(arg.and_then(|a| a.strip_prefix(':'))).ok_or_else(|| bad("include names no domain"))?,
        ),
        "exists" => Mechanism::Exists(
            required(arg.and_then(|a| a.strip_prefix(':'))).ok_or_else(|| bad("exists names no domain"))?,
        ),
        "a" | "mx" => {
            let (domain, cidr) = split_cidr(arg.unwrap_or(""));
            if !dual_cidr(cidr) {
                return Err(bad("a malformed CIDR length"));
            }
            let domain = match domain.strip_prefix(':') {
                Some(d) => Some(domain_spec(d).ok_or_else(|| bad("an empty domain"))?),
                None if domain.is_empty() => None,
                None => return Err(bad("an unknown mechanism")),
            };
            if name.eq_ignore_ascii_case("a") { Mechanism::A(domain) } else { Mechanism::Mx(domain) }
        }
        "ptr" => match arg {
            None => Mechanism::Ptr(None),
            Some(a) => Mechanism::Ptr(Some(required(a.strip_prefix(':')).ok_or_else(|| bad("ptr names no domain"))?)),
        },
        "ip4" | "ip6" => {
            let v6 = name.eq_ignore_ascii_case("ip6");
            let (ip, cidr) = network(arg.and_then(|a| a.strip_prefix(':')))
                .ok_or_else(|| bad(if v6 { "ip6 names no address" } else { "ip4 names no address" }))?;
            let (parses, max) =
                if v6 { (ip.parse::<Ipv6Addr>().is_ok(), 128) } else { (ip.parse::<Ipv4Addr>().is_ok(), 32) };
            if !parses || cidr.is_some_and(|c| c.parse::<u8>().map_or(true, |n| n > max)) {
                return Err(bad(if v6 { "a malformed IPv6 network" } else { "a malformed IPv4 network" }));
            }
            if v6 { Mechanism::Ip6 } else { Mechanism::Ip4 }
        }
        _ => return Err(bad("an unknown mechanism")),
    };
    Ok(Term::Directive(q, m))
}

fn required(s: Option<&str>) -> Option<String> {
    domain_spec(s?)
}

/// A domain-spec: non-empty, printable, no spaces; macros are kept as written.
fn domain_spec(s: &str) -> Option<String> {
    let s = s.trim_end_matches('.');
    (!s.is_empty() && !s.contains([' ', '/'])).then(|| s.to_ascii_lowercase())
}

/// `ip/len` split at the slash.
fn network(s: Option<&str>) -> Option<(&str, Option<&str>)> {
    let s = s?;
    if s.is_empty() {
        return None;
    }
    Some(match s.split_once('/') {
        Some((ip, c)) => (ip, Some(c)),
        None => (s, None),
    })
}

/// `:domain/24//64` → (`:domain`, `/24//64`).
fn split_cidr(s: &str) -> (&str, &str) {
    match s.find('/') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// `""`, `/24`, `//64` or `/24//64`, in range.
fn dual_cidr(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    let (v4, v6) = match s.split_once("//") {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let ok4 = v4.is_empty() || v4.strip_prefix('/').and_then(|n| n.parse::<u8>().ok()).is_some_and(|n| n <= 32);
    let ok6 = v6.is_none_or(|n| n.parse::<u8>().is_ok_and(|n| n <= 128));
    ok4 && ok6 && !(v4.is_empty() && v6.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_picked_by_their_exact_version() {
        let txt: Vec<String> =
            ["v=spf1 -all", "V=SPF1 mx ~all", "v=spf10 -all", "google-site-verification=x", "v=spf1", "v=spf1\u{e9}"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
        assert_eq!(spf_records(&txt), vec!["v=spf1 -all", "V=SPF1 mx ~all", "v=spf1"]);
    }

    #[test]
    fn parse_table() {
        // (record, lookups, all, followed) or the error's description.
        let ok: &[(&str, usize, Option<Qualifier>, &[&str])] = &[
            ("v=spf1 -all", 0, Some(Qualifier::Fail), &[]),
            ("v=spf1 ip4:192.0.2.0/24 ip6:2001:db8::/32 ~all", 0, Some(Qualifier::SoftFail), &[]),
            ("v=spf1 a mx include:_spf.example.net -all", 3, Some(Qualifier::Fail), &["_spf.example.net"]),
            ("v=spf1 a:mail.example.com/24 mx//64 ptr exists:%{i}.x.test ?all", 4, Some(Qualifier::Neutral), &[]),
            ("v=spf1 redirect=_spf.example.com", 1, None, &["_spf.example.com"]),
            ("v=spf1 +all redirect=ignored.test", 0, Some(Qualifier::Pass), &[]),
            ("v=spf1 include:%{d}.spf.test exp=explain.test unknown-mod=x -all", 1, Some(Qualifier::Fail), &[]),
            ("v=spf1  mx   -all", 1, Some(Qualifier::Fail), &[]),
            ("V=SPF1 MX -ALL", 1, Some(Qualifier::Fail), &[]),
        ];
        for (rec, lookups, all, followed) in ok {
            let r = SpfRecord::parse(rec).unwrap_or_else(|e| panic!("{rec}: {e}"));
            assert_eq!(r.lookup_terms(), *lookups, "{rec}");
            assert_eq!(r.all(), *all, "{rec}");
            assert_eq!(r.followed(), followed.to_vec(), "{rec}");
        }
        let bad: &[(&str, &str)] = &[
            ("v=spf1 ip4:999.1.1.1 -all", "a malformed IPv4 network"),
            ("v=spf1 ip4:192.0.2.0/33", "a malformed IPv4 network"),
            ("v=spf1 ip6:zz::1", "a malformed IPv6 network"),
            ("v=spf1 include: -all", "include names no domain"),
            ("v=spf1 inclde:x.test -all", "an unknown mechanism"),
            ("v=spf1 a/99", "a malformed CIDR length"),
            ("v=spf1 redirect=a.test redirect=b.test", "a modifier given twice"),
            ("v=spf1 -all caf\u{e9}", "characters outside printable ASCII"),
            ("v=spf2 -all", "not an SPF record"),
            ("v=spf1 all:x", "an unknown mechanism"),
            ("v=spf1 1bad=x", "a malformed modifier name"),
            ("v=spf1 ip4:", "ip4 names no address"),
        ];
        for (rec, what) in bad {
            assert_eq!(SpfRecord::parse(rec).map_err(|e| e.what), Err(*what), "{rec}");
        }
    }
}
