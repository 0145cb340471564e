//! Issue 37, the links half: a shop audited with broken hreflang, excluded sections, images in
//! `srcset` and `<picture>`, and fonts and backgrounds in its CSS (`shoal_tests::testsite::shop_links`).
//! Asserted the way the issue will be checked: the test server's request log (what was and was
//! never requested), the audit database and the JSON report.

use crate::common;
use crate::db;
use crate::procs::{Coordinator, ensure_built, tails, worker};
use clap::Parser;
use serde_json::{Value, json};
use shoal::Exit;
use shoal::cli::Cli;
use shoal_tests::log::RequestLog;
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::shop_links::{CSS_AND_SRCSET, EXCLUDE, NEVER_REQUESTED, STRIP_QUERY, shop};
use shoal_tests::testsite::{ReservedPort, TestServer};
use std::path::Path;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const HOST: &str = "shop-links.test";

async fn serve() -> (TestServer, impl Fn(&str) -> String) {
    let reserved = ReservedPort::new().expect("a free port");
    let port = reserved.port();
    let u = move |path: &str| format!("http://{HOST}:{port}{path}");
    let server = TestServer::start_reserved(reserved, vec![shop(HOST, &u)]).await.expect("server starts");
    (server, u)
}

/// The scope flags of the tests: `--exclude` and `--strip-query` for each rule of the shop.
fn scope_flags() -> Vec<&'static str> {
    let mut flags = vec!["--gap-ms", "0"];
    for e in EXCLUDE {
        flags.extend(["--exclude", e]);
    }
    for s in STRIP_QUERY {
        flags.extend(["--strip-query", s]);
    }
    flags
}

/// The politeness half of the rules, from the request log: nothing excluded (or disallowed) was
/// requested, nothing was requested with a stripped parameter, and the shoes were requested in
/// their stripped forms.
fn assert_scope_kept(log: &RequestLog) {
    let paths = log.paths(HOST);
    for never in NEVER_REQUESTED {
        assert_eq!(log.count(HOST, never), 0, "{never} was requested\n{}", log.dump());
    }
    assert!(
        !paths.iter().any(|p| p.contains("utm_") || p.contains("sid=")),
        "a stripped parameter was sent\n{}",
        log.dump()
    );
    assert_eq!(log.count(HOST, "/shop/shoes?color=red"), 1, "{}", log.dump());
    assert_eq!(log.count(HOST, "/shop/shoes"), 1, "{}", log.dump());
}

fn findings_of(db: &Path, code: &str) -> Vec<(String, String)> {
    db::query(db, "SELECT url, detail FROM findings WHERE code = ?1 ORDER BY url, detail", [code], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shop_audit_checks_hreflang_srcset_and_css_and_never_requests_what_is_excluded() {
    let (server, u) = serve().await;
    let run = common::audit(&server, &[HOST], &[u("/")], &scope_flags()).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;

    assert_scope_kept(&log);
    // Every resource only srcset, <picture>, inline CSS and the stylesheets name was checked: one
    // HEAD, and one GET after a failed HEAD.
    let methods = |path: &str| -> Vec<String> {
        log.for_host(HOST).iter().filter(|r| r.path == path).map(|r| r.method.clone()).collect()
    };
    for path in CSS_AND_SRCSET {
        let m = methods(path);
        let want: &[&str] =
            if path.ends_with("missing.woff") || path.ends_with("p-960.jpg") { &["HEAD", "GET"] } else { &["HEAD"] };
        if path.ends_with(".css") {
            continue;
        }
        assert_eq!(m, want, "{path} checked\n{}", log.dump());
    }
    assert_eq!(log.count(HOST, "/img/commented-out.png"), 0, "a url() in a CSS comment is not a URL");
    assert_eq!(methods("/css/shop.css"), ["GET"], "a stylesheet is read with one GET");
    assert_eq!(methods("/css/base.css"), ["GET"], "and so is the sheet it @imports");
    assert_eq!(methods("/fonts/shop.woff2"), ["HEAD"], "a font is checked like any resource");
    // The alternates on the site were crawled, so their answers could be judged.
    for path in ["/fr/", "/es/", "/it/", "/pt/", "/nl/", "/de-alt/", "/at/"] {
        assert!(log.count(HOST, path) >= 1, "{path} crawled\n{}", log.dump());
    }

    let at = |path: &str| u(path);
    let has = |code: &str, url: &str, detail_has: &str| {
        let found = findings_of(&run.db, code);
        assert!(
            found.iter().any(|(u, d)| u == url && d.contains(detail_has)),
            "{code} on {url} ({detail_has:?}); found {found:#?}\nall: {:#?}",
            db::findings(&run.db)
        );
    };
    has("url_excluded", &at("/cart/"), "matches the exclude rule /cart/");
    has("url_excluded", &at("/account/login"), "/account/");
    has("url_excluded", &at("/cart/icon.png"), "/cart/");
    has("broken_resource", &at("/fonts/missing.woff"), "404");
    has("broken_resource", &at("/img/p-960.jpg"), "404");
    has("hreflang_invalid_code", &at("/en/"), "en-UK");
    has("hreflang_self_missing", &at("/"), "");
    has("hreflang_x_default_missing", &at("/"), "");
    has("hreflang_return_missing", &at("/en/"), &at("/nl/"));
    has("hreflang_return_missing", &at("/at/"), &at("/"));
    has("hreflang_conflict", &at("/de/"), "de");
    has("hreflang_target_error", &at("/en/"), &format!("{} (fr) answers 404", at("/fr/")));
    has("hreflang_target_redirect", &at("/en/"), &at("/es/"));
    has("hreflang_target_noindex", &at("/en/"), &at("/it/"));
    has("hreflang_target_canonicalised", &at("/en/"), &at("/pt/"));
    has("hreflang_target_disallowed", &at("/en/"), &at("/private/ja/"));
    has("hreflang_lang_mismatch", &at("/de/"), "own hreflang says de");
    has("hreflang_too_many", &at("/many-langs/"), "over 1000");
    // The pagination target is recorded as it was queued, without the stripped parameter, so the
    // content analysis finds what it answered.
    has("pagination_broken", &at("/shop/shoes"), &format!("next: {} answers 404", at("/shop/shoes/2")));
    // /de/'s x-default is in its Link header only: read, so not missing.
    assert!(!findings_of(&run.db, "hreflang_x_default_missing").iter().any(|(u, _)| *u == at("/de/")));
    let broken_from: Vec<String> = db::strings(
        &run.db,
        &format!(
            "SELECT related_json FROM findings WHERE code = 'broken_resource' AND url = '{}'",
            at("/fonts/missing.woff")
        ),
    );
    assert!(broken_from[0].contains("/css/shop.css"), "the stylesheet that loads the font: {broken_from:?}");

    // The JSON report carries them: findings, the stylesheet's links by kind, the shop's alternates.
    let report = json_report(&run.db).await;
    let site = &report["sites"][0];
    let codes: Vec<&str> =
        site["findings"].as_array().expect("findings").iter().filter_map(|f| f["code"].as_str()).collect();
    for code in ["url_excluded", "hreflang_return_missing", "hreflang_target_error", "broken_resource"] {
        assert!(codes.contains(&code), "{code} in the JSON report: {codes:?}");
    }
    let pages = site["pages"].as_array().expect("pages");
    let sheet = pages.iter().find(|p| p["url"] == at("/css/shop.css")).expect("the stylesheet is a page of the report");
    let kinds: Vec<(&str, &str)> = sheet["links"]
        .as_array()
        .expect("links")
        .iter()
        .map(|l| (l["url"].as_str().unwrap_or(""), l["kind"].as_str().unwrap_or("")))
        .collect();
    let base_css = at("/css/base.css");
    let font = at("/fonts/shop.woff2");
    let hero = at("/img/hero.jpg");
    for want in [(base_css.as_str(), "stylesheet"), (font.as_str(), "font"), (hero.as_str(), "css_image")] {
        assert!(kinds.contains(&want), "{want:?} among the stylesheet's links: {kinds:?}");
    }
    let de = pages.iter().find(|p| p["url"] == at("/de/")).expect("/de/ in the report");
    assert!(
        de["hreflang"].to_string().contains("x-default"),
        "the Link header's alternate is reported: {}",
        de["hreflang"]
    );
    let issue =
        site["issues"].as_array().expect("issues").iter().find(|i| i["code"] == "url_excluded").expect("an issue");
    assert_eq!(issue["scope"], "info", "the user's own rules are not scored: {issue}");
}

/// `--include`: only matching URLs are requested, and the start URL always is, even when no
/// include rule matches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn include_rules_narrow_the_crawl_and_the_start_url_is_always_fetched() {
    let (server, u) = serve().await;
    let run = common::audit(&server, &[HOST], &[u("/")], &["--gap-ms", "0", "--include", "/(en|de)/$"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    let pages: Vec<String> = common::page_paths(&log, HOST).into_iter().filter(|p| p != "/sitemap.xml").collect();
    let mut got = pages.clone();
    got.sort();
    got.dedup();
    assert_eq!(got, ["/", "/de/", "/en/"], "{}", log.dump());
    let not_included = findings_of(&run.db, "url_excluded");
    assert!(
        not_included.iter().any(|(url, d)| *url == u("/css/shop.css") && d == "matches no include rule"),
        "{not_included:#?}"
    );
}

/// The rules travel with an audit submitted to a coordinator, through Redis, to the workers, which
/// apply them before anything reaches the frontier; a bad rule is refused by the API, naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_applies_the_rules_an_audit_was_submitted_with() {
    let _serial = crate::distributed::SERIAL.lock().await;
    ensure_built().await;
    let (server, u) = serve().await;
    let redis = RedisServer::start().expect("redis-server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    let ns = "scope";
    let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), ns, &db, &[]).await;
    let w = worker(dir.path(), "w1", &redis.url(), ns, &[HOST.to_owned()], 4);

    let bad = json!({"urls": [u("/")], "options": {"exclude": ["(unclosed"]}});
    let (status, answer) = coord.api(reqwest::Method::POST, "/v1/audits", Some(&bad)).await.expect("API answers");
    assert_eq!(status, 400, "{answer}");
    assert!(answer.to_string().contains("exclude \\\"(unclosed\\\""), "the answer names the rule: {answer}");

    let audit = coord.submit(&[u("/")], json!({"gap_ms": 0, "exclude": EXCLUDE, "strip_query": STRIP_QUERY})).await;
    let finished = coord.wait_finished(audit, Duration::from_secs(60)).await;
    let log = server.shutdown().await;
    let logs = tails([&w, &coord.proc]);
    let (view, _) = finished.unwrap_or_else(|e| panic!("{e}\n{logs}"));
    assert_eq!(view["status"], "done", "{view}\n{logs}");
    assert_scope_kept(&log);
    assert!(
        findings_of(&db, "url_excluded").iter().any(|(url, _)| *url == u("/cart/icon.png")),
        "excluded in a stylesheet, recorded by the worker that read it"
    );
}

async fn json_report(db: &Path) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("report.json");
    let args: Vec<String> =
        ["shoal", "report", "--db", &db.display().to_string(), "--format", "json", "--out", &out.display().to_string()]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
    let exit = tokio::task::spawn_blocking(move || {
        let cli = Cli::try_parse_from(&args).expect("report arguments parse");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        rt.block_on(shoal::run(cli, CancellationToken::new()))
            .unwrap_or_else(|f| panic!("report failed: {:#}", f.error))
    })
    .await
    .expect("report task");
    assert_eq!(exit, Exit::Ok);
    serde_json::from_slice(&std::fs::read(&out).expect("the report was written")).expect("JSON")
}
