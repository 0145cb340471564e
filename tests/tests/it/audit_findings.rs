//! End-to-end findings: `shoal audit` in-process against the test server, asserted from the
//! server's request log (what was and was not requested) and from the audit database (what was
//! recorded and reported), then the reports written from that database.

use crate::common;
use crate::db;
use crate::finding_support::{clean_page, titled_page};

use clap::Parser;
use common::audit;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::Value;
use shoal::Exit;
use shoal::cli::Cli;
use shoal_tests::log::RequestLog;
use shoal_tests::testsite::{ReservedPort, Route, Site, TestServer};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// The page fields of the JSON report, the list the report crate's own tests check.
use shoal_report::fixtures::json_fields::PAGE_FIELDS;

/// One row of the findings table.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FindingRow {
    code: String,
    severity: String,
    url: String,
    detail: String,
    related: Vec<String>,
}

/// One row of the pages table (the columns these tests look at).
#[derive(Debug, Clone, PartialEq, Eq)]
struct PageRow {
    url: String,
    kind: String,
    status: Option<i64>,
    found_via: String,
    found_from: Option<String>,
    redirect_to: Option<String>,
    title: Option<String>,
}

/// One row of the links table.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LinkRow {
    from: String,
    to: String,
    kind: String,
    nofollow: bool,
    internal: bool,
}

fn finding_rows(db: &Path) -> Vec<FindingRow> {
    let sql = "SELECT code, severity, url, detail, related_json FROM findings ORDER BY code, url, detail";
    db::query(db, sql, [], |r| {
        let related: String = r.get(4)?;
        Ok(FindingRow {
            code: r.get(0)?,
            severity: r.get(1)?,
            url: r.get(2)?,
            detail: r.get(3)?,
            related: serde_json::from_str(&related).expect("related_json is a JSON string list"),
        })
    })
}

fn page_rows(db: &Path) -> Vec<PageRow> {
    let sql = "SELECT url, kind, status, found_via, found_from, redirect_to, title FROM pages ORDER BY url";
    db::query(db, sql, [], |r| {
        Ok(PageRow {
            url: r.get(0)?,
            kind: r.get(1)?,
            status: r.get(2)?,
            found_via: r.get(3)?,
            found_from: r.get(4)?,
            redirect_to: r.get(5)?,
            title: r.get(6)?,
        })
    })
}

fn link_rows(db: &Path) -> Vec<LinkRow> {
    let sql = "SELECT from_url, to_url, kind, nofollow, internal FROM links ORDER BY from_url, position";
    db::query(db, sql, [], |r| {
        Ok(LinkRow {
            from: r.get(0)?,
            to: r.get(1)?,
            kind: r.get(2)?,
            nofollow: r.get::<_, i64>(3)? != 0,
            internal: r.get::<_, i64>(4)? != 0,
        })
    })
}

fn page<'a>(pages: &'a [PageRow], url: &str) -> Option<&'a PageRow> {
    pages.iter().find(|p| p.url == url)
}

fn with_code<'a>(findings: &'a [FindingRow], code: &str) -> Vec<&'a FindingRow> {
    findings.iter().filter(|f| f.code == code).collect()
}

/// URLs that have a finding with this code, sorted.
fn urls_with(findings: &[FindingRow], code: &str) -> Vec<String> {
    let mut urls: Vec<String> = with_code(findings, code).iter().map(|f| f.url.clone()).collect();
    urls.sort();
    urls.dedup();
    urls
}

/// Asserts that `host` (another site) was not crawled: at most a link check of `checked` (SPEC §2:
/// "one HEAD, and one GET only if HEAD answers with an error", after that host's robots.txt), and
/// nothing else, ever.
fn assert_not_crawled(log: &RequestLog, host: &str, checked: &str) {
    let reqs = log.for_host(host);
    for r in &reqs {
        assert!(
            r.path == "/robots.txt" || r.path == checked,
            "{host} is another site, yet {} {} was requested\n{}",
            r.method,
            r.path,
            log.dump()
        );
    }
    let heads = reqs.iter().filter(|r| r.path == checked && r.method == "HEAD").count();
    let gets: Vec<_> = reqs.iter().filter(|r| r.path == checked && r.method == "GET").collect();
    assert!(heads <= 1 && gets.len() <= 1, "{host}: more than a link check\n{}", log.dump());
    if let Some(get) = gets.first() {
        assert!(
            reqs.iter().any(|r| r.method == "HEAD"
                && r.path == checked
                && r.start < get.start
                && r.status.is_some_and(|s| s >= 400)),
            "{host}: GET without a failed HEAD first\n{}",
            log.dump()
        );
    }
    if !reqs.is_empty() {
        assert_eq!(
            log.first_path(host).as_deref(),
            Some("/robots.txt"),
            "{host}: robots.txt must come first\n{}",
            log.dump()
        );
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(data).expect("gzip into memory");
    enc.finish().expect("gzip into memory")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemaps_named_in_robots_are_read_gzip_and_indexes_included() {
    // robots.txt must name absolute sitemap URLs, which include the port.
    let reserved = ReservedPort::new().expect("a free port");
    let port = reserved.port();
    let u = |host: &str, path: &str| format!("http://{host}:{port}{path}");

    let index = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>{}</loc></sitemap>
</sitemapindex>"#,
        u("a.test", "/sm1.xml.gz")
    );
    let urlset = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>{}</loc></url>
  <url><loc>{}</loc></url>
  <url><loc>{}</loc></url>
</urlset>"#,
        u("a.test", "/"),
        u("a.test", "/orphan"),
        u("a.test", "/private/p")
    );
    let robots = format!(
        "User-agent: *\nDisallow: /private\n\nSitemap: {}\nSitemap: {}\n",
        u("a.test", "/sitemap.xml"),
        u("a.test", "/broken.xml")
    );
    let c_sitemap = format!(
        r#"<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{}</loc></url></urlset>"#,
        u("c.test", "/c-orphan")
    );
    let sites = vec![
        Site::new("a.test")
            .robots_txt(&robots)
            .page("/", &clean_page("Home", r#"<a href="/linked">linked</a>"#))
            .page("/linked", &clean_page("Linked", ""))
            .page("/orphan", &clean_page("Orphan", ""))
            .page("/private/p", &clean_page("Private", ""))
            .route("/sitemap.xml", Route::bytes("application/xml", index.into_bytes()))
            .route("/sm1.xml.gz", Route::bytes("application/gzip", gzip(urlset.as_bytes())))
            .route(
                "/broken.xml",
                Route::bytes(
                    "application/xml",
                    format!(
                        "<?xml version=\"1.0\"?><urlset><url><loc>{}</loc></wrong></urlset>",
                        u("a.test", "/linked")
                    )
                    .into_bytes(),
                ),
            ),
        // No Sitemap line: its /sitemap.xml exists but must never be guessed.
        Site::new("c.test")
            .robots_txt("User-agent: *\nAllow: /\n")
            .page("/", &clean_page("C home", ""))
            .page("/c-orphan", &clean_page("C orphan", ""))
            .route("/sitemap.xml", Route::bytes("application/xml", c_sitemap.into_bytes())),
    ];
    let server = TestServer::start_reserved(reserved, sites).await.expect("server starts on a free port");
    let starts = vec![u("a.test", "/"), u("c.test", "/")];
    let run = audit(&server, &["a.test", "c.test"], &starts, &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;

    assert_eq!(log.first_path("a.test").as_deref(), Some("/robots.txt"), "{}", log.dump());
    for path in ["/sitemap.xml", "/sm1.xml.gz", "/broken.xml", "/orphan"] {
        assert_eq!(log.count("a.test", path), 1, "{path}\n{}", log.dump());
    }
    assert_eq!(log.count("a.test", "/private/p"), 0, "a disallowed sitemap URL was requested\n{}", log.dump());
    assert_eq!(log.count("a.test", "/"), 1, "{}", log.dump());
    assert_eq!(
        log.count("c.test", "/sitemap.xml"),
        0,
        "a sitemap was guessed although robots.txt names none\n{}",
        log.dump()
    );
    assert_eq!(log.count("c.test", "/c-orphan"), 0, "{}", log.dump());

    let pages = page_rows(&run.db);
    let orphan = page(&pages, &u("a.test", "/orphan")).expect("the orphan page is recorded");
    assert_eq!(orphan.found_via, "sitemap", "{orphan:?}");
    assert_eq!(orphan.found_from.as_deref(), Some(u("a.test", "/sm1.xml.gz").as_str()));
    assert_eq!(orphan.status, Some(200));
    assert_eq!(orphan.kind, "page");
    for sm in ["/sitemap.xml", "/sm1.xml.gz"] {
        let row = page(&pages, &u("a.test", sm)).expect("sitemap recorded");
        assert_eq!(row.kind, "sitemap", "{row:?}");
    }
    assert!(page(&pages, &u("a.test", "/private/p")).is_none());
    // A URL found both by a link and a sitemap keeps the way it was first found; either is fine,
    // but it is one row.
    assert_eq!(pages.iter().filter(|p| p.url == u("a.test", "/linked")).count(), 1);

    let findings = finding_rows(&run.db);
    assert_eq!(urls_with(&findings, "sitemap_invalid"), vec![u("a.test", "/broken.xml")], "{findings:#?}");
    assert!(with_code(&findings, "sitemap_invalid").iter().all(|f| f.severity == "warning"), "{findings:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_chains_loops_temporary_and_offsite_targets() {
    let reserved = ReservedPort::new().expect("a free port");
    let port = reserved.port();
    let offsite = format!("http://other.test:{port}/landing");
    let server = TestServer::start_reserved(
        reserved,
        vec![
            Site::new("r.test")
                .page(
                    "/",
                    &clean_page(
                        "Home",
                        r#"<a href="/a">a</a> <a href="/b">b</a> <a href="/x">x</a>
                           <a href="/t">t</a> <a href="/ext">ext</a>"#,
                    ),
                )
                .route("/a", Route::redirect(301, "/b"))
                .route("/b", Route::redirect(301, "/c"))
                .page("/c", &clean_page("C", ""))
                .route("/x", Route::redirect(301, "/y"))
                .route("/y", Route::redirect(301, "/x"))
                .route("/t", Route::redirect(302, "/final"))
                .page("/final", &clean_page("Final", ""))
                .route("/ext", Route::redirect(301, &offsite)),
            Site::new("other.test").page("/landing", &clean_page("Elsewhere", "")),
        ],
    )
    .await
    .expect("server starts on a free port");
    let port = server.port();
    let u = move |path: &str| format!("http://r.test:{port}{path}");
    let run = audit(&server, &["r.test", "other.test"], &[u("/")], &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;

    for path in ["/", "/a", "/b", "/c", "/x", "/y", "/t", "/final", "/ext"] {
        assert_eq!(log.count("r.test", path), 1, "{path}: every hop is requested exactly once\n{}", log.dump());
    }
    assert_not_crawled(&log, "other.test", "/landing");
    // Every request was answered: the loop ended.
    assert!(log.all().iter().all(|r| r.status.is_some()), "{}", log.dump());

    let pages = page_rows(&run.db);
    let ext = page(&pages, &u("/ext")).expect("/ext recorded");
    assert_eq!(ext.status, Some(301));
    assert_eq!(ext.redirect_to.as_deref(), Some(offsite.as_str()));
    assert!(page(&pages, &offsite).is_none(), "the other site's page is not a page of this site");
    assert_eq!(page(&pages, &u("/a")).and_then(|p| p.redirect_to.clone()), Some(u("/b")));

    let findings = finding_rows(&run.db);
    let chains = with_code(&findings, "redirect_chain");
    assert_eq!(chains.len(), 1, "reported once, from its head: {findings:#?}");
    assert_eq!(chains[0].url, u("/a"));
    assert_eq!(chains[0].detail, "2 hops");
    assert_eq!(chains[0].related, vec![u("/a"), u("/b"), u("/c")]);
    assert_eq!(chains[0].severity, "warning");

    let loops = with_code(&findings, "redirect_loop");
    assert_eq!(loops.len(), 1, "{findings:#?}");
    assert_eq!(loops[0].url, u("/x"));
    assert_eq!(loops[0].detail, "2 hops");
    assert_eq!(loops[0].related, vec![u("/x"), u("/y"), u("/x")]);
    assert_eq!(loops[0].severity, "error");

    assert_eq!(urls_with(&findings, "redirect_temporary"), vec![u("/t")], "{findings:#?}");
    assert!(
        !findings.iter().any(|f| f.code == "redirect_temporary" && f.url != u("/t")),
        "301s are permanent: {findings:#?}"
    );
    assert!(with_code(&findings, "redirect_limit").is_empty(), "{findings:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn titles_descriptions_and_headings() {
    let server = TestServer::start(vec![
        Site::new("t.test")
            .page(
                "/",
                &clean_page(
                    "Home",
                    r#"<a href="/dup1">1</a> <a href="/dup2">2</a> <a href="/notitle">n</a>
                       <a href="/emptydesc">e</a> <a href="/noh1">h</a>"#,
                ),
            )
            .page("/dup1", &titled_page("Same Title", "first", "One"))
            .page("/dup2", &titled_page("Same Title", "second", "Two"))
            .page(
                "/notitle",
                r#"<html lang="en"><head><meta name="description" content="no title here"></head><body><h1>Untitled</h1></body></html>"#,
            )
            .page("/emptydesc", &titled_page("Empty description", "", "E"))
            .page(
                "/noh1",
                r#"<html lang="en"><head><title>No heading</title><meta name="description" content="no h1"></head><body><h2>Only h2</h2></body></html>"#,
            ),
        Site::generated("g.test", 40, 3),
    ])
    .await
    .expect("server starts");
    let port = server.port();
    let u = move |path: &str| format!("http://t.test:{port}{path}");
    let run = audit(&server, &["t.test"], &[u("/")], &["--gap-ms", "0"]).await;
    let clean = audit(&server, &["g.test"], &[server.url("g.test", "/")], &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    assert_eq!(clean.exit, Exit::Ok);
    let log = server.shutdown().await;

    let findings = finding_rows(&run.db);
    let dups = with_code(&findings, "title_duplicate");
    assert_eq!(dups.iter().map(|f| f.url.clone()).collect::<Vec<_>>(), vec![u("/dup1"), u("/dup2")], "{findings:#?}");
    for f in &dups {
        assert_eq!(f.detail, "Same Title");
        let other = if f.url == u("/dup1") { u("/dup2") } else { u("/dup1") };
        assert_eq!(f.related, vec![other], "{f:?}");
    }
    assert_eq!(urls_with(&findings, "title_missing"), vec![u("/notitle")], "{findings:#?}");
    assert_eq!(urls_with(&findings, "description_empty"), vec![u("/emptydesc")], "{findings:#?}");
    assert_eq!(urls_with(&findings, "h1_missing"), vec![u("/noh1")], "{findings:#?}");
    for code in ["description_missing", "description_duplicate", "title_empty", "h1_multiple"] {
        assert!(with_code(&findings, code).is_empty(), "{code}: {findings:#?}");
    }

    // A clean site: exactly its pages (plus robots.txt and the standard probes), and nothing to
    // report but that it is served over plain http.
    let g_paths: Vec<String> = log.paths("g.test").into_iter().filter(|p| p.starts_with("/p/") || p == "/").collect();
    assert_eq!(g_paths.len(), 40, "{}", log.dump());
    let clean_findings = finding_rows(&clean.db);
    let codes: Vec<&str> = clean_findings.iter().map(|f| f.code.as_str()).collect();
    assert_eq!(codes, vec!["no_https"], "false positives on a clean site: {clean_findings:#?}");
    let clean_pages = page_rows(&clean.db);
    assert_eq!(clean_pages.iter().filter(|p| p.kind == "page").count(), 40, "{clean_pages:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_links_and_resources_external_links_recorded_not_crawled() {
    let reserved = ReservedPort::new().expect("a free port");
    let port = reserved.port();
    let external = format!("http://ext.test:{port}/page");
    let home = clean_page(
        "Home",
        &format!(
            r#"<a href="/missing">missing</a> <a href="/ok">ok</a>
               <img src="/img/missing.png" alt="gone"> <a href="{external}">elsewhere</a>"#
        ),
    );
    let server = TestServer::start_reserved(
        reserved,
        vec![
            Site::new("b.test").page("/", &home).page("/ok", &clean_page("Ok", r#"<a href="/missing">again</a>"#)),
            Site::new("ext.test")
                .page("/page", &clean_page("External", r#"<a href="/deeper">d</a>"#))
                .page("/deeper", &clean_page("Deeper", "")),
        ],
    )
    .await
    .expect("server starts on a free port");
    let port = server.port();
    let u = move |path: &str| format!("http://b.test:{port}{path}");
    let run = audit(&server, &["b.test", "ext.test"], &[u("/")], &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;

    assert_eq!(log.count("b.test", "/missing"), 1, "{}", log.dump());
    assert_not_crawled(&log, "ext.test", "/page");
    assert_eq!(log.count("ext.test", "/deeper"), 0);

    let findings = finding_rows(&run.db);
    let broken = with_code(&findings, "broken_internal_link");
    assert_eq!(broken.len(), 1, "{findings:#?}");
    assert_eq!(broken[0].url, u("/missing"));
    assert_eq!(broken[0].detail, "404");
    assert_eq!(broken[0].related, vec![u("/"), u("/ok")]);
    assert_eq!(broken[0].severity, "error");

    let res = with_code(&findings, "broken_resource");
    assert_eq!(res.len(), 1, "{findings:#?}");
    assert_eq!(res[0].url, u("/img/missing.png"));
    assert_eq!(res[0].detail, "404");
    assert_eq!(res[0].related, vec![u("/")]);

    let links = link_rows(&run.db);
    let ext_link =
        links.iter().find(|l| l.to == external).unwrap_or_else(|| panic!("external link recorded: {links:#?}"));
    assert_eq!(ext_link.from, u("/"));
    assert!(!ext_link.internal, "{ext_link:?}");
    assert_eq!(ext_link.kind, "anchor");
    let img = links.iter().find(|l| l.to == u("/img/missing.png")).expect("image link recorded");
    assert_eq!(img.kind, "image");
    assert!(img.internal);
    let pages = page_rows(&run.db);
    let checked = page(&pages, &external).unwrap_or_else(|| panic!("the external link was checked: {pages:#?}"));
    assert_eq!((checked.kind.as_str(), checked.status), ("external", Some(200)), "{checked:?}");
    assert!(with_code(&findings, "broken_external_link").is_empty(), "{findings:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nofollow_is_recorded_not_followed_unless_asked_and_noindex_is_crawled_and_reported() {
    let server = TestServer::start(vec![
        Site::new("n.test")
            .page(
                "/",
                &clean_page(
                    "Home",
                    r#"<a href="/nf" rel="nofollow">nf</a> <a href="/nfpage">nfpage</a>
                       <a href="/noindex">noindex</a> <a href="/xrt">xrt</a>"#,
                ),
            )
            .page("/nf", &clean_page("Nofollowed", ""))
            .page(
                "/nfpage",
                r#"<html lang="en"><head><title>Nofollow page</title><meta name="description" content="d">
                   <meta name="robots" content="nofollow"></head>
                   <body><h1>nf page</h1><a href="/from-nf-page">x</a></body></html>"#,
            )
            .page("/from-nf-page", &clean_page("Behind nofollow", ""))
            .page(
                "/noindex",
                r#"<html lang="en"><head><title>Noindex</title><meta name="description" content="d">
                   <meta name="robots" content="noindex"></head><body><h1>noindex</h1></body></html>"#,
            )
            .route(
                "/xrt",
                Route::with_header("x-robots-tag", "noindex", Route::html(clean_page("Header noindex", ""))),
            ),
    ])
    .await
    .expect("server starts");
    let port = server.port();
    let u = move |path: &str| format!("http://n.test:{port}{path}");
    let default = audit(&server, &["n.test"], &[u("/")], &["--gap-ms", "0"]).await;
    assert_eq!(default.exit, Exit::Ok);
    let first = server.log();
    let follow = audit(&server, &["n.test"], &[u("/")], &["--gap-ms", "0", "--follow-nofollow"]).await;
    assert_eq!(follow.exit, Exit::Ok);
    let log = server.shutdown().await;
    let second: Vec<String> = log.all()[first.len()..].iter().map(|r| r.path.clone()).collect();

    for path in ["/nf", "/from-nf-page"] {
        assert_eq!(first.count("n.test", path), 0, "{path} followed by default\n{}", first.dump());
        assert!(second.contains(&path.to_owned()), "{path} not followed with --follow-nofollow\n{}", log.dump());
    }
    for path in ["/nfpage", "/noindex", "/xrt"] {
        assert_eq!(first.count("n.test", path), 1, "{path}\n{}", first.dump());
    }

    let links = link_rows(&default.db);
    let nf = links.iter().find(|l| l.to == u("/nf")).expect("nofollow link recorded");
    assert!(nf.nofollow && nf.internal, "{nf:?}");
    let behind = links.iter().find(|l| l.to == u("/from-nf-page")).expect("link on a nofollow page recorded");
    assert!(behind.nofollow, "{behind:?}");
    assert_eq!(behind.from, u("/nfpage"));
    let plain = links.iter().find(|l| l.to == u("/noindex")).expect("link recorded");
    assert!(!plain.nofollow);

    for db in [&default.db, &follow.db] {
        let findings = finding_rows(db);
        assert_eq!(urls_with(&findings, "noindex"), vec![u("/noindex"), u("/xrt")], "{findings:#?}");
        let pages = page_rows(db);
        for path in ["/noindex", "/xrt"] {
            assert_eq!(
                page(&pages, &u(path)).and_then(|p| p.status),
                Some(200),
                "noindex pages are crawled: {pages:#?}"
            );
        }
    }
    let followed = page_rows(&follow.db);
    assert!(page(&followed, &u("/nf")).is_some() && page(&followed, &u("/from-nf-page")).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn www_twin_is_in_scope_after_its_own_robots_txt_and_subdomains_are_not() {
    let reserved = ReservedPort::new().expect("a free port");
    let port = reserved.port();
    let u = |host: &str, path: &str| format!("http://{host}:{port}{path}");
    let home = clean_page(
        "Home",
        &format!(r#"<a href="{}">www x</a> <a href="{}">blog y</a>"#, u("www.a.test", "/x"), u("blog.a.test", "/y")),
    );
    let server = TestServer::start_reserved(
        reserved,
        vec![
            Site::new("a.test").page("/", &home),
            Site::new("www.a.test")
                .robots_txt("User-agent: *\nDisallow: /nope\n")
                .page("/x", &clean_page("WWW x", r#"<a href="/nope">n</a> <a href="/z">z</a>"#))
                .page("/z", &clean_page("WWW z", ""))
                .page("/nope", &clean_page("Nope", "")),
            Site::new("blog.a.test")
                .page("/y", &clean_page("Blog", r#"<a href="/y2">y2</a>"#))
                .page("/y2", &clean_page("Blog 2", "")),
        ],
    )
    .await
    .expect("server starts on a free port");
    let run = audit(&server, &["a.test", "www.a.test", "blog.a.test"], &[u("a.test", "/")], &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;

    assert_eq!(log.first_path("a.test").as_deref(), Some("/robots.txt"), "{}", log.dump());
    assert_eq!(
        log.first_path("www.a.test").as_deref(),
        Some("/robots.txt"),
        "the twin's own robots.txt comes before anything else on it\n{}",
        log.dump()
    );
    assert_eq!(log.count("www.a.test", "/robots.txt"), 1, "{}", log.dump());
    assert_eq!(log.count("www.a.test", "/x"), 1, "the twin is in scope\n{}", log.dump());
    assert_eq!(log.count("www.a.test", "/z"), 1, "{}", log.dump());
    assert_eq!(log.count("www.a.test", "/nope"), 0, "the twin's robots.txt applies to it\n{}", log.dump());
    assert_not_crawled(&log, "blog.a.test", "/y");
    assert_eq!(log.count("blog.a.test", "/y2"), 0);

    let pages = page_rows(&run.db);
    assert_eq!(page(&pages, &u("www.a.test", "/x")).map(|p| p.status), Some(Some(200)), "{pages:#?}");
    let blog_check = page(&pages, &u("blog.a.test", "/y"));
    assert!(blog_check.is_none_or(|p| p.kind == "external"), "another site is only checked: {pages:#?}");
    let links = link_rows(&run.db);
    let www = links.iter().find(|l| l.to == u("www.a.test", "/x")).expect("link recorded");
    assert!(www.internal);
    let blog = links.iter().find(|l| l.to == u("blog.a.test", "/y")).expect("link recorded");
    assert!(!blog.internal, "a subdomain is another site: {blog:?}");
}

fn run_report(args: &[&str]) -> Exit {
    let cli = Cli::try_parse_from(args).expect("report arguments parse");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime for the report");
    rt.block_on(shoal::run(cli, CancellationToken::new())).unwrap_or_else(|f| panic!("report failed: {:#}", f.error))
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap_or_else(|| panic!("an object: {v}")).keys().cloned().collect()
}

fn assert_has(v: &Value, fields: &[&str], what: &str) {
    let have = keys(v);
    for f in fields {
        assert!(have.iter().any(|k| k == f), "{what} lacks {f:?}: {have:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_and_csv_reports_of_the_audit() {
    const XSS: &str = "<script>alert(1)</script>";
    let server = TestServer::start(vec![Site::new("j.test")
        .page(
            "/",
            &clean_page("Home", r#"<a href="/xss">x</a> <a href="/missing">m</a> <img src="/i.png" alt="i">"#),
        )
        .page(
            "/xss",
            &format!(
                r#"<html lang="en"><head><title>{XSS}</title><meta name="description" content="=HYPERLINK(&quot;http://evil.invalid&quot;)"></head><body><h1>x</h1></body></html>"#
            ),
        )
        .route("/i.png", Route::bytes("image/png", b"\x89PNG\r\n\x1a\n".to_vec()))])
    .await
    .expect("server starts");
    let port = server.port();
    let u = move |path: &str| format!("http://j.test:{port}{path}");
    let run = audit(&server, &["j.test"], &[u("/")], &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    drop(server.shutdown().await);
    let db = run.db.display().to_string();
    let out_dir = tempfile::tempdir().expect("temp dir");
    let json_path = out_dir.path().join("report.json");
    let json_arg = json_path.display().to_string();

    let exit = tokio::task::spawn_blocking(move || run_report(&["shoal", "report", "--db", &db, "--out", &json_arg]))
        .await
        .expect("report task");
    assert_eq!(exit, Exit::Ok);
    let text = std::fs::read_to_string(&json_path).expect("the JSON report was written");
    assert!(text.ends_with('\n'), "one document followed by a newline");
    let doc: Value = serde_json::from_str(&text).expect("the report is JSON");

    assert_eq!(doc["schema"], "shoal.report/v1");
    assert!(doc["generator"].as_str().is_some_and(|g| g.starts_with("shoal ")), "{}", doc["generator"]);
    let audit_obj = &doc["audit"];
    assert_has(
        audit_obj,
        &["id", "created_at", "created_at_ms", "finished_at", "finished_at_ms", "status", "options"],
        "audit",
    );
    assert_eq!(audit_obj["status"], "done");
    assert!(audit_obj["id"].is_u64());
    assert!(audit_obj["finished_at_ms"].is_u64(), "a finished audit has an end time");
    let created = audit_obj["created_at"].as_str().expect("created_at is a string");
    assert!(created.ends_with('Z') && created.len() == "2024-05-01T12:00:00.250Z".len(), "{created}");

    let sites = doc["sites"].as_array().expect("sites array");
    assert_eq!(sites.len(), 1);
    let site = &sites[0];
    assert_has(site, &["id", "start_url", "status", "done_at", "done_at_ms", "summary", "pages", "findings"], "site");
    assert_eq!(site["start_url"], u("/"));
    assert_eq!(site["status"], "done");
    let summary = &site["summary"];
    assert_has(summary, &["pages", "errors", "warnings", "notices", "status_classes", "kinds"], "summary");
    let pages = site["pages"].as_array().expect("pages array");
    assert_eq!(summary["pages"].as_u64(), Some(pages.len() as u64));
    let classes = &summary["status_classes"];
    let mut class_keys = keys(classes);
    class_keys.sort();
    assert_eq!(class_keys, vec!["2xx", "3xx", "4xx", "5xx", "failed", "other"]);
    let class_sum: u64 =
        ["2xx", "3xx", "4xx", "5xx", "failed", "other"].iter().map(|k| classes[*k].as_u64().expect("count")).sum();
    assert_eq!(class_sum, pages.len() as u64);

    for p in pages {
        assert_has(p, &PAGE_FIELDS, "page");
        for l in p["links"].as_array().expect("links array") {
            assert_has(l, &["url", "kind", "nofollow", "internal", "text"], "link");
        }
    }
    let urls: Vec<&str> = pages.iter().filter_map(|p| p["url"].as_str()).collect();
    let mut sorted = urls.clone();
    sorted.sort_unstable();
    assert_eq!(urls, sorted, "pages by url");
    let xss = pages.iter().find(|p| p["url"] == u("/xss")).expect("the /xss page is in the report");
    assert_eq!(xss["title"].as_str(), Some(XSS), "the title round-trips as a plain string");
    assert_eq!(xss["final_url"], u("/xss"));
    let home = pages.iter().find(|p| p["url"] == u("/")).expect("home page");
    assert_eq!(home["found_via"], "start");
    assert!(home["found_from"].is_null());
    assert!(!home["links"].as_array().expect("links").is_empty());

    let findings = site["findings"].as_array().expect("findings array");
    for f in findings {
        assert_has(f, &["code", "severity", "family", "message", "url", "detail", "related"], "finding");
    }
    let broken =
        findings.iter().find(|f| f["code"] == "broken_internal_link").expect("broken_internal_link in the report");
    assert_eq!(broken["url"], u("/missing"));
    assert_eq!(broken["related"], serde_json::json!([u("/")]));
    assert_eq!(broken["family"], "links");
    let rank = |s: &Value| match s.as_str() {
        Some("error") => 0,
        Some("warning") => 1,
        _ => 2,
    };
    let ranks: Vec<i32> = findings.iter().map(|f| rank(&f["severity"])).collect();
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "findings by severity: {ranks:?}");
    let by_sev: BTreeMap<&str, u64> = [("error", 0), ("warning", 1), ("notice", 2)]
        .iter()
        .map(|(name, r)| (*name, ranks.iter().filter(|x| *x == r).count() as u64))
        .collect();
    assert_eq!(summary["errors"].as_u64(), Some(by_sev["error"]));
    assert_eq!(summary["warnings"].as_u64(), Some(by_sev["warning"]));
    assert_eq!(summary["notices"].as_u64(), Some(by_sev["notice"]));

    // CSV: three files with their documented header rows.
    let csv_dir = out_dir.path().join("csv");
    let csv_arg = csv_dir.display().to_string();
    let db = run.db.display().to_string();
    let exit = tokio::task::spawn_blocking(move || {
        run_report(&["shoal", "report", "--db", &db, "--format", "csv", "--out", &csv_arg])
    })
    .await
    .expect("report task");
    assert_eq!(exit, Exit::Ok);
    let headers = [
        (
            "pages.csv",
            "site_id,url,final_url,kind,status,error,redirect_to,depth,found_via,found_from,content_type,bytes,response_ms,fetched_at,title,meta_description,h1,h1_count,canonical,meta_robots,x_robots_tag",
        ),
        ("links.csv", "site_id,from_url,to_url,kind,nofollow,internal,text"),
        ("findings.csv", "site_id,code,severity,family,url,detail,related,message"),
    ];
    for (file, header) in headers {
        let text = std::fs::read_to_string(csv_dir.join(file)).unwrap_or_else(|e| panic!("{file} was written: {e}"));
        let first = text.lines().next().unwrap_or_default();
        assert!(first.starts_with(header), "{file} header: {first}");
        assert!(text.lines().count() > 1, "{file} has rows:\n{text}");
    }
    let pages_csv = std::fs::read_to_string(csv_dir.join("pages.csv")).expect("pages.csv");
    assert_eq!(pages_csv.lines().count() - 1, pages.len(), "one row per page:\n{pages_csv}");
    assert!(pages_csv.contains(XSS), "{pages_csv}");
    assert!(pages_csv.contains("'=HYPERLINK("), "a formula-like cell is defused:\n{pages_csv}");
}

/// The legal pages of a German site (issue 12, item 8): an Impressum whose text gives an e-mail
/// address (written the spam-shy way) and a postal address (spread over elements, as templates
/// write it), and a privacy policy, both linked from the start page: no legal finding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_complete_impressum_and_a_privacy_policy_raise_no_legal_finding() {
    let home = clean_page(
        "Startseite",
        r#"<footer><a href="/rechtliches/anbieter">Impressum</a> · <a href="/ds">Datenschutzerklärung</a></footer>"#,
    );
    let imprint = clean_page(
        "Impressum",
        r#"<p>Beispiel GmbH<br><span>Musterstraße</span> <span>12</span><br><span>10115</span> <span>Berlin</span></p>
           <p>E-Mail: kontakt [at] beispiel [dot] de</p>"#,
    );
    let site = shoal_tests::testsite::Site::new("vollstaendig.de")
        .page("/", &home)
        .page("/rechtliches/anbieter", &imprint)
        .page("/ds", &clean_page("Datenschutz", ""));
    let server = shoal_tests::testsite::TestServer::start(vec![site]).await.expect("server starts");
    let (run, log) = common::audit_host(server, "vollstaendig.de", &[]).await;
    assert_eq!(run.exit, Exit::Ok);
    assert_eq!(log.count("vollstaendig.de", "/rechtliches/anbieter"), 1, "{}", log.dump());
    let legal: Vec<_> = db::findings(&run.db)
        .into_iter()
        .filter(|f| matches!(f.0.as_str(), "impressum_missing" | "impressum_incomplete" | "privacy_policy_missing"))
        .collect();
    assert!(legal.is_empty(), "{legal:#?}");
}

/// Re-auditing an unchanged site compares as unchanged (issue 12, item 5): a slow page and a
/// soft 404 are found again with new numbers and a new probe path, and stay "remaining", not
/// "fixed" plus "new".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_site_audited_twice_compares_as_unchanged() {
    let home = clean_page("Home", r#"<a href="/slow">slow</a>"#);
    let site = shoal_tests::testsite::Site::new("same.test")
        .page("/", &home)
        .route(
            "/slow",
            shoal_tests::testsite::Route::html(clean_page("Slow", "")).delayed(std::time::Duration::from_millis(1100)),
        )
        .fallback(shoal_tests::testsite::Route::html(clean_page("Anything", "")));
    let server = shoal_tests::testsite::TestServer::start(vec![site]).await.expect("server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("audit.db");
    let db_arg = db_path.display().to_string();
    let resolve = format!("same.test={}", std::net::Ipv4Addr::LOCALHOST);
    let start = server.url("same.test", "/");
    for _ in 0..2 {
        let args = [
            "shoal",
            "audit",
            &start,
            "--db",
            &db_arg,
            "--no-dns",
            "--no-progress",
            "--allow-private",
            "--resolve",
            &resolve,
            "--gap-ms",
            "0",
        ];
        let exit = shoal::run(
            shoal::cli::Cli::try_parse_from(args).expect("parses"),
            tokio_util::sync::CancellationToken::new(),
        )
        .await
        .unwrap_or_else(|f| panic!("audit failed: {:#}", f.error));
        assert_eq!(exit, Exit::Ok);
    }
    let out = dir.path().join("compare.json");
    let out_arg = out.display().to_string();
    let args = ["shoal", "report", "--db", &db_arg, "--compare", "1", "2", "--format", "json", "--out", &out_arg];
    shoal::run(shoal::cli::Cli::try_parse_from(args).expect("parses"), tokio_util::sync::CancellationToken::new())
        .await
        .unwrap_or_else(|f| panic!("compare failed: {:#}", f.error));
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).expect("compare written")).expect("JSON");
    let remaining: Vec<&str> =
        doc["sites"][0]["remaining"].as_array().expect("remaining").iter().filter_map(|f| f["code"].as_str()).collect();
    assert!(remaining.contains(&"slow_response") && remaining.contains(&"soft_404"), "{doc:#}");
    assert_eq!((doc["summary"]["new"].as_u64(), doc["summary"]["fixed"].as_u64()), (Some(0), Some(0)), "{doc:#}");
    drop(server);
}
