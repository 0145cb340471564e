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

/// How a URL was first seen never decides alone (issue 12, item 1): a URL an `<img>` names before
/// an `<a>` does, on the same page or on an earlier one, is crawled as a page, and so is a
/// "resource" whose answer is HTML; a page is never also checked as a resource.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_is_crawled_as_a_page_when_any_link_navigates_to_it_or_it_answers_html() {
    let page = |title: &str, body: &str| {
        format!(
            r#"<html lang="en"><head><title>{title}</title><meta name="description" content="{title}"></head>
            <body><h1>{title}</h1>{body}</body></html>"#
        )
    };
    let site = Site::new("roles.test")
        .page(
            "/",
            &page(
                "Home",
                r#"<img src="/same-page.html" alt="x"> <a href="/same-page.html">same page</a>
                   <img src="/later.html" alt="y"> <a href="/next.html">next</a>
                   <link rel="stylesheet" href="/style-is-html">"#,
            ),
        )
        .page("/next.html", &page("Next", r#"<a href="/later.html">later</a>"#))
        .page("/same-page.html", &page("Same page", r#"<a href="/only-from-same.html">deeper</a>"#))
        .page("/later.html", &page("Later", r#"<a href="/only-from-later.html">deeper</a>"#))
        .page("/style-is-html", &page("Not a stylesheet", r#"<a href="/only-from-style.html">deeper</a>"#))
        .page("/only-from-same.html", &page("A", ""))
        .page("/only-from-later.html", &page("B", ""))
        .page("/only-from-style.html", &page("C", ""));
    let server = shoal_tests::testsite::TestServer::start(vec![site]).await.expect("server starts");
    let (run, log) = common::audit_host(server, "roles.test", &[]).await;
    assert_eq!(run.exit, Exit::Ok);
    let pages = crate::db::pages(&run.db);
    let kind_of = |path: &str| {
        pages.iter().find(|p| p.0.ends_with(path)).map(|p| p.1.clone()).unwrap_or_else(|| {
            panic!("{path} not recorded: {pages:#?}\n{}", log.dump());
        })
    };
    for path in ["/same-page.html", "/later.html", "/style-is-html"] {
        assert_eq!(kind_of(path), "page", "{path} crawled as a page\n{}", log.dump());
    }
    for path in ["/only-from-same.html", "/only-from-later.html", "/only-from-style.html"] {
        assert_eq!(kind_of(path), "page", "{path}, linked only from a page first seen as a resource");
    }
    let requests = |path: &str| -> Vec<String> {
        log.for_host("roles.test").iter().filter(|r| r.path == path).map(|r| r.method.clone()).collect()
    };
    assert_eq!(requests("/same-page.html"), vec!["GET"], "one page fetch, no resource check first");
    assert_eq!(requests("/later.html"), vec!["HEAD", "GET"], "checked as an image, then crawled");
    // A stylesheet is read with a GET (for its url()s, issue 37); its answer was HTML, so the URL
    // is crawled as a page, with a request of its own.
    assert_eq!(requests("/style-is-html"), vec!["GET", "GET"], "read as a stylesheet, answered HTML: crawled");
}
