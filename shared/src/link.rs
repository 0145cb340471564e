//! A link found on a page, as recorded: its kind and the record. Below the records (`record`)
//! and the browser's (`browser`), which both carry links, so neither imports the other for them.

use crate::spelled::spelled;
use serde::{Deserialize, Serialize};

/// Where a link points, as recorded (not all are followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// `<a href>`, `<area href>`.
    Anchor,
    /// `<img src>`.
    Image,
    /// `<script src>`.
    Script,
    /// `<link rel=stylesheet>`.
    Stylesheet,
    /// `<link rel=icon>`.
    Icon,
    /// `<iframe src>`.
    Iframe,
    /// `<source>`, `<video>`, `<audio>`.
    Media,
    /// Other `<link href>` (feeds, search descriptions, `rev=made`, unknown types): recorded,
    /// never requested, since a browser loads nothing for them.
    OtherLink,
    /// A `<loc>` of a sitemap (recorded on the sitemap's record, so sitemap coverage can be
    /// checked against what the URLs answer).
    SitemapEntry,
    /// The page's rel=canonical target (so canonical targets can be checked).
    Canonical,
    /// `<link rel=next|prev|index|contents|up|…>`: a hyperlink to another page (documentation
    /// generators and CMSs emit them for real pages), crawled as a page like an anchor. Browsers
    /// fetch nothing for these; only a crawl follows them.
    PageLink,
    /// `<link rel=preload|modulepreload|prefetch|manifest>`: a resource the browser loads.
    Preload,
    /// A `url()` inside an `@font-face` rule of a stylesheet (a `<link>`ed one, a `<style>`
    /// element): a web font.
    Font,
    /// Any other `url()` of a stylesheet or a `style` attribute: backgrounds, masks, cursors, list
    /// markers, mostly images.
    CssImage,
}

impl LinkKind {
    /// Whether following it means fetching a page (vs checking a resource).
    #[must_use]
    pub fn is_navigation(&self) -> bool {
        matches!(self, LinkKind::Anchor | LinkKind::Iframe | LinkKind::PageLink)
    }

    /// Whether the crawl requests its target at all: everything a browser loads or a visitor can
    /// follow, not the `<link>` types that load nothing ([`LinkKind::OtherLink`]).
    #[must_use]
    pub fn is_requested(&self) -> bool {
        !matches!(self, LinkKind::OtherLink)
    }
}

spelled!(LinkKind, "a link kind such as `anchor` or `image`", {
    Anchor => "anchor",
    Image => "image",
    Script => "script",
    Stylesheet => "stylesheet",
    Icon => "icon",
    Iframe => "iframe",
    Media => "media",
    OtherLink => "other_link",
    SitemapEntry => "sitemap_entry",
    Canonical => "canonical",
    PageLink => "page_link",
    Preload => "preload",
    Font => "font",
    CssImage => "css_image",
});

/// A link found on a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkRecord {
    /// Normalised target.
    pub url: String,
    /// What kind of element.
    pub kind: LinkKind,
    /// `rel=nofollow` on the link (or the page is nofollow).
    pub nofollow: bool,
    /// Within the site's scope.
    pub internal: bool,
    /// Anchor text, trimmed and capped.
    #[serde(default)]
    pub text: Option<String>,
}
