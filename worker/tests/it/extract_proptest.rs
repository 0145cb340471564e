//! `extract` never panics and keeps its promises, whatever the input.

use proptest::prelude::*;
use shoal_worker::extract::{ExtractCaps, extract, normalize_url};
use url::Url;

/// Fragments that exercise the tricky paths: tags, attributes, entities, URLs, foreign content.
fn html_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("<a href=".to_owned()),
        Just("<base href=".to_owned()),
        Just("<link rel=canonical href=".to_owned()),
        Just("<link rel=\"alternate\" hreflang=x href=".to_owned()),
        Just("<link rel=stylesheet href=".to_owned()),
        Just("<img src=".to_owned()),
        Just("<meta name=robots content=".to_owned()),
        Just("<meta http-equiv=refresh content=".to_owned()),
        Just("<title>".to_owned()),
        Just("</title>".to_owned()),
        Just("<h1>".to_owned()),
        Just("<script>".to_owned()),
        Just("<!--".to_owned()),
        Just("-->".to_owned()),
        Just("<svg>".to_owned()),
        Just("<template>".to_owned()),
        Just("<object>".to_owned()),
        Just("<table><td>".to_owned()),
        Just("<body>".to_owned()),
        Just("</html>".to_owned()),
        Just("\"".to_owned()),
        Just("'".to_owned()),
        Just(">".to_owned()),
        Just("&amp;".to_owned()),
        Just("&#x0;".to_owned()),
        Just("&copy".to_owned()),
        Just("%7e".to_owned()),
        Just("%".to_owned()),
        Just("%2F".to_owned()),
        Just("http://".to_owned()),
        Just("https://".to_owned()),
        Just("//".to_owned()),
        Just("../".to_owned()),
        Just("?".to_owned()),
        Just("#".to_owned()),
        Just("[::1".to_owned()),
        Just(" ".to_owned()),
        Just("\u{0}".to_owned()),
        Just("é".to_owned()),
        "[a-zA-Z0-9/.:]{0,12}",
        any::<String>(),
    ]
}

fn html_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(html_piece(), 0..60).prop_map(|pieces| pieces.concat())
}

fn check(html: &str, base: &str) {
    let caps = ExtractCaps { max_links: 8, max_url_len: 64, ..ExtractCaps::default() };
    let base = Url::parse(base).expect("base parses");
    let f = extract(html, &base, &caps);
    assert!(f.links.len() <= caps.max_links);
    for link in &f.links {
        assert!(matches!(link.url.scheme(), "http" | "https"), "{}", link.url);
        assert!(link.url.fragment().is_none(), "{}", link.url);
        assert!(link.url.as_str().len() <= caps.max_url_len, "{}", link.url);
        let mut again = link.url.clone();
        normalize_url(&mut again);
        assert_eq!(again, link.url, "normalisation is idempotent");
        if let Some(text) = &link.text {
            assert!(text.chars().count() <= shoal_worker::extract::MAX_ANCHOR_TEXT_CHARS);
            assert!(!text.is_empty() && text.trim() == text);
        }
    }
    assert!(f.invalid_links.len() <= shoal_worker::extract::MAX_INVALID_LINKS);
}

proptest! {
    #[test]
    fn arbitrary_strings_never_panic(html in any::<String>()) {
        check(&html, "https://example.com/dir/page?x=1");
    }

    #[test]
    fn html_soup_never_panics(html in html_soup()) {
        check(&html, "https://example.com/dir/page");
        check(&html, "http://127.0.0.1:8080/");
    }

    #[test]
    fn normalize_url_is_idempotent(path in "(/|%[0-9a-fA-F]{2}|%|[a-z~._-]|é){0,20}",
                                   query in "([a-z=&]|%[0-9a-fA-F]{2}|%){0,12}") {
        let Ok(mut url) = Url::parse(&format!("https://example.com{path}?{query}")) else {
            return Ok(());
        };
        normalize_url(&mut url);
        let once = url.clone();
        normalize_url(&mut url);
        prop_assert_eq!(url, once);
    }
}
