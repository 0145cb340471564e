//! Resources a page loads beyond `src` and `href`: the image candidates of `srcset` (`<img>`,
//! `<picture><source>`) and the `url()`s of its `<style>` elements and `style` attributes
//! (fonts, backgrounds). Each becomes a link like an `<img src>`, so it is checked like any other
//! resource; stylesheets the page links to are read by their own task (`crawl/stylesheet.rs`).

use super::tree::attr;
use super::{NodeRef, Walker};
use crate::css;
use scraper::Node;
use scraper::node::Element;
use shoal_shared::record::LinkKind;

/// Candidates read from one `srcset` at most (real ones list a handful of widths).
pub const MAX_SRCSET_CANDIDATES: usize = 32;
/// Bytes of inline CSS (`<style>` elements and `style` attributes together) scanned per page at
/// most; the rest is not read for URLs.
pub const MAX_INLINE_CSS_BYTES: usize = 512 * 1024;
/// `url()`s read from one `<style>` element or `style` attribute at most (links per page are
/// capped as well).
pub const MAX_INLINE_CSS_URLS: usize = 1_000;

/// The URLs of a `srcset`'s image candidates, by HTML's "parse a srcset attribute": a candidate is
/// a URL (no whitespace; trailing commas end it) and optional descriptors up to the next comma
/// outside parentheses. Descriptors are not judged: a browser may load any candidate.
#[must_use]
pub fn srcset_candidates(srcset: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = srcset;
    while out.len() < max {
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
        if rest.is_empty() {
            break;
        }
        let end = rest.find(|c: char| c.is_ascii_whitespace()).unwrap_or(rest.len());
        let (url, after) = rest.split_at(end);
        let trimmed = url.trim_end_matches(',');
        if !trimmed.is_empty() {
            out.push(trimmed);
        }
        rest = if trimmed.len() < url.len() {
            // `a.jpg,b.jpg`: the comma ended the candidate, and nothing followed but the next one.
            after
        } else {
            skip_descriptors(after)
        };
    }
    out
}

/// What follows the candidate's descriptors: the text after the next comma outside parentheses.
fn skip_descriptors(s: &str) -> &str {
    let mut in_parens = false;
    for (i, c) in s.char_indices() {
        match c {
            '(' => in_parens = true,
            ')' => in_parens = false,
            ',' if !in_parens => return &s[i + 1..],
            _ => {}
        }
    }
    ""
}

impl Walker<'_> {
    /// `srcset` of `<img>` or `<source>`: every candidate is an image.
    pub(super) fn srcset(&mut self, el: &Element) {
        let Some(srcset) = attr(el, "srcset") else { return };
        for url in srcset_candidates(srcset, MAX_SRCSET_CANDIDATES) {
            self.add_link(url, LinkKind::Image, false);
        }
    }

    /// A `<style>` element: its text (raw text, so text children only) is a stylesheet.
    pub(super) fn style_element(&mut self, node: NodeRef<'_>) {
        let mut css = String::new();
        for child in node.children() {
            if let Node::Text(t) = child.value() {
                css.push_str(t);
            }
        }
        self.inline_css(&css);
    }

    /// A `style` attribute: declarations that may load images.
    pub(super) fn style_attribute(&mut self, el: &Element) {
        if let Some(style) = attr(el, "style")
            && style.as_bytes().windows(4).any(|w| w.eq_ignore_ascii_case(b"url("))
        {
            self.inline_css(style);
        }
    }

    /// Scans inline CSS within the page's budget; URLs resolve against the document's base.
    fn inline_css(&mut self, css: &str) {
        let room = MAX_INLINE_CSS_BYTES.saturating_sub(self.inline_css_bytes);
        if room == 0 || css.trim().is_empty() {
            return;
        }
        let mut end = css.len().min(room);
        while !css.is_char_boundary(end) {
            end -= 1;
        }
        self.inline_css_bytes += end;
        // A cut inside a rule could make half a URL: only whole rules are read.
        let text = if end < css.len() { css[..end].rfind('}').map_or("", |i| &css[..=i]) } else { css };
        for (url, kind) in css::scan(text, MAX_INLINE_CSS_URLS).urls {
            self.add_link(&url, kind, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::srcset_candidates;

    fn c(s: &str) -> Vec<&str> {
        srcset_candidates(s, 32)
    }

    #[test]
    fn srcset_as_browsers_read_it() {
        assert_eq!(c("a.jpg 1x, b.jpg 2x"), ["a.jpg", "b.jpg"]);
        assert_eq!(c("small.jpg 480w,large.jpg 1080w"), ["small.jpg", "large.jpg"]);
        assert_eq!(c("a.jpg,b.jpg"), ["a.jpg,b.jpg"], "a comma inside a URL stays (HTML's rule)");
        assert_eq!(c("a.jpg, b.jpg"), ["a.jpg", "b.jpg"]);
        assert_eq!(
            c("https://cdn.test/w_100,h_100/x.jpg 100w, /y.jpg 200w"),
            ["https://cdn.test/w_100,h_100/x.jpg", "/y.jpg"]
        );
        assert_eq!(c("x.jpg (calc(1px, 2px)) 2x, y.jpg"), ["x.jpg", "y.jpg"]);
        assert_eq!(c("only.jpg"), ["only.jpg"]);
        assert_eq!(c("  ,, "), Vec::<&str>::new());
        assert_eq!(c("trailing.jpg,,, next.jpg 2x"), ["trailing.jpg", "next.jpg"]);
        let many = "i.jpg 1x, ".repeat(1_000);
        assert_eq!(srcset_candidates(&many, 32).len(), 32);
    }
}
