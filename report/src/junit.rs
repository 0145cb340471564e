//! The audit as JUnit XML (`shoal report --format junit`), the test-report format most CI systems
//! show natively (GitLab, Jenkins, Azure DevOps, GitHub actions that read it).
//!
//! One `<testsuite>` per site (its health score as a property), one `<testcase>` per finding code
//! found on the site; a test case fails when its findings fail the gate (`--fail-on`, default
//! `error`; with `--new-only`, only when the code has findings new since the site's previous
//! audit). A site without findings has one passing test case, `health`. A failure lists the URLs
//! (at most [`URLS_PER_FAILURE`]) with their details.
//!
//! XML is written by hand: the report's markup escaper and dropping the characters XML 1.0 cannot
//! carry (crawled text may hold control characters), which no crate does for us.

use crate::compare::{Change, changes_with};
use crate::gate::Gate;
use crate::issues::{IssueGroup, SiteHealth, audit_health, baselines};
use crate::{ReportError, generator};
use shoal_shared::ids::AuditId;
use shoal_store::cursor::{Previous, Reader};
use shoal_store::{AuditDb, DbError};
use std::collections::HashMap;
use std::io::{BufWriter, Write};

/// URLs listed in one failure's text at most.
pub const URLS_PER_FAILURE: u64 = 50;

/// Text for XML content and attribute values: the characters XML 1.0 does not allow (most control
/// characters, U+FFFE and U+FFFF; lone surrogates cannot occur in a `str`) dropped, then `&`, `<`,
/// `>`, `"`, `'` escaped as for the report's SVG (one escaper for markup written by hand).
fn xml(s: &str) -> String {
    let allowed: String = s
        .chars()
        .filter(|c| matches!(c, '\t' | '\n' | '\r') || (*c >= ' ' && !matches!(c, '\u{fffe}' | '\u{ffff}')))
        .collect();
    crate::html::escape_markup(&allowed)
}

/// Writes the JUnit XML of an audit; test cases fail by `gate`.
///
/// # Errors
/// [`ReportError::UnknownAudit`], [`ReportError::Db`], [`ReportError::Write`].
pub fn write_junit(db: &AuditDb, audit: AuditId, gate: Gate, out: &mut dyn Write) -> Result<(), ReportError> {
    db.audit(audit)?.ok_or(ReportError::UnknownAudit { audit })?;
    let sites = audit_health(db, audit)?;
    let base = if gate.new_only { baselines(db, audit)? } else { HashMap::new() };
    let reader = Reader::open(db)?;
    let mut suites = Vec::with_capacity(sites.len());
    let (mut tests, mut failures) = (0_u64, 0_u64);
    for h in &sites {
        let new = match base.get(&h.site.id) {
            Some(prev) if gate.new_only => Some(new_codes(&reader, prev, h)?),
            _ => None,
        };
        let suite = Suite::of(h, gate, new.as_ref());
        tests += suite.cases.len() as u64;
        failures += suite.cases.iter().filter(|c| c.fails).count() as u64;
        suites.push(suite);
    }
    let mut w = BufWriter::new(out);
    writeln!(w, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        w,
        r#"<testsuites name="{}" tests="{tests}" failures="{failures}" errors="0">"#,
        xml(&format!("Shoal audit {audit} ({})", generator()))
    )?;
    for (h, suite) in sites.iter().zip(&suites) {
        let name = xml(&h.site.start_url);
        writeln!(
            w,
            r#"<testsuite name="{name}" id="{}" tests="{}" failures="{}" errors="0" skipped="0">"#,
            h.site.id.0,
            suite.cases.len(),
            suite.cases.iter().filter(|c| c.fails).count()
        )?;
        let score = h.score.map_or_else(|| "none".to_owned(), |s| s.get().to_string());
        writeln!(w, r#"<properties><property name="health_score" value="{score}"/></properties>"#)?;
        for case in &suite.cases {
            write!(w, r#"<testcase classname="{name}" name="{}">"#, xml(&case.name))?;
            if case.fails {
                write!(w, r#"<failure type="{}" message="{}">"#, case.severity, xml(&case.message))?;
                db.for_each_issue_finding(
                    h.site.id,
                    &case.name,
                    0,
                    URLS_PER_FAILURE,
                    |f| -> Result<(), ReportError> {
                        let detail = if f.detail.is_empty() { String::new() } else { format!(" ({})", f.detail) };
                        writeln!(w, "{}{}", xml(&f.url), xml(&detail))?;
                        Ok(())
                    },
                )?;
                write!(w, "</failure>")?;
            } else if !case.message.is_empty() {
                write!(w, "<system-out>{}</system-out>", xml(&case.message))?;
            }
            writeln!(w, "</testcase>")?;
        }
        writeln!(w, "</testsuite>")?;
    }
    writeln!(w, "</testsuites>")?;
    w.flush()?;
    Ok(())
}

/// The codes with findings new since `prev` that the gate counts (only asked for with
/// `--new-only`).
fn new_codes(reader: &Reader, prev: &Previous, h: &SiteHealth) -> Result<HashMap<String, u64>, DbError> {
    let mut out: HashMap<String, u64> = HashMap::new();
    changes_with(reader, prev.site, h.site.id, |change, f| -> Result<(), DbError> {
        if change == Change::New {
            *out.entry(f.code).or_default() += 1;
        }
        Ok(())
    })?;
    Ok(out)
}

struct Case {
    name: String,
    fails: bool,
    severity: &'static str,
    message: String,
}

struct Suite {
    cases: Vec<Case>,
}

impl Suite {
    fn of(h: &SiteHealth, gate: Gate, new: Option<&HashMap<String, u64>>) -> Suite {
        if h.groups.is_empty() {
            return Suite {
                cases: vec![Case { name: "health".into(), fails: false, severity: "", message: String::new() }],
            };
        }
        let cases = h
            .groups
            .iter()
            .map(|g: &IssueGroup| {
                let new_here = new.map(|n| n.get(&g.code).copied().unwrap_or(0));
                let fails = gate.counts(g.severity) && new_here.is_none_or(|n| n > 0);
                let what = g.message().unwrap_or(&g.code);
                let new_text = new_here.map(|n| format!(", {n} new")).unwrap_or_default();
                Case {
                    name: g.code.clone(),
                    fails,
                    severity: g.severity.as_str(),
                    message: format!("{what} {} URL{}{new_text}", g.urls, if g.urls == 1 { "" } else { "s" }),
                }
            })
            .collect();
        Suite { cases }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_text_is_escaped_and_stripped_of_what_xml_cannot_carry() {
        assert_eq!(xml(r#"<a href="x">&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
        assert_eq!(xml("a\u{0}b\u{1b}c\td\u{fffe}"), "abc\td");
        assert_eq!(xml("ünïcødé ✓"), "ünïcødé ✓");
    }
}
