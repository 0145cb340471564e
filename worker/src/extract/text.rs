//! The main text of a page, as a [`TextFingerprint`]: its words counted and hashed in one pass,
//! never kept (`shoal_shared::content`).
//!
//! Which text: inside `<main>` (or `role="main"`) when the page has one; otherwise the body
//! without `<nav>`, `<header>`, `<footer>` and `<aside>` (nor the ARIA roles of those landmarks),
//! where a site's menus and footers live, so pages are compared by what they say rather than by
//! the template they share. Text of scripts, styles, `<noscript>`, `<template>`, form fields and
//! `<title>` is never page text.

use super::is_html;
use super::tree::{Step, attr, walk_events};
use scraper::{Html, Node};
use shoal_shared::content::{Fingerprinter, TextFingerprint};

/// Elements whose content is never read as page text.
const NOT_TEXT: &[&str] = &["script", "style", "noscript", "template", "textarea", "select", "title", "head"];
/// Landmarks of a site's template rather than a page's content.
const BOILERPLATE: &[&str] = &["nav", "header", "footer", "aside"];
const BOILERPLATE_ROLES: &[&str] = &["navigation", "banner", "contentinfo", "complementary"];

/// The fingerprint of the page's main text (see the module documentation).
#[must_use]
pub fn main_text(doc: &Html) -> TextFingerprint {
    let mut main = Fingerprinter::default();
    let mut rest = Fingerprinter::default();
    let mut saw_main = false;
    // Open `<main>` and boilerplate elements around the current node.
    let (mut in_main, mut in_boilerplate) = (0usize, 0usize);
    walk_events(doc, |step| match step {
        Step::Enter(node) => match node.value() {
            Node::Text(t) => {
                if in_main > 0 {
                    main.push_text(t);
                } else if in_boilerplate == 0 {
                    rest.push_text(t);
                }
                false
            }
            Node::Element(el) => {
                let name = el.name();
                if is_html(el) && NOT_TEXT.contains(&name) {
                    return false;
                }
                let role = attr(el, "role").map(str::trim).unwrap_or("");
                if (is_html(el) && name == "main") || role.eq_ignore_ascii_case("main") {
                    saw_main = true;
                    in_main += 1;
                } else if (is_html(el) && BOILERPLATE.contains(&name))
                    || BOILERPLATE_ROLES.iter().any(|r| role.eq_ignore_ascii_case(r))
                {
                    in_boilerplate += 1;
                }
                true
            }
            Node::Document => true,
            _ => false,
        },
        Step::Exit(node) => {
            if let Node::Element(el) = node.value() {
                let role = attr(el, "role").map(str::trim).unwrap_or("");
                if (is_html(el) && el.name() == "main") || role.eq_ignore_ascii_case("main") {
                    in_main = in_main.saturating_sub(1);
                } else if (is_html(el) && BOILERPLATE.contains(&el.name()))
                    || BOILERPLATE_ROLES.iter().any(|r| role.eq_ignore_ascii_case(r))
                {
                    in_boilerplate = in_boilerplate.saturating_sub(1);
                }
            }
            true
        }
    });
    if saw_main { main.finish() } else { rest.finish() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(html: &str) -> u32 {
        main_text(&Html::parse_document(html)).words
    }

    #[test]
    fn main_wins_and_the_template_is_left_out() {
        let template = "<header>Shop name</header><nav>Home Shoes Bags</nav><footer>Imprint Privacy</footer>";
        assert_eq!(words(&format!("{template}<main><h1>Red shoes</h1><p>Soft leather.</p></main><p>outside</p>")), 4);
        assert_eq!(words(&format!("{template}<div><h1>Red shoes</h1><p>Soft leather.</p></div>")), 4);
        assert_eq!(words("<div role=main>one two</div><div>three</div>"), 2);
        assert_eq!(words("<div role=navigation>menu</div><p>a b</p><script>var x = 1;</script><style>p{}</style>"), 2);
        let a = main_text(&Html::parse_document(&format!("{template}<main>Same text here</main>")));
        let b = main_text(&Html::parse_document("<nav>Other menu</nav><main>same text, here!</main>"));
        assert_eq!(a.hash, b.hash, "the same main text in another template");
    }
}
