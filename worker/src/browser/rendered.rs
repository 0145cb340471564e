//! The page as its scripts left it: the DOM Chromium built, serialised after the load and before
//! any click or key, read by the crawl's own extractor ([`crate::extract`]) so each fact means
//! what the crawl's raw fact means, and the script errors of the load (`js/probe.js`). The store's
//! site analysis compares the two versions (`rendered_*` findings).

use chromiumoxide::Page;
use shoal_shared::browser::{MAX_RENDERED_LINKS, MAX_SCRIPT_ERROR_CHARS, MAX_SCRIPT_ERRORS, Rendered};

use super::js::eval;
use crate::extract::{ExtractCaps, Link, PageFacts};

/// At most this many characters of the serialised DOM are read (the crawl reads 10 MB pages at
/// most; a DOM this large is cut, and its facts describe the part before the cut, as the crawl's).
const MAX_DOM_CHARS: usize = 5 * 1024 * 1024;

/// Reads the rendered page in `page`, whose address is now `final_url`.
pub(super) async fn read(page: &Page, final_url: &str) -> Result<Rendered, String> {
    read_links(page, final_url).await.map(|(r, _)| r)
}

/// [`read`], and the rendered page's links to pages (`<a>`, `<area>`, `<iframe>`; at most
/// [`MAX_RENDERED_LINKS`]) as the crawl's extractor found them, with whether its meta robots say
/// `nofollow`: what the rendered crawl records and follows.
pub(super) async fn read_links(page: &Page, final_url: &str) -> Result<(Rendered, PageLinks), String> {
    let base = url::Url::parse(final_url).map_err(|e| format!("the page's address {final_url}: {e}"))?;
    let html: String = eval(
        page,
        &format!("document.documentElement ? document.documentElement.outerHTML.slice(0, {MAX_DOM_CHARS}) : ''"),
    )
    .await?;
    let errors: Vec<String> =
        eval(page, "window.__shoal && window.__shoal.errors ? window.__shoal.errors() : []").await?;
    // Parsing a large DOM takes milliseconds to seconds: off the async threads, awaited here.
    let facts = tokio::task::spawn_blocking(move || crate::extract::extract(&html, &base, &ExtractCaps::default()))
        .await
        .map_err(|e| format!("reading the rendered page failed: {e}"))?;
    let links = PageLinks {
        links: facts.links.iter().filter(|l| l.kind.is_navigation()).take(MAX_RENDERED_LINKS).cloned().collect(),
        nofollow: facts.robots_nofollow(),
    };
    Ok((of(&facts, errors), links))
}

/// A rendered page's links to pages, and whether the page says `nofollow` for all of them.
#[derive(Debug, Default)]
pub struct PageLinks {
    /// In document order.
    pub links: Vec<Link>,
    /// The page's meta robots say `nofollow`.
    pub nofollow: bool,
}

/// The facts kept of a rendered page.
fn of(facts: &PageFacts, errors: Vec<String>) -> Rendered {
    let mut links: Vec<String> = Vec::new();
    for l in facts.links.iter().filter(|l| l.kind.is_navigation()) {
        if links.len() == MAX_RENDERED_LINKS {
            break;
        }
        links.push(l.url.to_string());
    }
    Rendered {
        title: facts.title.clone(),
        meta_description: facts.meta_description.clone(),
        canonical: facts.canonical.clone(),
        meta_robots: facts.meta_robots.clone(),
        h1: facts.h1.clone(),
        links,
        words: facts.main_text.words,
        hreflang: facts.hreflang.clone(),
        structured_types: facts.structured.types.clone(),
        script_errors: errors
            .into_iter()
            .take(MAX_SCRIPT_ERRORS)
            .map(|e| e.chars().take(MAX_SCRIPT_ERROR_CHARS).collect())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rendered_facts_are_the_extractors_and_page_links_only() {
        let base = url::Url::parse("https://shop.example/").expect("url");
        let html = r#"<html><head><title> Shop </title><meta name="robots" content="NOINDEX">
            <link rel="canonical" href="/home"><script src="/app.js"></script>
            <link rel="alternate" hreflang="de" href="/de/">
            <script type="application/ld+json">{"@context":"https://schema.org","@type":"Product","name":"Bread"}</script></head>
            <body><h1>Welcome</h1><a href="/a#x">a</a><a href="/a">again</a><img src="/i.png">
            <iframe src="/frame"></iframe></body></html>"#;
        let facts = crate::extract::extract(html, &base, &ExtractCaps::default());
        let r = of(&facts, vec!["x".repeat(1000); 30]);
        assert_eq!(r.title.as_deref(), Some("Shop"));
        assert_eq!(r.canonical.as_deref(), Some("https://shop.example/home"));
        assert!(r.noindex());
        assert_eq!(r.h1, ["Welcome"]);
        assert_eq!(r.links, ["https://shop.example/a", "https://shop.example/frame"], "no image, no script");
        assert_eq!(r.hreflang, [("de".to_owned(), "https://shop.example/de/".to_owned())]);
        assert_eq!(r.structured_types, ["Product"]);
        assert_eq!(r.script_errors.len(), MAX_SCRIPT_ERRORS);
        assert!(r.script_errors.iter().all(|e| e.chars().count() == MAX_SCRIPT_ERROR_CHARS));
    }
}
