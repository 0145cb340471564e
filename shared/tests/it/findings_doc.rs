//! docs/findings.md lists exactly the finding codes Shoal can emit, with their severities.

use shoal_shared::finding::Code;

#[test]
fn findings_reference_lists_every_code_and_nothing_else() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/findings.md");
    let doc = std::fs::read_to_string(path).expect("docs/findings.md exists");
    let documented: Vec<(&str, &str)> = doc
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let code = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((code, *cells.get(2)?))
        })
        .collect();
    for c in Code::ALL {
        let row = documented.iter().find(|(code, _)| *code == c.as_str());
        let Some((_, sev)) = row else { panic!("{} is not documented in docs/findings.md", c.as_str()) };
        assert_eq!(*sev, c.severity().as_str(), "severity of {} in docs/findings.md", c.as_str());
    }
    for (code, _) in &documented {
        assert!(Code::parse(code).is_some(), "docs/findings.md documents unknown code {code}");
    }
    assert_eq!(documented.len(), Code::ALL.len());
}

/// The README says how many checks Shoal has ("findings from N checks"): N is the number of
/// finding codes, so adding a code without updating the README fails here.
#[test]
fn the_readme_counts_every_check() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
    let readme = std::fs::read_to_string(path).expect("README.md exists");
    let (_, after) = readme.split_once("findings from ").expect("the README says how many checks there are");
    let count: usize = after
        .split_once(" checks")
        .and_then(|(n, _)| n.trim().parse().ok())
        .expect("'findings from N checks' in the README");
    assert_eq!(
        count,
        Code::ALL.len(),
        "README.md: 'findings from {count} checks', but Code::ALL has {}",
        Code::ALL.len()
    );
}
