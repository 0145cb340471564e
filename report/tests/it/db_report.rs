//! JSON and CSV reports written from a real audit database.

use serde_json::Value;
use shoal_report::fixtures::json_fields::PAGE_FIELDS;
use shoal_report::{self as report, ReportError};
use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, LinkKind, LinkRecord, PageRecord, UrlKind};
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, AuditStatus};
use std::path::Path;

const BASE: &str = "https://example.test";

fn u(path: &str) -> String {
    format!("{BASE}{path}")
}

fn page(ids: (AuditId, SiteId), path: &str, status: Option<u16>) -> PageRecord {
    PageRecord {
        audit: ids.0,
        site: ids.1,
        url: u(path),
        kind: UrlKind::Page,
        status,
        depth: 1,
        found_via: Discovery::Link,
        found_from: Some(u("/")),
        content_type: Some("text/html".to_owned()),
        bytes: 2048,
        response_ms: 120,
        fetched_at: UnixMs(1_714_564_800_250),
        ..PageRecord::default()
    }
}

fn anchor(path: &str) -> LinkRecord {
    LinkRecord {
        url: u(path),
        kind: LinkKind::Anchor,
        nofollow: false,
        internal: true,
        text: Some(format!("to {path}")),
    }
}

fn redirect(ids: (AuditId, SiteId), from: &str, to: &str) -> Event {
    let mut p = page(ids, from, Some(301));
    p.redirect_to = Some(u(to));
    Event::Page(Box::new(p))
}

/// A small site: a start page with a hostile title, a 404, a chain a → b → c, a loop x → y → x.
fn small_site(dir: &Path) -> (AuditDb, AuditId, SiteId) {
    let mut db = AuditDb::open(&dir.join("audit.db")).expect("open");
    let audit =
        db.create_audit(r#"{"max_pages":500,"user_agent":"ShoalBot"}"#, UnixMs(1_714_564_800_000)).expect("audit");
    let site = db.add_site(audit, &u("/")).expect("site");
    let ids = (audit, site);
    let mut start = page(ids, "/", Some(200));
    start.found_via = Discovery::Start;
    start.found_from = None;
    start.depth = 0;
    start.title = Some("<script>alert(1)</script>".to_owned());
    start.meta_description = Some("=HYPERLINK(\"https://evil.test\")".to_owned());
    start.h1 = vec!["Welcome".to_owned(), "Again".to_owned()];
    start.meta_robots = vec!["noindex".to_owned()];
    // A complete set (itself, an x-default), part of it in the Link header: no hreflang finding.
    start.hreflang = vec![("de".to_owned(), u("/de/")), ("x-default".to_owned(), u("/"))];
    start.hreflang_header = vec![("en".to_owned(), u("/"))];
    start.headers = vec![("strict-transport-security".to_owned(), "max-age=63072000".to_owned())];
    start.links = vec![anchor("/missing"), anchor("/a"), anchor("/x"), anchor("/c")];
    let mut c = page(ids, "/c", Some(200));
    c.title = Some("Chain end".to_owned());
    let events = vec![
        Event::Page(Box::new(start)),
        Event::Page(Box::new(page(ids, "/missing", Some(404)))),
        redirect(ids, "/a", "/b"),
        redirect(ids, "/b", "/c"),
        Event::Page(Box::new(c)),
        redirect(ids, "/x", "/y"),
        redirect(ids, "/y", "/x"),
        Event::Finding(Finding::new(audit, site, Code::Noindex, u("/"), "meta robots")),
        Event::SiteDone { audit, site },
    ];
    db.apply_at(&events, UnixMs(1_714_564_900_000)).expect("apply");
    db.finish_audit(audit, AuditStatus::Done, UnixMs(1_714_565_000_000)).expect("finish");
    (db, audit, site)
}

fn json_report(db: &AuditDb, audit: AuditId) -> Value {
    let mut out = Vec::new();
    report::write_json(db, audit, &mut out).expect("report written");
    assert_eq!(out.last(), Some(&b'\n'));
    serde_json::from_slice(&out).expect("the report is JSON")
}

#[test]
fn json_report_has_the_documented_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, audit, site) = small_site(dir.path());
    let doc = json_report(&db, audit);

    assert_eq!(doc["schema"], "shoal.report/v1");
    assert!(doc["generator"].as_str().expect("generator").starts_with("shoal "));
    let a = &doc["audit"];
    assert_eq!(a["id"], audit.0);
    assert_eq!(a["created_at"], "2024-05-01T12:00:00.000Z");
    assert_eq!(a["created_at_ms"], 1_714_564_800_000_u64);
    assert_eq!(a["finished_at"], "2024-05-01T12:03:20.000Z");
    assert_eq!(a["status"], "done");
    assert_eq!(a["options"]["user_agent"], "ShoalBot");

    let sites = doc["sites"].as_array().expect("sites");
    assert_eq!(sites.len(), 1);
    let s = &sites[0];
    assert_eq!(s["id"], site.0);
    assert_eq!(s["start_url"], u("/"));
    assert_eq!(s["status"], "done");
    assert_eq!(s["done_at"], "2024-05-01T12:01:40.000Z");
    let summary = &s["summary"];
    assert_eq!(summary["pages"], 7);
    assert_eq!(summary["status_classes"]["2xx"], 2);
    assert_eq!(summary["status_classes"]["3xx"], 4);
    assert_eq!(summary["status_classes"]["4xx"], 1);
    assert_eq!(summary["status_classes"]["5xx"], 0);
    assert_eq!(summary["status_classes"]["failed"], 0);
    assert_eq!(summary["kinds"]["page"], 7);
    // broken_internal_link + redirect_loop; redirect_chain; noindex.
    assert_eq!(summary["errors"], 2);
    assert_eq!(summary["warnings"], 1);
    assert_eq!(summary["notices"], 1);

    let pages = s["pages"].as_array().expect("pages");
    let urls: Vec<&str> = pages.iter().map(|p| p["url"].as_str().expect("url")).collect();
    let mut sorted = urls.clone();
    sorted.sort_unstable();
    assert_eq!(urls, sorted, "pages are ordered by URL");
    let by_url = |path: &str| pages.iter().find(|p| p["url"] == u(path)).expect("page present");

    let start = by_url("/");
    assert_eq!(start["title"], "<script>alert(1)</script>", "a plain JSON string, unchanged");
    for field in PAGE_FIELDS {
        assert!(start.get(field).is_some(), "page field {field}");
    }
    assert_eq!(start["final_url"], u("/"));
    assert_eq!(start["h1"], serde_json::json!(["Welcome", "Again"]));
    assert_eq!(
        start["hreflang"],
        serde_json::json!([
            {"lang": "de", "url": u("/de/")},
            {"lang": "x-default", "url": u("/")},
            {"lang": "en", "url": u("/")}
        ]),
        "the page's <link>s, then its Link header's"
    );
    assert_eq!(start["headers"][0]["name"], "strict-transport-security");
    assert_eq!(start["fetched_at"], "2024-05-01T12:00:00.250Z");
    assert_eq!(start["found_from"], Value::Null);
    assert_eq!(start["links"].as_array().expect("links").len(), 4);
    assert_eq!(start["links"][1]["url"], u("/a"));
    assert_eq!(by_url("/a")["final_url"], u("/c"));
    assert_eq!(by_url("/a")["redirect_to"], u("/b"));
    assert_eq!(by_url("/x")["final_url"], Value::Null, "a loop has no final URL");
    assert_eq!(by_url("/missing")["status"], 404);

    let findings = s["findings"].as_array().expect("findings");
    let codes: Vec<&str> = findings.iter().map(|f| f["code"].as_str().expect("code")).collect();
    assert_eq!(codes, ["broken_internal_link", "redirect_loop", "redirect_chain", "noindex"]);
    let f = &findings[0];
    assert_eq!(f["severity"], "error");
    assert_eq!(f["family"], "links");
    assert_eq!(f["message"], Code::BrokenInternalLink.message());
    assert_eq!(f["url"], u("/missing"));
    assert_eq!(f["detail"], "404");
    assert_eq!(f["related"], serde_json::json!([u("/")]));
}

#[test]
fn json_report_of_an_unknown_audit_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _, _) = small_site(dir.path());
    let err = report::write_json(&db, AuditId(404), &mut Vec::new()).expect_err("no such audit");
    assert!(matches!(err, ReportError::UnknownAudit { audit: AuditId(404) }), "{err}");
}

#[test]
fn csv_files_have_headers_and_one_row_per_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, audit, _) = small_site(dir.path());
    let out = dir.path().join("csv");
    let files = report::write_csv(&db, audit, &out).expect("csv written");
    let names: Vec<String> =
        files.iter().map(|f| f.file_name().expect("name").to_string_lossy().into_owned()).collect();
    assert_eq!(
        names,
        ["pages.csv", "links.csv", "findings.csv", "issues.csv", "sites.csv", "extracted.csv", "ai_crawlers.csv"]
    );

    let read = |name: &str| {
        let mut r = csv::Reader::from_path(out.join(name)).expect("readable");
        let header: Vec<String> = r.headers().expect("header").iter().map(str::to_owned).collect();
        let rows: Vec<csv::StringRecord> = r.records().collect::<Result<_, _>>().expect("rows");
        (header, rows)
    };
    let (header, pages) = read("pages.csv");
    assert_eq!(&header[..3], ["site_id", "url", "final_url"]);
    assert_eq!(pages.len(), 7);
    let col = |name: &str| header.iter().position(|h| h == name).expect("column");
    let start = pages.iter().find(|r| &r[1] == u("/").as_str()).expect("start row");
    assert_eq!(&start[col("title")], "<script>alert(1)</script>");
    assert_eq!(&start[col("meta_description")], "'=HYPERLINK(\"https://evil.test\")", "a formula is defused");
    assert_eq!(&start[col("h1")], "Welcome | Again");
    let a = pages.iter().find(|r| &r[1] == u("/a").as_str()).expect("a row");
    assert_eq!(&a[col("final_url")], u("/c").as_str());

    let (header, links) = read("links.csv");
    assert_eq!(header, ["site_id", "from_url", "to_url", "kind", "nofollow", "internal", "text"]);
    assert_eq!(links.len(), 4);

    let (header, findings) = read("findings.csv");
    assert_eq!(header[1], "code");
    assert_eq!(findings.len(), 4);
    assert_eq!(&findings[2][1], "redirect_chain");
    assert_eq!(&findings[2][6], [u("/a"), u("/b"), u("/c")].join(" | ").as_str());

    // One row per site and code, the findings of each counted; one row per site with its score.
    let (header, issues) = read("issues.csv");
    assert_eq!(&header[..4], ["site_id", "start_url", "code", "severity"]);
    let codes: std::collections::BTreeSet<&str> = findings.iter().map(|r| &r[1]).collect();
    assert_eq!(issues.len(), codes.len());
    let counted: u64 = issues.iter().map(|r| r[7].parse::<u64>().expect("findings")).sum();
    assert_eq!(counted, findings.len() as u64);
    let fix = header.iter().position(|h| h == "fix").expect("fix column");
    assert!(issues.iter().all(|r| !r[fix].is_empty()), "every known code has its fix");
    let (header, sites) = read("sites.csv");
    assert_eq!(&header[..4], ["site_id", "start_url", "status", "score"]);
    assert_eq!(sites.len(), 1);
    let score: u8 = sites[0][3].parse().expect("a score");
    assert!(score <= 100);
    assert_eq!(&sites[0][1], u("/").as_str());
}

/// Counts bytes and `"url":"` keys instead of keeping the output, so the report's own memory use
/// is what the test exercises.
#[derive(Debug, Default)]
struct Counter {
    bytes: usize,
    urls: usize,
    /// The last bytes of the previous write, so a key split across two writes is still seen.
    tail: Vec<u8>,
}

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        const KEY: &[u8] = b"\"url\":\"";
        self.bytes += buf.len();
        let mut window = std::mem::take(&mut self.tail);
        window.extend_from_slice(buf);
        self.urls += window.windows(KEY.len()).filter(|w| *w == KEY).count();
        let keep = window.len().min(KEY.len() - 1);
        self.tail = window.split_off(window.len() - keep);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_twenty_thousand_page_report_streams() {
    const PAGES: usize = 20_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = AuditDb::open(&dir.path().join("big.db")).expect("open");
    let audit = db.create_audit("{}", UnixMs(0)).expect("audit");
    let site = db.add_site(audit, &u("/")).expect("site");
    let ids = (audit, site);
    let mut batch = Vec::with_capacity(1000);
    for i in 0..PAGES {
        let mut p = page(ids, &format!("/p/{i:05}"), Some(200));
        // 313 pages share a title: the duplicate rule must cap `related` at 100.
        p.title = Some(if i % 64 == 0 { "Shared".to_owned() } else { format!("Page {i}") });
        p.links = vec![anchor(&format!("/p/{:05}", (i + 1) % PAGES))];
        batch.push(Event::Page(Box::new(p)));
        if batch.len() == 1000 {
            db.apply(&batch).expect("batch");
            batch.clear();
        }
    }
    batch.push(Event::SiteDone { audit, site });
    db.apply(&batch).expect("last batch");
    let counts = &db.site_counts(audit).expect("counts")[0];
    assert_eq!(counts.pages, u64::try_from(PAGES).expect("fits"));
    assert_eq!(counts.findings, 313, "one title_duplicate per page sharing the title");

    let mut sink = Counter::default();
    report::write_json(&db, audit, &mut sink).expect("report");
    // Every page's own "url", its one link's "url", and each finding's "url".
    assert_eq!(sink.urls, PAGES * 2 + 313);
    assert!(sink.bytes > PAGES * 500, "{} bytes", sink.bytes);

    let mut capped = 0;
    db.for_each_finding(site, |f| -> Result<(), shoal_store::DbError> {
        assert!(f.related.len() <= 100);
        capped += usize::from(f.related.len() == 100);
        Ok(())
    })
    .expect("findings");
    assert_eq!(capped, 313);
}

/// A site's report names only its own start URL among the audit's options: the other start URLs
/// are other sites' (on a hosting provider's batch, other customers'), and a per-site report is
/// what one of them is given. The whole audit's report keeps them all.
#[test]
fn a_site_report_lists_only_its_own_start_url() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = AuditDb::open(&dir.path().join("audit.db")).expect("db");
    let starts = ["https://cust-a.test/", "https://cust-b.test/"];
    let options = serde_json::json!({ "starts": starts, "user_agent": "ShoalBot" }).to_string();
    let audit = db.create_audit(&options, UnixMs(1_700_000_000_000)).expect("audit");
    let sites = db.add_sites(audit, &starts).expect("sites");
    let json = |write: &dyn Fn(&mut Vec<u8>)| -> Value {
        let mut out = Vec::new();
        write(&mut out);
        serde_json::from_slice(&out).expect("JSON")
    };
    let a = json(&|out| report::write_site_json(&db, sites[0], out).expect("site report"));
    assert_eq!(a["audit"]["options"]["starts"], serde_json::json!(["https://cust-a.test/"]), "{a}");
    assert_eq!(a["audit"]["options"]["user_agent"], "ShoalBot", "the other options stay");
    assert!(!a.to_string().contains("cust-b.test"), "{a}");
    let whole = json(&|out| report::write_json(&db, audit, out).expect("report"));
    assert_eq!(whole["audit"]["options"]["starts"], serde_json::json!(starts));
}
