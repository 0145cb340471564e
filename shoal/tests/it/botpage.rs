//! The site-owner page says what the crawler does: it is built from the same validated settings,
//! so changing the configuration changes the page.

use crate::support::{shoal, stderr};
use shoal::botpage::{BotPage, HTML_FILE, MARKDOWN_FILE};
use shoal::cli::Command;
use shoal::config;
use shoal_coordinator::seed::site_seed;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::task::TaskKind;
use shoal_shared::url::NormalizedUrl;
use std::path::Path;

/// The page `shoal botpage ARGS` would write (config file, if any, among the args).
fn page(args: &[&str]) -> BotPage {
    let mut all = vec!["shoal"];
    all.extend_from_slice(args);
    let loaded = config::load(all.iter().copied()).expect("arguments load");
    let Command::Botpage(b) = loaded.cli.command else { panic!("botpage expected") };
    BotPage::from_args(&b).expect("valid settings")
}

fn both(p: &BotPage) -> (String, String) {
    (p.markdown().expect("markdown renders"), p.html().expect("html renders"))
}

fn write(dir: &Path, text: &str) -> String {
    let path = dir.join("shoal.toml");
    std::fs::write(&path, text).expect("write the test config file");
    path.to_str().expect("utf-8 path").to_owned()
}

#[test]
fn default_page_states_the_default_pace() {
    let (md, html) = both(&page(&["botpage"]));
    for text in [&md, &html] {
        assert!(text.contains("ShoalBot"));
        assert!(text.contains("User-agent: ShoalBot\nDisallow: /"), "robots.txt example with the token");
        assert!(text.contains(&format!("ShoalBot/{} (+https://example.invalid/shoalbot)", env!("CARGO_PKG_VERSION"))));
        assert!(text.contains("300 ms") && text.contains("at most 500 pages") && text.contains("15 s"));
        assert!(text.contains("500 ms, then 1 s"), "the back-off schedule");
        assert!(text.contains("starts with one request at a time"), "the slow start (issue 41)");
        assert!(text.contains("1.5 times that and at least"), "what closes it");
        assert!(text.contains("usual time is the fastest of them"), "the baseline");
        assert!(
            text.contains("/robots.txt") && text.contains("/llms.txt") && text.contains("/.well-known/security.txt")
        );
        assert!(text.contains("/wp-json/") && text.contains("/xmlrpc.php"));
        assert!(text.contains("above\n60 s") || text.contains("above 60 s") || text.contains("above\n  60 s"));
    }
    assert!(md.contains("At most **4** requests at a time") && md.contains("at least **300 ms**"));
    assert!(md.contains("gets **1** request at a time, at least **3 s** apart"), "slow mode after a 429");
    assert!(html.contains("At most <strong>4</strong> requests") && html.contains("<strong>300 ms</strong>"));
    assert!(md.contains("not configured") && html.contains("not configured"), "no operator configured");
}

#[test]
fn changing_the_config_changes_the_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write(
        dir.path(),
        "[crawl]\ngap_ms = 1500\nin_flight = 2\nrobots_token = \"AcmeAudit\"\n\
         user_agent = \"AcmeAudit/1.0 (+https://acme.example/bot)\"\nno_external = true\nmax_pages = 80\n\
         [botpage]\noperator_name = \"Acme Hosting\"\noperator_contact = \"crawl@acme.example\"\n\
         info_url = \"https://acme.example/bot\"\n",
    );
    let (md, html) = both(&page(&["--config", &f, "botpage"]));
    for text in [&md, &html] {
        assert!(text.contains("1.5 s") && !text.contains("300 ms"), "the configured gap");
        assert!(text.contains("User-agent: AcmeAudit\nDisallow: /") && !text.contains("User-agent: ShoalBot"));
        assert!(text.contains("AcmeAudit/1.0 (+https://acme.example/bot)"), "the exact User-Agent");
        assert!(text.contains("~* \"AcmeAudit\"") && text.contains("%{HTTP_USER_AGENT} \"AcmeAudit\" [NC]"));
        assert!(text.contains("at most 80 pages"));
        assert!(text.contains("does not check them either"), "no_external is reflected");
        assert!(text.contains("Acme Hosting") && text.contains("mailto:crawl@acme.example"));
        assert!(text.contains("https://acme.example/bot"));
    }
    assert!(md.contains("At most **2** requests") && md.contains("at least **1.5 s**"));
    assert!(html.contains("At most <strong>2</strong> requests") && html.contains("<strong>1.5 s</strong>"));
    // The slow mode never makes a host faster than the configured pace: 3 s is still more than 1.5 s.
    assert!(md.contains("at least **3 s** apart"));
}

#[test]
fn operator_text_is_escaped() {
    let (md, html) = both(&page(&["botpage", "--operator-name", "<b>Evil</b> & [x](javascript:y)"]));
    assert!(
        !html.contains("<b>Evil</b>") && html.contains("&#60;b&#62;Evil&#60;/b&#62; &#38; [x](javascript:y)"),
        "{html}"
    );
    assert!(!md.contains("<b>") && md.contains(r"\<b\>Evil\</b\> \& \[x\]\(javascript:y\)"), "{md}");
    let err = BotPage::from_args(&{
        let loaded = config::load(["shoal", "botpage", "--operator-contact", "javascript:alert(1)"]).expect("parses");
        let Command::Botpage(b) = loaded.cli.command else { panic!("botpage expected") };
        *b
    })
    .expect_err("a javascript: contact is refused");
    assert!(err.to_string().contains("--operator-contact"));
}

#[test]
fn the_html_page_is_self_contained() {
    let (_, html) = both(&page(&["botpage"]));
    assert!(html.contains("Content-Security-Policy") && html.contains("default-src 'none'"));
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("<link"));
}

#[test]
fn the_page_lists_what_site_seed_requests() {
    let p = page(&["botpage"]);
    let loaded = config::load(["shoal", "audit"]).expect("defaults");
    let Command::Audit(a) = loaded.cli.command else { panic!("audit expected") };
    let cfg = a.crawl.validate().expect("defaults are valid");
    let start = NormalizedUrl::parse("https://shop.example/").expect("url");
    let seed = site_seed(AuditId(1), SiteId(1), &start, &cfg.engine.defaults);
    // Every seeded probe has a line on the page; the seeded DNS check its section.
    let probes = seed.initial.iter().filter(|t| matches!(t.kind, TaskKind::Probe(_))).count();
    assert_eq!(p.probes.len(), probes);
    assert_eq!(seed.initial.len(), 1 + probes + 1, "the start page, the probes and the DNS check");
    assert!(seed.initial.iter().any(|t| t.kind == TaskKind::DomainDns) && p.beyond.enabled);
    let (md, _) = both(&p);
    for probe in &p.probes {
        assert!(md.contains(&probe.path), "{}", probe.path);
    }
}

#[test]
fn wordpress_probes_match_the_worker() {
    let p = page(&["botpage"]);
    let paths: Vec<&str> = shoal_worker::crawl::WORDPRESS_PROBES.iter().map(|(_, path)| *path).collect();
    assert_eq!(paths, ["/wp-json/", "/xmlrpc.php", "/wp-content/uploads/", "/?p=1"], "SPEC §2's four probes");
    assert_eq!(p.wordpress_probes, paths);
    let (md, html) = both(&p);
    for path in paths {
        assert!(md.contains(path) && html.contains(&path.replace('&', "&amp;")), "{path} on the page");
    }
}

#[test]
fn the_binary_writes_both_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("site");
    let status = shoal(&["botpage", "--out", out.to_str().expect("utf-8 path"), "--operator-name", "Acme"]);
    assert!(status.status.success(), "{}", stderr(&status));
    for name in [MARKDOWN_FILE, HTML_FILE] {
        let text = std::fs::read_to_string(out.join(name)).expect("page written");
        assert!(text.contains("Acme"));
    }
    let bad = shoal(&["botpage", "--out", out.to_str().expect("utf-8 path"), "--gap-ms", "61000"]);
    assert_eq!(bad.status.code(), Some(3), "invalid settings give no page");
}

#[test]
fn the_page_says_what_the_domain_checks_ask_and_of_whom() {
    let (md, html) = both(&page(&["botpage", "--dns-server", "192.0.2.53:53", "--helo-name", "audit.acme.example"]));
    for text in [&md, &html] {
        assert!(text.contains("192.0.2.53:53"), "the configured resolver");
        assert!(text.contains("EHLO audit.acme.example"), "the EHLO name");
        assert!(text.contains("MAIL") && text.contains("RCPT") && text.contains("DATA"), "what is never sent");
        assert!(text.contains("2 most preferred mail servers") && text.contains("port\n"), "{text}");
        assert!(text.contains("selector1") && text.contains("data.iana.org/rdap/dns.json"));
        assert!(text.contains("/.well-known/mta-sts.txt"));
    }
    let (md, html) = both(&page(&["botpage", "--no-smtp", "--rdap-url", "https://rdap.acme.example/"]));
    for text in [&md, &html] {
        assert!(text.contains("does not talk to mail servers") && text.contains("https://rdap.acme.example/"));
        assert!(!text.contains("EHLO"), "no conversation described");
    }
    let (md, html) = both(&page(&["botpage", "--no-dns-checks"]));
    for text in [&md, &html] {
        assert!(text.contains("has turned them off"));
    }
}
