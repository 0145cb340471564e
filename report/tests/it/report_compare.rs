//! Comparing two audits (`shoal report --compare OLD NEW`): exactly which findings are new, fixed and
//! remaining per site, which sites were added or removed, as JSON, HTML and through the library.

use serde_json::Value;
use shoal_report::fixtures::compare::*;
use shoal_report::{self as report, Change};
use std::collections::BTreeSet;

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
    assert_eq!(doc["match"]["findings"], serde_json::json!(["code", "url", "key"]));
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
    assert_eq!(s["summary"], serde_json::json!({"new": 2, "fixed": 3, "remaining": 4}));
    assert_eq!(
        doc["summary"],
        serde_json::json!({"sites": 1, "added_sites": 2, "removed_sites": 1, "new": 2, "fixed": 3, "remaining": 4})
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
    assert_eq!(counts.remaining, 6);
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
    assert!(doc.contains("<b>2</b> new") && doc.contains("<b>3</b> fixed") && doc.contains("<b>4</b> remaining"));
    assert!(doc.contains("https://gone.test/") && doc.contains("https://new.test/"));
    let id = |c: &str| format!(r#"id="chg-{}-{c}""#, fx.new_shop);
    let new_table = doc.split(&id("new")).nth(1).expect("new table").split("</table>").next().expect("end");
    assert_eq!(new_table.matches("<tr data-sev=").count(), 2);
    assert!(new_table.contains("description_missing") && new_table.contains("http://[b"));
    let fixed_table = doc.split(&id("fixed")).nth(1).expect("fixed table").split("</table>").next().expect("end");
    assert_eq!(fixed_table.matches("<tr data-sev=").count(), 3);
}
