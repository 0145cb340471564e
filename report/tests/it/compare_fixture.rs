//! Two audits of the same sites, a day apart, with known new, fixed and remaining findings.
//! Shared by the report crate's tests and the `shoal report --compare` test of the binary.

#![allow(dead_code)]

use serde_json::Value;
use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, LinkKind, LinkRecord, PageRecord, UrlKind};
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, AuditStatus};
use std::collections::BTreeSet;
use std::path::Path;

pub(crate) const SHOP: &str = "https://shop.test/";
pub(crate) const T0: u64 = 1_714_564_800_000;

pub(crate) type Key = (String, String, String);

pub(crate) fn key(code: &str, url: &str, detail: &str) -> Key {
    (code.to_owned(), url.to_owned(), detail.to_owned())
}

pub(crate) fn page(ids: (AuditId, SiteId), url: &str, status: u16, links: &[&str]) -> Event {
    let start = url.ends_with(".test/");
    Event::Page(Box::new(PageRecord {
        audit: ids.0,
        site: ids.1,
        url: url.to_owned(),
        kind: UrlKind::Page,
        status: Some(status),
        depth: u16::from(!start),
        found_via: if start { Discovery::Start } else { Discovery::Link },
        found_from: (!start).then(|| SHOP.to_owned()),
        content_type: Some("text/html".to_owned()),
        bytes: 1000,
        response_ms: 50,
        fetched_at: UnixMs(T0),
        title: Some(format!("Title of {url}")),
        meta_description: Some(format!("Description of {url}")),
        h1: vec![format!("Heading of {url}")],
        links: links
            .iter()
            .map(|l| LinkRecord {
                url: (*l).to_owned(),
                kind: LinkKind::Anchor,
                nofollow: false,
                internal: true,
                text: None,
            })
            .collect(),
        ..PageRecord::default()
    }))
}

pub(crate) fn finding(ids: (AuditId, SiteId), code: Code, url: &str, detail: &str) -> Event {
    Event::Finding(Finding::new(ids.0, ids.1, code, url, detail))
}

pub(crate) fn shop(path: &str) -> String {
    format!("https://shop.test{path}")
}

/// The shop site: `/missing` is linked from the start page and answers `missing_status`, so the
/// site-level analysis reports a broken link in the old audit and not in the new one.
pub(crate) fn shop_pages(ids: (AuditId, SiteId), missing_status: u16) -> Vec<Event> {
    let (m, a, b) = (shop("/missing"), shop("/a"), shop("/b"));
    vec![
        page(ids, SHOP, 200, &[&m, &a, &b]),
        page(ids, &m, missing_status, &[]),
        page(ids, &a, 200, &[]),
        page(ids, &b, 200, &[]),
    ]
}

pub(crate) struct Fixture {
    pub(crate) db: AuditDb,
    pub(crate) old: AuditId,
    pub(crate) new: AuditId,
    pub(crate) old_shop: SiteId,
    pub(crate) new_shop: SiteId,
}

pub(crate) fn two_audits(dir: &Path) -> Fixture {
    let mut db = AuditDb::open(&dir.join("audit.db")).expect("open");

    let old = db.create_audit("{}", UnixMs(T0)).expect("audit");
    let old_shop = db.add_site(old, SHOP).expect("site");
    let gone = db.add_site(old, "https://gone.test/").expect("site");
    let ids = (old, old_shop);
    let mut events = shop_pages(ids, 404);
    events.extend([
        finding(ids, Code::TitleMissing, &shop("/a"), ""),
        finding(ids, Code::H1Missing, &shop("/b"), ""),
        finding(ids, Code::ServerError, &shop("/c"), "500"),
        finding(ids, Code::RedirectTemporary, &shop("/r"), "302"),
        finding(ids, Code::SlowResponse, &shop("/s"), "1234 ms"),
        finding(ids, Code::InvalidLink, &shop("/i"), "http://[a"),
        Event::SiteDone { audit: old, site: old_shop },
        page((old, gone), "https://gone.test/", 200, &[]),
        finding((old, gone), Code::Noindex, "https://gone.test/", "meta robots"),
        Event::SiteDone { audit: old, site: gone },
    ]);
    db.apply_at(&events, UnixMs(T0 + 1000)).expect("apply");
    db.finish_audit(old, AuditStatus::Done, UnixMs(T0 + 2000)).expect("finish");

    let new = db.create_audit("{}", UnixMs(T0 + 86_400_000)).expect("audit");
    let new_shop = db.add_site(new, SHOP).expect("site");
    let fresh = db.add_site(new, "https://new.test/").expect("site");
    // The same start URL twice: the second one has no partner in the old audit.
    let shop_again = db.add_site(new, SHOP).expect("site");
    let ids = (new, new_shop);
    let mut events = shop_pages(ids, 200);
    events.extend([
        finding(ids, Code::TitleMissing, &shop("/a"), ""),
        finding(ids, Code::ServerError, &shop("/c"), "503"),
        finding(ids, Code::DescriptionMissing, &shop("/d"), ""),
        finding(ids, Code::RedirectTemporary, &shop("/r"), "302"),
        finding(ids, Code::SlowResponse, &shop("/s"), "987 ms"),
        finding(ids, Code::InvalidLink, &shop("/i"), "http://[b"),
        Event::SiteDone { audit: new, site: new_shop },
        page((new, fresh), "https://new.test/", 200, &[]),
        finding((new, fresh), Code::H1Missing, "https://new.test/", ""),
        Event::SiteDone { audit: new, site: fresh },
        page((new, shop_again), SHOP, 200, &[]),
        Event::SiteDone { audit: new, site: shop_again },
    ]);
    db.apply_at(&events, UnixMs(T0 + 86_401_000)).expect("apply");
    db.finish_audit(new, AuditStatus::Done, UnixMs(T0 + 86_402_000)).expect("finish");
    Fixture { db, old, new, old_shop, new_shop }
}

/// New: a finding on a new URL, and an invalid link whose href (its identity) changed.
pub(crate) fn expected_new() -> BTreeSet<Key> {
    [key("description_missing", &shop("/d"), ""), key("invalid_link", &shop("/i"), "http://[b")].into()
}

pub(crate) fn expected_fixed() -> BTreeSet<Key> {
    [
        key("broken_internal_link", &shop("/missing"), "404"),
        key("h1_missing", &shop("/b"), ""),
        key("invalid_link", &shop("/i"), "http://[a"),
    ]
    .into()
}

/// Remaining, shown as the new audit has them: a server error whose status moved (500 to 503) and
/// a slow page whose time moved are the same problems.
pub(crate) fn expected_remaining() -> BTreeSet<Key> {
    [
        key("title_missing", &shop("/a"), ""),
        key("redirect_temporary", &shop("/r"), "302"),
        key("server_error", &shop("/c"), "503"),
        key("slow_response", &shop("/s"), "987 ms"),
    ]
    .into()
}

pub(crate) fn keys(list: &Value) -> BTreeSet<Key> {
    list.as_array()
        .expect("array")
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_else(|| panic!("{k} is a string")).to_owned();
            (s("code"), s("url"), s("detail"))
        })
        .collect()
}
