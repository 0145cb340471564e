//! `extract` edge cases, one small document per row.

use shoal_worker::extract::{ExtractCaps, LinkKind, PageFacts, extract, normalize_url};
use url::Url;

const PAGE: &str = "https://example.com/a/b/c.html";

fn run(html: &str) -> PageFacts {
    run_at(html, PAGE, &ExtractCaps::default())
}

fn run_at(html: &str, page: &str, caps: &ExtractCaps) -> PageFacts {
    let base = Url::parse(page).expect("test page URL parses");
    extract(html, &base, caps)
}

fn anchor_urls(f: &PageFacts) -> Vec<&str> {
    f.links.iter().filter(|l| l.kind == LinkKind::Anchor).map(|l| l.url.as_str()).collect()
}

#[test]
fn relative_resolution() {
    let cases = [
        ("../x", "https://example.com/a/x"),
        ("./y", "https://example.com/a/b/y"),
        ("y", "https://example.com/a/b/y"),
        ("/root", "https://example.com/root"),
        ("//other.example/x", "https://other.example/x"),
        ("?q=1", "https://example.com/a/b/c.html?q=1"),
        ("#frag", "https://example.com/a/b/c.html"),
        ("", "https://example.com/a/b/c.html"),
        ("  /spaced  ", "https://example.com/spaced"),
        ("/tab\tbed\nline", "https://example.com/tabbedline"),
        ("../../../../too-far", "https://example.com/too-far"),
        ("/a/./b/../c", "https://example.com/a/c"),
        ("HTTP://EXAMPLE.COM:80/Up", "http://example.com/Up"),
        ("https://example.com:443/p", "https://example.com/p"),
        ("https://Example.COM./x", "https://example.com./x"),
        ("http://xn--caf-dma.example/", "http://xn--caf-dma.example/"),
        ("http://café.example/", "http://xn--caf-dma.example/"),
        ("/é?ü=1", "https://example.com/%C3%A9?%C3%BC=1"),
    ];
    for (href, want) in cases {
        let html = format!("<a href=\"{href}\">x</a>");
        let f = run(&html);
        assert_eq!(anchor_urls(&f), vec![want], "href {href:?}");
        assert!(f.invalid_links.is_empty(), "href {href:?}");
    }
}

#[test]
fn percent_encoding_normalisation() {
    let cases = [
        ("/%7euser/", "https://example.com/~user/"),
        ("/%7Euser/", "https://example.com/~user/"),
        ("/a%2fb", "https://example.com/a%2Fb"),
        ("/a%2Fb", "https://example.com/a%2Fb"),
        ("/%41%62%30%2d%2e%5f", "https://example.com/Ab0-._"),
        ("/caf%c3%a9", "https://example.com/caf%C3%A9"),
        ("/%20space", "https://example.com/%20space"),
        ("/100%", "https://example.com/100%"),
        ("/%zz%4", "https://example.com/%zz%4"),
        ("/p?x=%7e%41%2f&y=%3d", "https://example.com/p?x=~A%2F&y=%3D"),
        ("/p?b=2&a=1", "https://example.com/p?b=2&a=1"),
    ];
    for (href, want) in cases {
        let f = run(&format!("<a href=\"{href}\">x</a>"));
        assert_eq!(anchor_urls(&f), vec![want], "href {href:?}");
    }
}

#[test]
fn normalize_url_directly() {
    let cases = [
        ("https://example.com/%7e?q=%7e#frag", "https://example.com/~?q=~"),
        ("https://example.com/a%2fb%3F", "https://example.com/a%2Fb%3F"),
        ("http://example.com/", "http://example.com/"),
        ("https://example.com/?", "https://example.com/?"),
    ];
    for (input, want) in cases {
        let mut url = Url::parse(input).expect("case parses");
        normalize_url(&mut url);
        assert_eq!(url.as_str(), want, "{input}");
        let again = url.clone();
        normalize_url(&mut url);
        assert_eq!(url, again, "idempotent on {input}");
    }
}

#[test]
fn entities_in_href_and_title() {
    let f = run(concat!(
        "<title>Tom &amp; Jerry &lt;3 &eacute;&#233;&#xE9;</title>",
        "<a href=\"/p?a=1&amp;b=2\">1</a>",
        "<a href=\"/p?x=1&copy=3\">2</a>",
        "<a href=\"/p?x=1&copy;=3\">3</a>",
        "<a href=\"&#47;slash\">4</a>",
    ));
    assert_eq!(f.title.as_deref(), Some("Tom & Jerry <3 ééé"));
    assert_eq!(
        anchor_urls(&f),
        vec![
            "https://example.com/p?a=1&b=2",
            // Legacy rule: `&copy` followed by `=` in an attribute is not a reference.
            "https://example.com/p?x=1&copy=3",
            "https://example.com/p?x=1%C2%A9=3",
            "https://example.com/slash",
        ]
    );
}

#[test]
fn raw_text_and_inert_content_has_no_links() {
    let cases = [
        "<!-- <a href=\"/x\">x</a> -->",
        "<script>document.write('<a href=\"/x\">x</a>')</script>",
        "<textarea><a href=\"/x\">x</a></textarea>",
        "<style>/* <a href=\"/x\"> */</style>",
        "<noscript><a href=\"/x\">x</a></noscript>",
        "<template><a href=\"/x\">x</a></template>",
        "<title><a href=\"/x\">x</a></title>",
        "<plaintext><a href=\"/x\">x</a>",
        "<xmp><a href=\"/x\">x</a></xmp>",
    ];
    for html in cases {
        let f = run(&format!("<body>{html}<a href=\"/after\">after</a>"));
        assert_eq!(
            anchor_urls(&f),
            if html.starts_with("<plaintext>") { vec![] } else { vec!["https://example.com/after"] },
            "{html}"
        );
    }
}

#[test]
fn nofollow_tokens() {
    let cases = [
        ("nofollow", true),
        ("NoFollow", true),
        ("noopener nofollow noreferrer", true),
        ("\tnofollow\n", true),
        ("nofollowed", false),
        ("ugc", false),
        ("sponsored", false),
        ("", false),
    ];
    for (rel, want) in cases {
        let f = run(&format!("<a href=\"/x\" rel=\"{rel}\">x</a>"));
        assert_eq!(f.links.first().map(|l| l.nofollow), Some(want), "rel {rel:?}");
    }
    // One followed occurrence makes the URL followable; text is the first non-empty one.
    let f = run(concat!(
        "<a href=\"/x\" rel=nofollow><img src=/i.png alt=\"\"></a>",
        "<a href=\"/x#again\">second text</a>",
        "<a href=\"/x\" rel=nofollow>third text</a>",
    ));
    let x: Vec<_> = f.links.iter().filter(|l| l.kind == LinkKind::Anchor).collect();
    assert_eq!(x.len(), 1);
    assert!(!x[0].nofollow);
    assert_eq!(x[0].text.as_deref(), Some("second text"));
}

#[test]
fn other_schemes_are_ignored_and_bad_urls_are_invalid() {
    let ignored = [
        "javascript:void(0)",
        " JavaScript:alert(1)",
        "mailto:a@example.com",
        "tel:+1",
        "data:text/plain,x",
        "ftp://example.com/f",
        "about:blank",
        "urn:isbn:123",
    ];
    for href in ignored {
        let f = run(&format!("<a href=\"{href}\">x</a>"));
        assert!(f.links.is_empty(), "{href} is not a link");
        assert!(f.invalid_links.is_empty(), "{href} is not invalid either");
    }
    let invalid =
        ["http://exa mple.com/", "http://[::1", "https://", "http://999.999.999.999/", "http://example.com:99999/"];
    for href in invalid {
        let f = run(&format!("<a href=\"{href}\">x</a>"));
        assert!(f.links.is_empty(), "{href}");
        assert_eq!(f.invalid_links, vec![href.to_owned()], "{href}");
    }
}

#[test]
fn empty_src_is_ignored_but_empty_href_is_self() {
    let f = run("<img src=\"\" alt=x><script src=\" \"></script><a href=\"\">me</a>");
    assert_eq!(f.links.len(), 1);
    assert_eq!(f.links[0].url.as_str(), PAGE);
}

#[test]
fn url_length_cap() {
    let caps = ExtractCaps { max_url_len: 60, ..ExtractCaps::default() };
    let long = format!("/{}", "a".repeat(80));
    let html = format!("<a href=\"/short\">s</a><a href=\"{long}\">l</a>");
    let f = run_at(&html, PAGE, &caps);
    assert_eq!(anchor_urls(&f), vec!["https://example.com/short"]);
    assert_eq!(f.invalid_links.len(), 1);
    assert!(f.invalid_links[0].starts_with("https://example.com/aaaa"));
}

#[test]
fn links_cap() {
    let caps = ExtractCaps { max_links: 5, ..ExtractCaps::default() };
    let html_n = |n: usize| (0..n).map(|i| format!("<a href=\"/p{i}\">p</a>")).collect::<String>();
    let f = run_at(&html_n(5), PAGE, &caps);
    assert_eq!(f.links.len(), 5);
    assert!(!f.links_truncated, "exactly at the cap is not over it");

    let f = run_at(&html_n(10_000), PAGE, &caps);
    assert_eq!(f.links.len(), 5);
    assert!(f.links_truncated);
    assert_eq!(f.links[4].url.as_str(), "https://example.com/p4");

    // Repeats of kept links are not "more links".
    let html = format!("{}<a href=\"/p0\">again</a><a href=\"/p1#x\">again</a>", html_n(5));
    let f = run_at(&html, PAGE, &caps);
    assert!(!f.links_truncated);
}

#[test]
fn invalid_links_are_capped() {
    let html: String = (0..1_000).map(|i| format!("<a href=\"http://bad host{i}/\">x</a>")).collect();
    let f = run(&html);
    assert_eq!(f.invalid_links.len(), shoal_worker::extract::MAX_INVALID_LINKS);
}

#[test]
fn titles_descriptions_and_headings() {
    struct Case {
        html: &'static str,
        title: Option<&'static str>,
        title_count: usize,
        description: Option<&'static str>,
        description_count: usize,
        h1: &'static [&'static str],
    }
    let cases = [
        Case {
            html: "<p>no head at all",
            title: None,
            title_count: 0,
            description: None,
            description_count: 0,
            h1: &[],
        },
        Case {
            html: "<title></title><meta name=description content=\"\">",
            title: Some(""),
            title_count: 1,
            description: Some(""),
            description_count: 1,
            h1: &[],
        },
        Case {
            html: "<title> \n\t </title><meta name=Description>",
            title: Some(""),
            title_count: 1,
            description: Some(""),
            description_count: 1,
            h1: &[],
        },
        Case {
            html: concat!(
                "<title>First</title><title>Second</title>",
                "<meta name=description content=one><meta name=DESCRIPTION content=two>",
                "<body><svg><title>svg title</title></svg><h1> A <b>b</b>c </h1><h1></h1>",
            ),
            title: Some("First"),
            title_count: 2,
            description: Some("one"),
            description_count: 2,
            h1: &["A bc", ""],
        },
    ];
    for c in cases {
        let f = run(c.html);
        assert_eq!(f.title.as_deref(), c.title, "{}", c.html);
        assert_eq!(f.title_count, c.title_count, "{}", c.html);
        assert_eq!(f.meta_description.as_deref(), c.description, "{}", c.html);
        assert_eq!(f.meta_description_count, c.description_count, "{}", c.html);
        assert_eq!(f.h1, c.h1, "{}", c.html);
    }
}

#[test]
fn anchor_text_is_capped() {
    let long = "word ".repeat(100);
    let f = run(&format!("<a href=/x>{long}</a>"));
    let text = f.links[0].text.as_deref().expect("anchor has text");
    assert_eq!(text.chars().count(), shoal_worker::extract::MAX_ANCHOR_TEXT_CHARS);
    assert!(text.starts_with("word word"));
}

#[test]
fn canonical_and_hreflang_edge_cases() {
    let f = run("<link rel=canonical href=\"\"><link rel=\"CANONICAL\" href=\"http://[bad\">");
    assert_eq!(f.canonical.as_deref(), Some(""), "empty href is reported empty");
    assert_eq!(f.canonical_count, 2);
    let f = run("<link rel=canonical href=\"http://[bad\">");
    assert_eq!(f.canonical.as_deref(), Some("http://[bad"));
    let f = run("<link rel=canonical>");
    assert_eq!(f.canonical, None, "no href, no canonical");
    // alternate + hreflang is not a link; alternate without hreflang (a feed) is.
    let f = run(concat!(
        "<link rel=alternate hreflang=de href=/de/>",
        "<link rel=alternate type=application/atom+xml href=/atom.xml>",
    ));
    assert_eq!(f.hreflang, vec![("de".to_owned(), "https://example.com/de/".to_owned())]);
    assert_eq!(f.links.len(), 1);
    assert_eq!(f.links[0].kind, LinkKind::OtherLink);
}

#[test]
fn link_elements_that_name_pages_are_page_links_and_the_others_are_only_recorded() {
    // What Sphinx and DocBook write in <head>: the series' neighbours and its index are pages.
    let f = run(concat!(
        "<link rel=\"next\" title=\"Next\" href=\"ch02.html\">",
        "<link rel=\"prev\" href=\"ch00.html\">",
        "<link rel=\"index\" title=\"Index\" href=\"genindex.html\">",
        "<link rel=\"Start contents\" href=\"/index.html\">",
        "<link rev=\"made\" href=\"https://example.com/author.html\">",
        "<link href=\"https://example.com/no-rel.css\">",
        "<link rel=\"search\" type=\"application/opensearchdescription+xml\" href=\"/os.xml\">",
        "<link rel=\"preconnect\" href=\"https://fonts.example/\">",
    ));
    let kinds: Vec<(&str, LinkKind)> = f.links.iter().map(|l| (l.url.as_str(), l.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("https://example.com/a/b/ch02.html", LinkKind::PageLink),
            ("https://example.com/a/b/ch00.html", LinkKind::PageLink),
            ("https://example.com/a/b/genindex.html", LinkKind::PageLink),
            ("https://example.com/index.html", LinkKind::PageLink),
            ("https://example.com/author.html", LinkKind::OtherLink),
            ("https://example.com/no-rel.css", LinkKind::OtherLink),
            ("https://example.com/os.xml", LinkKind::OtherLink),
        ],
        "rev=made, a link without rel and search are recorded, preconnect is no link"
    );
    assert!(!LinkKind::OtherLink.is_requested(), "other links are never requested");
    assert!(LinkKind::PageLink.is_navigation(), "page links are crawled as pages");
}

#[test]
fn base_href_edge_cases() {
    let cases = [
        // Only http(s) bases are used for resolution.
        ("<base href=\"javascript:alert(1)\">", "https://example.com/a/b/x"),
        ("<base href=\"http://[bad\">", "https://example.com/a/b/x"),
        ("<base target=_blank><base href=\"https://cdn.example/\">", "https://cdn.example/x"),
        ("<base href=\"//mirror.example/m/\">", "https://mirror.example/m/x"),
        ("<body><a href=x>x</a><base href=\"/late/\">", "https://example.com/late/x"),
    ];
    for (head, want) in cases {
        let f = run(&format!("{head}<a href=x>x</a>"));
        assert_eq!(anchor_urls(&f).first().copied(), Some(want), "{head}");
    }
}

#[test]
fn word_count_ignores_head_and_scripts() {
    let f = run(concat!(
        "<head><title>Not counted</title><style>p { x: y }</style></head>",
        "<body><p>One two  three</p><script>var not = counted;</script>",
        "<noscript>not counted</noscript><textarea>not counted</textarea>four</body>",
    ));
    assert_eq!(f.word_count, 4);
}

#[test]
fn deep_nesting_does_not_overflow_or_go_quadratic() {
    // Under the depth limit (512, as in Blink) everything is found; deeper, the parse is cut
    // (extract_bounded.rs) and html5ever's quadratic scope checks never run long.
    let depth = 500;
    let html = format!("{}<a href=/deep>deep</a>{}", "<div>".repeat(depth), "</div>".repeat(depth));
    let f = run(&html);
    assert_eq!(anchor_urls(&f), vec!["https://example.com/deep"]);
    assert_eq!(f.parse_cut, None);
    // Nested anchors through <object> markers, each with text below it.
    let html = "<object><a href=/n>n ".repeat(5_000);
    let f = run(&html);
    assert_eq!(f.links.len(), 1);
    let html = "<h1><object>text ".repeat(5_000);
    let f = run(&html);
    assert_eq!(f.h1.len(), shoal_worker::extract::MAX_H1);
}

#[test]
fn anchor_text_across_blocks_and_inline_markup() {
    let cases = [
        ("<a href=/x><div>Title</div>Desc</a>", "Title Desc"),
        ("<a href=/x><h3>Title</h3><p>Desc</p></a>", "Title Desc"),
        ("<a href=/x>line<br>break</a>", "line break"),
        ("<a href=/x>in<b>line</b> <i>markup</i></a>", "inline markup"),
        ("<a href=/x>\n  spaced \t out\n</a>", "spaced out"),
        ("<a href=/x><img src=/i.png alt=\" Logo \"></a>", "Logo"),
        ("<a href=/x><script>no()</script>text</a>", "text"),
    ];
    for (html, want) in cases {
        let f = run(html);
        let anchor = f.links.iter().find(|l| l.kind == LinkKind::Anchor).expect("anchor found");
        assert_eq!(anchor.text.as_deref(), Some(want), "{html}");
    }
}

/// Issue 37: every image a browser may load is a link, whether named by `src`, a `srcset`
/// candidate or a `<picture>` source, and so is every `url()` of the page's own CSS.
#[test]
fn srcset_picture_and_inline_css_are_resources() {
    let f = run(concat!(
        "<style>@font-face{font-family:F;src:url(/fonts/f.woff2) format('woff2')}",
        ".hero{background:url('../hero.jpg')}</style>",
        "<picture><source type=image/webp srcset=\"/p/a.webp 1x, /p/a@2x.webp 2x\">",
        "<img src=/p/a.jpg srcset=\"/p/a-480.jpg 480w,/p/a-960.jpg 960w\" alt=a></picture>",
        "<video><source src=/v.mp4></video>",
        "<div style=\"background-image: URL(/bg.png)\">x</div><p style=\"color:red\">y</p>",
        "<template><img srcset=/inert.jpg></template>",
    ));
    let got: Vec<(&str, LinkKind)> = f.links.iter().map(|l| (l.url.as_str(), l.kind)).collect();
    assert_eq!(
        got,
        vec![
            ("https://example.com/fonts/f.woff2", LinkKind::Font),
            ("https://example.com/a/hero.jpg", LinkKind::CssImage),
            ("https://example.com/p/a.webp", LinkKind::Image),
            ("https://example.com/p/a@2x.webp", LinkKind::Image),
            ("https://example.com/p/a.jpg", LinkKind::Image),
            ("https://example.com/p/a-480.jpg", LinkKind::Image),
            ("https://example.com/p/a-960.jpg", LinkKind::Image),
            ("https://example.com/v.mp4", LinkKind::Media),
            ("https://example.com/bg.png", LinkKind::CssImage),
        ]
    );
    assert_eq!(f.word_count, 2, "CSS text is not page text");
}

/// Inline CSS is read within a budget per page, and only up to its last complete rule.
#[test]
fn inline_css_is_bounded() {
    let rule = ".x{background:url(/i.png)}";
    let huge = rule.repeat(60_000);
    let f = run(&format!("<style>{huge}</style><style>.y{{background:url(/later.png)}}</style>"));
    let css: Vec<&str> = f.links.iter().filter(|l| l.kind == LinkKind::CssImage).map(|l| l.url.as_str()).collect();
    assert_eq!(
        css,
        vec!["https://example.com/i.png"],
        "one URL, repeated; the budget was spent before the second sheet"
    );
}
