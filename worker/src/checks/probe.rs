//! What the standard probes' answers mean (SPEC §2): llms.txt, security.txt (RFC 9116), the
//! soft-404 path, the http:// form of an https start page, and the WordPress probes.

use super::Check;
use crate::fetch::Fetched;
use shoal_shared::finding::Code;
use shoal_shared::task::ProbeKind;
use shoal_shared::time::UnixMs;

/// Whether a start page looks like WordPress, so the four WordPress probes are worth making.
#[must_use]
pub fn looks_like_wordpress(html: &str) -> bool {
    let h = html.to_ascii_lowercase();
    h.contains("/wp-content/") || h.contains("/wp-includes/") || h.contains("content=\"wordpress")
}

/// What a standard probe's answer means. `body` is the decoded start of the body.
#[must_use]
pub fn probe_checks(kind: ProbeKind, resp: &Fetched, body: &str, now: UnixMs) -> Vec<Check> {
    let ct = resp.header("content-type").unwrap_or("").to_ascii_lowercase();
    let ok = (200..300).contains(&resp.status);
    let html = ct.contains("html");
    let mut out = Vec::new();
    match kind {
        ProbeKind::LlmsTxt => {
            if ok && !html && !body.trim().is_empty() {
                out.push((Code::LlmsTxtPresent, format!("{} bytes", resp.body.len())));
                let problems = crate::llms_txt::problems(body, resp.truncated);
                if !problems.is_empty() {
                    out.push((Code::LlmsTxtInvalid, crate::llms_txt::detail(&problems)));
                }
            }
        }
        ProbeKind::SecurityTxt => {
            if !ok {
                out.push((Code::SecurityTxtMissing, format!("HTTP {}", resp.status)));
            } else if html {
                out.push((Code::SecurityTxtMissing, format!("answered an HTML page (HTTP {})", resp.status)));
            } else {
                match security_txt(body, now) {
                    SecurityTxt::Valid => {}
                    SecurityTxt::Invalid(why) => out.push((Code::SecurityTxtInvalid, why)),
                    SecurityTxt::Expired(when) => out.push((Code::SecurityTxtExpired, format!("expired {when}"))),
                }
            }
        }
        ProbeKind::Soft404 => {
            if ok {
                out.push((Code::Soft404, format!("answered {} for a URL that cannot exist", resp.status)));
            } else if (300..400).contains(&resp.status) {
                let to = resp.header("location").unwrap_or("");
                out.push((Code::Soft404, format!("redirected to {to} instead of answering 404")));
            }
        }
        ProbeKind::HttpsRedirect => {
            let to_https = (300..400).contains(&resp.status)
                && resp.header("location").is_some_and(|l| l.trim().to_ascii_lowercase().starts_with("https://"));
            if !to_https {
                out.push((Code::HttpsRedirectMissing, format!("http:// answered {}", resp.status)));
            }
        }
        ProbeKind::WpJson => {
            if ok && ct.contains("json") {
                out.push((Code::WpRestApiExposed, String::new()));
            }
        }
        ProbeKind::WpXmlrpc => {
            if (ok || resp.status == 405) && body.contains("XML-RPC") {
                out.push((Code::WpXmlrpcExposed, format!("HTTP {}", resp.status)));
            }
        }
        ProbeKind::WpUploads => {
            if ok && body.contains("Index of") {
                out.push((Code::WpUploadsListing, String::new()));
            }
        }
        ProbeKind::WpP1 => {
            if ok && html && body.to_ascii_lowercase().contains("hello world") {
                out.push((Code::WpDefaultPost, String::new()));
            }
        }
    }
    out
}

/// What a security.txt says (RFC 9116).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecurityTxt {
    /// Has Contact and an Expires in the future.
    Valid,
    /// Missing or malformed required fields.
    Invalid(String),
    /// Expires is in the past.
    Expired(String),
}

/// Checks the required fields of RFC 9116 §2.5: at least one `Contact`, exactly one `Expires`
/// (an RFC 3339 date) that has not passed. A PGP-signed file is read through its signature
/// armour; the signature itself is not verified.
#[must_use]
pub fn security_txt(body: &str, now: UnixMs) -> SecurityTxt {
    let mut contacts = 0;
    let mut expires = Vec::new();
    for line in body.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let Some((field, value)) = line.split_once(':') else { continue };
        match field.trim().to_ascii_lowercase().as_str() {
            "contact" if !value.trim().is_empty() => contacts += 1,
            "expires" => expires.push(value.trim().to_owned()),
            _ => {}
        }
    }
    if contacts == 0 {
        return SecurityTxt::Invalid("no Contact field".into());
    }
    match expires.as_slice() {
        [] => SecurityTxt::Invalid("no Expires field".into()),
        [one] => match parse_rfc3339(one) {
            None => SecurityTxt::Invalid(format!("Expires {one:?} is not an RFC 3339 date")),
            Some(t) if t <= now => SecurityTxt::Expired(one.clone()),
            Some(_) => SecurityTxt::Valid,
        },
        _ => SecurityTxt::Invalid("more than one Expires field".into()),
    }
}

/// Parses an RFC 3339 date; see [`UnixMs::parse_rfc3339`].
#[must_use]
pub fn parse_rfc3339(s: &str) -> Option<UnixMs> {
    UnixMs::parse_rfc3339(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(UnixMs(0)));
        assert_eq!(parse_rfc3339("2026-11-30T00:00:00Z"), Some(UnixMs(1_795_996_800_000)));
        assert_eq!(parse_rfc3339("2026-11-30T02:00:00+02:00"), Some(UnixMs(1_795_996_800_000)));
        assert_eq!(parse_rfc3339("2026-11-30T00:00:00.123Z"), Some(UnixMs(1_795_996_800_000)));
        assert_eq!(parse_rfc3339("2026-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("soon"), None);
    }

    #[test]
    fn security_txt_rules() {
        let now = UnixMs(1_795_996_800_000);
        assert_eq!(security_txt("Contact: mailto:a@b.c\nExpires: 2030-01-01T00:00:00Z\n", now), SecurityTxt::Valid);
        assert!(matches!(security_txt("Expires: 2030-01-01T00:00:00Z\n", now), SecurityTxt::Invalid(_)));
        assert!(matches!(security_txt("Contact: mailto:a@b.c\n", now), SecurityTxt::Invalid(_)));
        assert!(matches!(security_txt("Contact: x\nExpires: 2020-01-01T00:00:00Z\n", now), SecurityTxt::Expired(_)));
        assert!(matches!(
            security_txt("Contact: x\nExpires: 2030-01-01T00:00:00Z\nExpires: 2031-01-01T00:00:00Z\n", now),
            SecurityTxt::Invalid(_)
        ));
        assert!(matches!(security_txt("Contact: x\nExpires: tomorrow\n", now), SecurityTxt::Invalid(_)));
    }

    #[test]
    fn wordpress_is_recognised() {
        assert!(looks_like_wordpress(r#"<link rel="stylesheet" href="/wp-content/themes/x/style.css">"#));
        assert!(looks_like_wordpress(r#"<meta name="generator" content="WordPress 6.4">"#));
        assert!(!looks_like_wordpress("<html><body>plain</body></html>"));
    }
}
