//! One audit with a hostile site (markup in every crawled text), for the HTML report's tests.
//! Shared by the report crate's tests and the `shoal report --format html` test of the binary.

#![allow(dead_code)]

use shoal_report as report;
use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, FetchFailure, LinkKind, LinkRecord, PageRecord, UrlKind};
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, AuditStatus};
use std::path::Path;

pub(crate) const BASE: &str = "https://example.test";
pub(crate) const T0: u64 = 1_714_564_800_000;

/// Charts per site: status codes, depth, findings by family, by severity, response times.
pub(crate) const CHARTS: [&str; 5] = ["status", "depth", "families", "severity", "response"];

pub(crate) const EVIL_TITLE: &str = "<script>alert(1)</script>";
pub(crate) const EVIL_DESCRIPTION: &str = "\"><img src=x onerror=alert(2)>";
pub(crate) const QUOTED_URL: &str = "https://example.test/q\"onmouseover=\"alert(3)";
pub(crate) const JS_CANONICAL: &str = "javascript:alert(4)";
pub(crate) const JS_REDIRECT: &str = "javascript:alert(5)";
pub(crate) const JS_RELATED: &str = "JavaScript:alert(6)";

pub(crate) fn u(path: &str) -> String {
    format!("{BASE}{path}")
}

pub(crate) fn page(ids: (AuditId, SiteId), path: &str, status: Option<u16>, depth: u16) -> PageRecord {
    PageRecord {
        audit: ids.0,
        site: ids.1,
        url: if path.starts_with("http") { path.to_owned() } else { u(path) },
        kind: UrlKind::Page,
        status,
        depth,
        found_via: if depth == 0 { Discovery::Start } else { Discovery::Link },
        found_from: (depth > 0).then(|| u("/")),
        content_type: Some("text/html; charset=utf-8".to_owned()),
        bytes: 2048 + u64::from(depth) * 100,
        response_ms: 40 + u64::from(depth) * 180,
        fetched_at: UnixMs(T0 + 250),
        h1: vec!["Heading".to_owned()],
        title: Some(format!("Page {path}")),
        meta_description: Some(format!("About {path}.")),
        ..PageRecord::default()
    }
}

pub(crate) fn link(url: &str, kind: LinkKind, internal: bool) -> LinkRecord {
    LinkRecord { url: url.to_owned(), kind, nofollow: false, internal, text: Some(format!("to {url}")) }
}

pub(crate) fn ev(p: PageRecord) -> Event {
    Event::Page(Box::new(p))
}

/// A site with every kind of row the report shows, and hostile content in every text field.
pub(crate) fn hostile_site(db: &mut AuditDb, audit: AuditId, now: UnixMs) -> SiteId {
    let site = db.add_site(audit, &u("/")).expect("site");
    let ids = (audit, site);
    let mut start = page(ids, "/", Some(200), 0);
    start.title = Some(EVIL_TITLE.to_owned());
    start.meta_description = Some(EVIL_DESCRIPTION.to_owned());
    start.h1 = vec!["<b>bold</b>".to_owned(), "second".to_owned()];
    start.canonical = Some(JS_CANONICAL.to_owned());
    start.meta_robots = vec!["noindex".to_owned()];
    start.links = vec![
        link(&u("/missing"), LinkKind::Anchor, true),
        link(&u("/a"), LinkKind::Anchor, true),
        link(QUOTED_URL, LinkKind::Anchor, true),
        link(&u("/logo.png"), LinkKind::Image, true),
        link("https://other.test/", LinkKind::Anchor, false),
        link(&u("/deep"), LinkKind::Anchor, true),
    ];
    let mut quoted = page(ids, QUOTED_URL, Some(200), 1);
    quoted.title = Some("Quoted".to_owned());
    let mut js = page(ids, "/js-redirect", Some(302), 1);
    js.redirect_to = Some(JS_REDIRECT.to_owned());
    let mut a = page(ids, "/a", Some(301), 1);
    a.redirect_to = Some(u("/b"));
    let b = page(ids, "/b", Some(200), 2);
    let mut img = page(ids, "/logo.png", Some(200), 1);
    img.kind = UrlKind::Resource;
    img.content_type = Some("image/png".to_owned());
    img.title = None;
    img.h1 = Vec::new();
    let mut slow = page(ids, "/deep", Some(200), 7);
    slow.response_ms = 12_000;
    let mut failed = page(ids, "/timeout", None, 2);
    failed.error = Some(FetchFailure::Timeout);
    failed.title = None;
    let mut robots = page(ids, "/robots.txt", Some(200), 0);
    robots.kind = UrlKind::Robots;
    robots.found_via = Discovery::Standard;
    robots.found_from = None;
    let mut related = Finding::new(audit, site, Code::TitleDuplicate, u("/b"), "<iframe src=x>");
    related.related = vec![JS_RELATED.to_owned(), u("/deep")];
    let events = vec![
        ev(start),
        ev(quoted),
        ev(js),
        ev(a),
        ev(b),
        ev(img),
        ev(slow),
        ev(failed),
        ev(robots),
        ev(page(ids, "/missing", Some(404), 1)),
        ev(page(ids, "/oops", Some(500), 1)),
        Event::Finding(Finding::new(audit, site, Code::Noindex, u("/"), "meta robots")),
        Event::Finding(Finding::new(audit, site, Code::FetchFailed, u("/timeout"), "timeout")),
        Event::Finding(Finding::new(audit, site, Code::ServerError, u("/oops"), "500")),
        Event::Finding(Finding::new(audit, site, Code::H1Multiple, u("/"), "2 h1")),
        Event::Finding(related),
        Event::SiteDone { audit, site },
    ];
    db.apply_at(&events, now).expect("apply");
    site
}

pub(crate) fn one_audit(dir: &Path) -> (AuditDb, AuditId, SiteId) {
    let mut db = AuditDb::open(&dir.join("audit.db")).expect("open");
    let audit = db.create_audit(r#"{"max_pages":500,"user_agent":"ShoalBot"}"#, UnixMs(T0)).expect("audit");
    let site = hostile_site(&mut db, audit, UnixMs(T0 + 100_000));
    db.finish_audit(audit, AuditStatus::Done, UnixMs(T0 + 200_000)).expect("finish");
    (db, audit, site)
}

pub(crate) fn html(db: &AuditDb, audit: AuditId) -> String {
    let mut out = Vec::new();
    report::write_html(db, audit, &mut out).expect("report written");
    String::from_utf8(out).expect("the report is UTF-8")
}

/// The text between the first `open` after `from` and the next `close`.
pub(crate) fn between<'a>(s: &'a str, open: &str, close: &str) -> &'a str {
    let start = s.find(open).unwrap_or_else(|| panic!("{open} not found")) + open.len();
    let len = s[start..].find(close).unwrap_or_else(|| panic!("{close} not found after {open}"));
    &s[start..start + len]
}
