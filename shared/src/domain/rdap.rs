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
    /// (A `String`: it becomes a finding's detail for the site owner, and no caller branches on it.)
    pub fn parse(json: &[u8]) -> Result<Registration, String> {
        let d: DomainObject = serde_json::from_slice(json).map_err(|e| format!("not an RDAP domain object: {e}"))?;
        if d.class.as_deref().is_some_and(|c| c != "domain") {
            return Err(format!("objectClassName is {:?}, not \"domain\"", d.class.unwrap_or_default()));
        }
        let mut expires = None;
        for e in d.events.iter().filter(|e| e.action.eq_ignore_ascii_case("expiration")) {
            let date = e.date.as_deref().ok_or("an expiration event without a date")?;
            expires =
                Some(UnixMs::parse_rfc3339(date).ok_or_else(|| format!("expiration date {date:?} is not RFC 3339"))?);
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let at = |offset_days: i64| {
            let t = i64::try_from(now.0).expect("fits") + offset_days * i64::try_from(day).expect("fits");
            UnixMs(u64::try_from(t).expect("after 1970")).to_rfc3339()
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
