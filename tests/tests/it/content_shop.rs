//! Issue 37 end to end: a shop served on loopback ([`shoal_tests::testsite::shop`]) with JSON-LD
//! errors, near-duplicate, duplicate and thin pages, pagination to a 404, an oversized image and
//! pages with missing or bad viewport / Open Graph / Twitter tags, audited as a user would; then
//! the audit database and the JSON report are read, as the issue says the work will be checked.

use crate::common::audit;
use crate::db::query;
use serde_json::Value;
use shoal::Exit;
use shoal_tests::testsite::shop::{HERO_BYTES, SHOP_PAGES, shop};
use shoal_tests::testsite::{ReservedPort, TestServer};
use std::collections::BTreeMap;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shop_audit_finds_structured_data_errors_duplicates_and_thin_pages() {
    let reserved = ReservedPort::new().expect("a free port");
    let port = reserved.port();
    let base = format!("http://shop.test:{port}");
    let server = TestServer::start_reserved(reserved, vec![shop("shop.test", &base)]).await.expect("server starts");
    let u = |path: &str| format!("{base}{path}");
    let run = audit(&server, &["shop.test"], &[u("/")], &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    for (path, _) in SHOP_PAGES {
        assert!(log.paths("shop.test").iter().any(|p| p == path), "{path} was crawled\n{}", log.dump());
    }

    // The database: each page's word count and structured-data types.
    let pages: BTreeMap<String, (Option<i64>, String)> = query(
        &run.db,
        "SELECT url, word_count, structured_types_json FROM pages WHERE kind = 'page' AND status = 200",
        [],
        |r| Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?))),
    )
    .into_iter()
    .collect();
    let (red_words, red_types) = &pages[&u("/product/red")];
    assert!(red_words.is_some_and(|w| w >= 200), "{pages:#?}");
    for t in ["Product", "Offer", "Brand", "BreadcrumbList", "ListItem"] {
        assert!(red_types.contains(&format!("\"{t}\"")), "{t} in {red_types}");
    }
    assert!(pages[&u("/about")].0.is_some_and(|w| w < 20), "{pages:#?}");
    assert_eq!(pages[&u("/")].1, "[\"Organization\"]");

    // The findings, by code: where each was raised.
    let findings: Vec<(String, String, String, String)> =
        query(&run.db, "SELECT code, url, detail, related_json FROM findings ORDER BY code, url", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        });
    let at = |code: &str| -> Vec<String> {
        findings.iter().filter(|f| f.0 == code).map(|f| f.1.strip_prefix(&base).unwrap_or(&f.1).to_owned()).collect()
    };
    let detail = |code: &str, path: &str| -> Vec<&str> {
        findings.iter().filter(|f| f.0 == code && f.1 == u(path)).map(|f| f.2.as_str()).collect()
    };
    let dump = || findings.iter().map(|f| format!("  {} @ {} ({})\n", f.0, f.1, f.2)).collect::<String>();

    let invalid = detail("structured_data_invalid", "/product/broken");
    assert!(
        invalid.len() == 1 && invalid[0].contains("trailing comma") && invalid[0].contains("column"),
        "the parser's message: {invalid:?}\n{}",
        dump()
    );
    assert_eq!(at("structured_data_invalid"), ["/product/broken"], "{}", dump());
    assert_eq!(detail("structured_data_unknown_type", "/product/incomplete"), ["Prodcut"], "{}", dump());
    assert_eq!(detail("structured_data_missing_required", "/product/incomplete"), ["Product: missing name"]);
    assert!(detail("structured_data_missing_recommended", "/product/incomplete").contains(&"Product: missing brand"));
    assert_eq!(
        detail("structured_data_wrong_value", "/product/incomplete"),
        ["Offer: price \"19,99 €\" is not a number"],
        "{}",
        dump()
    );
    for code in ["structured_data_missing_required", "structured_data_wrong_value", "structured_data_unknown_type"] {
        assert_eq!(at(code), ["/product/incomplete"], "{code} only where it is wrong:\n{}", dump());
    }

    assert_eq!(at("content_thin"), ["/about"], "{}", dump());
    assert_eq!(at("content_duplicate"), ["/print/red", "/product/red"], "{}", dump());
    let near: Vec<&(String, String, String, String)> =
        findings.iter().filter(|f| f.0 == "content_near_duplicate").collect();
    let near_urls: Vec<String> = at("content_near_duplicate");
    assert_eq!(near_urls, ["/print/red", "/product/blue", "/product/green", "/product/red"], "{}", dump());
    assert!(near.iter().all(|f| f.2 == near[0].2), "one cluster, named alike on every member: {near:#?}");
    assert!(near[0].2.starts_with("4 pages at least 90 % alike; cluster "), "{}", near[0].2);
    let blue = near.iter().find(|f| f.1 == u("/product/blue")).expect("blue is in the cluster");
    let related: Vec<String> = serde_json::from_str(&blue.3).expect("related is JSON");
    assert_eq!(related, [u("/print/red"), u("/product/green"), u("/product/red")]);

    assert_eq!(detail("pagination_broken", "/shoes"), [format!("next: {} answers 404", u("/shoes?page=2"))]);
    let big = detail("image_too_large", "/img/hero.jpg");
    assert_eq!(big, [format!("{} KiB (budget 100 KiB)", HERO_BYTES / 1024)], "{}", dump());
    assert_eq!(at("image_too_large"), ["/img/hero.jpg"], "the small images are within the budget");

    assert_eq!(at("viewport_missing"), ["/no-meta"]);
    assert_eq!(at("open_graph_missing"), ["/no-meta"]);
    assert_eq!(at("twitter_card_missing"), ["/no-meta"]);
    assert_eq!(at("viewport_invalid"), ["/bad-meta"]);
    assert_eq!(at("open_graph_incomplete"), ["/bad-meta"]);
    assert_eq!(at("twitter_card_incomplete"), ["/bad-meta"]);
    assert_eq!(
        detail("img_missing_dimensions", "/bad-meta"),
        ["2 images without width and height: /img/og.png, /img/og.png?2"]
    );

    // The JSON report: per page its word count and types; per site the types and clusters.
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("report.json");
    let (db_arg, out_arg) = (run.db.display().to_string(), out.display().to_string());
    let args = ["shoal", "report", "--db", &db_arg, "--format", "json", "--out", &out_arg];
    let cli = <shoal::cli::Cli as clap::Parser>::try_parse_from(args).expect("parses");
    shoal::run(cli, tokio_util::sync::CancellationToken::new())
        .await
        .unwrap_or_else(|f| panic!("report: {:#}", f.error));
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).expect("report written")).expect("JSON");
    let site = &doc["sites"][0];
    let page = |path: &str| {
        site["pages"].as_array().and_then(|p| p.iter().find(|p| p["url"] == u(path))).cloned().unwrap_or_default()
    };
    assert!(page("/product/red")["word_count"].as_u64().is_some_and(|w| w >= 200), "{:#}", page("/product/red"));
    assert_eq!(page("/")["structured_data_types"], serde_json::json!(["Organization"]));
    assert_eq!(page("/shoes")["rel_next"], u("/shoes?page=2"));
    let content = &site["content"];
    let types: BTreeMap<&str, u64> = content["structured_data_types"]
        .as_array()
        .expect("types")
        .iter()
        .filter_map(|t| Some((t["type"].as_str()?, t["pages"].as_u64()?)))
        .collect();
    assert_eq!(types.get("Product"), Some(&4), "the three shoes and the incomplete one: {content:#}");
    assert_eq!(types.get("Organization"), Some(&1), "{content:#}");
    assert_eq!(content["thin_pages"], 1);
    let clusters = content["duplicate_clusters"].as_array().expect("clusters");
    let kinds: Vec<(&str, usize)> =
        clusters.iter().filter_map(|c| Some((c["kind"].as_str()?, c["pages"].as_array()?.len()))).collect();
    assert_eq!(kinds, [("exact", 2), ("near", 4)], "{content:#}");
}
