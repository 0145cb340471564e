//! The on-page basics of a page: its viewport, Open Graph and Twitter card tags, its images
//! without size attributes, and its `rel=next` / `rel=prev` links (`crate::checks::onpage` judges
//! them; the pagination targets are judged in the site analysis, which knows what they answer).

use super::tree::{Step, attr, walk_events};
use super::{MAX_INVALID_LINK_LEN, is_html, normalize_url, truncate_str};
use scraper::{Html, Node};
use serde::{Deserialize, Serialize};
use url::Url;

/// Images without width or height named per page, at most.
pub const MAX_UNSIZED_NAMED: usize = 5;
/// Characters kept of a meta tag's content.
const MAX_META_CHARS: usize = 1_024;

/// What [`collect`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnPage {
    /// The first `<meta name=viewport>`'s content.
    pub viewport: Option<String>,
    /// `og:title`, `og:image`, `og:url` (first of each, as written).
    pub og_title: Option<String>,
    /// See [`OnPage::og_title`].
    pub og_image: Option<String>,
    /// See [`OnPage::og_title`].
    pub og_url: Option<String>,
    /// `twitter:card`, `twitter:title`, `twitter:image` (or `twitter:image:src`).
    pub twitter_card: Option<String>,
    /// See [`OnPage::twitter_card`].
    pub twitter_title: Option<String>,
    /// See [`OnPage::twitter_card`].
    pub twitter_image: Option<String>,
    /// `<img>` elements without a `width` or a `height` attribute.
    pub unsized_images: usize,
    /// The `src` of the first [`MAX_UNSIZED_NAMED`] of them.
    pub unsized_named: Vec<String>,
    /// `<link rel=next>`, resolved and normalised.
    pub rel_next: Option<String>,
    /// `<link rel=prev>` or `rel=previous`, resolved and normalised.
    pub rel_prev: Option<String>,
}

/// Reads the on-page basics; `base` is the document's base URL.
#[must_use]
pub fn collect(doc: &Html, base: &Url) -> OnPage {
    let mut out = OnPage::default();
    walk_events(doc, |step| {
        let Step::Enter(node) = step else { return true };
        match node.value() {
            Node::Element(el) if is_html(el) => {
                match el.name() {
                    "meta" => meta(&mut out, el),
                    "img" => img(&mut out, el),
                    "link" => pagination(&mut out, el, base),
                    _ => {}
                }
                el.name() != "template"
            }
            Node::Document | Node::Element(_) => true,
            _ => false,
        }
    });
    out
}

fn set(slot: &mut Option<String>, content: Option<&str>) {
    if slot.is_none() {
        *slot = Some(truncate_str(content.unwrap_or("").trim(), MAX_META_CHARS));
    }
}

fn meta(out: &mut OnPage, el: &scraper::node::Element) {
    // Open Graph uses `property`, Twitter `name`; both are met the other way round in the wild.
    let key = attr(el, "property").or_else(|| attr(el, "name")).map(|k| k.trim().to_ascii_lowercase());
    let content = attr(el, "content");
    match key.as_deref() {
        Some("viewport") => set(&mut out.viewport, content),
        Some("og:title") => set(&mut out.og_title, content),
        Some("og:image" | "og:image:url") => set(&mut out.og_image, content),
        Some("og:url") => set(&mut out.og_url, content),
        Some("twitter:card") => set(&mut out.twitter_card, content),
        Some("twitter:title") => set(&mut out.twitter_title, content),
        Some("twitter:image" | "twitter:image:src") => set(&mut out.twitter_image, content),
        _ => {}
    }
}

fn img(out: &mut OnPage, el: &scraper::node::Element) {
    let given = |a: &str| attr(el, a).is_some_and(|v| !v.trim().is_empty());
    if given("width") && given("height") {
        return;
    }
    out.unsized_images += 1;
    if out.unsized_named.len() < MAX_UNSIZED_NAMED {
        out.unsized_named.push(truncate_str(attr(el, "src").unwrap_or("").trim(), MAX_INVALID_LINK_LEN));
    }
}

fn pagination(out: &mut OnPage, el: &scraper::node::Element, base: &Url) {
    let Some(href) = attr(el, "href") else { return };
    let rel = attr(el, "rel").unwrap_or("").to_ascii_lowercase();
    let tokens: Vec<&str> = rel.split_ascii_whitespace().collect();
    let slot = if tokens.contains(&"next") {
        &mut out.rel_next
    } else if tokens.contains(&"prev") || tokens.contains(&"previous") {
        &mut out.rel_prev
    } else {
        return;
    };
    if slot.is_some() || href.trim().is_empty() {
        return;
    }
    if let Ok(mut url) = base.join(href.trim())
        && matches!(url.scheme(), "http" | "https")
    {
        normalize_url(&mut url);
        *slot = Some(url.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_images_and_pagination() {
        let base = Url::parse("https://shop.test/c/shoes?page=2").expect("valid");
        let html = r#"<head><meta name="viewport" content="width=device-width">
            <meta property="og:title" content=" Shoes "><meta name="og:image" content="/i.png">
            <meta name="twitter:card" content="summary"><link rel="next" href="?page=3#x">
            <link rel="prev" href="https://shop.test/c/shoes?page=1"></head>
            <body><img src="a.png" width="1" height="1"><img src="b.png" width="1"><img src="c.png"></body>"#;
        let p = collect(&Html::parse_document(html), &base);
        assert_eq!(p.viewport.as_deref(), Some("width=device-width"));
        assert_eq!(
            (p.og_title.as_deref(), p.og_image.as_deref(), p.og_url.as_deref()),
            (Some("Shoes"), Some("/i.png"), None)
        );
        assert_eq!(p.twitter_card.as_deref(), Some("summary"));
        assert_eq!((p.unsized_images, p.unsized_named.as_slice()), (2, &["b.png".to_owned(), "c.png".to_owned()][..]));
        assert_eq!(p.rel_next.as_deref(), Some("https://shop.test/c/shoes?page=3"));
        assert_eq!(p.rel_prev.as_deref(), Some("https://shop.test/c/shoes?page=1"));
    }
}
