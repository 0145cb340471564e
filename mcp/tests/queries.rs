//! The tools' reads against the report crate's two-audit fixture, whose new, fixed and remaining
//! findings are known: what an assistant is told must be what the reports say.

#![allow(clippy::unwrap_used, reason = "tests")]

use serde_json::Value;
use shoal_mcp::queries::{
    self, CompareAudits, ExplainFinding, IssueUrls, ListAudits, RobotsVerdict, SiteHealthParams, ToolError,
};
use shoal_report::fixtures::compare::{Fixture, Key, SHOP, expected_fixed, expected_new, shop, two_audits};
use std::collections::BTreeSet;

fn fixture() -> (tempfile::TempDir, Fixture) {
    let dir = tempfile::tempdir().unwrap();
    let fx = two_audits(dir.path());
    (dir, fx)
}

/// The error message of a refused input (a database error fails the test).
fn refused(r: Result<Value, ToolError>) -> String {
    match r {
        Err(ToolError::Input(msg)) => msg,
        other => panic!("expected the input refused, got {other:?}"),
    }
}

fn keys(list: &Value) -> BTreeSet<Key> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap().to_owned();
            (s("code"), s("url"), s("detail"))
        })
        .collect()
}

#[test]
fn list_audits_newest_first_paged_and_capped() {
    let (_dir, fx) = fixture();
    let all = queries::list_audits(&fx.db, &ListAudits::default()).unwrap();
    let ids: Vec<u64> = all["audits"].as_array().unwrap().iter().map(|a| a["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, vec![fx.new.0, fx.old.0]);
    assert_eq!(all["audits"][0]["sites"], 3);
    assert_eq!(all["page"]["next_offset"], Value::Null);

    let first = queries::list_audits(&fx.db, &ListAudits { offset: None, limit: Some(1) }).unwrap();
    assert_eq!(first["audits"].as_array().unwrap().len(), 1);
    assert_eq!(first["page"]["next_offset"], 1);
    let second = queries::list_audits(&fx.db, &ListAudits { offset: Some(1), limit: Some(1) }).unwrap();
    assert_eq!(second["audits"][0]["id"], fx.old.0);

    assert!(refused(queries::list_audits(&fx.db, &ListAudits { offset: None, limit: Some(0) })).contains("at least 1"));
    assert!(
        refused(queries::list_audits(&fx.db, &ListAudits { offset: None, limit: Some(101) }))
            .contains("maximum of 100")
    );
}

#[test]
fn site_health_ranks_the_sites_issues_by_impact() {
    let (_dir, fx) = fixture();
    let p = SiteHealthParams { audit: Some(fx.new.0), site: Some(SHOP.to_owned()), ..Default::default() };
    let h = queries::site_health(&fx.db, &p).unwrap();
    assert_eq!(h["site"]["id"], fx.new_shop.0);
    let issues = h["issues"].as_array().unwrap();
    let codes: BTreeSet<&str> = issues.iter().map(|i| i["code"].as_str().unwrap()).collect();
    let want: BTreeSet<&str> =
        ["title_missing", "server_error", "description_missing", "redirect_temporary", "slow_response", "invalid_link"]
            .into();
    assert_eq!(codes, want);
    let impacts: Vec<f64> = issues.iter().map(|i| i["impact"].as_f64().unwrap()).collect();
    assert!(impacts.windows(2).all(|w| w[0] >= w[1]), "ranked by impact: {impacts:?}");
    assert_eq!(issues[0]["severity"], "error", "an error outranks the warnings: {issues:?}");
    // The same site by its id, typed without the trailing slash, and the audit's sites without one.
    let by_id = SiteHealthParams { audit: Some(fx.new.0), site: Some(fx.new_shop.0.to_string()), ..Default::default() };
    assert_eq!(queries::site_health(&fx.db, &by_id).unwrap()["issues"], h["issues"]);
    let typed =
        SiteHealthParams { audit: Some(fx.new.0), site: Some("https://shop.test".into()), ..Default::default() };
    assert_eq!(queries::site_health(&fx.db, &typed).unwrap()["site"]["id"], fx.new_shop.0);
    let sites = queries::site_health(&fx.db, &SiteHealthParams::default()).unwrap();
    assert_eq!(sites["audit"], fx.new.0, "the latest audit by default");
    assert_eq!(sites["page"]["total"], 3);

    let msg = refused(queries::site_health(
        &fx.db,
        &SiteHealthParams { site: Some("https://nowhere.test/".into()), ..Default::default() },
    ));
    assert!(msg.contains("no site") && msg.contains(SHOP), "{msg}");
    let msg = refused(queries::site_health(&fx.db, &SiteHealthParams { audit: Some(99), ..Default::default() }));
    assert!(msg.contains("no audit 99"), "{msg}");
}

#[test]
fn issue_urls_lists_one_codes_findings_and_refuses_a_code_the_site_lacks() {
    let (_dir, fx) = fixture();
    let p = IssueUrls { audit: Some(fx.new.0), site: SHOP.into(), code: "server_error".into(), ..Default::default() };
    let r = queries::issue_urls(&fx.db, &p).unwrap();
    assert_eq!(keys(&r["findings"]), [("server_error".to_owned(), shop("/c"), "503".to_owned())].into());
    assert_eq!(r["page"]["total"], 1);

    let p = IssueUrls { audit: Some(fx.new.0), site: SHOP.into(), code: "h1_missing".into(), ..Default::default() };
    let msg = refused(queries::issue_urls(&fx.db, &p));
    assert!(msg.contains("no finding of code \"h1_missing\"") && msg.contains("server_error"), "{msg}");
    let p = IssueUrls { site: SHOP.into(), code: "server_error".into(), limit: Some(201), ..Default::default() };
    assert!(refused(queries::issue_urls(&fx.db, &p)).contains("maximum of 200"));
}

#[test]
fn compare_audits_lists_what_the_report_calls_new_and_fixed() {
    let (_dir, fx) = fixture();
    let r =
        queries::compare_audits(&fx.db, &CompareAudits { old: fx.old.0, new: fx.new.0, ..Default::default() }).unwrap();
    assert_eq!(r["matched_sites"], 1);
    assert_eq!(r["added_sites_total"], 2, "new.test and the second shop.test");
    assert_eq!(r["removed_sites"][0]["start_url"], "https://gone.test/");
    let shop_pair = &r["sites"][0];
    assert_eq!(keys(&shop_pair["new"]), expected_new());
    assert_eq!(keys(&shop_pair["fixed"]), expected_fixed());
    assert_eq!(shop_pair["new_count"], expected_new().len());
    assert_eq!(shop_pair["fixed_count"], expected_fixed().len());
    assert_eq!(shop_pair["remaining_count"], 4);

    // Capped per site: the counts stay whole.
    let one = CompareAudits { old: fx.old.0, new: fx.new.0, findings_per_site: Some(1), ..Default::default() };
    let r = queries::compare_audits(&fx.db, &one).unwrap();
    assert_eq!(r["sites"][0]["fixed"].as_array().unwrap().len(), 1);
    assert_eq!(r["sites"][0]["fixed_count"], expected_fixed().len());

    let same = CompareAudits { old: fx.new.0, new: fx.new.0, ..Default::default() };
    assert!(refused(queries::compare_audits(&fx.db, &same)).contains("two different audits"));
    let unknown = CompareAudits { old: 99, new: fx.new.0, ..Default::default() };
    assert!(refused(queries::compare_audits(&fx.db, &unknown)).contains("no audit 99"));
    let lone =
        CompareAudits { old: fx.old.0, new: fx.new.0, site: Some("https://new.test/".into()), ..Default::default() };
    assert!(refused(queries::compare_audits(&fx.db, &lone)).contains("to compare with"));
}

#[test]
fn explain_finding_gives_the_findings_page_text() {
    let r = queries::explain_finding(&ExplainFinding { code: "hsts_missing".into() }).unwrap();
    let text = shoal_report::guidance::code_text("hsts_missing").unwrap();
    assert_eq!(r["fix"], shoal_report::guidance::plain(text.fix));
    assert_eq!(r["family"], text.family);
    assert!(r["why"].as_str().is_some_and(|w| !w.is_empty()), "{r}");
    let msg = refused(queries::explain_finding(&ExplainFinding { code: "hsts".into() }));
    assert!(msg.contains("hsts_missing"), "suggests the code: {msg}");
    assert!(refused(queries::explain_finding(&ExplainFinding { code: String::new() })).contains("unknown"));
}

#[test]
fn robots_verdict_as_the_crawler_reaches_it() {
    let txt = "User-agent: *\nDisallow: /private\n\nUser-agent: Googlebot\nAllow: /\nCrawl-delay: 2\n\nSitemap: https://a.test/sitemap.xml\n";
    let v = |url: &str, agent: Option<&str>| {
        queries::robots_verdict(&RobotsVerdict {
            robots_txt: txt.into(),
            url: url.into(),
            agent: agent.map(str::to_owned),
        })
    };
    let r = v("https://a.test/private/x", None).unwrap();
    assert_eq!((r["allowed"].as_bool(), r["rule"].as_str()), (Some(false), Some("/private")));
    assert_eq!(r["sitemaps"][0], "https://a.test/sitemap.xml");
    let g =
        v("https://a.test/private/x", Some("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"))
            .unwrap();
    assert_eq!((g["allowed"].as_bool(), g["agent_token"].as_str()), (Some(true), Some("Googlebot")));
    assert_eq!(g["crawl_delay_seconds"], 2.0);
    assert!(v("https://a.test/public", None).unwrap()["allowed"].as_bool().unwrap());

    assert!(refused(v("/private", None)).contains("not an absolute URL"));
    assert!(refused(v("ftp://a.test/private", None)).contains("http and https"));
    assert!(refused(v("https://a.test/", Some("42"))).contains("no product token"));
    let huge = RobotsVerdict {
        robots_txt: "#".repeat(queries::ROBOTS_MAX_BYTES + 1),
        url: "https://a.test/".into(),
        agent: None,
    };
    assert!(refused(queries::robots_verdict(&huge)).contains("cap"));
}
