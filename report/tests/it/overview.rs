//! The batch overview, one report per site and the exports for other tools, from a real database
//! of two audits of five sites (`batch_fixture.rs`): grouping, scores and trends, shared causes,
//! the per-site directory and its links, escaping of crawled text, the JSON documents, SARIF,
//! JUnit, the CI gate, branding, and the pages opened in headless Chromium.

use serde_json::Value;
use shoal_report::fixtures::batch::*;
use shoal_report::fixtures::html::between;
use shoal_report::gate::{Gate, evaluate};
use shoal_report::{self as report, Branding, HtmlOptions, Links, Logo};
use shoal_shared::finding::Severity;
use shoal_store::AuditDb;
use std::path::Path;
use std::time::Duration;

use shoal_test_support::chromium;

fn overview(db: &AuditDb, audit: shoal_shared::ids::AuditId, links: Links, branding: &Branding) -> String {
    let mut out = Vec::new();
    report::write_overview_html(db, audit, HtmlOptions { branding, links }, &mut out).expect("overview");
    String::from_utf8(out).expect("utf-8")
}

fn json_of(write: impl FnOnce(&mut Vec<u8>)) -> Value {
    let mut out = Vec::new();
    write(&mut out);
    serde_json::from_slice(&out).expect("JSON")
}

/// No element or attribute came from crawled text: the only script is the page's own, no image
/// but the logo, no event handler; every href is http(s), a fragment or one of our own pages.
fn assert_nothing_injected(doc: &str) {
    let lower = doc.to_ascii_lowercase();
    assert_eq!(lower.matches("<script").count(), 1, "only the page's own script");
    assert!(!lower.contains("<img src=x"), "no injected image");
    for part in doc.split("href=\"").skip(1) {
        let ok = ["https://", "http://", "#", "sites/", "issues/", "../", "index.", "/ui/audits/"]
            .iter()
            .any(|p| part.starts_with(p));
        assert!(ok, "unexpected href {}", &part[..40.min(part.len())]);
    }
    assert!(!doc.contains('\u{1}') || !doc.contains("<svg\u{1}"), "control characters stay text");
}

#[test]
fn the_overview_ranks_sites_groups_issues_and_finds_shared_causes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = batch(dir.path());
    let doc = overview(&b.db, b.second, Links::Directory { nested: false }, &Branding::default());
    assert!(doc.starts_with("<!DOCTYPE html>") && doc.ends_with("</html>\n"));
    for id in ["summary", "filters", "top-issues", "causes", "rankings", "sites"] {
        assert_eq!(doc.matches(&format!(r#"id="{id}""#)).count(), 1, "section {id}");
    }
    assert_eq!(doc.matches("<svg").count(), 1, "the score chart only");
    assert!(
        doc.contains("5 (4 scored, 1 not: nothing of them answered)"),
        "{}",
        between(&doc, "<dt>Sites</dt>", "</dd>")
    );
    // Issues across sites, by sites affected: hsts_missing on three, then the two on two sites.
    let across = between(&doc, r#"id="across""#, "</table>");
    let order: Vec<&str> = across.split("<code>").skip(1).map(|s| s.split('<').next().unwrap_or("")).collect();
    assert_eq!(order.len(), 7, "{order:?}");
    assert_eq!(&order[..3], ["hsts_missing", "broken_external_link", "wp_xmlrpc_exposed"], "{order:?}");
    assert!(across.contains(r#"<a href="issues/title_missing.html">"#), "an issue opens its page");
    // Shared causes: the CDN script behind two sites, the server software behind three.
    let causes = between(&doc, r#"id="causes""#, "</section>");
    assert!(causes.contains(&format!("<code>{CDN}</code>: <span class=\"count\">2 sites</span>")), "{causes}");
    assert!(causes.contains("<code>Apache/2.4.29 (Ubuntu)</code>"), "{causes}");
    assert!(causes.contains(r#"data-kind="cms""#), "WordPress: {causes}");
    // Every site in the table, worst first: the one that answered nothing has no score.
    let table = between(&doc, r#"id="sites-table""#, "</table>");
    assert_eq!(table.matches("<tr data-s=").count(), 5);
    let first = between(table, "<tr data-s=", "\n");
    assert!(first.contains("https://down.test/") && first.contains(r#"class="band-none">–"#), "{first}");
    let alpha = between(table, "alpha.test/</a>", "\n");
    assert!(alpha.contains("<td>-10<td>"), "alpha's score fell by 10 points: {alpha}");
    assert!(table.contains(r#"<a href="sites/"#));
    assert_nothing_injected(&doc);
    assert!(
        doc.contains("nginx&#34;&#62;&#60;script&#62;alert(8)&#60;/script&#62;"),
        "the hostile server header is text"
    );
}

#[test]
fn a_site_report_lists_every_url_of_every_group_with_its_trend() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = batch(dir.path());
    let branding = Branding::default();
    let mut out = Vec::new();
    let opts = HtmlOptions { branding: &branding, links: Links::Directory { nested: true } };
    report::write_site_html(&b.db, b.sites[1], opts, &mut out).expect("beta");
    let doc = String::from_utf8(out).expect("utf-8");
    let group = between(&doc, r#"<details class="issue sev-error""#, "</details>\n");
    assert!(group.contains("<code>title_missing</code>") && group.contains("150 URLs"), "{group}");
    assert_eq!(group.matches(r#"<tr><td class="url">"#).count(), 150, "every URL, paged in the browser");
    assert!(group.contains(r#"class="urls paged""#));
    assert!(doc.contains("&#60;img src=x onerror=alert(9)&#62;"), "the hostile detail is text");
    assert!(doc.contains(r#"<a href="../index.html">"#), "back to the overview");
    assert_nothing_injected(&doc);

    let mut out = Vec::new();
    report::write_site_html(&b.db, b.sites[0], opts, &mut out).expect("alpha");
    let doc = String::from_utf8(out).expect("utf-8");
    assert!(doc.contains("Health score 58 of 100"), "{}", between(&doc, "<p class=\"headline\">", "</p>"));
    assert!(doc.contains(&format!("since audit {} (then 68)", b.first)), "the trend names the earlier audit");
    let fixed = between(&doc, "New findings", "Fixed findings");
    assert!(fixed.contains("<code>server_error</code>"), "the new error is listed as new");
}

#[test]
fn a_small_audit_in_one_file_has_each_sites_issues_below_the_overview() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = batch(dir.path());
    let mut out = Vec::new();
    report::write_html(&b.db, b.second, &mut out).expect("html");
    let doc = String::from_utf8(out).expect("utf-8");
    assert!(doc.contains(r#"<section id="summary""#));
    for s in &b.sites {
        assert_eq!(doc.matches(&format!(r#"id="site-{s}""#)).count(), 1, "site {s} inline");
        assert!(doc.contains(&format!(r##"href="#site-{s}""##)), "the overview links to it");
    }
    // One file: no links to other files, and a large group is cut with a pointer.
    assert!(!doc.contains(r#"href="sites/"#) && !doc.contains(r#"href="issues/"#));
    assert!(doc.contains("100 of 150 findings shown"), "a group over 100 URLs is cut in one file");
    assert_nothing_injected(&doc);
}

#[test]
fn per_site_writes_a_linked_directory_of_self_contained_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = batch(dir.path());
    let out = dir.path().join("reports");
    let logo = Logo::from_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0").expect("logo");
    let branding = Branding::new(Some("Acme <Hosting>"), Some(logo)).expect("branding");
    let files = report::write_per_site(&b.db, b.second, &branding, &out).expect("written");
    assert_eq!((files.sites, files.issues), (5, 7));
    let index = std::fs::read_to_string(out.join("index.html")).expect("index");
    // Every link between the files leads to a file that exists.
    let mut checked = 0;
    for file in std::fs::read_dir(out.join("sites"))
        .expect("sites")
        .chain(std::fs::read_dir(out.join("issues")).expect("issues"))
    {
        let path = file.expect("entry").path();
        if path.extension().is_some_and(|e| e == "html") {
            let page = std::fs::read_to_string(&path).expect("page");
            assert!(page.contains("Acme &#60;Hosting&#62;"), "branded and escaped: {}", path.display());
            assert!(page.contains(r#"<img class="logo" src="data:image/png;base64,"#), "the logo is embedded");
            assert!(page.contains("img-src data:;"), "the policy allows the logo and nothing else");
            checked += links_resolve(&page, path.parent().expect("dir"));
        }
    }
    checked += links_resolve(&index, &out);
    assert!(checked > 20, "{checked} links checked");
    // The JSON twins.
    let overview: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("index.json")).expect("json")).expect("parses");
    assert_eq!(overview["schema"], "shoal.overview/v1");
    assert_eq!(overview["sites"].as_array().map(Vec::len), Some(5));
    let alpha = &overview["sites"][0];
    let html = alpha["report"]["html"].as_str().expect("a file");
    assert!(out.join(html).exists(), "{html}");
    let site: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join(alpha["report"]["json"].as_str().expect("json"))).expect("site json"),
    )
    .expect("parses");
    assert_eq!(site["schema"], "shoal.report/v1");
    assert_eq!(site["sites"].as_array().map(Vec::len), Some(1));
    assert_eq!(site["sites"][0]["health"]["score"], 58);
}

/// Checks that every relative href of `page` (in `dir`) names an existing file; returns how many.
fn links_resolve(page: &str, dir: &Path) -> usize {
    let mut n = 0;
    for part in page.split("href=\"").skip(1) {
        let href = part.split('"').next().unwrap_or("");
        if href.starts_with("http") || href.starts_with('#') {
            continue;
        }
        assert!(dir.join(href).exists(), "{href} from {}", dir.display());
        n += 1;
    }
    n
}

#[test]
fn json_documents_carry_scores_issues_and_the_formula() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = batch(dir.path());
    let full = json_of(|out| report::write_json(&b.db, b.second, out).expect("json"));
    let alpha = &full["sites"][0];
    assert_eq!(alpha["health"]["score"], 58);
    assert_eq!(alpha["health"]["formula"], "shoal-health/1");
    assert_eq!(alpha["health"]["previous"]["audit"], b.first.0);
    assert_eq!(alpha["health"]["previous"]["score"], 68);
    assert_eq!(alpha["health"]["trend"], -10);
    let codes: Vec<&str> =
        alpha["issues"].as_array().expect("issues").iter().filter_map(|i| i["code"].as_str()).collect();
    assert_eq!(codes, ["broken_internal_link", "server_error", "hsts_missing"], "by impact");
    let first = &alpha["issues"][0];
    assert_eq!(
        (first["urls"].as_u64(), first["scope"].as_str(), first["severity"].as_str()),
        (Some(2), Some("page"), Some("error"))
    );
    assert!(first["fix"].as_str().expect("fix").starts_with("Fix or remove the link"));
    assert!(first["why"].as_str().expect("why").contains("dead ends"));
    assert_eq!(full["sites"][4]["health"]["score"], Value::Null, "not scored");

    let over = json_of(|out| {
        report::write_overview_json(&b.db, b.second, Links::SingleFile { inline: false }, out).expect("overview")
    });
    assert_eq!(over["summary"]["scored"], 4);
    assert_eq!(over["summary"]["score_bands"][10], 1, "one site without a score");
    assert_eq!(
        (over["issues"][0]["code"].as_str(), over["issues"][0]["sites"].as_u64()),
        (Some("hsts_missing"), Some(3))
    );
    assert_eq!(over["sites"][0]["report"], Value::Null, "no files next to a single document");
    let kinds: Vec<&str> =
        over["causes"].as_array().expect("causes").iter().filter_map(|c| c["kind"].as_str()).collect();
    assert!(kinds.contains(&"shared_url") && kinds.contains(&"server") && kinds.contains(&"cms"), "{kinds:?}");

    // The same data, the same score: again, and from the first audit's own documents.
    let again = json_of(|out| report::write_json(&b.db, b.second, out).expect("json"));
    assert_eq!(again["sites"][0]["health"], alpha["health"]);
    let old = json_of(|out| report::write_json(&b.db, b.first, out).expect("json"));
    assert_eq!(old["sites"][0]["health"]["score"], 68);
}

#[test]
fn sarif_locates_every_finding_and_marks_the_new_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = batch(dir.path());
    let log = json_of(|out| report::write_sarif(&b.db, b.second, out).expect("sarif"));
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
    assert_eq!(rules.len(), 7);
    let results = run["results"].as_array().expect("results");
    let findings: u64 = b.sites.iter().map(|s| b.db.site(*s).expect("site").expect("exists").findings).sum();
    assert_eq!(results.len() as u64, findings);
    for r in results {
        let idx = r["ruleIndex"].as_u64().expect("index") as usize;
        assert_eq!(rules[idx]["id"], r["ruleId"]);
        assert!(
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .is_some_and(|u| u.starts_with("https://"))
        );
    }
    let new: Vec<&Value> = results.iter().filter(|r| r["baselineState"] == "new").collect();
    assert_eq!(new.len(), 1, "only alpha's server error is new");
    assert_eq!(new[0]["ruleId"], "server_error");
    assert_eq!(new[0]["level"], "error");
}

#[test]
fn junit_fails_the_cases_the_gate_counts_and_escapes_crawled_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = batch(dir.path());
    let mut out = Vec::new();
    report::write_junit(&b.db, b.second, Gate { level: Severity::Error, new_only: false }, &mut out).expect("junit");
    let xml = String::from_utf8(out).expect("utf-8");
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut elements = 0;
    loop {
        match reader.read_event().expect("well-formed XML") {
            quick_xml::events::Event::Eof => break,
            quick_xml::events::Event::Start(_) | quick_xml::events::Event::Empty(_) => elements += 1,
            _ => {}
        }
    }
    assert!(elements > 20);
    // Errors fail: alpha's broken links and server error, beta's titles, down's start page.
    assert_eq!(xml.matches("<failure ").count(), 4, "{xml}");
    assert!(xml.contains(r#"tests="11" failures="4""#), "{}", &xml[..300]);
    assert!(
        xml.contains("&lt;img src=x onerror=alert(9)&gt;") && !xml.contains('\u{1}'),
        "escaped, control character dropped"
    );
    let mut out = Vec::new();
    report::write_junit(&b.db, b.second, Gate { level: Severity::Error, new_only: true }, &mut out).expect("junit");
    let xml = String::from_utf8(out).expect("utf-8");
    assert_eq!(xml.matches("<failure ").count(), 1, "only the new error fails with --new-only");
}

#[test]
fn the_gate_counts_by_severity_and_newness() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = batch(dir.path());
    let gate = |level, new_only| evaluate(&b.db, b.second, None, Gate { level, new_only }).expect("gate");
    let errors = gate(Severity::Error, false);
    assert_eq!((errors.findings, errors.sites), (2 + 1 + 150 + 1, 3));
    assert_eq!(errors.by_code[0], ("title_missing".to_owned(), 150));
    assert_eq!(gate(Severity::Warning, false).findings, errors.findings + 3 + 2 + 2);
    let new = gate(Severity::Error, true);
    assert_eq!((new.findings, new.sites, new.by_code.clone()), (1, 1, vec![("server_error".to_owned(), 1)]));
    let first = evaluate(&b.db, b.first, None, Gate { level: Severity::Error, new_only: true }).expect("gate");
    assert_eq!(first.findings, 2 + 150 + 1, "no earlier audit: every finding is new");
    let one =
        evaluate(&b.db, b.second, Some(b.sites[2]), Gate { level: Severity::Error, new_only: false }).expect("gate");
    assert!(!one.failed(), "gamma has no error");
}

#[test]
fn overview_site_and_issue_pages_render_in_chromium() {
    let bin = chromium::chromium();
    let dir = tempfile::tempdir().expect("tempdir");
    let b = batch(dir.path());
    let out = dir.path().join("reports");
    report::write_per_site(&b.db, b.second, &Branding::default(), &out).expect("written");
    let beta = std::fs::read_dir(out.join("sites"))
        .expect("sites")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with("beta.test.html"))
        .expect("beta's report");
    let pages = [
        ("overview", out.join("index.html")),
        ("site", beta),
        ("issue", out.join("issues").join("title_missing.html")),
    ];
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-artifacts");
    std::fs::create_dir_all(&artifacts).expect("artifact dir");
    for (name, path) in pages {
        let url = format!("file://{}", path.display());
        let (ok, dom, log) = chromium::run_chromium(
            &bin,
            &dir.path().join(format!("dom-{name}")),
            &["--virtual-time-budget=2000", "--dump-dom", &url],
            Duration::from_secs(90),
        );
        assert!(ok, "chromium --dump-dom {name} failed:\n{log}");
        assert!(!log.contains("Content Security Policy"), "a CSP violation on {name}:\n{log}");
        assert!(
            dom.contains(r#"data-js="ready""#) && dom.contains(r#"data-css="ready""#),
            "{name}: script and style ran"
        );
        assert!(dom.contains("data-layout-ms="), "{name}");
        assert_eq!(dom.to_ascii_lowercase().matches("<script").count(), 1, "{name}: no injected script");
        if name == "site" {
            // 150 URLs, 100 a page: the script hid the second page and added a pager.
            let group = between(&dom, "<code>title_missing</code>", "</details>");
            assert_eq!(group.matches("<tr hidden=\"\">").count(), 50, "the second page is hidden");
            assert!(group.contains("Page 1 of 2"), "a pager");
        }
        let shot = dir.path().join(format!("{name}.png"));
        let (ok, _, log) = chromium::run_chromium(
            &bin,
            &dir.path().join(format!("shot-{name}")),
            &[&format!("--screenshot={}", shot.display()), "--window-size=1280,1800", "--hide-scrollbars", &url],
            Duration::from_secs(90),
        );
        assert!(ok, "chromium --screenshot {name} failed:\n{log}");
        let png = std::fs::read(&shot).expect("screenshot written");
        assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{name}: a real screenshot ({} bytes)", png.len());
        std::fs::write(artifacts.join(format!("report-{name}.png")), &png).expect("artifact kept");
    }
}

#[test]
fn a_large_batch_hands_its_sites_to_the_script_as_data() {
    use shoal_shared::finding::{Code, Finding};
    use shoal_shared::record::{Discovery, Event, PageRecord, UrlKind};
    use shoal_shared::time::UnixMs;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = AuditDb::open(&dir.path().join("large.db")).expect("open");
    let audit = db.create_audit("{}", UnixMs(T0)).expect("audit");
    let urls: Vec<String> = (0..600).map(|i| format!("https://s{i:03}.test/")).collect();
    let mut hostile = urls.clone();
    hostile[599] = "https://s599.test/</script><script>alert(1)</script>".to_owned();
    let sites = db.add_sites(audit, &hostile).expect("sites");
    let mut events = Vec::new();
    for (i, site) in sites.iter().enumerate() {
        events.push(Event::Page(Box::new(PageRecord {
            audit,
            site: *site,
            url: urls[i].clone(),
            kind: UrlKind::Page,
            status: Some(200),
            found_via: Discovery::Start,
            ..PageRecord::default()
        })));
        if i % 3 == 0 {
            events.push(Event::Finding(Finding::new(audit, *site, Code::HstsMissing, urls[i].clone(), "")));
        }
    }
    db.apply(&events).expect("apply");
    let path = dir.path().join("overview.html");
    let doc = overview(&db, audit, Links::Directory { nested: false }, &Branding::default());
    std::fs::write(&path, &doc).expect("written");
    let table = between(&doc, r#"id="sites-table""#, "</table>");
    assert_eq!(table.matches("<tr data-s=").count(), 500, "the first 500 as rows");
    assert!(table.contains(r#"data-source="sites-data""#));
    let block = between(&doc, r#"<script type="application/json" id="sites-data">"#, "</script>");
    assert!(!block.contains('<'), "crawled text cannot end the data block");
    let data: Value = serde_json::from_str(block).expect("JSON");
    assert_eq!(data.as_array().map(Vec::len), Some(600), "every site for the script");

    let bin = chromium::chromium();
    let url = format!("file://{}", path.display());
    let (ok, dom, log) = chromium::run_chromium(
        &bin,
        &dir.path().join("profile"),
        &["--virtual-time-budget=2000", "--dump-dom", &url],
        Duration::from_secs(90),
    );
    assert!(ok, "chromium failed:\n{log}");
    assert!(!log.contains("Content Security Policy"), "{log}");
    let table = between(&dom, r#"id="sites-table""#, "</table>");
    assert_eq!(table.matches("<tr data-s=").count(), 500, "the script renders one page of 500");
    assert!(dom.contains("Page 1 of 2 (600 sites)"), "and pages through all of them");
    assert_eq!(dom.to_ascii_lowercase().matches("<script>alert").count(), 0, "no injected script element");
}
