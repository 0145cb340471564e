//! RDAP (RFC 9083, RFC 9224): which registry answers for a domain, and what its answer says about
//! the registration (expiry date, status codes). Pure: the caller fetches, the time is passed in.

use crate::time::UnixMs;
use serde::Deserialize;

/// Where the IANA bootstrap file for domains lives (RFC 9224). `--rdap-url` replaces the lookup
/// with one base URL (tests, intranets).
pub const IANA_DNS_BOOTSTRAP: &str = "https://data.iana.org/rdap/dns.json";

/// A registration expiring within this many days is reported (`domain_expiring`).
pub const EXPIRY_WARNING_DAYS: i64 = 30;

/// An RDAP answer Shoal reads at most (a domain object is a few KiB; the bootstrap file ~100 KiB).
pub const MAX_RDAP_BYTES: u64 = 2 * 1024 * 1024;

#[derive(Deserialize)]
struct Bootstrap {
    services: Vec<(Vec<String>, Vec<String>)>,
}

/// The RDAP base URL for `domain` from the IANA bootstrap file (RFC 9224 §5.1): the entry whose
/// label suffix is the longest match, its first `https` URL (else its first URL), with a trailing
/// slash. `Ok(None)` when no registry is listed for the TLD.
///
/// # Errors
/// The file is not the bootstrap's JSON.
pub fn base_for(bootstrap: &[u8], domain: &str) -> Result<Option<String>, String> {
    let b: Bootstrap = serde_json::from_slice(bootstrap).map_err(|e| format!("not an RDAP bootstrap file: {e}"))?;
    let domain = domain.trim_end_matches('.').to_ascii_lowercase();
    let mut best: Option<(usize, &Vec<String>)> = None;
    for (suffixes, urls) in &b.services {
        for s in suffixes {
            let s = s.trim_end_matches('.').to_ascii_lowercase();
            let hit = domain == s || domain.ends_with(&format!(".{s}"));
            if hit && best.is_none_or(|(len, _)| s.len() > len) {
                best = Some((s.len(), urls));
            }
        }
    }
    Ok(best.and_then(|(_, urls)| {
        let url = urls.iter().find(|u| u.starts_with("https://")).or_else(|| urls.first())?;
        Some(if url.ends_with('/') { url.clone() } else { format!("{url}/") })
    }))
}

/// The domain query under an RDAP base URL (RFC 9082 §3.1.3).
#[must_use]
pub fn domain_query(base: &str, domain: &str) -> String {
    let base = base.trim_end_matches('/');
    format!("{base}/domain/{}", domain.trim_end_matches('.').to_ascii_lowercase())
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "eventAction")]
    action: String,
    #[serde(rename = "eventDate")]
    date: Option<String>,
}

#[derive(Deserialize)]
struct DomainObject {
    #[serde(rename = "objectClassName")]
    class: Option<String>,
    #[serde(default)]
    status: Vec<String>,
    #[serde(default)]
    events: Vec<Event>,
}

/// What a registry's RDAP domain object says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// The `expiration` event's date, if given.
    pub expires: Option<UnixMs>,
    /// Status values as given (`client transfer prohibited`, …), lower-case.
    pub status: Vec<String>,
}

/// What the audit reports about a registration at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistrationIssue {
    /// Expired this many whole days ago (0: today).
    Expired(i64),
    /// Expires in this many whole days (under [`EXPIRY_WARNING_DAYS`]).
    Expiring(i64),
    /// Status values that stop the domain from resolving (hold, pending deletion, redemption).
    Hold(Vec<String>),
    /// Status values that block a transfer to another registrar.
    TransferBlocked(Vec<String>),
}

/// Statuses (RFC 8056's mapping of EPP codes) under which the domain does not resolve.
const HOLD: &[&str] = &["client hold", "server hold", "pending delete", "redemption period", "inactive"];
/// Statuses that block a transfer.
const NO_TRANSFER: &[&str] = &["client transfer prohibited", "server transfer prohibited", "pending transfer"];

impl Registration {
    /// Parses a domain object.
    ///
    /// # Errors
    /// Not JSON, not a domain object, or an expiration date that is not RFC 3339.
    pub fn parse(json: &[u8]) -> Result<Registration, String> {
        let d: DomainObject = serde_json::from_slice(json).map_err(|e| format!("not an RDAP domain object: {e}"))?;
        if d.class.as_deref().is_some_and(|c| c != "domain") {
            return Err(format!("objectClassName is {:?}, not \"domain\"", d.class.unwrap_or_default()));
        }
        let mut expires = None;
        for e in d.events.iter().filter(|e| e.action.eq_ignore_ascii_case("expiration")) {
            let date = e.date.as_deref().ok_or("an expiration event without a date")?;
            expires = Some(parse_rfc3339(date).ok_or_else(|| format!("expiration date {date:?} is not RFC 3339"))?);
        }
        let status = d.status.iter().map(|s| s.trim().to_ascii_lowercase()).collect();
        Ok(Registration { expires, status })
    }

    /// What to report at `now`.
    #[must_use]
    pub fn issues(&self, now: UnixMs) -> Vec<RegistrationIssue> {
        let mut out = Vec::new();
        if let Some(exp) = self.expires {
            let days = (i128::from(exp.0) - i128::from(now.0)).div_euclid(86_400_000);
            let days = i64::try_from(days).unwrap_or(i64::MAX);
            if days < 0 {
                out.push(RegistrationIssue::Expired(-days - 1));
            } else if days < EXPIRY_WARNING_DAYS {
                out.push(RegistrationIssue::Expiring(days));
            }
        }
        let pick = |list: &[&str]| -> Vec<String> {
            self.status.iter().filter(|s| list.contains(&s.as_str())).cloned().collect()
        };
        let hold = pick(HOLD);
        if !hold.is_empty() {
            out.push(RegistrationIssue::Hold(hold));
        }
        let blocked = pick(NO_TRANSFER);
        if !blocked.is_empty() {
            out.push(RegistrationIssue::TransferBlocked(blocked));
        }
        out
    }
}

/// An RFC 3339 date-time (`2027-01-31T23:59:59Z`, `…+02:00`, fractions allowed) as Unix
/// milliseconds; `None` if malformed or before 1970.
#[must_use]
pub fn parse_rfc3339(s: &str) -> Option<UnixMs> {
    let s = s.trim();
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes().all(|c| c.is_ascii_digit()).then(|| t.parse().ok())?
    };
    let (y, mo, d, h, mi, sec) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=days_in_month(y, mo)).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut millis = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let ms: String = frac[..digits].chars().chain("000".chars()).take(3).collect();
        millis = ms.parse().ok()?;
        rest = &frac[digits..];
    }
    let offset_min = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && matches!(rest.as_bytes()[0], b'+' | b'-') && rest.as_bytes()[3] == b':' => {
            let oh: i64 = rest.get(1..3)?.parse().ok()?;
            let om: i64 = rest.get(4..6)?.parse().ok()?;
            if oh > 23 || om > 59 {
                return None;
            }
            let m = oh * 60 + om;
            if rest.starts_with('-') { -m } else { m }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec.min(59) - offset_min * 60;
    u64::try_from(secs * 1000 + millis).ok().map(UnixMs)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_table() {
        let cases = [
            ("1970-01-01T00:00:00Z", Some(0)),
            ("2000-02-29T12:00:00Z", Some(951_825_600_000)),
            ("2027-01-31T23:59:59.5Z", Some(1_801_439_999_500)),
            ("2027-02-01T01:59:59+02:00", Some(1_801_439_999_000)),
            ("2027-01-31T22:59:59-01:00", Some(1_801_439_999_000)),
            ("2027-02-30T00:00:00Z", None),
            ("2027-01-31", None),
            ("2027-01-31T25:00:00Z", None),
            ("2027-01-31T00:00:00", None),
            ("1969-12-31T23:59:59Z", None),
            ("20x7-01-31T00:00:00Z", None),
            ("2027-01-31T00:00:00.Z", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_rfc3339(s).map(|t| t.0), want, "{s}");
        }
    }

    #[test]
    fn bootstrap_lookup() {
        let file = br#"{"version":"1.0","services":[[["com","net"],["http://rdap.a.test/v1","https://rdap.a.test/v1/"]],[["uk"],["https://rdap.uk.test/"]],[["co.uk"],["https://rdap.co-uk.test"]]]}"#;
        assert_eq!(base_for(file, "Example.COM").expect("valid"), Some("https://rdap.a.test/v1/".into()));
        assert_eq!(
            base_for(file, "example.co.uk").expect("valid"),
            Some("https://rdap.co-uk.test/".into()),
            "longest match"
        );
        assert_eq!(base_for(file, "example.org").expect("valid"), None);
        assert!(base_for(b"<html>", "a.com").is_err());
        assert!(base_for(br#"{"services":[["com"]]}"#, "a.com").is_err());
        assert_eq!(domain_query("https://r.test/v1/", "Example.com."), "https://r.test/v1/domain/example.com");
    }

    #[test]
    fn registration_table() {
        let day = 86_400_000u64;
        let now = UnixMs(1_800_000_000_000);
        let obj = |date: &str, status: &str| {
            format!(
                r#"{{"objectClassName":"domain","ldhName":"a.test","status":[{status}],"events":[{{"eventAction":"registration","eventDate":"2001-01-01T00:00:00Z"}},{{"eventAction":"expiration","eventDate":"{date}"}}]}}"#
            )
        };
        let fmt = |t: u64| {
            let secs = t / 1000;
            let days = i64::try_from(secs / 86_400).expect("fits");
            // Civil date from days (inverse of days_from_civil), for the test's own inputs.
            let z = days + 719_468;
            let era = z.div_euclid(146_097);
            let doe = z - era * 146_097;
            let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
            let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
            let mp = (5 * doy + 2) / 153;
            let d = doy - (153 * mp + 2) / 5 + 1;
            let m = if mp < 10 { mp + 3 } else { mp - 9 };
            let y = yoe + era * 400 + i64::from(m <= 2);
            let s = secs % 86_400;
            format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", s / 3600, s / 60 % 60, s % 60)
        };
        let at = |offset_days: i64| {
            fmt(u64::try_from(i64::try_from(now.0).expect("fits") + offset_days * i64::try_from(day).expect("fits"))
                .expect("positive"))
        };
        let reg = Registration::parse(obj(&at(400), "\"active\"").as_bytes()).expect("parses");
        assert_eq!(reg.issues(now), vec![]);
        let reg = Registration::parse(obj(&at(10), "\"client transfer prohibited\"").as_bytes()).expect("parses");
        assert_eq!(
            reg.issues(now),
            vec![
                RegistrationIssue::Expiring(10),
                RegistrationIssue::TransferBlocked(vec!["client transfer prohibited".into()]),
            ]
        );
        let reg =
            Registration::parse(obj(&at(-3), "\"Server Hold\", \"redemption period\"").as_bytes()).expect("parses");
        assert_eq!(
            reg.issues(now),
            vec![
                RegistrationIssue::Expired(2),
                RegistrationIssue::Hold(vec!["server hold".into(), "redemption period".into()]),
            ]
        );
        assert!(Registration::parse(b"not json").is_err());
        assert!(Registration::parse(br#"{"objectClassName":"entity"}"#).is_err());
        assert!(Registration::parse(br#"{"events":[{"eventAction":"expiration","eventDate":"next year"}]}"#).is_err());
        assert_eq!(Registration::parse(br#"{}"#).map(|r| r.issues(now)), Ok(vec![]));
    }
}
