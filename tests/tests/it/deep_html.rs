//! Issue 9: deeply nested HTML hung the audit. The parse of 1,000,000 nested elements outlived the
//! lease, so the page was fetched and parsed again, forever. Now the parse stops at the depth
//! limit: the page is reported as `html_too_complex`, the links before the cut are followed, and
//! the site owner's log shows the page requested exactly once.

use crate::common;
use crate::finding_support::{clean_page, doc, rows, with_code};

use common::audit;
use shoal::Exit;
use shoal_tests::testsite::{Site, TestServer};

/// Elements in each hostile page: 5,000,000 bytes of `<div>`, under the 5 MiB body cap.
const NESTED: usize = 1_000_000;

/// A page whose body is a link to `/before-NAME`, `tag` repeated [`NESTED`] times, then a link to
/// `/after` that comes after the cut.
fn nested_page(name: &str, tag: &str) -> String {
    let body = format!(
        "<h1>{name}</h1><a href=\"/before-{name}\">before</a>{}<a href=\"/after\">after</a>",
        tag.repeat(NESTED)
    );
    doc(&format!("<title>{name}</title><meta name=\"description\" content=\"{name}\">"), &body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn million_nested_elements_are_reported_and_fetched_once() {
    let site = Site::new("deep.test")
        .page("/", &clean_page("Deep home", "<a href=\"/divs\">divs</a> <a href=\"/bolds\">bolds</a>"))
        .page("/divs", &nested_page("divs", "<div>"))
        .page("/bolds", &nested_page("bolds", "<b>"))
        .page("/before-divs", &clean_page("Before divs", ""))
        .page("/before-bolds", &clean_page("Before bolds", ""))
        .page("/after", &clean_page("After", ""));
    let server = TestServer::start(vec![site]).await.expect("server starts");
    let start = server.url("deep.test", "/");
    let url = |path: &str| server.url("deep.test", path);
    let (divs, bolds) = (url("/divs"), url("/bolds"));
    let run = audit(&server, &["deep.test"], std::slice::from_ref(&start), &["--gap-ms", "0"]).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;

    for path in ["/divs", "/bolds", "/before-divs", "/before-bolds"] {
        assert_eq!(log.count("deep.test", path), 1, "{path} requested once\n{}", log.dump());
    }
    assert_eq!(log.count("deep.test", "/after"), 0, "/after is linked only after the cut\n{}", log.dump());

    let found = rows(&run.db);
    let complex = with_code(&found, "html_too_complex");
    for page in [&divs, &bolds] {
        let row =
            complex.iter().find(|r| r.url == *page).unwrap_or_else(|| panic!("html_too_complex on {page}: {found:#?}"));
        assert!(row.detail.starts_with("elements nested more than 512 deep"), "{row}");
    }
    assert_eq!(complex.len(), 2, "{found:#?}");
    for code in ["fetch_failed", "title_missing", "h1_missing"] {
        assert!(with_code(&found, code).is_empty(), "{code}: {found:#?}");
    }
}
