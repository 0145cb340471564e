//! `extract` on markup whose parse would not be linear (issue 9): the parse is cut at the depth or
//! work limit, the facts found before the cut are kept, and `parse_cut` says where it happened.

use shoal_worker::extract::{ExtractCaps, LinkKind, PageFacts, extract};
use shoal_worker::parse::{CHUNK, CutReason, DEFAULT_MAX_DEPTH, ParseLimits};
use url::Url;

const PAGE: &str = "https://example.com/";

fn run_with(html: &str, caps: &ExtractCaps) -> PageFacts {
    let base = Url::parse(PAGE).expect("test page URL parses");
    extract(html, &base, caps)
}

fn run(html: &str) -> PageFacts {
    run_with(html, &ExtractCaps::default())
}

fn anchors(f: &PageFacts) -> Vec<&str> {
    f.links.iter().filter(|l| l.kind == LinkKind::Anchor).map(|l| l.url.as_str()).collect()
}

/// A page with a head and a link, then `middle` (the hostile part), then a link that comes too late.
fn page(middle: &str) -> String {
    format!(
        "<!doctype html><html lang=en><head><title>Deep</title>\
         <meta name=description content=\"Nested\"></head><body><h1>Deep</h1>\
         <a href=/before>before</a>{middle}<a href=/after>after</a><h1>late</h1></body></html>"
    )
}

#[test]
fn million_nested_divs_keep_the_facts_before_the_cut() {
    let html = page(&"<div>".repeat(1_000_000));
    let f = run(&html);
    let cut = f.parse_cut.expect("the parse is cut");
    assert_eq!(cut.reason, CutReason::Depth);
    assert_eq!(cut.limit, DEFAULT_MAX_DEPTH as u64);
    assert_eq!((cut.at_byte, cut.total_bytes), (CHUNK, html.len()));
    assert_eq!(anchors(&f), ["https://example.com/before"]);
    assert_eq!(f.title.as_deref(), Some("Deep"));
    assert_eq!(f.meta_description.as_deref(), Some("Nested"));
    assert_eq!(f.h1, ["Deep"]);
    assert_eq!(f.html_lang.as_deref(), Some("en"));
}

#[test]
fn million_unclosed_formatting_elements_are_cut() {
    for tag in ["<b>", "<font color=red>", "<object><a href=/n>n", "<table><tr><td><div>"] {
        let html = page(&tag.repeat(1_000_000 / tag.len() * 3));
        let f = run(&html);
        let cut = f.parse_cut.unwrap_or_else(|| panic!("{tag}: the parse is cut"));
        assert_eq!(cut.reason, CutReason::Depth, "{tag}");
        assert!(cut.at_byte < 64 * 1024, "{tag}: cut early, {cut:?}");
        assert_eq!(anchors(&f).first().copied(), Some("https://example.com/before"), "{tag}");
        assert!(!anchors(&f).contains(&"https://example.com/after"), "{tag}");
    }
}

#[test]
fn work_limit_cuts_shallow_but_costly_markup() {
    let caps = ExtractCaps {
        parse_limits: ParseLimits { max_work: 2_000_000, ..ParseLimits::default() },
        ..ExtractCaps::default()
    };
    let html = page(&format!("{}{}", "<div>".repeat(400), "<p>x</p>".repeat(200_000)));
    let f = run_with(&html, &caps);
    let cut = f.parse_cut.expect("the parse is cut");
    assert_eq!((cut.reason, cut.limit), (CutReason::Work, 2_000_000));
    assert_eq!(anchors(&f), ["https://example.com/before"]);
}

#[test]
fn ordinary_pages_are_not_cut() {
    // Unclosed <p>/<li>/<td>/<option>, void elements and closed nesting, a few megabytes of it.
    let block = "<div class=post><h2>Post</h2><p>Text <a href=/p>link</a> <b>bold</b> <img src=/i.png alt=i>\
                 <p>More<br>text<ul><li>one<li>two</ul><table><tr><td>1<td>2<tr><td>3</table>\
                 <select><option>a<option>b</select><dl><dt>t<dd>d</dl></div>";
    let html = page(&block.repeat(5 * 1024 * 1024 / block.len()));
    let f = run(&html);
    assert_eq!(f.parse_cut, None);
    assert!(anchors(&f).contains(&"https://example.com/after"));
}
