//! A scheduled run's report opens with what changed since the schedule's previous run: the JSON
//! `changes` object and the HTML section at the top; a first run says it has none to compare with.

use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::{AuditId, ScheduleId};
use shoal_shared::record::Event;
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, AuditStatus, NewSchedule};

fn run(db: &mut AuditDb, schedule: ScheduleId, at: u64, paths: &[&str]) -> AuditId {
    let audit = db.start_scheduled_audit(schedule, "{}", UnixMs(at), UnixMs(at + 10)).expect("start").expect("exists");
    let site = db.add_site(audit, "https://a.example/").expect("site");
    let events: Vec<Event> = paths
        .iter()
        .map(|p| Event::Finding(Finding::new(audit, site, Code::TitleMissing, format!("https://a.example{p}"), "")))
        .collect();
    db.apply(&events).expect("findings");
    db.finish_audit(audit, AuditStatus::Done, UnixMs(at + 5)).expect("finish");
    audit
}

fn json(db: &AuditDb, audit: AuditId) -> serde_json::Value {
    let mut out = Vec::new();
    shoal_report::write_json(db, audit, &mut out).expect("report");
    serde_json::from_slice(&out).expect("JSON")
}

#[test]
fn second_run_lists_new_and_fixed_findings_first_run_says_it_has_no_previous() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = AuditDb::open(&dir.path().join("a.db")).expect("open");
    let new = NewSchedule {
        name: "weekly <b>".into(),
        urls: vec!["https://a.example/".into()],
        options_json: "{}".into(),
        spec: "every 7d".into(),
        time_zone: "UTC".into(),
    };
    let id = db.add_schedule(&new, UnixMs(0), UnixMs(0)).expect("add");
    let first = run(&mut db, id, 1000, &["/old", "/both"]);
    let second = run(&mut db, id, 2000, &["/both", "/new"]);

    let mut raw = Vec::new();
    shoal_report::write_json(&db, first, &mut raw).expect("report");
    let raw = String::from_utf8(raw).expect("utf-8");
    let at = |k: &str| raw.find(&format!("\"{k}\":")).unwrap_or_else(|| panic!("{k} in {raw}"));
    assert!(at("audit") < at("changes") && at("changes") < at("sites"), "changes open the report: {raw}");
    let r = json(&db, first);
    assert_eq!(r["changes"]["schedule"], serde_json::json!({"id": id.0, "name": "weekly <b>"}));
    assert_eq!(r["changes"]["previous_audit"], serde_json::Value::Null);
    assert!(r["changes"]["note"].as_str().expect("note").contains("first run"), "{}", r["changes"]);

    let c = &json(&db, second)["changes"];
    assert_eq!(c["previous_audit"]["id"], first.0);
    assert_eq!(c["summary"]["new"], 1, "{c}");
    assert_eq!(c["summary"]["fixed"], 1, "{c}");
    assert_eq!(c["summary"]["remaining"], 1, "{c}");
    let site = &c["sites"][0];
    assert_eq!(site["new"][0]["url"], "https://a.example/new");
    assert_eq!(site["fixed"][0]["url"], "https://a.example/old");

    let submitted = db.create_audit("{}", UnixMs(3000)).expect("submit");
    assert_eq!(json(&db, submitted)["changes"], serde_json::Value::Null);

    let mut html = Vec::new();
    shoal_report::write_html(&db, second, &mut html).expect("html");
    let html = String::from_utf8(html).expect("utf-8");
    let top = html.find("schedule-changes").expect("the schedule section");
    assert!(top < html.find("id=\"site-").expect("the site"), "it opens the report");
    assert!(html.contains("weekly &#60;b&#62;") || html.contains("weekly &lt;b&gt;"), "the name is escaped");
    assert!(html.contains("Changes since the schedule&#39;s previous run") || html.contains("schedule's previous run"));
    let mut first_html = Vec::new();
    shoal_report::write_html(&db, first, &mut first_html).expect("html");
    assert!(String::from_utf8_lossy(&first_html).contains("first run"));
}
