//! `<link>` elements as documentation generators write them: a page first met as
//! `<link rel=next>` is crawled as a page (with everything only it links to), and `<link rev=made>`
//! is requested by nobody (issue 12).

use crate::common;

use shoal::Exit;
use shoal_tests::testsite::Site;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_first_named_by_link_rel_next_is_crawled_with_what_only_it_links_to() {
    let page = |title: &str, head: &str, body: &str| {
        format!(
            r#"<html lang="en"><head><title>{title}</title><meta name="description" content="{title}">{head}</head>
            <body><h1>{title}</h1>{body}</body></html>"#
        )
    };
    // As Sphinx does: the next chapter in <head> before the body links to it; chapter 3 is linked
    // only from chapter 2.
    let site = Site::new("docs.test")
        .page(
            "/",
            &page(
                "Contents",
                r#"<link rel="next" title="Chapter 2" href="/ch2.html"><link rev="made" href="/made-by.html">
                   <link rel="index" href="/genindex.html">"#,
                r#"<a href="/ch2.html">Chapter 2</a>"#,
            ),
        )
        .page("/ch2.html", &page("Chapter 2", r#"<link rel="prev" href="/">"#, r#"<a href="/ch3.html">Chapter 3</a>"#))
        .page("/ch3.html", &page("Chapter 3", "", "<p>The end.</p>"))
        .page("/genindex.html", &page("Index", "", r#"<a href="/ch3.html">Chapter 3</a>"#))
        .page("/made-by.html", &page("Made by", "", ""));
    let server = shoal_tests::testsite::TestServer::start(vec![site]).await.expect("server starts");
    let (run, log) = common::audit_host(server, "docs.test", &[]).await;
    assert_eq!(run.exit, Exit::Ok);

    let pages = crate::db::pages(&run.db);
    let kind_of = |path: &str| {
        pages.iter().find(|p| p.0.ends_with(path)).map(|p| (p.1.clone(), p.2)).unwrap_or_else(|| {
            panic!("{path} not recorded: {pages:#?}\n{}", log.dump());
        })
    };
    for path in ["/ch2.html", "/ch3.html", "/genindex.html"] {
        assert_eq!(kind_of(path), ("page".to_owned(), Some(200)), "{path} crawled as a page");
    }
    assert_eq!(log.count("docs.test", "/ch2.html"), 1, "{}", log.dump());
    assert_eq!(log.count("docs.test", "/made-by.html"), 0, "rev=made is not requested\n{}", log.dump());
    assert!(!pages.iter().any(|p| p.0.ends_with("/made-by.html")), "{pages:#?}");
}
