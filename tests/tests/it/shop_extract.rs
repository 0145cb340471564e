//! Issue 37 end to end on a shop served on loopback ([`shoal_tests::testsite::shop_extract`]): which AI
//! crawlers its robots.txt lets in, the audit's own extraction and search rules, and two audits of
//! the changed shop compared URL by URL. What is checked is what a user reads: the audit database,
//! the JSON, CSV and HTML reports, and the comparison.

use crate::common;
use crate::db;
use clap::Parser;
use serde_json::Value;
use shoal::Exit;
use shoal::cli::Cli;
use shoal_tests::testsite::TestServer;
use shoal_tests::testsite::shop_extract::{SHOP_EXTRACT, SHOP_PAGES, SHOP_SEARCH, shop};
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// Its own host: `shop.test` is the content shop's ([`shoal_tests::testsite::shop`]).
const HOST: &str = "shop-extract.test";

/// `--gap-ms 0` and the shop's rules as flags.
fn rule_args() -> Vec<String> {
    let mut args = vec!["--gap-ms".to_owned(), "0".to_owned()];
    for r in SHOP_EXTRACT {
        args.extend(["--extract".to_owned(), r.to_owned()]);
    }
    for r in SHOP_SEARCH {
        args.extend(["--search".to_owned(), r.to_owned()]);
    }
    args
}

/// Runs a `shoal` command line in this process (reports, a second audit).
async fn shoal(args: &[&str]) -> Exit {
    let cli = Cli::try_parse_from(args).expect("arguments parse");
    shoal::run(cli, CancellationToken::new()).await.unwrap_or_else(|f| panic!("shoal failed: {:#}", f.error))
}

/// A report of the database's latest audit, read back as text.
async fn report(db: &Path, format: &str) -> String {
    let out = db.with_extension(format);
    let (db_arg, out_arg) = (db.display().to_string(), out.display().to_string());
    assert_eq!(shoal(&["shoal", "report", "--db", &db_arg, "--format", format, "--out", &out_arg]).await, Exit::Ok);
    std::fs::read_to_string(&out).expect("report written")
}

fn url(path: &str, port: u16) -> String {
    format!("http://{HOST}:{port}{path}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shop_audit_judges_ai_crawlers_and_extracts_its_prices() {
    let server = TestServer::start(vec![shop(HOST)]).await.expect("server starts");
    let port = server.port();
    let args = rule_args();
    let extra: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = common::audit(&server, &[HOST], &[server.url(HOST, "/")], &extra).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    assert!(!log.paths(HOST).iter().any(|p| p == "/cart"), "robots.txt keeps Shoal out of the cart:\n{}", log.dump());

    // The database: the values per page, the AI crawlers robots.txt blocks from each page.
    let pages = db::query(
        &run.db,
        "SELECT url, extracted_json, ai_blocked FROM pages WHERE kind = 'page' ORDER BY url",
        [],
        |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, Option<i64>>(2)?)),
    );
    let mut crawled: Vec<String> = pages.iter().map(|(u, _, _)| u.clone()).collect();
    crawled.sort();
    let mut expected: Vec<String> = SHOP_PAGES.iter().map(|p| url(p, port)).collect();
    expected.sort();
    assert_eq!(crawled, expected, "every page but the cart");
    let row = |path: &str| pages.iter().find(|(u, _, _)| *u == url(path, port)).expect("a crawled page").clone();
    let kettle: Value = serde_json::from_str(&row("/products/kettle").1.expect("values found")).expect("JSON pairs");
    assert_eq!(kettle, serde_json::json!([["price", "€ 19.99"], ["price_meta", "19.99"], ["sku", "1001"]]));
    assert_eq!(row("/about").1, None, "no rule finds anything on /about");
    let bit = |token: &str| {
        let i = shoal_shared::ai_crawlers::AI_CRAWLERS.iter().position(|c| c.token == token).expect("a token");
        1i64 << i
    };
    let (gpt, claude, search) = (bit("GPTBot"), bit("ClaudeBot"), bit("OAI-SearchBot"));
    for (u, _, blocked) in &pages {
        let blocked = blocked.unwrap_or_else(|| panic!("{u} has its AI verdicts"));
        assert!(blocked & gpt != 0 && blocked & bit("CCBot") != 0 && blocked & bit("Google-Extended") != 0, "{u}");
        assert_eq!(blocked & claude != 0, u.contains("/products/"), "ClaudeBot is blocked from products only: {u}");
        assert_eq!(blocked & search, 0, "OAI-SearchBot obeys *: {u}");
    }

    // The findings of the three families.
    let findings = db::findings(&run.db);
    let with = |code: &str| -> Vec<(String, String)> {
        findings.iter().filter(|f| f.0 == code).map(|f| (f.1.clone(), f.2.clone())).collect()
    };
    assert_eq!(
        with("ai_crawlers_inconsistent"),
        [(
            url("/robots.txt", port),
            "blocked: GPTBot, CCBot, Google-Extended; partly blocked: ClaudeBot; allowed: OAI-SearchBot, \
             ChatGPT-User, Claude-SearchBot, Claude-User, Applebot-Extended, PerplexityBot, Perplexity-User, \
             Bytespider, Meta-ExternalAgent, Meta-ExternalFetcher, Amazonbot, DuckAssistBot, MistralAI-User"
                .to_owned()
        )]
    );
    let llms = with("llms_txt_invalid");
    assert_eq!(llms.len(), 1, "{findings:#?}");
    assert_eq!(llms[0].0, url("/llms.txt", port));
    assert!(llms[0].1.contains("does not start with an H1 title"), "{}", llms[0].1);
    let flagged: Vec<(String, String)> = with("custom_search");
    let on = |path: &str, rule: &str| flagged.iter().any(|(u, d)| *u == url(path, port) && d.starts_with(rule));
    assert!(on("/products/teapot", "oos:"), "{flagged:#?}");
    assert!(!on("/products/kettle", "oos:"), "{flagged:#?}");
    assert!(on("/about", "no-price:") && on("/", "no-price:"), "{flagged:#?}");
    assert!(!on("/products/mug", "no-price:"), "{flagged:#?}");

    // The JSON report: the table per site, the values per page.
    let doc: Value = serde_json::from_str(&report(&run.db, "json").await).expect("JSON report");
    let site = &doc["sites"][0];
    let ai = site["ai_crawlers"].as_array().expect("ai_crawlers");
    let verdict = |token: &str| {
        let r = ai.iter().find(|r| r["token"] == token).unwrap_or_else(|| panic!("{token} in {ai:#?}"));
        (r["verdict"].as_str(), r["start_page"].as_str(), r["blocked_pages"].as_u64(), r["pages"].as_u64())
    };
    assert_eq!(verdict("GPTBot"), (Some("blocked"), Some("blocked"), Some(6), Some(6)));
    assert_eq!(verdict("ClaudeBot"), (Some("partly_blocked"), Some("allowed"), Some(4), Some(6)));
    assert_eq!(verdict("OAI-SearchBot"), (Some("allowed"), Some("allowed"), Some(0), Some(6)));
    assert_eq!(ai.len(), shoal_shared::ai_crawlers::AI_CRAWLERS.len(), "one host, every crawler");
    let json_page = |path: &str| {
        site["pages"].as_array().expect("pages").iter().find(|p| p["url"] == url(path, port)).expect("page").clone()
    };
    assert_eq!(json_page("/products/kettle")["extracted"]["price"], "€ 19.99");
    assert_eq!(json_page("/products/teapot")["extracted"]["sku"], "1002");
    assert_eq!(json_page("/about")["extracted"], serde_json::json!({}));
    let blocked = json_page("/products/kettle")["ai_crawlers_blocked"].clone();
    assert_eq!(blocked, serde_json::json!(["GPTBot", "ClaudeBot", "CCBot", "Google-Extended"]));
    assert_eq!(json_page("/robots.txt")["ai_crawlers_blocked"], Value::Null, "only pages are judged");

    // CSV and HTML show them too.
    let csv_dir = run.db.with_extension("csv");
    let (db_arg, dir_arg) = (run.db.display().to_string(), csv_dir.display().to_string());
    assert_eq!(shoal(&["shoal", "report", "--db", &db_arg, "--format", "csv", "--out", &dir_arg]).await, Exit::Ok);
    let extracted = std::fs::read_to_string(csv_dir.join("extracted.csv")).expect("extracted.csv");
    assert!(extracted.contains(&format!("{},price,€ 19.99", url("/products/kettle", port))), "{extracted}");
    let ai_csv = std::fs::read_to_string(csv_dir.join("ai_crawlers.csv")).expect("ai_crawlers.csv");
    assert!(
        ai_csv.contains(&format!("{HOST}:{port},ClaudeBot,Anthropic,training,partly_blocked,6,4,allowed")),
        "{ai_csv}"
    );
    let html = report(&run.db, "html").await;
    assert!(html.contains("<h3>AI crawlers</h3>") && html.contains("partly blocked"), "the AI crawler table");
    assert!(html.contains("<h3>Extracted values</h3>") && html.contains("€ 24.50"), "the extracted values");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_audits_of_a_changed_shop_compare_url_by_url() {
    let server = TestServer::start(vec![shop(HOST)]).await.expect("server starts");
    let port = server.port();
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("audit.db");
    let db_arg = db_path.display().to_string();
    let resolve = format!("{HOST}=127.0.0.1");
    let start = server.url(HOST, "/");
    let rules = rule_args();
    for _ in 0..2 {
        let mut args = vec!["shoal", "audit", &start, "--db", &db_arg, "--no-dns", "--no-progress", "--allow-private"];
        args.extend(["--resolve", &resolve]);
        args.extend(rules.iter().map(String::as_str));
        assert_eq!(shoal(&args).await, Exit::Ok);
    }
    drop(server);

    let out = dir.path().join("compare.json");
    let out_arg = out.display().to_string();
    let compare = ["shoal", "report", "--db", &db_arg, "--compare", "1", "2", "--format", "json", "--out", &out_arg];
    assert_eq!(shoal(&compare).await, Exit::Ok);
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).expect("written")).expect("JSON");
    let urls = &doc["sites"][0]["urls"];
    let list = |name: &str| -> Vec<String> {
        urls[name]
            .as_array()
            .unwrap_or_else(|| panic!("{name} in {urls:#}"))
            .iter()
            .map(|e| e["url"].to_string())
            .collect()
    };
    let quoted = |path: &str| format!("\"{}\"", url(path, port));
    assert_eq!(list("added"), [quoted("/products/cup")], "{urls:#}");
    assert_eq!(list("removed"), [quoted("/products/teapot")], "{urls:#}");
    assert_eq!(
        list("changed"),
        ["/about", "/products/kettle", "/products/mug", "/products/spoon"].map(quoted),
        "{urls:#}"
    );
    assert_eq!(urls["summary"], serde_json::json!({"added": 1, "removed": 1, "changed": 4}));
    let changes = |path: &str| -> Vec<(String, Value, Value)> {
        let entry = urls["changed"].as_array().and_then(|c| c.iter().find(|e| e["url"] == url(path, port)));
        entry.expect("a changed URL")["changes"]
            .as_array()
            .expect("changes")
            .iter()
            .map(|c| (c["fact"].as_str().unwrap_or_default().to_owned(), c["old"].clone(), c["new"].clone()))
            .collect()
    };
    let change = |fact: &str, old: Value, new: Value| (fact.to_owned(), old, new);
    assert_eq!(
        changes("/products/kettle"),
        [
            change("extracted.price", "€ 19.99".into(), "€ 17.49".into()),
            change("extracted.price_meta", "19.99".into(), "17.49".into())
        ]
    );
    // The heading grew by a word too ("Mug" → "Mug, large": the main text's words are the
    // heading, the price's digits, "In stock" and "Home").
    assert_eq!(
        changes("/products/mug"),
        [change("title", "Mug".into(), "Mug, large".into()), change("word_count", "5".into(), "6".into())]
    );
    assert_eq!(
        changes("/about"),
        [change("indexability", "indexable".into(), "not indexable: noindex".into())],
        "the extracted values are unchanged"
    );
    let spoon = changes("/products/spoon");
    assert_eq!(spoon.first(), Some(&change("status", "200".into(), "410".into())), "{spoon:#?}");
    assert!(spoon.contains(&change("indexability", "indexable".into(), "not indexable: HTTP 410".into())));
    let added = &urls["added"][0];
    assert_eq!((added["facts"]["title"].as_str(), added["extracted"]["price"].as_str()), (Some("Cup"), Some("€ 5.00")));
    assert_eq!(added["facts"]["word_count"].as_str(), Some("5"), "{added:#}");

    let html_out = dir.path().join("compare.html");
    let html_arg = html_out.display().to_string();
    let compare = ["shoal", "report", "--db", &db_arg, "--compare", "1", "2", "--format", "html", "--out", &html_arg];
    assert_eq!(shoal(&compare).await, Exit::Ok);
    let html = std::fs::read_to_string(&html_out).expect("written");
    assert!(html.contains("Pages, URL by URL") && html.contains("extracted.price") && html.contains("€ 17.49"));
    assert!(
        html.contains("Added pages (1)") && html.contains("Removed pages (1)") && html.contains("Changed pages (4)")
    );
    assert!(html.contains("1 added, 1 removed, 4 changed"), "the summary counts the pages");
}

/// A rule that cannot run is refused before anything is fetched, with its name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_rule_is_a_configuration_error_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db").display().to_string();
    for (flag, rule, says) in [
        ("--extract", "price=css:.price[[[", "not a valid CSS selector"),
        ("--extract", "price=xpath://span", "xpath: is not supported"),
        ("--search", "oos=regex:(unclosed", "not a valid regular expression"),
        ("--search", "big=regex:\\w{1000}\\w{1000}\\w{1000}", "compiles to more than"),
    ] {
        let args = ["shoal", "audit", "http://nothing.test/", "--db", &db, "--no-dns", flag, rule];
        let failure = match Cli::try_parse_from(args) {
            Err(e) => e.to_string(),
            Ok(cli) => match shoal::run(cli, CancellationToken::new()).await {
                Ok(exit) => panic!("{rule} was accepted: {exit:?}"),
                Err(f) => {
                    assert_eq!(f.exit, Exit::Input, "{rule}");
                    format!("{:#}", f.error)
                }
            },
        };
        assert!(failure.contains(says) && failure.contains(rule), "{rule}: {failure}");
    }
    assert!(!dir.path().join("audit.db").exists(), "no audit was started");
}
