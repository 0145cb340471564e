//! Compressed answers are seen as compressed: `compression_missing` only for what was really sent
//! uncompressed, the body decoded, and `Content-Encoding` kept with the page (issue 12: the HTTP
//! client used to drop the header when it decoded, so every gzip page got the finding).

use crate::common;

use shoal::Exit;
use shoal_tests::testsite::{Route, Site, TestServer};
use tokio::io::AsyncReadExt;

/// `html` encoded as `encoding` (`br` or `zstd`), in memory.
async fn encode(html: &str, encoding: &str) -> Vec<u8> {
    use async_compression::tokio::bufread::{BrotliEncoder, ZstdEncoder};
    let mut out = Vec::new();
    let read = match encoding {
        "br" => BrotliEncoder::new(html.as_bytes()).read_to_end(&mut out).await,
        "zstd" => ZstdEncoder::new(html.as_bytes()).read_to_end(&mut out).await,
        other => panic!("no encoder for {other}"),
    };
    read.expect("encoding in memory");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_br_and_zstd_pages_are_decoded_and_only_the_plain_one_is_reported_uncompressed() {
    let filler = "<p>Plenty of text that compresses well. </p>".repeat(200);
    let page = |title: &str, body: &str| {
        format!(
            r#"<html lang="en"><head><title>{title}</title><meta name="description" content="{title}"></head>
            <body><h1>{title}</h1>{body}</body></html>"#
        )
    };
    let encoded = |title: &str, encoding: &str| {
        let html = page(title, &filler);
        let encoding = encoding.to_owned();
        async move {
            Route::bytes("text/html; charset=utf-8", encode(&html, &encoding).await)
                .header("content-encoding", &encoding)
        }
    };
    let site = Site::new("gz.test")
        .page(
            "/",
            &page(
                "Home",
                r#"<a href="/zipped">zipped</a> <a href="/plain">plain</a> <a href="/brotli">br</a> <a href="/zstd">zstd</a>"#,
            ),
        )
        .route("/brotli", encoded("Brotli page", "br").await)
        .route("/zstd", encoded("Zstd page", "zstd").await)
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
    assert_eq!(uncompressed.len(), 1, "only the plain page: {findings:#?}");

    // Decoded: its title was read and the page it alone links to was crawled.
    let titles = crate::db::query(&run.db, "SELECT url, title, headers_json FROM pages", [], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, String>(2)?))
    });
    let (_, title, headers) = titles.iter().find(|t| t.0.ends_with("/zipped")).expect("/zipped recorded");
    assert_eq!(title.as_deref(), Some("Zipped page"));
    assert!(headers.contains("content-encoding") && headers.contains("gzip"), "{headers}");
    assert!(titles.iter().any(|t| t.0.ends_with("/only-from-zipped")), "{titles:#?}");
    for (path, title, encoding) in [("/brotli", "Brotli page", "br"), ("/zstd", "Zstd page", "zstd")] {
        let (_, got, headers) = titles.iter().find(|t| t.0.ends_with(path)).expect("recorded");
        assert_eq!(got.as_deref(), Some(title), "{path} decoded");
        assert!(headers.contains(&format!("\"{encoding}\"")), "{path}: {headers}");
    }
}
