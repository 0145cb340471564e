//! Comparing two audits (`shoal report --compare OLD NEW`): exactly which findings are new, fixed and
//! remaining per site, which sites were added or removed, as JSON, HTML and through the library.

use serde_json::Value;
use shoal_coordinator::db::{AuditDb, AuditStatus};
use shoal_coordinator::report::{self, Change};
use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Event, LinkKind, LinkRecord, PageRecord};
use shoal_shared::time::UnixMs;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

const SHOP: &str = "https://shop.test/";
const T0: u64 = 1_714_564_800_000;

type Key = (String, String, String);

fn key(code: &str, url: &str, detail: &str) -> Key {
    (code.to_owned(), url.to_owned(), detail.to_owned())
}

fn page(ids: (AuditId, SiteId), url: &str, status: u16, links: &[&str]) -> Event {
    let start = url.ends_with(".test/");
    Event::Page(Box::new(PageRecord {
        audit: ids.0,
        site: ids.1,
        url: url.to_owned(),
        kind: "page".to_owned(),
        status: Some(status),
        depth: u16::from(!start),
        found_via: if start { "start" } else { "link" }.to_owned(),
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

fn finding(ids: (AuditId, SiteId), code: Code, url: &str, detail: &str) -> Event {
    Event::Finding(Finding::new(ids.0, ids.1, code, url, detail))
}

fn shop(path: &str) -> String {
    format!("https://shop.test{path}")
}

/// The shop site: `/missing` is linked from the start page and answers `missing_status`, so the
/// site-level analysis reports a broken link in the old audit and not in the new one.
fn shop_pages(ids: (AuditId, SiteId), missing_status: u16) -> Vec<Event> {
    let (m, a, b) = (shop("/missing"), shop("/a"), shop("/b"));
    vec![
        page(ids, SHOP, 200, &[&m, &a, &b]),
        page(ids, &m, missing_status, &[]),
        page(ids, &a, 200, &[]),
        page(ids, &b, 200, &[]),
    ]
}

struct Fixture {
    db: AuditDb,
    old: AuditId,
    new: AuditId,
    old_shop: SiteId,
    new_shop: SiteId,
}

fn two_audits(dir: &Path) -> Fixture {
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

fn expected_new() -> BTreeSet<Key> {
    [key("server_error", &shop("/c"), "503"), key("description_missing", &shop("/d"), "")].into()
}

fn expected_fixed() -> BTreeSet<Key> {
    [
        key("broken_internal_link", &shop("/missing"), "404"),
        key("h1_missing", &shop("/b"), ""),
        key("server_error", &shop("/c"), "500"),
    ]
    .into()
}

fn expected_remaining() -> BTreeSet<Key> {
    [key("title_missing", &shop("/a"), ""), key("redirect_temporary", &shop("/r"), "302")].into()
}

fn keys(list: &Value) -> BTreeSet<Key> {
    list.as_array()
        .expect("array")
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_else(|| panic!("{k} is a string")).to_owned();
            (s("code"), s("url"), s("detail"))
        })
        .collect()
}

#[test]
fn compare_json_gives_exactly_the_new_fixed_and_remaining_findings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fx = two_audits(dir.path());
    let mut out = Vec::new();
    report::write_compare_json(&fx.db, fx.old, fx.new, &mut out).expect("written");
    assert_eq!(out.last(), Some(&b'\n'));
    let doc: Value = serde_json::from_slice(&out).expect("JSON");

    assert_eq!(doc["schema"], report::COMPARE_SCHEMA);
    assert_eq!(doc["old"]["id"], fx.old.0);
    assert_eq!(doc["new"]["id"], fx.new.0);
    assert_eq!(doc["new"]["created_at"], "2024-05-02T12:00:00.000Z");
    assert_eq!(doc["match"]["findings"], serde_json::json!(["code", "url", "detail"]));
    let added: Vec<&str> =
        doc["added_sites"].as_array().expect("added").iter().map(|s| s["start_url"].as_str().expect("url")).collect();
    assert_eq!(added, ["https://new.test/", SHOP], "the unmatched duplicate counts as added");
    let removed: Vec<&str> = doc["removed_sites"]
        .as_array()
        .expect("removed")
        .iter()
        .map(|s| s["start_url"].as_str().expect("url"))
        .collect();
    assert_eq!(removed, ["https://gone.test/"]);

    let sites = doc["sites"].as_array().expect("sites");
    assert_eq!(sites.len(), 1, "one start URL in both audits");
    let s = &sites[0];
    assert_eq!(s["start_url"], SHOP);
    assert_eq!(s["old_site"]["id"], fx.old_shop.0);
    assert_eq!(s["new_site"]["id"], fx.new_shop.0);
    assert_eq!(keys(&s["new"]), expected_new());
    assert_eq!(keys(&s["fixed"]), expected_fixed());
    assert_eq!(keys(&s["remaining"]), expected_remaining());
    assert_eq!(s["summary"], serde_json::json!({"new": 2, "fixed": 3, "remaining": 2}));
    assert_eq!(
        doc["summary"],
        serde_json::json!({"sites": 1, "added_sites": 2, "removed_sites": 1, "new": 2, "fixed": 3, "remaining": 2})
    );
    // Findings carry the report's finding fields; a fixed one is shown as the old audit had it.
    let broken =
        s["fixed"].as_array().expect("fixed").iter().find(|f| f["code"] == "broken_internal_link").expect("broken");
    assert_eq!(broken["severity"], "error");
    assert_eq!(broken["family"], "links");
    assert_eq!(broken["related"], serde_json::json!([SHOP]));
    assert!(broken["message"].as_str().is_some_and(|m| !m.is_empty()));
}

#[test]
fn for_each_change_streams_the_same_sets_in_key_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fx = two_audits(dir.path());
    let mut seen: Vec<(Change, Key)> = Vec::new();
    report::for_each_change(&fx.db, fx.old_shop, fx.new_shop, |change, f| -> Result<(), report::ReportError> {
        seen.push((change, (f.code, f.url, f.detail)));
        Ok(())
    })
    .expect("compared");
    let keys_in_order: Vec<&Key> = seen.iter().map(|(_, k)| k).collect();
    let mut sorted = keys_in_order.clone();
    sorted.sort();
    assert_eq!(keys_in_order, sorted, "merged in (code, url, detail) order");
    let of = |c: Change| seen.iter().filter(|(x, _)| *x == c).map(|(_, k)| k.clone()).collect::<BTreeSet<_>>();
    assert_eq!(of(Change::New), expected_new());
    assert_eq!(of(Change::Fixed), expected_fixed());
    assert_eq!(of(Change::Remaining), expected_remaining());

    // A site compared with itself: everything remains.
    let mut counts = report::ChangeCounts::default();
    report::for_each_change(&fx.db, fx.new_shop, fx.new_shop, |c, _| -> Result<(), report::ReportError> {
        assert_eq!(c, Change::Remaining);
        counts.remaining += 1;
        Ok(())
    })
    .expect("compared");
    assert_eq!(counts.remaining, 4);
}

#[test]
fn compare_html_lists_the_changes_per_site() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fx = two_audits(dir.path());
    let mut out = Vec::new();
    report::write_compare_html(&fx.db, fx.old, fx.new, &mut out).expect("written");
    let doc = String::from_utf8(out).expect("utf-8");
    assert!(doc.starts_with("<!DOCTYPE html>") && doc.ends_with("</html>\n"));
    assert!(doc.contains(r#"<meta http-equiv="Content-Security-Policy""#));
    assert!(doc.contains("<b>2</b> new") && doc.contains("<b>3</b> fixed") && doc.contains("<b>2</b> remaining"));
    assert!(doc.contains("https://gone.test/") && doc.contains("https://new.test/"));
    let id = |c: &str| format!(r#"id="chg-{}-{c}""#, fx.new_shop);
    let new_table = doc.split(&id("new")).nth(1).expect("new table").split("</table>").next().expect("end");
    assert_eq!(new_table.matches("<tr data-sev=").count(), 2);
    assert!(new_table.contains("description_missing") && new_table.contains("503"));
    let fixed_table = doc.split(&id("fixed")).nth(1).expect("fixed table").split("</table>").next().expect("end");
    assert_eq!(fixed_table.matches("<tr data-sev=").count(), 3);
}

fn shoal(args: &[&str], db: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(args)
        .arg("--db")
        .arg(db)
        .env_remove("SHOAL_DB")
        .env_remove("SHOAL_FORMAT")
        .env_remove("SHOAL_OUT")
        .output()
        .expect("shoal runs")
}

#[test]
fn shoal_report_compare_on_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fx = two_audits(dir.path());
    let db = fx.db.path().to_owned();
    let (old, new) = (fx.old.0.to_string(), fx.new.0.to_string());
    drop(fx);

    let out = shoal(&["report", "--compare", &old, &new], &db);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(doc["schema"], "shoal.compare/v1");
    assert_eq!(keys(&doc["sites"][0]["new"]), expected_new());

    let html = dir.path().join("changes.html");
    let out =
        shoal(&["report", "--compare", &old, &new, "--format", "html", "--out", html.to_str().expect("utf-8")], &db);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&html).expect("html written").contains("<b>3</b> fixed"));

    let out = shoal(&["report", "--compare", &old, &new, "--format", "csv"], &db);
    assert_eq!(out.status.code(), Some(3), "csv is refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("json or html"));
    let out = shoal(&["report", "--compare", &old, "99"], &db);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no audit 99"));
    let out = shoal(&["report", "--compare", &old], &db);
    assert_eq!(out.status.code(), Some(2), "two ids are required");
    let out = shoal(&["report", &new, "--compare", &old, &new], &db);
    assert_eq!(out.status.code(), Some(2), "an audit id and --compare do not go together");
}
