//! The small tag records of mail security: DMARC (RFC 7489), MTA-STS's TXT record and policy
//! file (RFC 8461), TLS-RPT (RFC 8460) and CAA (RFC 8659). Each parser says what receivers,
//! senders or certificate authorities would refuse, so the audit can say why.

/// A DMARC policy (`p=`, `sp=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmarcPolicy {
    /// Monitor only.
    None,
    /// Treat failing mail as suspicious.
    Quarantine,
    /// Refuse failing mail.
    Reject,
}

/// A parsed DMARC record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dmarc {
    /// `p=`.
    pub policy: DmarcPolicy,
    /// `sp=`, if given (else subdomains get `p`).
    pub subdomain_policy: Option<DmarcPolicy>,
    /// `rua=` is given and names at least one URI.
    pub reports: bool,
    /// `pct=` (100 if absent).
    pub percent: u8,
}

/// Whether a TXT record is a DMARC record at all (`v=DMARC1` first): the others at `_dmarc` are
/// ignored by receivers.
#[must_use]
pub fn is_dmarc(txt: &str) -> bool {
    tags(txt).next().is_some_and(|(k, v)| k.eq_ignore_ascii_case("v") && v == "DMARC1")
}

fn policy(v: &str) -> Option<DmarcPolicy> {
    match v.to_ascii_lowercase().as_str() {
        "none" => Some(DmarcPolicy::None),
        "quarantine" => Some(DmarcPolicy::Quarantine),
        "reject" => Some(DmarcPolicy::Reject),
        _ => None,
    }
}

/// `k=v; k=v` pairs, trimmed; empty parts skipped; a part without `=` is `(part, "")`.
fn tags(txt: &str) -> impl Iterator<Item = (&str, &str)> {
    txt.split(';').map(str::trim).filter(|p| !p.is_empty()).map(|p| match p.split_once('=') {
        Some((k, v)) => (k.trim(), v.trim()),
        None => (p, ""),
    })
}

impl Dmarc {
    /// Parses a record found at `_dmarc.<domain>`.
    ///
    /// # Errors
    /// What receivers would reject, as text.
    /// (A `String`: it becomes a finding's detail for the site owner, and no caller branches on it.)
    pub fn parse(txt: &str) -> Result<Dmarc, String> {
        if !is_dmarc(txt) {
            return Err("does not start with v=DMARC1".into());
        }
        let mut d = Dmarc { policy: DmarcPolicy::None, subdomain_policy: None, reports: false, percent: 100 };
        let mut saw_p = false;
        for (i, (k, v)) in tags(txt).enumerate().skip(1) {
            match k.to_ascii_lowercase().as_str() {
                "p" if i == 1 => {
                    d.policy = policy(v).ok_or_else(|| format!("p={v} is not none, quarantine or reject"))?;
                    saw_p = true;
                }
                "p" => return Err("p= must come right after v=DMARC1".into()),
                "sp" => d.subdomain_policy = Some(policy(v).ok_or_else(|| format!("sp={v} is not a policy"))?),
                "rua" => d.reports = v.split(',').any(|u| u.trim().contains(':')),
                "pct" => {
                    d.percent = v.parse::<u8>().ok().filter(|p| *p <= 100).ok_or(format!("pct={v} is not 0-100"))?
                }
                "adkim" | "aspf" if !matches!(v, "r" | "s") => return Err(format!("{k}={v} is not r or s")),
                _ => {}
            }
        }
        if !saw_p {
            return Err("no p= policy".into());
        }
        Ok(d)
    }
}

/// Whether a TXT record at `_mta-sts.<domain>` is an MTA-STS record (`v=STSv1` first).
#[must_use]
pub fn is_mta_sts(txt: &str) -> bool {
    tags(txt).next().is_some_and(|(k, v)| k == "v" && v == "STSv1")
}

/// Checks an MTA-STS TXT record: `v=STSv1; id=<1-32 letters and digits>`.
///
/// # Errors
/// What senders would reject.
/// (A `String`: it becomes a finding's detail for the site owner, and no caller branches on it.)
pub fn check_mta_sts_record(txt: &str) -> Result<(), String> {
    if !is_mta_sts(txt) {
        return Err("does not start with v=STSv1".into());
    }
    let id = tags(txt).find(|(k, _)| *k == "id").map(|(_, v)| v);
    match id {
        Some(id) if (1..=32).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric()) => Ok(()),
        Some(id) => Err(format!("id={id} is not 1-32 letters and digits")),
        None => Err("no id=".into()),
    }
}

/// An MTA-STS policy's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StsMode {
    /// Senders must use verified TLS.
    Enforce,
    /// Failures are reported only.
    Testing,
    /// No policy.
    None,
}

/// A parsed MTA-STS policy file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StsPolicy {
    /// `mode:`.
    pub mode: StsMode,
    /// `mx:` patterns, lower-case (`mail.example.com`, `*.example.net`).
    pub mx: Vec<String>,
    /// `max_age:` in seconds.
    pub max_age: u64,
}

impl StsPolicy {
    /// Parses a policy file (`key: value` lines, LF or CRLF).
    ///
    /// # Errors
    /// What senders would reject.
    /// (A `String`: it becomes a finding's detail for the site owner, and no caller branches on it.)
    pub fn parse(text: &str) -> Result<StsPolicy, String> {
        let (mut version, mut mode, mut max_age, mut mx) = (None, None, None, Vec::new());
        for line in text.lines().map(|l| l.trim_end_matches('\r')).filter(|l| !l.trim().is_empty()) {
            let Some((k, v)) = line.split_once(':') else {
                return Err(format!("line {line:?} is not key: value"));
            };
            let v = v.trim();
            match k.trim() {
                "version" => version = Some(v.to_owned()),
                "mode" => {
                    mode = Some(match v {
                        "enforce" => StsMode::Enforce,
                        "testing" => StsMode::Testing,
                        "none" => StsMode::None,
                        _ => return Err(format!("mode {v:?} is not enforce, testing or none")),
                    });
                }
                "max_age" => {
                    max_age = Some(
                        v.parse::<u64>()
                            .ok()
                            .filter(|n| *n <= 31_557_600)
                            .ok_or(format!("max_age {v:?} is not 0-31557600"))?,
                    );
                }
                "mx" => mx.push(v.trim_end_matches('.').to_ascii_lowercase()),
                _ => {}
            }
        }
        if version.as_deref() != Some("STSv1") {
            return Err("no version: STSv1".into());
        }
        let mode = mode.ok_or("no mode")?;
        let max_age = max_age.ok_or("no max_age")?;
        if mode != StsMode::None && mx.is_empty() {
            return Err("no mx".into());
        }
        Ok(StsPolicy { mode, mx, max_age })
    }

    /// Whether the policy lets senders deliver to `host` (an MX target): an exact pattern, or
    /// `*.suffix` covering exactly one more label.
    #[must_use]
    pub fn covers(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.mx.iter().any(|p| match p.strip_prefix("*.") {
            Some(suffix) => host.split_once('.').is_some_and(|(label, rest)| !label.is_empty() && rest == suffix),
            None => *p == host,
        })
    }
}

/// Whether a TXT record at `_smtp._tls.<domain>` is a TLS-RPT record (`v=TLSRPTv1` first).
#[must_use]
pub fn is_tls_rpt(txt: &str) -> bool {
    tags(txt).next().is_some_and(|(k, v)| k == "v" && v == "TLSRPTv1")
}

/// Checks a TLS-RPT record: `v=TLSRPTv1; rua=<mailto: or https: URIs>`.
///
/// # Errors
/// What senders would reject.
/// (A `String`: it becomes a finding's detail for the site owner, and no caller branches on it.)
pub fn check_tls_rpt(txt: &str) -> Result<(), String> {
    if !is_tls_rpt(txt) {
        return Err("does not start with v=TLSRPTv1".into());
    }
    let rua = tags(txt).find(|(k, _)| *k == "rua").map(|(_, v)| v).ok_or("no rua=")?;
    for uri in rua.split(',').map(str::trim) {
        let lower = uri.to_ascii_lowercase();
        let ok = lower.strip_prefix("mailto:").is_some_and(|a| a.contains('@'))
            || lower.strip_prefix("https://").is_some_and(|h| !h.is_empty());
        if !ok {
            return Err(format!("rua {uri:?} is not a mailto: or https: URI"));
        }
    }
    Ok(())
}

/// One CAA record as read from DNS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caa {
    /// The issuer-critical flag.
    pub critical: bool,
    /// The property tag, lower-case (`issue`, `issuewild`, `iodef`, …).
    pub tag: String,
    /// The value as text.
    pub value: String,
}

/// What a CAA record set says: the authorities allowed to issue and whether a report address is
/// given; or why a CA would refuse it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CaaSummary {
    /// Issuer domains of `issue` and `issuewild` (an empty value forbids issuing: not listed).
    pub issuers: Vec<String>,
    /// An `iodef` record is present.
    pub iodef: bool,
    /// Problems: unknown critical tags, malformed values.
    pub problems: Vec<String>,
}

/// Reads a CAA record set (RFC 8659 §4).
#[must_use]
pub fn summarize_caa(set: &[Caa]) -> CaaSummary {
    let mut s = CaaSummary::default();
    for r in set {
        match r.tag.as_str() {
            "issue" | "issuewild" => {
                let issuer = r.value.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
                let valid =
                    issuer.is_empty() || issuer.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.'));
                if !valid {
                    s.problems.push(format!("{} {:?} names no issuer domain", r.tag, r.value));
                } else if !issuer.is_empty() && !s.issuers.contains(&issuer) {
                    s.issuers.push(issuer);
                }
            }
            "iodef" => {
                let v = r.value.to_ascii_lowercase();
                if v.starts_with("mailto:") || v.starts_with("https://") || v.starts_with("http://") {
                    s.iodef = true;
                } else {
                    s.problems.push(format!("iodef {:?} is not a mailto: or http(s): URL", r.value));
                }
            }
            tag if r.critical => s.problems.push(format!("unknown critical tag {tag:?}: CAs must refuse to issue")),
            _ => {}
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dmarc_table() {
        let ok = [
            ("v=DMARC1; p=none", DmarcPolicy::None, None, false, 100),
            (
                "v=DMARC1; p=reject; sp=none; rua=mailto:d@example.com; pct=50",
                DmarcPolicy::Reject,
                Some(DmarcPolicy::None),
                true,
                50,
            ),
            ("v=DMARC1;p=quarantine;adkim=s;", DmarcPolicy::Quarantine, None, false, 100),
            ("v=DMARC1; p=REJECT; foo=bar", DmarcPolicy::Reject, None, false, 100),
        ];
        for (txt, p, sp, rua, pct) in ok {
            let d = Dmarc::parse(txt).unwrap_or_else(|e| panic!("{txt}: {e}"));
            assert_eq!((d.policy, d.subdomain_policy, d.reports, d.percent), (p, sp, rua, pct), "{txt}");
        }
        for bad in [
            "v=DMARC1",
            "v=DMARC1; p=maybe",
            "p=reject; v=DMARC1",
            "v=DMARC1; rua=mailto:a@b; p=none",
            "v=DMARC1; p=none; pct=101",
            "v=DMARC1; p=none; adkim=x",
            "v=dmarc1; p=none",
            "",
        ] {
            assert!(Dmarc::parse(bad).is_err(), "{bad:?}");
        }
        assert!(!is_dmarc("v=spf1 -all"));
    }

    #[test]
    fn mta_sts_and_tls_rpt_table() {
        assert!(check_mta_sts_record("v=STSv1; id=20240101T000000").is_ok());
        assert!(check_mta_sts_record("v=STSv1; id=").is_err());
        assert!(check_mta_sts_record("v=STSv1;").is_err());
        assert!(check_mta_sts_record("v=STSv1; id=a-b").is_err());
        let p = StsPolicy::parse(
            "version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\r\nmx: *.example.net\r\nmax_age: 604800\r\n",
        )
        .expect("valid policy");
        assert_eq!((p.mode, p.max_age), (StsMode::Enforce, 604_800));
        assert!(p.covers("MAIL.example.com."));
        assert!(p.covers("mx1.example.net"));
        assert!(!p.covers("a.b.example.net"), "a wildcard covers one label");
        assert!(!p.covers("example.net"));
        assert!(!p.covers("mail.example.org"));
        for bad in [
            "mode: enforce\nmx: a\nmax_age: 1",
            "version: STSv1\nmode: strict\nmx: a\nmax_age: 1",
            "version: STSv1\nmode: enforce\nmax_age: 1",
            "version: STSv1\nmode: testing\nmx: a\nmax_age: -1",
            "version: STSv1\nmode: testing\nmx: a",
            "<html>not a policy</html>",
        ] {
            assert!(StsPolicy::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(StsPolicy::parse("version: STSv1\nmode: none\nmax_age: 0").map(|p| p.mode), Ok(StsMode::None));
        assert!(check_tls_rpt("v=TLSRPTv1; rua=mailto:tls@example.com,https://r.example.com/x").is_ok());
        assert!(check_tls_rpt("v=TLSRPTv1;").is_err());
        assert!(check_tls_rpt("v=TLSRPTv1; rua=ftp://x").is_err());
        assert!(check_tls_rpt("v=TLSRPTv2; rua=mailto:a@b").is_err());
    }

    #[test]
    fn caa_table() {
        let r = |critical, tag: &str, value: &str| Caa { critical, tag: tag.into(), value: value.into() };
        let s = summarize_caa(&[
            r(false, "issue", "letsencrypt.org"),
            r(false, "issuewild", ";"),
            r(false, "iodef", "mailto:sec@example.com"),
        ]);
        assert_eq!(s, CaaSummary { issuers: vec!["letsencrypt.org".into()], iodef: true, problems: vec![] });
        let s = summarize_caa(&[r(true, "tbs", "x"), r(false, "issue", "bad issuer!"), r(false, "iodef", "tel:1")]);
        assert_eq!(s.problems.len(), 3, "{s:?}");
        assert!(summarize_caa(&[r(false, "future", "x")]).problems.is_empty(), "unknown non-critical tags are ignored");
    }
}
