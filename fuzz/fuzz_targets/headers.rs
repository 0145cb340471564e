//! Response headers as a site sends them ("Name: value" lines, any bytes) and the body of a probe:
//! the content-type charset, the security-header, response and probe rules (security.txt with its
//! dates) must come back without a panic.

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use shoal_shared::task::ProbeKind;
use shoal_shared::time::UnixMs;
use shoal_worker::charset::charset_from_content_type;
use shoal_worker::checks::{probe_checks, response_checks, security_header_checks, security_txt};
use shoal_worker::fetch::Fetched;

const PROBES: [ProbeKind; 8] = [
    ProbeKind::LlmsTxt,
    ProbeKind::SecurityTxt,
    ProbeKind::Soft404,
    ProbeKind::HttpsRedirect,
    ProbeKind::WpJson,
    ProbeKind::WpXmlrpc,
    ProbeKind::WpUploads,
    ProbeKind::WpP1,
];

fuzz_target!(|data: &[u8]| {
    // Header lines up to the first empty line, then the body; the first byte picks the status.
    let status = data.first().map_or(200, |b| 100 + u16::from(*b) * 2);
    let rest = data.get(1..).unwrap_or_default();
    let (head, body) = match rest.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&rest[..i], &rest[i + 2..]),
        None => (rest, &[][..]),
    };
    let mut headers = HeaderMap::new();
    for line in head.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
        let (Ok(name), Ok(value)) =
            (HeaderName::from_bytes(&line[..colon]), HeaderValue::from_bytes(line[colon + 1..].trim_ascii()))
        else {
            continue;
        };
        headers.append(name, value);
    }
    for value in headers.get_all("content-type") {
        if let Ok(v) = value.to_str() {
            let _ = charset_from_content_type(v);
        }
    }
    let resp = Fetched {
        status,
        headers,
        body: Bytes::copy_from_slice(body),
        truncated: false,
        elapsed: std::time::Duration::from_millis(5),
        ip: None,
    };
    let _ = security_header_checks(&resp, true);
    let _ = security_header_checks(&resp, false);
    let _ = response_checks(&resp, true, false);
    let _ = response_checks(&resp, false, true);
    let text = String::from_utf8_lossy(body);
    let now = UnixMs(1_795_996_800_000);
    for kind in PROBES {
        let _ = probe_checks(kind, &resp, &text, now);
    }
    let _ = security_txt(&text, now);
});
