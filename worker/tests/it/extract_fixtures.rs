//! `extract` on whole pages kept as fixtures (tests/fixtures/html), the way they come off the wire.

use shoal_worker::charset::decode_html;
use shoal_worker::extract::{ExtractCaps, LinkKind, PageFacts, extract};
use url::Url;

fn fixture_bytes(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/html/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).expect("fixture file is readable")
}

fn page(name: &str, url: &str) -> PageFacts {
    page_with(name, url, &ExtractCaps::default())
}

fn page_with(name: &str, url: &str, caps: &ExtractCaps) -> PageFacts {
    let bytes = fixture_bytes(name);
    let (html, _) = decode_html(&bytes, Some("text/html"));
    let base = Url::parse(url).expect("test page URL parses");
    extract(&html, &base, caps)
}

fn links(facts: &PageFacts) -> Vec<(LinkKind, &str, bool, Option<&str>)> {
    facts.links.iter().map(|l| (l.kind, l.url.as_str(), l.nofollow, l.text.as_deref())).collect()
}

#[test]
fn blog_post_facts() {
    let f = page("blog_post.html", "https://www.example.com/blog/fish-and-chips/");
    assert_eq!(f.title.as_deref(), Some("Fish & Chips: a History"));
    assert_eq!(f.title_count, 1);
    assert_eq!(f.meta_description.as_deref(), Some("Where fish & chips came from."));
    assert_eq!(f.meta_description_count, 1);
    assert_eq!(f.h1, vec!["Fish & Chips: a History".to_owned()]);
    assert_eq!(f.h2_count, 2);
    assert_eq!(
        f.canonical.as_deref(),
        Some("https://www.example.com/blog/fish-and-chips?utm=x&a=1#top"),
        "canonical: entities decoded, resolved, otherwise as written"
    );
    assert_eq!(f.canonical_count, 1);
    assert!(!f.canonical_in_body);
    assert_eq!(
        f.hreflang,
        vec![
            ("en-gb".to_owned(), "https://www.example.com/blog/fish-and-chips".to_owned()),
            ("fr".to_owned(), "https://www.example.com/fr/blog/poisson-frites".to_owned()),
            ("x-default".to_owned(), "https://www.example.com/blog/fish-and-chips".to_owned()),
        ]
    );
    assert_eq!(f.html_lang.as_deref(), Some("en-GB"));
    assert_eq!(f.base_href, None);
    assert!(f.meta_robots.is_empty());
    assert!(!f.robots_noindex() && !f.robots_nofollow());
    assert_eq!(f.images_without_alt, 1);
    assert!(f.mixed_content.is_empty());
    assert!(f.invalid_links.is_empty(), "{:?}", f.invalid_links);
    assert!(!f.links_truncated);
    assert_eq!(f.meta_refresh, None);
    assert_eq!(f.word_count, 46);

    use LinkKind::*;
    let home = "https://www.example.com/";
    let self_url = "https://www.example.com/blog/fish-and-chips/";
    assert_eq!(
        links(&f),
        vec![
            (OtherLink, "https://www.example.com/feed/", false, None),
            (Stylesheet, "https://www.example.com/wp-content/themes/t/style.css?ver=6.5", false, None),
            (Icon, "https://www.example.com/favicon.ico", false, None),
            (Preload, "https://www.example.com/fonts/a.woff2", false, None),
            (Script, "https://www.example.com/wp-includes/js/jquery.min.js?ver=3.7.1", false, None),
            (Anchor, home, false, Some("Home")),
            (Anchor, "https://www.example.com/blog/about/", false, Some("About us")),
            (Anchor, "https://www.example.com/blog/fish-and-chips/related-post/", false, Some("Related")),
            (Anchor, "https://cdn.example.org/x", false, Some("Protocol-relative")),
            (Anchor, "https://www.example.com/blog/fish-and-chips/?page=2", false, Some("Next page")),
            // `#comments` and `/blog/fish-and-chips/#respond` are the page itself: one link.
            (Anchor, self_url, false, Some("Jump to comments")),
            (Anchor, "https://partner.example.net/deal", true, Some("Partner")),
            (Anchor, "https://www.example.com/search?q=fish&lang=en", false, Some("Search")),
            (Image, "https://www.example.com/img/chippy.jpg", false, None),
            (Image, "https://www.example.com/img/spacer.gif", false, None),
            (Anchor, "https://www.example.com/gallery/", false, Some("Gallery of chippies")),
            (Image, "https://www.example.com/img/thumb.jpg", false, None),
            (Iframe, "https://www.youtube.com/embed/abc", false, None),
            (Media, "https://www.example.com/media/fry.mp4", false, None),
            (Media, "https://www.example.com/media/fry.webm", false, None),
            (Media, "https://www.example.com/media/sizzle.mp3", false, None),
            (Anchor, "https://www.example.com/map/north", false, Some("North")),
        ]
    );
    for hidden in ["from-script", "from-comment", "from-textarea", "from-template"] {
        assert!(!f.links.iter().any(|l| l.url.as_str().contains(hidden)), "{hidden} must not be a link");
    }
}

#[test]
fn base_href_applies_to_the_whole_document() {
    let f = page("base_href.html", "https://example.com/page");
    assert_eq!(f.base_href.as_deref(), Some("/docs/v2/"));
    assert_eq!(
        links(&f),
        vec![
            (LinkKind::Anchor, "https://example.com/docs/v2/intro.html", false, Some("Intro")),
            (LinkKind::Anchor, "https://example.com/docs/v1/intro.html", false, Some("Old intro")),
            (LinkKind::Anchor, "https://example.com/absolute", false, Some("Absolute")),
            (LinkKind::Anchor, "https://other.example/x", false, Some("Other")),
            (LinkKind::Image, "https://example.com/docs/v2/img/diagram.png", false, None),
        ]
    );
}

#[test]
fn canonical_pushed_into_body_by_a_stray_img_in_head() {
    let f = page("canonical_in_body.html", "https://shop.example.com/products/1?ref=mail");
    assert_eq!(f.canonical.as_deref(), Some("https://shop.example.com/products/1"));
    assert_eq!(f.canonical_count, 1);
    assert!(f.canonical_in_body, "the <img> closed <head> early");
    assert_eq!(f.title.as_deref(), Some("Shop"));
    assert_eq!(f.meta_description.as_deref(), Some("A product"));
}

#[test]
fn mixed_content_on_https_page() {
    let f = page("mixed_content.html", "https://secure.example.com/");
    assert_eq!(
        f.mixed_content,
        vec![
            "http://cdn.example.com/site.css",
            "http://cdn.example.com/favicon.ico",
            "http://cdn.example.com/app.js",
            "http://images.example.com/a.png",
            "http://embed.example.com/widget",
            "http://media.example.com/v.mp4",
        ]
    );
    assert_eq!(f.html_lang.as_deref(), Some("de"));
    // The same page over plain http has no mixed content.
    let f = page("mixed_content.html", "http://secure.example.com/");
    assert!(f.mixed_content.is_empty());
}

#[test]
fn uppercase_meta_robots_and_refresh() {
    let f = page("robots_uppercase.html", "http://old.example/");
    assert_eq!(f.title.as_deref(), Some("Old school"));
    assert_eq!(f.meta_robots, vec!["noindex", "nofollow", "max-snippet:20"]);
    assert!(f.robots_noindex());
    assert!(f.robots_nofollow());
    assert_eq!(f.meta_refresh.as_deref(), Some("5; URL=/new-home"));
    assert_eq!(
        links(&f),
        vec![
            (LinkKind::Anchor, "http://old.example/Page.HTML", false, Some("Page")),
            (LinkKind::Anchor, "http://old.example/nofollowed", true, Some("Nofollowed")),
        ]
    );
    // Without a robots token only the generic directives apply.
    let generic_only = ExtractCaps { robots_token: None, ..ExtractCaps::default() };
    let f = page_with("robots_uppercase.html", "http://old.example/", &generic_only);
    assert_eq!(f.meta_robots, vec!["noindex", "nofollow"]);
}

#[test]
fn malformed_document_with_garbage_bytes() {
    let bytes = fixture_bytes("malformed.bin");
    let html = String::from_utf8_lossy(&bytes);
    let base = Url::parse("https://broken.example/dir/page").expect("URL parses");
    let f = extract(&html, &base, &ExtractCaps::default());
    assert_eq!(f.title.as_deref(), Some("Broken <b>page"));
    assert_eq!(f.h1, vec!["Unclosed heading".to_owned()]);
    let urls: Vec<&str> = f.links.iter().map(|l| l.url.as_str()).collect();
    for want in [
        "https://broken.example/svg-link",
        "https://broken.example/o1",
        "https://broken.example/o2",
        "https://broken.example/img.png",
    ] {
        assert!(urls.contains(&want), "{want} missing from {urls:?}");
    }
    assert!(f.invalid_links.iter().any(|l| l == "http://exa mple.com/"), "{:?}", f.invalid_links);
    assert!(!urls.iter().any(|u| u.contains("from-script") || u.contains("in-comment")));
    // Also through the charset path, which sees the raw bytes.
    let (decoded, _) = decode_html(&bytes, None);
    let _ = extract(&decoded, &base, &ExtractCaps::default());
}
