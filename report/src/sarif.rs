//! The audit as a SARIF 2.1.0 log (`shoal report --format sarif`): the format code-scanning tools
//! and CI pipelines read (GitHub code scanning, Azure DevOps, SonarQube, many IDE viewers).
//!
//! One run; one rule per finding code (its message, why it matters, how to fix it); one result per
//! finding, located at its URL, with `baselineState` `new` or `unchanged` against the audit each
//! site is compared with (the reports' comparison rules), so a pipeline can act on new findings
//! only. Streamed like the JSON report. Levels: error → `error`, warning → `warning`, notice →
//! `note`.

use crate::compare::{Change, changes_with};
use crate::issues::{across_sites, audit_health, baselines, family};
use crate::json_doc::{key, value};
use crate::score;
use crate::{ReportError, guidance};
use serde::Serialize;
use shoal_shared::finding::{Code, Severity};
use shoal_shared::ids::AuditId;
use shoal_store::cursor::Reader;
use shoal_store::{AuditDb, FindingRow};
use std::collections::HashMap;
use std::io::{BufWriter, Write};

/// The SARIF version written.
pub const SARIF_VERSION: &str = "2.1.0";
/// The schema URI SARIF 2.1.0 logs name.
pub const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

fn level(s: &str) -> &'static str {
    match s {
        "error" => "error",
        "warning" => "warning",
        _ => "note",
    }
}

#[derive(Serialize)]
struct Text<T: AsRef<str>> {
    text: T,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RuleJson<'a> {
    id: &'a str,
    short_description: Text<&'a str>,
    full_description: Text<String>,
    help: Text<String>,
    default_configuration: Level,
    properties: RuleProps,
}

#[derive(Serialize)]
struct Level {
    level: &'static str,
}

#[derive(Serialize)]
struct RuleProps {
    family: &'static str,
    scope: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultJson<'a> {
    rule_id: &'a str,
    rule_index: usize,
    level: &'static str,
    message: Text<String>,
    locations: [Location<'a>; 1],
    baseline_state: &'static str,
    partial_fingerprints: Fingerprint,
    properties: ResultProps<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location<'a> {
    physical_location: Physical<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Physical<'a> {
    artifact_location: Artifact<'a>,
}

#[derive(Serialize)]
struct Artifact<'a> {
    uri: &'a str,
}

#[derive(Serialize)]
struct Fingerprint {
    #[serde(rename = "shoalIdentity/v1")]
    identity: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultProps<'a> {
    site_id: u64,
    start_url: &'a str,
    detail: &'a str,
    related: &'a [String],
}

/// A stable hash of a finding's identity across audits (start URL, code, and the URL and key of
/// [`Code::identity`]): SARIF viewers match results of two runs by it.
fn fingerprint(start_url: &str, f: &FindingRow) -> String {
    let (url, key) =
        Code::parse(&f.code).map_or((f.url.as_str(), f.detail.as_str()), |c| c.identity(&f.url, &f.detail));
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [start_url, &f.code, url, key] {
        for b in part.bytes().chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// Writes the SARIF log of an audit to `out`.
///
/// # Errors
/// [`ReportError::UnknownAudit`], [`ReportError::Db`], [`ReportError::Write`].
pub fn write_sarif(db: &AuditDb, audit: AuditId, out: &mut dyn Write) -> Result<(), ReportError> {
    db.audit(audit)?.ok_or(ReportError::UnknownAudit { audit })?;
    let sites = audit_health(db, audit)?;
    let mut codes: Vec<(String, Severity)> = across_sites(&sites).into_iter().map(|c| (c.code, c.severity)).collect();
    codes.sort();
    let index: HashMap<&str, usize> = codes.iter().enumerate().map(|(i, (c, _))| (c.as_str(), i)).collect();
    let base = baselines(db, audit)?;
    let reader = Reader::open(db)?;

    let mut w = BufWriter::new(out);
    w.write_all(b"{")?;
    key(&mut w, true, "$schema")?;
    value(&mut w, SARIF_SCHEMA)?;
    key(&mut w, false, "version")?;
    value(&mut w, SARIF_VERSION)?;
    w.write_all(b",\"runs\":[{\"tool\":{\"driver\":{")?;
    key(&mut w, true, "name")?;
    value(&mut w, "Shoal")?;
    key(&mut w, false, "version")?;
    value(&mut w, env!("CARGO_PKG_VERSION"))?;
    key(&mut w, false, "informationUri")?;
    value(&mut w, env!("CARGO_PKG_REPOSITORY"))?;
    key(&mut w, false, "rules")?;
    let rules: Vec<RuleJson<'_>> = codes
        .iter()
        .map(|(code, severity)| {
            let fam = family(code);
            RuleJson {
                id: code,
                short_description: Text {
                    text: Code::parse(code)
                        .map(|c| c.message())
                        .or_else(|| guidance::code_text(code).map(|t| t.what))
                        .unwrap_or(code),
                },
                full_description: Text { text: guidance::why(fam).map(guidance::plain).unwrap_or_default() },
                help: Text { text: guidance::code_text(code).map(|t| guidance::plain(t.fix)).unwrap_or_default() },
                default_configuration: Level { level: level(severity.as_str()) },
                properties: RuleProps { family: fam, scope: score::scope(code).as_str() },
            }
        })
        .collect();
    value(&mut w, &rules)?;
    w.write_all(b"}},")?;
    key(&mut w, true, "automationDetails")?;
    value(&mut w, &serde_json::json!({ "id": format!("shoal/audit/{}/", audit.0) }))?;
    key(&mut w, false, "results")?;
    w.write_all(b"[")?;
    let mut first = true;
    for h in &sites {
        let mut emit = |state: &'static str, f: FindingRow| -> Result<(), ReportError> {
            let Some(&rule_index) = index.get(f.code.as_str()) else { return Ok(()) };
            if !std::mem::take(&mut first) {
                w.write_all(b",")?;
            }
            let message = match Code::parse(&f.code).map(|c| c.message()) {
                Some(m) if f.detail.is_empty() => m.to_owned(),
                Some(m) => format!("{m} ({})", f.detail),
                None => format!("{}: {}", f.code, f.detail),
            };
            value(
                &mut w,
                &ResultJson {
                    rule_id: &f.code,
                    rule_index,
                    level: level(f.severity.as_str()),
                    message: Text { text: message },
                    locations: [Location {
                        physical_location: Physical { artifact_location: Artifact { uri: &f.url } },
                    }],
                    baseline_state: state,
                    partial_fingerprints: Fingerprint { identity: fingerprint(&h.site.start_url, &f) },
                    properties: ResultProps {
                        site_id: h.site.id.0,
                        start_url: &h.site.start_url,
                        detail: &f.detail,
                        related: &f.related,
                    },
                },
            )
        };
        match base.get(&h.site.id) {
            Some(prev) => changes_with(&reader, prev.site, h.site.id, |change, f| match change {
                Change::New => emit("new", f),
                Change::Remaining => emit("unchanged", f),
                Change::Fixed => Ok(()),
            })?,
            None => db.for_each_finding(h.site.id, |f| emit("new", f))?,
        }
    }
    w.write_all(b"]}]}\n")?;
    w.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_follow_the_identity_not_the_measurement() {
        let row = |code: &str, url: &str, detail: &str| FindingRow {
            code: code.to_owned(),
            severity: Severity::Warning,
            url: url.to_owned(),
            detail: detail.to_owned(),
            related: Vec::new(),
        };
        let s = "https://a.test/";
        assert_eq!(
            fingerprint(s, &row("slow_response", "https://a.test/x", "1200 ms")),
            fingerprint(s, &row("slow_response", "https://a.test/x", "3400 ms"))
        );
        assert_ne!(
            fingerprint(s, &row("invalid_link", "https://a.test/x", "http://[a")),
            fingerprint(s, &row("invalid_link", "https://a.test/x", "http://[b"))
        );
        assert_ne!(
            fingerprint(s, &row("slow_response", "https://a.test/x", "")),
            fingerprint("https://b.test/", &row("slow_response", "https://a.test/x", ""))
        );
        assert_eq!(level("notice"), "note");
    }
}
