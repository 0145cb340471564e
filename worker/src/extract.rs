//! HTML to page facts: one plain synchronous function, [`extract`], returning owned data.
//!
//! `scraper::Html` is `!Send`, so the parsed tree never leaves [`extract`]; callers on an async
//! runtime get a [`PageFacts`] they can hold across `.await`. Parsing follows the HTML5 algorithm
//! (html5ever, scripting on), so links inside comments, `<script>`, `<textarea>` and `<noscript>`
//! are not links, entities are decoded, and an element the parser moved from `<head>` into `<body>`
//! is reported where it really ended up (SPEC §5 "canonical problems").
//!
//! Everything collected is capped (SPEC §7): links, invalid links, headings, text lengths. Going
//! over a cap sets a flag or truncates; it never allocates without bound and never panics.
//!
//! Decisions worth knowing:
//! - **Links are deduplicated by (URL, kind)**, first occurrence first, in document order. A link
//!   is `nofollow` only if *every* occurrence is; its text is the first non-empty anchor text.
//!   [`ExtractCaps::max_links`] counts unique links.
//! - Only http(s) targets are links. Other schemes (`javascript:`, `mailto:`, `tel:`, `data:`,
//!   `ftp:`…) are ignored, not invalid. An `href` the URL parser rejects, or whose normalised form
//!   is longer than [`ExtractCaps::max_url_len`], is an invalid link.
//! - `<a href="">` is a link to the page itself (as in a browser); an empty `src` is ignored.
//! - `<link>` by its `rel` (the table is in docs/design.md, "Which links are requested"):
//!   `canonical` and `alternate hreflang` go to their own fields; `stylesheet`, `icon`, `preload`,
//!   `modulepreload`, `prefetch` and `manifest` load a resource and are checked;
//!   `next|prev|index|…` name another page: [`LinkKind::PageLink`], crawled like an anchor;
//!   `dns-prefetch` and `preconnect` name an origin and are not links at all; everything else
//!   (feeds, `search`, `rev=made`, unknown types) is [`LinkKind::OtherLink`]: recorded, never
//!   requested, since a browser loads nothing for it.
//! - Every `srcset` candidate of `<img>` and `<source>` is an image link, and the `url()`s of
//!   `<style>` elements and `style` attributes are links of kind `font` or `css_image`
//!   (`extract/resources.rs`); `<template>` contents are inert and ignored.
//! - Page-level `nofollow` (meta robots) is *not* folded into [`Link::nofollow`]; ask
//!   [`PageFacts::robots_nofollow`].
//! - Parsing is bounded in work as well as bytes ([`crate::parse`]): a document nested deeper than
//!   browsers build, or one whose parse would be superlinear, is parsed up to that point only. The
//!   facts are those of the part before the cut, and [`PageFacts::parse_cut`] says where it was.

use std::collections::{HashMap, HashSet};
use std::ops::Deref;

mod link_element;
mod resources;

use crate::custom::{CompiledRules, CustomValues};
use crate::parse::{ParseCut, ParseLimits, parse_bounded};
use link_element::{has_token, rel_tokens};
use scraper::node::Element;
use scraper::{ElementRef, Html, Node};
use serde::{Deserialize, Serialize};
use shoal_shared::content::TextFingerprint;
use url::Url;

pub use shoal_shared::record::LinkKind;

pub mod onpage;
pub mod structured;
pub mod text;
mod tree;

/// Default for [`ExtractCaps::max_links`].
pub const DEFAULT_MAX_LINKS: usize = 5_000;
/// Default for [`ExtractCaps::max_url_len`]: the crawler's own URL cap.
pub const DEFAULT_MAX_URL_LEN: usize = shoal_shared::url::MAX_URL_LEN;
/// Default for [`ExtractCaps::robots_token`]: the crawler's default robots product token.
pub const DEFAULT_ROBOTS_TOKEN: &str = "ShoalBot";
/// At most this many invalid hrefs are kept (enough to report the problem, not to store a dump).
pub const MAX_INVALID_LINKS: usize = 100;
/// Invalid hrefs and over-long URLs are kept truncated to this many bytes.
pub const MAX_INVALID_LINK_LEN: usize = 512;
/// Title, meta description and h1 texts are kept up to this many characters.
pub const MAX_TEXT_CHARS: usize = 1_024;
/// Anchor texts are kept up to this many characters.
pub const MAX_ANCHOR_TEXT_CHARS: usize = 200;
/// At most this many h1 texts are kept (more than one is already a finding).
pub const MAX_H1: usize = 64;
/// At most this many meta robots directives are kept.
pub const MAX_ROBOTS_DIRECTIVES: usize = 64;
/// At most this many hreflang alternates are kept.
pub const MAX_HREFLANG: usize = 1_000;
/// At most this many mixed-content URLs are kept.
pub const MAX_MIXED_CONTENT: usize = 1_000;

const XHTML_NS: &str = "http://www.w3.org/1999/xhtml";

/// Limits and settings for [`extract`]. Construct with `..ExtractCaps::default()` so new settings
/// do not break callers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractCaps {
    /// Unique links kept per page; beyond it [`PageFacts::links_truncated`] is set.
    pub max_links: usize,
    /// Longest normalised link URL, in bytes; longer ones are invalid links.
    pub max_url_len: usize,
    /// Besides `<meta name=robots>`, directives from `<meta name=TOKEN>` (ASCII case-insensitive)
    /// apply to us, as they would to a search engine's own token. `None`: generic robots only.
    pub robots_token: Option<String>,
    /// How deep and how costly the HTML parse may get before it is cut ([`PageFacts::parse_cut`]).
    pub parse_limits: ParseLimits,
}

impl Default for ExtractCaps {
    fn default() -> Self {
        ExtractCaps {
            max_links: DEFAULT_MAX_LINKS,
            max_url_len: DEFAULT_MAX_URL_LEN,
            robots_token: Some(DEFAULT_ROBOTS_TOKEN.to_owned()),
            parse_limits: ParseLimits::default(),
        }
    }
}

/// A link found on a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// Absolute http(s) target, normalised by [`normalize_url`] (no fragment).
    pub url: Url,
    /// Which element it came from.
    pub kind: LinkKind,
    /// `rel` contains `nofollow` on every occurrence of this (URL, kind) on the page.
    pub nofollow: bool,
    /// Anchor text (or the `alt` of an image-only anchor / `<area>`), whitespace collapsed,
    /// at most [`MAX_ANCHOR_TEXT_CHARS`] characters; `None` when empty or not an anchor.
    pub text: Option<String>,
}

/// What an audit needs to know about one HTML page (SPEC §5), as owned data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageFacts {
    /// First `<title>`, whitespace collapsed and trimmed; `Some("")` when present but empty.
    pub title: Option<String>,
    /// Number of `<title>` elements (SVG titles excluded).
    pub title_count: usize,
    /// First `<meta name=description>` content, collapsed; `Some("")` when present but empty.
    pub meta_description: Option<String>,
    /// Number of `<meta name=description>` elements.
    pub meta_description_count: usize,
    /// Text of each `<h1>` (at most [`MAX_H1`]), collapsed.
    pub h1: Vec<String>,
    /// Number of `<h2>` elements.
    pub h2_count: usize,
    /// First `<link rel=canonical href>`, resolved against the document base but otherwise as
    /// written (fragment kept). Unresolvable hrefs are kept raw; an empty href gives `Some("")`.
    pub canonical: Option<String>,
    /// Number of `<link rel=canonical href>` elements.
    pub canonical_count: usize,
    /// A canonical link ended up outside `<head>` (search engines ignore it there).
    pub canonical_in_body: bool,
    /// Lower-cased directives from `<meta name=robots>` and `<meta name=TOKEN>`.
    pub meta_robots: Vec<String>,
    /// `(hreflang, resolved href)` from `<link rel=alternate hreflang>`.
    pub hreflang: Vec<(String, String)>,
    /// More than [`MAX_HREFLANG`] alternates: the rest were not kept.
    #[serde(default)]
    pub hreflang_truncated: bool,
    /// `lang` of the `<html>` element, trimmed.
    pub html_lang: Option<String>,
    /// First `<base href>` as written (trimmed). It is used for resolution only when it resolves
    /// to an http(s) URL.
    pub base_href: Option<String>,
    /// Unique links in document order, at most [`ExtractCaps::max_links`].
    pub links: Vec<Link>,
    /// More unique links than [`ExtractCaps::max_links`] were found.
    pub links_truncated: bool,
    /// Hrefs that did not parse or were over the URL length cap (at most [`MAX_INVALID_LINKS`],
    /// each truncated to [`MAX_INVALID_LINK_LEN`] bytes).
    pub invalid_links: Vec<String>,
    /// `<img>` elements with no `alt` attribute at all (`alt=""` marks a decorative image).
    pub images_without_alt: usize,
    /// On an https page: distinct `http://` subresources (img, script, stylesheet, icon, iframe,
    /// media).
    pub mixed_content: Vec<String>,
    /// First `<meta http-equiv=refresh>` content, as written.
    pub meta_refresh: Option<String>,
    /// Whitespace-separated words in `<body>` text outside script/style/noscript/textarea.
    /// Approximate: a word split by inline markup counts twice, CJK text counts few words.
    pub word_count: usize,
    /// The parse stopped before the end of the document (too deeply nested or too costly, see
    /// [`ExtractCaps::parse_limits`]): every other field describes the part before the cut.
    #[serde(default)]
    pub parse_cut: Option<ParseCut>,
    /// The start of the `<body>` text (as counted in `word_count`), words joined by single
    /// spaces, at most [`TEXT_HEAD_BYTES`]: what the legal-page checks read (`crate::legal`).
    #[serde(default)]
    pub text_head: String,
    /// The page links to an e-mail address (`<a href="mailto:…">`).
    #[serde(default)]
    pub mailto: bool,
    /// The main text's words, hash and SimHash ([`text`]).
    #[serde(default)]
    pub main_text: TextFingerprint,
    /// JSON-LD, microdata and RDFa Lite items ([`structured`]).
    #[serde(default)]
    pub structured: structured::StructuredData,
    /// Viewport, Open Graph, Twitter card, unsized images, pagination links ([`onpage`]).
    #[serde(default)]
    pub on_page: onpage::OnPage,
}

/// Bytes of body text [`PageFacts::text_head`] keeps: an Impressum's details are near its start.
pub const TEXT_HEAD_BYTES: usize = 32 * 1024;

impl PageFacts {
    /// Meta robots says `noindex` (or `none`).
    #[must_use]
    pub fn robots_noindex(&self) -> bool {
        self.meta_robots.iter().any(|d| d == "noindex" || d == "none")
    }

    /// Meta robots says `nofollow` (or `none`): no link on the page should be followed.
    #[must_use]
    pub fn robots_nofollow(&self) -> bool {
        self.meta_robots.iter().any(|d| d == "nofollow" || d == "none")
    }
}

/// Parses `html` (already decoded, see [`crate::charset`]) fetched from `base` and collects its
/// facts. Pure and synchronous; never panics, whatever the input.
#[must_use]
pub fn extract(html: &str, base: &Url, caps: &ExtractCaps) -> PageFacts {
    extract_within(html, base, caps, caps.parse_limits)
}

/// [`extract`] under `limits` instead of the caps' own parse limits (a tighter first try, say),
/// without a copy of the caps.
#[must_use]
pub fn extract_within(html: &str, base: &Url, caps: &ExtractCaps, limits: ParseLimits) -> PageFacts {
    extract_custom(html, base, caps, limits, None).0
}

/// [`extract_within`], and the audit's own extraction and search rules run on the same tree
/// ([`crate::custom`]): one parse whatever the rules.
#[must_use]
pub fn extract_custom(
    html: &str,
    base: &Url,
    caps: &ExtractCaps,
    limits: ParseLimits,
    custom: Option<&CompiledRules>,
) -> (PageFacts, CustomValues) {
    let parsed = parse_bounded(html, limits);
    let doc = parsed.html;
    let mut facts = PageFacts { parse_cut: parsed.cut, ..PageFacts::default() };
    let base_href = find_base_href(&doc);
    let doc_base = base_href
        .and_then(|href| base.join(href).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .unwrap_or_else(|| base.clone());
    facts.base_href = base_href.map(|h| h.trim().to_owned());

    let mut walker = Walker {
        caps,
        base: &doc_base,
        page_is_https: base.scheme() == "https",
        facts,
        link_index: HashMap::new(),
        link_texts: Vec::new(),
        h1_texts: Vec::new(),
        mixed_seen: HashSet::new(),
        inline_css_bytes: 0,
    };
    walk(&doc, |node, ctx| walker.visit(node, ctx));
    let mut facts = walker.finish();
    facts.main_text = text::main_text(&doc);
    facts.structured = structured::collect(&doc);
    facts.on_page = onpage::collect(&doc, &doc_base);
    let values = custom.filter(|c| !c.is_empty()).map(|c| c.apply(&doc, html)).unwrap_or_default();
    (facts, values)
}

/// Normalises a link URL; see [`shoal_shared::url::normalize`] (one set of rules for the whole
/// crawler, so a link and the queued URL it becomes are always the same string).
pub fn normalize_url(url: &mut Url) {
    shoal_shared::url::normalize(url);
}

// ---------------------------------------------------------------------------------------------
// Tree walk

/// ego-tree's node handle, named through scraper (ego-tree is not a direct dependency).
type NodeRef<'a> = <ElementRef<'a> as Deref>::Target;

/// What a node inherits from its ancestors.
#[derive(Debug, Clone, Copy, Default)]
struct Ctx {
    in_head: bool,
    in_body: bool,
    /// Inside script/style/noscript/textarea/title: not page words, anchor or heading text.
    no_words: bool,
    /// Index into `Walker::link_texts` collecting the enclosing anchor's text.
    anchor: Option<usize>,
    /// Index into `Walker::h1_texts` collecting the enclosing h1's text.
    h1: Option<usize>,
}

enum Flow {
    Descend(Ctx),
    Skip,
    Stop,
}

/// Pre-order walk in document order with an explicit stack (deeply nested markup must not
/// overflow the call stack), passing each node what it inherits from its ancestors. Template
/// contents (`Node::Fragment`) are inert and skipped.
fn walk<'a>(doc: &'a Html, mut visit: impl FnMut(NodeRef<'a>, Ctx) -> Flow) {
    let mut stack = vec![(doc.tree.root(), Ctx::default())];
    while let Some((node, ctx)) = stack.pop() {
        if node.value().is_fragment() {
            continue;
        }
        match visit(node, ctx) {
            Flow::Descend(child_ctx) => {
                let first = stack.len();
                stack.extend(node.children().map(|c| (c, child_ctx)));
                stack[first..].reverse();
            }
            Flow::Skip => {}
            Flow::Stop => return,
        }
    }
}

fn is_html(el: &Element) -> bool {
    &*el.name.ns == XHTML_NS
}

/// The first `<base href>` in tree order, which applies to the whole document wherever it is.
fn find_base_href(doc: &Html) -> Option<&str> {
    let mut found = None;
    walk(doc, |node, ctx| match node.value() {
        Node::Element(el) if is_html(el) && el.name() == "base" => match tree::attr(el, "href") {
            Some(href) => {
                found = Some(href);
                Flow::Stop
            }
            None => Flow::Descend(ctx),
        },
        _ => Flow::Descend(ctx),
    });
    found
}

/// Collapses ASCII whitespace runs to one space, trims, and stops at a character cap. Fed piece
/// by piece, so text split over several nodes joins correctly.
#[derive(Debug, Default)]
struct TextAcc {
    text: String,
    chars: usize,
    pending_space: bool,
}

impl TextAcc {
    fn push(&mut self, s: &str, max_chars: usize) {
        for ch in s.chars() {
            if self.chars >= max_chars {
                return;
            }
            if ch.is_ascii_whitespace() {
                self.pending_space = !self.text.is_empty();
                continue;
            }
            if self.pending_space {
                self.text.push(' ');
                self.chars += 1;
                self.pending_space = false;
                if self.chars >= max_chars {
                    return;
                }
            }
            self.text.push(ch);
            self.chars += 1;
        }
    }

    fn word_break(&mut self) {
        self.pending_space = !self.text.is_empty();
    }

    fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

/// Elements rendered as blocks (or line breaks) by default: text on either side is separate
/// words. Everything else, custom elements included, is treated as inline.
const BLOCK_ELEMENTS: &str = "address article aside blockquote br caption dd details dialog div \
    dl dt fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr li main nav ol \
    p pre section summary table td th tr ul";

fn is_block(name: &str) -> bool {
    BLOCK_ELEMENTS.split_ascii_whitespace().any(|b| b == name)
}

fn collapse(s: &str, max_chars: usize) -> String {
    let mut acc = TextAcc::default();
    acc.push(s, max_chars);
    acc.text
}

/// Truncates to at most `max` bytes on a char boundary.
fn truncate_str(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

/// Subresources a browser loads with the page: over http on an https page, mixed content.
fn is_subresource(kind: LinkKind) -> bool {
    matches!(
        kind,
        LinkKind::Image
            | LinkKind::Script
            | LinkKind::Stylesheet
            | LinkKind::Icon
            | LinkKind::Iframe
            | LinkKind::Media
            | LinkKind::Font
            | LinkKind::CssImage
    )
}

struct Walker<'c> {
    caps: &'c ExtractCaps,
    base: &'c Url,
    page_is_https: bool,
    facts: PageFacts,
    /// (url, kind) → index in `facts.links`.
    link_index: HashMap<(Url, LinkKind), usize>,
    /// Anchor text being collected, parallel to `facts.links`.
    link_texts: Vec<TextAcc>,
    h1_texts: Vec<TextAcc>,
    mixed_seen: HashSet<String>,
    /// Inline CSS scanned so far ([`resources::MAX_INLINE_CSS_BYTES`]).
    inline_css_bytes: usize,
}

impl Walker<'_> {
    fn visit(&mut self, node: NodeRef<'_>, mut ctx: Ctx) -> Flow {
        match node.value() {
            Node::Text(text) => {
                // `<div>Title</div>Desc`: the block ended, so a new word starts.
                if node
                    .prev_sibling()
                    .and_then(|sibling| sibling.value().as_element())
                    .is_some_and(|el| is_html(el) && is_block(el.name()))
                {
                    self.word_break(ctx);
                }
                self.text(text, ctx);
                Flow::Skip
            }
            Node::Element(el) => {
                self.element(node, el, &mut ctx);
                Flow::Descend(ctx)
            }
            Node::Document => Flow::Descend(ctx),
            _ => Flow::Skip,
        }
    }

    fn text(&mut self, text: &str, ctx: Ctx) {
        if ctx.no_words {
            return;
        }
        if let Some(acc) = ctx.anchor.and_then(|i| self.link_texts.get_mut(i)) {
            acc.push(text, MAX_ANCHOR_TEXT_CHARS);
        }
        if let Some(acc) = ctx.h1.and_then(|i| self.h1_texts.get_mut(i)) {
            acc.push(text, MAX_TEXT_CHARS);
        }
        if ctx.in_body {
            // One pass: every word is counted, and kept while the head has room.
            let head = &mut self.facts.text_head;
            let mut room = head.len() < TEXT_HEAD_BYTES;
            for word in text.split_whitespace() {
                self.facts.word_count += 1;
                if room && head.len() + word.len() + 1 > TEXT_HEAD_BYTES {
                    room = false;
                }
                if room {
                    if !head.is_empty() {
                        head.push(' ');
                    }
                    head.push_str(word);
                }
            }
        }
    }

    /// Text before and after a block element are separate words in anchor and heading text.
    fn word_break(&mut self, ctx: Ctx) {
        if let Some(acc) = ctx.anchor.and_then(|i| self.link_texts.get_mut(i)) {
            acc.word_break();
        }
        if let Some(acc) = ctx.h1.and_then(|i| self.h1_texts.get_mut(i)) {
            acc.word_break();
        }
    }

    fn element(&mut self, node: NodeRef<'_>, el: &Element, ctx: &mut Ctx) {
        let name = el.name();
        if !is_html(el) {
            // Foreign content (SVG, MathML): only SVG `<a href>` is a link.
            if name == "a" {
                self.anchor(el, ctx);
            }
            return;
        }
        if is_block(name) {
            self.word_break(*ctx);
        }
        self.style_attribute(el);
        match name {
            "html" if self.facts.html_lang.is_none() => {
                self.facts.html_lang = tree::attr(el, "lang").map(|l| l.trim().to_owned());
            }
            "head" => ctx.in_head = true,
            "body" => {
                ctx.in_head = false;
                ctx.in_body = true;
            }
            "script" => {
                ctx.no_words = true;
                self.src_link(el, LinkKind::Script);
            }
            "style" => {
                ctx.no_words = true;
                self.style_element(node);
            }
            "noscript" | "textarea" => ctx.no_words = true,
            "title" => {
                ctx.no_words = true;
                self.title(node);
            }
            "meta" => self.meta(el),
            "link" => self.link_element(el, ctx),
            "a" | "area" => self.anchor(el, ctx),
            "img" => {
                self.img(el, ctx);
                self.srcset(el);
            }
            "iframe" => self.src_link(el, LinkKind::Iframe),
            "source" => {
                self.src_link(el, LinkKind::Media);
                self.srcset(el);
            }
            "video" | "audio" => self.src_link(el, LinkKind::Media),
            "h1" => {
                if self.h1_texts.len() < MAX_H1 {
                    ctx.h1 = Some(self.h1_texts.len());
                    self.h1_texts.push(TextAcc::default());
                } else {
                    ctx.h1 = None;
                }
            }
            "h2" => self.facts.h2_count += 1,
            _ => {}
        }
    }

    fn title(&mut self, node: NodeRef<'_>) {
        self.facts.title_count += 1;
        if self.facts.title.is_some() {
            return;
        }
        // A title's content is RCDATA: text children only, so this is not a deep walk.
        let mut acc = TextAcc::default();
        for child in node.children() {
            if let Node::Text(t) = child.value() {
                acc.push(t, MAX_TEXT_CHARS);
            }
        }
        self.facts.title = Some(acc.text);
    }

    fn meta(&mut self, el: &Element) {
        if let Some(equiv) = tree::attr(el, "http-equiv") {
            if equiv.trim().eq_ignore_ascii_case("refresh") && self.facts.meta_refresh.is_none() {
                let content = tree::attr(el, "content").unwrap_or("").trim();
                let max = self.caps.max_url_len.saturating_add(64);
                self.facts.meta_refresh = Some(truncate_str(content, max));
            }
            return;
        }
        let Some(name) = tree::attr(el, "name").map(str::trim) else {
            return;
        };
        let content = tree::attr(el, "content").unwrap_or("");
        if name.eq_ignore_ascii_case("description") {
            self.facts.meta_description_count += 1;
            if self.facts.meta_description.is_none() {
                self.facts.meta_description = Some(collapse(content, MAX_TEXT_CHARS));
            }
        } else if name.eq_ignore_ascii_case("robots")
            || self.caps.robots_token.as_deref().is_some_and(|t| name.eq_ignore_ascii_case(t))
        {
            push_robots_directives(&mut self.facts.meta_robots, content);
        }
    }

    fn anchor(&mut self, el: &Element, ctx: &mut Ctx) {
        ctx.anchor = None;
        let Some(href) = tree::attr(el, "href") else {
            return;
        };
        if href.trim_start().get(..7).is_some_and(|s| s.eq_ignore_ascii_case("mailto:")) {
            self.facts.mailto = true;
        }
        let nofollow = has_token(&rel_tokens(el), "nofollow");
        let Some(index) = self.add_link(href, LinkKind::Anchor, nofollow) else {
            return;
        };
        // Collect text only while this link has none yet (first non-empty text wins).
        if self.link_texts.get(index).is_some_and(TextAcc::is_empty) {
            if el.name() == "area" {
                if let (Some(alt), Some(acc)) = (tree::attr(el, "alt"), self.link_texts.get_mut(index)) {
                    acc.push(alt, MAX_ANCHOR_TEXT_CHARS);
                }
            } else {
                ctx.anchor = Some(index);
            }
        }
    }

    fn img(&mut self, el: &Element, ctx: &Ctx) {
        match tree::attr(el, "alt") {
            None => self.facts.images_without_alt += 1,
            Some(alt) => {
                // An image-only anchor is named by its alt text.
                if let Some(acc) = ctx.anchor.and_then(|i| self.link_texts.get_mut(i))
                    && acc.is_empty()
                {
                    acc.push(alt, MAX_ANCHOR_TEXT_CHARS);
                }
            }
        }
        self.src_link(el, LinkKind::Image);
    }

    fn src_link(&mut self, el: &Element, kind: LinkKind) {
        if let Some(src) = tree::attr(el, "src")
            && !src.trim().is_empty()
        {
            self.add_link(src, kind, false);
        }
    }

    /// Resolves an href against the document base without Shoal's normalisation (canonical and
    /// hreflang values are reported as the page states them). Unresolvable: the raw value.
    fn resolve_as_written(&self, href: &str) -> String {
        let trimmed = href.trim();
        if trimmed.is_empty() {
            return String::new();
        }
        match self.base.join(trimmed) {
            Ok(url) => truncate_str(url.as_str(), self.caps.max_url_len),
            Err(_) => truncate_str(trimmed, MAX_INVALID_LINK_LEN),
        }
    }

    /// Records one link occurrence; returns its index in `facts.links` when it is (or joined) a
    /// kept link.
    fn add_link(&mut self, raw: &str, kind: LinkKind, nofollow: bool) -> Option<usize> {
        let mut url = match self.base.join(raw) {
            Ok(url) => url,
            Err(_) => {
                self.invalid(raw.trim());
                return None;
            }
        };
        if !matches!(url.scheme(), "http" | "https") {
            return None;
        }
        normalize_url(&mut url);
        if url.as_str().len() > self.caps.max_url_len {
            self.invalid(url.as_str());
            return None;
        }
        if self.page_is_https
            && url.scheme() == "http"
            && is_subresource(kind)
            && self.facts.mixed_content.len() < MAX_MIXED_CONTENT
            && self.mixed_seen.insert(url.as_str().to_owned())
        {
            self.facts.mixed_content.push(url.as_str().to_owned());
        }
        let key = (url, kind);
        if let Some(&index) = self.link_index.get(&key) {
            if let Some(link) = self.facts.links.get_mut(index) {
                link.nofollow &= nofollow;
            }
            return Some(index);
        }
        if self.facts.links.len() >= self.caps.max_links {
            self.facts.links_truncated = true;
            return None;
        }
        let index = self.facts.links.len();
        self.facts.links.push(Link { url: key.0.clone(), kind, nofollow, text: None });
        self.link_texts.push(TextAcc::default());
        self.link_index.insert(key, index);
        Some(index)
    }

    fn invalid(&mut self, href: &str) {
        if self.facts.invalid_links.len() < MAX_INVALID_LINKS {
            self.facts.invalid_links.push(truncate_str(href, MAX_INVALID_LINK_LEN));
        }
    }

    fn finish(mut self) -> PageFacts {
        for (link, acc) in self.facts.links.iter_mut().zip(self.link_texts) {
            if !acc.is_empty() {
                link.text = Some(acc.text);
            }
        }
        self.facts.h1 = self.h1_texts.into_iter().map(|acc| acc.text).collect();
        self.facts
    }
}

/// Splits a robots `content` into lower-cased directives. Commas separate directives; a part
/// without `:` may also be space-separated (`"noindex nofollow"`, a common mistake search engines
/// tolerate); `key: value` is kept as one directive with the spaces around `:` removed.
fn push_robots_directives(out: &mut Vec<String>, content: &str) {
    for part in content.split(',') {
        let part = part.trim();
        if let Some((key, value)) = part.split_once(':') {
            push_capped(out, format!("{}:{}", key.trim(), value.trim()).to_ascii_lowercase());
        } else {
            for word in part.split_ascii_whitespace() {
                push_capped(out, word.to_ascii_lowercase());
            }
        }
    }
}

fn push_capped(out: &mut Vec<String>, directive: String) {
    if out.len() < MAX_ROBOTS_DIRECTIVES && !directive.is_empty() {
        out.push(truncate_str(&directive, MAX_INVALID_LINK_LEN));
    }
}
