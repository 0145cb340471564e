//! Compressed answers are seen as compressed: `compression_missing` only for what was really sent
//! uncompressed, the body decoded, and `Content-Encoding` kept with the page (issue 12: the HTTP
//! client used to drop the header when it decoded, so every gzip page got the finding).

use crate::common;

use shoal::Exit;
use shoal_tests::testsite::{Route, Site, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_page_is_decoded_and_not_reported_as_uncompressed() {
    let filler = "<p>Plenty of text that compresses well. </p>".repeat(200);
    let page = |title: &str, body: &str| {
        format!(
            r#"<html lang="en"><head><title>{title}</title><meta name="description" content="{title}"></head>
            <body><h1>{title}</h1>{body}</body></html>"#
        )
    };
    let site = Site::new("gz.test")
        .page("/", &page("Home", r#"<a href="/zipped">zipped</a> <a href="/plain">plain</a>"#))
        .route(
            "/zipped",
            Route::html(page("Zipped page", &format!("{filler}<a href=\"/only-from-zipped\">x</a>"))).gzipped(),
        )
        .route("/plain", Route::html(page("Plain page", &filler)))
        .page("/only-from-zipped", &page("Reached", ""));
    let server = TestServer::start(vec![site]).await.expect("server starts");
    let (run, log) = common::audit_host(server, "gz.test", &[]).await;
    assert_eq!(run.exit, Exit::Ok);
    let zipped = log.for_host("gz.test").into_iter().find(|r| r.path == "/zipped").expect("/zipped requested");
    assert!(
        zipped.header("accept-encoding").is_some_and(|v| v.contains("gzip") && v.contains("br")),
        "Shoal asks for compression as browsers do: {:?}",
        zipped.header("accept-encoding")
    );

    let findings = crate::db::findings(&run.db);
    let uncompressed: Vec<&str> =
        findings.iter().filter(|f| f.0 == "compression_missing").map(|f| f.1.as_str()).collect();
    assert!(uncompressed.iter().any(|u| u.ends_with("/plain")), "the plain page is uncompressed: {findings:#?}");
    assert!(!uncompressed.iter().any(|u| u.ends_with("/zipped")), "the gzip page is compressed: {findings:#?}");

    // Decoded: its title was read and the page it alone links to was crawled.
    let titles = crate::db::query(&run.db, "SELECT url, title, headers_json FROM pages", [], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, String>(2)?))
    });
    let (_, title, headers) = titles.iter().find(|t| t.0.ends_with("/zipped")).expect("/zipped recorded");
    assert_eq!(title.as_deref(), Some("Zipped page"));
    assert!(headers.contains("content-encoding") && headers.contains("gzip"), "{headers}");
    assert!(titles.iter().any(|t| t.0.ends_with("/only-from-zipped")), "{titles:#?}");
}
