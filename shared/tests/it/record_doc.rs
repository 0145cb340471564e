//! docs/report-json.md lists exactly the spellings a page's `kind`, `found_via` and `error` can
//! have (the same strings as in the audit database).

use shoal_shared::record::{Discovery, FetchFailure, UrlKind};
use std::collections::BTreeSet;

/// The backquoted words of the meaning cell of the page field `field`'s row.
fn documented(doc: &str, field: &str) -> BTreeSet<String> {
    let head = format!("| `{field}` |");
    let row = doc.lines().find(|l| l.starts_with(&head)).unwrap_or_else(|| panic!("a row for `{field}`"));
    let meaning = row.split('|').nth(3).unwrap_or_else(|| panic!("a meaning cell for `{field}`"));
    meaning.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

fn names(all: impl IntoIterator<Item = &'static str>) -> BTreeSet<String> {
    all.into_iter().map(str::to_owned).collect()
}

#[test]
fn report_reference_lists_every_page_kind_discovery_and_failure() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/report-json.md");
    let doc = std::fs::read_to_string(path).expect("docs/report-json.md exists");
    assert_eq!(documented(&doc, "kind"), names(UrlKind::ALL.iter().map(UrlKind::as_str)), "kind");
    assert_eq!(documented(&doc, "found_via"), names(Discovery::ALL.iter().map(Discovery::as_str)), "found_via");
    assert_eq!(documented(&doc, "error"), names(FetchFailure::ALL.iter().map(FetchFailure::as_str)), "error");
}
