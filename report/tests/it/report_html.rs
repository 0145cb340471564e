//! The HTML report written from a real audit database: its sections and charts, escaping of hostile
//! crawled content, the Content-Security-Policy, the changes since the previous audit, a large audit
//! streamed to a counting sink, and the report opened in headless Chromium.

use shoal_report as report;
use shoal_report::fixtures::html::*;
use shoal_shared::finding::{Code, Finding};
use shoal_shared::record::{Event, LinkKind};
use shoal_shared::time::UnixMs;
use shoal_store::AuditDb;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use shoal_test_support::chromium::{chromium, run_chromium};

#[test]
fn html_report_has_every_section_and_one_svg_per_chart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, audit, site) = one_audit(dir.path());
    let doc = html(&db, audit);

    assert!(doc.starts_with("<!DOCTYPE html>"), "{}", &doc[..100]);
    assert!(doc.ends_with("</html>\n"), "the document is complete");
    // An audit of one site: the site's own report, no overview.
    assert!(!doc.contains(r#"<section id="summary""#));
    for section in ["site", "issues", "charts", "changes", "pages", "urls"] {
        let id = format!(r#"id="{section}-{site}""#);
        assert_eq!(doc.matches(&id).count(), 1, "one {id}");
    }
    assert!(doc.contains("Changes since the previous audit"));
    assert!(doc.contains("No earlier audit of this start URL"));
    assert_eq!(doc.matches("<svg").count(), CHARTS.len(), "one SVG per chart");
    for chart in CHARTS {
        assert_eq!(doc.matches(&format!(r#"data-chart="{chart}""#)).count(), 1, "chart {chart}");
    }
    // Status classes over all 11 URLs: 2xx = /, quoted, b, logo, deep, robots; 3xx = a, js; 4xx; 5xx; failed.
    let status = between(&doc, r#"data-chart="status""#, "</svg>");
    for (label, n) in [("2xx", 6), ("3xx", 2), ("4xx", 1), ("5xx", 1), ("failed", 1)] {
        assert!(status.contains(&format!("<title>{label}: {n}</title>")), "{label}={n} in {status}");
    }
    let response = between(&doc, r#"data-chart="response""#, "</svg>");
    assert!(response.contains("<title>≥10s: 1</title>"), "the 12 s page: {response}");

    // Every fetched URL has a row and a details section.
    assert_eq!(doc.matches(r#"<article class="url-detail""#).count(), 11);
    let pages_table = between(&doc, &format!(r#"id="pages-t-{site}""#), "</table>");
    assert_eq!(pages_table.matches("<tr>").count(), 1 + 11, "header and one row per URL");

    // Issues, not rows: one group per code, each finding once under its group, the health score.
    let counts = db.site_issue_counts(site).expect("counts");
    let issues = between(&doc, &format!(r#"id="issues-{site}""#), &format!(r#"id="changes-{site}""#));
    assert_eq!(issues.matches(r#"<details class="issue"#).count(), counts.len(), "{issues}");
    let findings: u64 = counts.iter().map(|c| c.findings).sum();
    assert_eq!(issues.matches(r#"<tr><td class="url">"#).count() as u64, findings, "{issues}");
    let stats = db.site_stats(site).expect("stats");
    assert!(doc.contains(&format!("<b>{}</b> errors", stats.severities.errors)));
    assert!(doc.contains("Health score ") && doc.contains("shoal-health/1"), "the score and its formula");
    // The largest impact first (equal impacts by code): errors, then the warning, then notices.
    let order: Vec<usize> = ["broken_internal_link", "fetch_failed", "server_error", "title_duplicate", "noindex"]
        .iter()
        .map(|c| issues.find(&format!("<code>{c}</code>")).unwrap_or_else(|| panic!("{c} grouped")))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "ranked by impact: {order:?}");
    // Why it matters and how to fix it, from docs/findings.md.
    assert!(issues.contains("<b>Why it matters:</b> Broken links lead visitors to dead ends"), "{issues}");
    assert!(issues.contains("<b>How to fix it:</b> Fix or remove the link"), "{issues}");
    // The broken link found by the site-level analysis links to its URL's details.
    assert!(issues.contains(&format!(r##"href="#u{site}-"##)), "{issues}");
    // Per-URL facts: redirect target, canonical, meta robots, h1s, link counts, the URL's findings.
    let start_detail = between(&doc, r#"<article class="url-detail""#, "</article>");
    assert!(start_detail.contains(&format!(r#"href="{BASE}/""#)), "{start_detail}");
    assert!(start_detail.contains("<dt>Meta robots</dt><dd>noindex</dd>"), "{start_detail}");
    assert!(start_detail.contains("6 (4 internal, 1 external, 1 resources, 0 nofollow)"), "{start_detail}");
    assert!(start_detail.contains("<code>noindex</code>") && start_detail.contains("<code>h1_multiple</code>"));
    let a_detail = between(&doc, &format!(r#"<a class="ext" href="{BASE}/a""#), "</article>");
    assert!(a_detail.contains("<dt>Redirects to</dt>") && a_detail.contains("<dt>Final URL</dt>"), "{a_detail}");
}

#[test]
fn crawled_text_is_escaped_and_only_http_urls_are_links() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, audit, _) = one_audit(dir.path());
    let doc = html(&db, audit);
    let lower = doc.to_ascii_lowercase();

    assert_eq!(lower.matches("<script").count(), 1, "only the report's own script element");
    assert!(!lower.contains("<img"), "the description's <img> is text");
    assert!(!lower.contains("<iframe"), "a finding detail's <iframe> is text");
    assert!(!doc.contains("<b>bold</b>"), "an h1's markup is text");
    assert!(doc.contains("&#60;script&#62;alert(1)&#60;/script&#62;"), "the title is shown as text");
    assert!(doc.contains("&#34;&#62;&#60;img src=x onerror=alert(2)&#62;"), "the description is shown as text");
    assert!(!doc.contains("\"onmouseover=\""), "a quote in a URL cannot end an attribute");
    assert!(doc.contains("q&#34;onmouseover=&#34;alert(3)"), "the quoted URL is there, escaped");
    assert!(!lower.contains("href=\"javascript:"), "javascript: URLs are never links");
    assert!(!lower.contains("href=\" javascript:"));
    for text in [JS_CANONICAL, JS_REDIRECT, JS_RELATED] {
        assert!(doc.contains(&format!(r#"<span class="nolink">{text}</span>"#)), "{text} shown as plain text");
    }
    // Every href is http(s) or a fragment of this document.
    for part in doc.split("href=\"").skip(1) {
        assert!(
            part.starts_with("https://") || part.starts_with("http://") || part.starts_with('#'),
            "{}",
            &part[..40.min(part.len())]
        );
    }
}

fn sha256_base64(text: &str) -> String {
    // An independent implementation: coreutils' sha256sum.
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum (coreutils) runs");
    child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("hash input written");
    let out = child.wait_with_output().expect("sha256sum finished");
    let hex = String::from_utf8(out.stdout).expect("hex");
    let bytes: Vec<u8> =
        (0..64).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex digit")).collect();
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in bytes.chunks(3) {
        let n = c.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            s.push(if i <= c.len() { char::from(ABC[(n >> (18 - 6 * i) & 63) as usize]) } else { '=' });
        }
    }
    s
}

#[test]
fn csp_meta_allows_exactly_the_inline_script_and_style() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, audit, _) = one_audit(dir.path());
    let doc = html(&db, audit);

    let meta = doc.find(r#"<meta http-equiv="Content-Security-Policy""#).expect("CSP meta present");
    assert!(meta < doc.find("<style>").expect("style") && meta < doc.find("<script>").expect("script"));
    let policy = between(&doc, r#"<meta http-equiv="Content-Security-Policy" content=""#, "\"");
    let policy = policy.replace("&#39;", "'");
    let directives: Vec<&str> = policy.split("; ").collect();
    assert!(directives.contains(&"default-src 'none'"), "{policy}");
    assert!(!policy.contains("unsafe"), "{policy}");
    let script = between(&doc, "<script>", "</script>");
    let style = between(&doc, "<style>", "</style>");
    assert!(directives.contains(&format!("script-src 'sha256-{}'", sha256_base64(script)).as_str()), "{policy}");
    assert!(directives.contains(&format!("style-src 'sha256-{}'", sha256_base64(style)).as_str()), "{policy}");
    assert!(!doc.contains(" style=\""), "no inline style attributes (the policy would block them)");
    assert!(!doc.contains(" onclick=") && !doc.contains(" onload="), "no inline handlers");
}

#[test]
fn html_report_shows_changes_since_the_latest_earlier_audit_of_the_same_start_url() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, first, _) = one_audit(dir.path());
    // A second audit of the same start URL: /oops is fixed, a new error appears, the rest remains.
    let second = db.create_audit("{}", UnixMs(T0 + 1_000_000)).expect("audit");
    let site = db.add_site(second, &u("/")).expect("site");
    let ids = (second, site);
    let mut start = page(ids, "/", Some(200), 0);
    start.title = Some(EVIL_TITLE.to_owned());
    start.meta_robots = vec!["noindex".to_owned()];
    let events = vec![
        ev(start),
        ev(page(ids, "/oops", Some(200), 1)),
        ev(page(ids, "/new-broken", Some(503), 1)),
        Event::Finding(Finding::new(second, site, Code::Noindex, u("/"), "meta robots")),
        Event::Finding(Finding::new(second, site, Code::ServerError, u("/new-broken"), "503")),
        Event::SiteDone { audit: second, site },
    ];
    db.apply_at(&events, UnixMs(T0 + 1_100_000)).expect("apply");

    let doc = html(&db, second);
    let changes = between(&doc, &format!(r#"id="changes-{site}""#), &format!(r#"id="charts-{site}""#));
    assert!(changes.contains(&format!("Compared with audit {first}")), "{changes}");
    let new_list = between(changes, "New findings", "Fixed findings");
    assert!(new_list.contains("<code>server_error</code>") && new_list.contains("/new-broken"), "{new_list}");
    assert!(!new_list.contains("<code>noindex</code>"), "{new_list}");
    let fixed_list = between(changes, "Fixed findings", "Remaining findings");
    for code in ["server_error", "fetch_failed", "h1_multiple", "title_duplicate", "broken_internal_link"] {
        assert!(fixed_list.contains(&format!("<code>{code}</code>")), "{code} fixed: {fixed_list}");
    }
    assert!(!fixed_list.contains("<code>noindex</code>"), "{fixed_list}");
    let remaining = changes.split("Remaining findings").nth(1).expect("remaining list");
    assert!(remaining.contains("<code>noindex</code>"), "{remaining}");
    assert!(remaining.contains("<details class=\"list\">"), "remaining is collapsed");
    // The counts at the top are the lengths of the lists.
    for (label, list) in [("new", new_list), ("fixed", fixed_list), ("remaining", remaining)] {
        let rows = list.matches("<tr data-sev=").count();
        assert!(changes.contains(&format!("<b>{rows}</b> {label}</li>")), "{rows} {label}: {changes}");
    }
    // The first audit still has no earlier one.
    assert!(html(&db, first).contains("No earlier audit of this start URL"));
}

/// Counts bytes and occurrences of a marker, across write boundaries, keeping nothing else.
struct CountingSink {
    bytes: u64,
    needle: &'static [u8],
    hits: u64,
    tail: Vec<u8>,
}

impl CountingSink {
    fn new(needle: &'static [u8]) -> CountingSink {
        CountingSink { bytes: 0, needle, hits: 0, tail: Vec::new() }
    }
}

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes += buf.len() as u64;
        let mut window = std::mem::take(&mut self.tail);
        window.extend_from_slice(buf);
        self.hits += window.windows(self.needle.len()).filter(|w| *w == self.needle).count() as u64;
        let keep = window.len().min(self.needle.len() - 1);
        self.tail = window[window.len() - keep..].to_vec();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Pages in the large-audit test. 100,000 pages are measured by `examples/report_bench.rs`; the test
/// uses fewer so a debug build stays well under 20 s.
const LARGE_PAGES: usize = 20_000;

#[test]
fn large_audit_report_is_streamed_to_a_counting_sink() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = AuditDb::open(&dir.path().join("large.db")).expect("open");
    let audit = db.create_audit("{}", UnixMs(T0)).expect("audit");
    let site = db.add_site(audit, &u("/")).expect("site");
    let ids = (audit, site);
    let mut batch = Vec::with_capacity(1000);
    for i in 0..LARGE_PAGES {
        let mut p = page(ids, &format!("/p/{i:06}"), Some(if i % 97 == 0 { 404 } else { 200 }), (i % 9) as u16);
        p.links =
            (1..=3).map(|k| link(&u(&format!("/p/{:06}", (i + k) % LARGE_PAGES)), LinkKind::Anchor, true)).collect();
        batch.push(ev(p));
        if i % 10 == 0 {
            batch.push(Event::Finding(Finding::new(audit, site, Code::H1Missing, u(&format!("/p/{i:06}")), "")));
        }
        if batch.len() >= 1000 {
            db.apply(&batch).expect("apply");
            batch.clear();
        }
    }
    batch.push(Event::SiteDone { audit, site });
    db.apply(&batch).expect("apply");

    let mut sink = CountingSink::new(b"<article class=\"url-detail\"");
    report::write_html(&db, audit, &mut sink).expect("report written");
    assert_eq!(sink.hits, LARGE_PAGES as u64, "one details section per page");
    assert!(sink.bytes > (LARGE_PAGES as u64) * 500, "{} bytes", sink.bytes);

    let mut sink = CountingSink::new(b"\"url\":");
    report::write_json(&db, audit, &mut sink).expect("json written");
    assert!(sink.hits >= LARGE_PAGES as u64 * 4, "pages and their links: {}", sink.hits);
}

/// How long one Chromium run may take.
const CHROMIUM_DEADLINE: Duration = Duration::from_secs(90);

#[test]
fn report_html_renders_in_chromium() {
    let bin = chromium();
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, audit, _) = one_audit(dir.path());
    let report_path = dir.path().join("report.html");
    let mut f = std::fs::File::create(&report_path).expect("report file");
    report::write_html(&db, audit, &mut f).expect("report written");
    drop(f);
    let url = format!("file://{}", report_path.display());

    let (ok, dom, log) = run_chromium(
        &bin,
        &dir.path().join("profile-dom"),
        &["--virtual-time-budget=2000", "--dump-dom", &url],
        CHROMIUM_DEADLINE,
    );
    assert!(ok, "chromium --dump-dom failed:\n{log}");
    assert!(!log.contains("Content Security Policy"), "a CSP violation was reported:\n{log}");
    assert!(dom.contains(r#"data-js="ready""#), "the report's script ran under its CSP hash");
    assert!(dom.contains(r#"data-css="ready""#), "the report's stylesheet applied under its CSP hash");
    assert_eq!(dom.matches("<svg").count(), CHARTS.len(), "charts rendered");
    for chart in CHARTS {
        assert!(dom.contains(&format!(r#"data-chart="{chart}""#)), "chart {chart} in the DOM");
    }
    // The hostile title is a text node: serialised back escaped, and no element was created.
    assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the title is text in the DOM");
    assert_eq!(dom.to_ascii_lowercase().matches("<script").count(), 1, "no injected script element");
    assert!(!dom.to_ascii_lowercase().contains("<img"), "no injected image element");
    assert!(!log.to_ascii_lowercase().contains("alert("), "no dialog was opened:\n{log}");
    // Sortable headers were wired up by the script.
    assert!(dom.contains(r#"aria-sort="none""#));

    let shot = dir.path().join("report.png");
    let (ok, _, log) = run_chromium(
        &bin,
        &dir.path().join("profile-shot"),
        &[&format!("--screenshot={}", shot.display()), "--window-size=1280,2000", "--hide-scrollbars", &url],
        CHROMIUM_DEADLINE,
    );
    assert!(ok, "chromium --screenshot failed:\n{log}");
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "a real screenshot ({} bytes)", png.len());
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-artifacts");
    std::fs::create_dir_all(&artifacts).expect("artifact dir");
    std::fs::write(artifacts.join("report.png"), &png).expect("artifact kept");
}
