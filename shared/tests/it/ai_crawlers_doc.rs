//! docs/ai-crawlers.md lists exactly the AI crawlers Shoal judges, in their (stored) bit order.

use shoal_shared::ai_crawlers::AI_CRAWLERS;

#[test]
fn the_ai_crawler_table_is_the_documented_one() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/ai-crawlers.md");
    let doc = std::fs::read_to_string(path).expect("docs/ai-crawlers.md exists");
    let documented: Vec<(String, String, String)> = doc
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let token = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((token.to_owned(), (*cells.get(2)?).to_owned(), (*cells.get(3)?).to_owned()))
        })
        .collect();
    let table: Vec<(String, String, String)> = AI_CRAWLERS
        .iter()
        .map(|c| (c.token.to_owned(), c.operator.to_owned(), c.purpose.as_str().to_owned()))
        .collect();
    assert_eq!(documented, table, "docs/ai-crawlers.md and AI_CRAWLERS, row by row");
}
