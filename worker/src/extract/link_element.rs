//! The `<link>` element: a canonical, an hreflang alternate (`rel=alternate hreflang`), or a link
//! of the kind its `rel` types say (stylesheet, icon, preload, a page of the series, or recorded
//! only); see the rules in the parent module's documentation.

use super::{Ctx, MAX_HREFLANG, Walker};
use scraper::node::Element;
use shoal_shared::record::LinkKind;

/// `<link>` types that name another page of the document's series or site (HTML's `next`, `prev`,
/// `help`, `license`, `author`; HTML 4's and DocBook's `start`, `contents`, `index`, `glossary`,
/// `chapter`, `section`, `subsection`, `appendix`, `copyright`, `up`, `first`, `last`, `top`,
/// `home`). Sphinx, DocBook and many CMSs emit them to real pages, which are crawled like anchors:
/// checked as resources they were marked seen unparsed, and a page first met this way was lost
/// with everything only it linked to. (`alternate`, `search`, `manifest`, `preload` … name
/// resources and stay [`LinkKind::OtherLink`].)
const PAGE_LINK_TYPES: &[&str] = &[
    "next",
    "prev",
    "previous",
    "help",
    "license",
    "author",
    "start",
    "contents",
    "toc",
    "index",
    "glossary",
    "chapter",
    "section",
    "subsection",
    "appendix",
    "copyright",
    "up",
    "first",
    "last",
    "top",
    "home",
];

/// `<link>` types a browser loads by itself (besides `stylesheet` and `icon`): checked as resources.
const LOADED_LINK_TYPES: &[&str] = &["preload", "modulepreload", "prefetch", "manifest"];

/// `rel` as ASCII-lower-cased tokens.
pub(super) fn rel_tokens(el: &Element) -> Vec<String> {
    el.attr("rel").map(|rel| rel.split_ascii_whitespace().map(str::to_ascii_lowercase).collect()).unwrap_or_default()
}

/// Whether `token` is among the `rel` tokens.
pub(super) fn has_token(tokens: &[String], token: &str) -> bool {
    tokens.iter().any(|t| t == token)
}

impl Walker<'_> {
    pub(super) fn link_element(&mut self, el: &Element, ctx: &Ctx) {
        let Some(href) = el.attr("href") else {
            return;
        };
        let rel = rel_tokens(el);
        if has_token(&rel, "canonical") {
            self.facts.canonical_count += 1;
            if !ctx.in_head {
                self.facts.canonical_in_body = true;
            }
            if self.facts.canonical.is_none() {
                self.facts.canonical = Some(self.resolve_as_written(href));
            }
            return;
        }
        if has_token(&rel, "alternate")
            && let Some(lang) = el.attr("hreflang")
        {
            if self.facts.hreflang.len() < MAX_HREFLANG {
                let resolved = self.resolve_as_written(href);
                self.facts.hreflang.push((lang.trim().to_owned(), resolved));
            } else {
                self.facts.hreflang_truncated = true;
            }
            return;
        }
        let kind = if has_token(&rel, "stylesheet") {
            LinkKind::Stylesheet
        } else if rel.iter().any(|t| t == "icon" || t == "mask-icon" || t.starts_with("apple-touch-icon")) {
            LinkKind::Icon
        } else if has_token(&rel, "dns-prefetch") || has_token(&rel, "preconnect") {
            // An origin, not a resource: not a link at all (a browser only opens a connection).
            return;
        } else if rel.iter().any(|t| LOADED_LINK_TYPES.contains(&t.as_str())) {
            LinkKind::Preload
        } else if rel.iter().any(|t| PAGE_LINK_TYPES.contains(&t.as_str())) {
            LinkKind::PageLink
        } else {
            // Feeds, search descriptions, `rev=made` without a rel, types we do not know: a
            // browser loads nothing for them, so they are recorded and never requested.
            LinkKind::OtherLink
        };
        if kind != LinkKind::OtherLink && href.trim().is_empty() {
            return;
        }
        self.add_link(href, kind, has_token(&rel, "nofollow"));
    }
}
