//! The URLs a stylesheet loads: `url()` (fonts in `@font-face`, backgrounds, masks, cursors),
//! `image-set()` strings and `@import`. One plain synchronous function, [`scan`], over text the
//! caller already capped in size.
//!
//! Tokenised by `cssparser` (Servo's CSS tokenizer, already in the build under `scraper`), so
//! comments, strings, escapes (`url(a\)b.png)`) and bad URLs are read the way browsers read them:
//! a `url(` inside a comment or a string is not a URL. Hostile input stays bounded:
//! - the tokenizer is linear in the input, and blocks nested deeper than [`MAX_NESTING`] are
//!   skipped (their URLs are not read) rather than recursed into, so the stack stays small;
//! - at most `max_urls` URLs are kept; past them [`CssUrls::truncated`] is set and scanning stops.
//!
//! URLs come back as written (the caller resolves them against the stylesheet's URL, or the
//! page's for a `<style>` element), in document order, duplicates included.

use cssparser::{ParseError, Parser, Token};
use shoal_shared::record::LinkKind;

/// Blocks nested deeper than this are skipped: no real stylesheet nests this deep (`@media` in
/// `@supports` in a nested rule is three).
pub const MAX_NESTING: usize = 32;

/// What [`scan`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CssUrls {
    /// (URL as written, what loads it): [`LinkKind::Font`] in `@font-face`, [`LinkKind::Stylesheet`]
    /// for `@import`, [`LinkKind::CssImage`] otherwise.
    pub urls: Vec<(String, LinkKind)>,
    /// More than `max_urls` were there; the rest were not read.
    pub truncated: bool,
}

/// The URLs in `css` (a stylesheet, a `<style>` element's text or a `style` attribute's
/// declarations), at most `max_urls`. Never panics, whatever the input.
#[must_use]
pub fn scan(css: &str, max_urls: usize) -> CssUrls {
    let mut parser = Parser::new(css);
    let mut out = Collector { found: CssUrls::default(), max: max_urls };
    level(&mut parser, Context::default(), 0, &mut out);
    out.found
}

/// The at-rule a level is in, from its keyword to its `;` or block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    Import,
    FontFace,
    /// `@namespace`, `@document`: their `url()` names no resource.
    NoResource,
    Other,
}

impl At {
    fn of(name: &str) -> At {
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "import" => At::Import,
            "font-face" => At::FontFace,
            "namespace" | "document" | "-moz-document" => At::NoResource,
            _ => At::Other,
        }
    }
}

/// What a block inherits.
#[derive(Debug, Clone, Copy, Default)]
struct Context {
    /// Inside an `@font-face` block.
    font_face: bool,
    /// Inside `image-set()`: its strings are image URLs.
    image_set: bool,
}

struct Collector {
    found: CssUrls,
    max: usize,
}

impl Collector {
    fn full(&self) -> bool {
        self.found.truncated
    }

    fn push(&mut self, raw: &str, kind: Option<LinkKind>) {
        let Some(kind) = kind else { return };
        let raw = raw.trim();
        if raw.is_empty() {
            return;
        }
        if self.found.urls.len() >= self.max {
            self.found.truncated = true;
            return;
        }
        self.found.urls.push((raw.to_owned(), kind));
    }
}

/// What a `url()` at this point loads (`None`: nothing).
fn kind_of(ctx: Context, at: Option<At>) -> Option<LinkKind> {
    match at {
        Some(At::Import) => Some(LinkKind::Stylesheet),
        Some(At::NoResource) => None,
        Some(At::FontFace) | Some(At::Other) | None if ctx.font_face => Some(LinkKind::Font),
        _ => Some(LinkKind::CssImage),
    }
}

/// Reads one level (the sheet, or a block's or function's contents) to its end.
fn level(p: &mut Parser<'_>, ctx: Context, depth: usize, out: &mut Collector) {
    let mut at: Option<At> = None;
    while !out.full() {
        let Ok(token) = p.next().cloned() else { return };
        match token {
            Token::AtKeyword(name) => at = Some(At::of(&name)),
            Token::UnquotedUrl(url) => out.push(&url, kind_of(ctx, at)),
            Token::QuotedString(s) if at == Some(At::Import) => out.push(&s, Some(LinkKind::Stylesheet)),
            Token::QuotedString(s) if ctx.image_set => out.push(&s, kind_of(ctx, at)),
            Token::Semicolon => at = None,
            Token::Function(name) => {
                let kind = kind_of(ctx, at);
                if name.eq_ignore_ascii_case("url") || name.eq_ignore_ascii_case("src") {
                    // `url("…")`: the string is the URL (an unquoted `url(…)` is one token).
                    let _ = p.parse_nested_block(|p| {
                        if let Ok(Token::QuotedString(s)) = p.next() {
                            out.push(s, kind);
                        }
                        Ok::<(), ParseError<()>>(())
                    });
                } else if depth < MAX_NESTING {
                    let image_set =
                        name.eq_ignore_ascii_case("image-set") || name.eq_ignore_ascii_case("-webkit-image-set");
                    let inner = Context { image_set, ..ctx };
                    nested(p, inner, at, depth, out);
                }
            }
            Token::CurlyBracketBlock => {
                let inner = Context { image_set: false, ..ctx };
                if depth < MAX_NESTING {
                    nested(p, inner, at, depth, out);
                }
                at = None;
            }
            Token::ParenthesisBlock | Token::SquareBracketBlock if depth < MAX_NESTING => {
                nested(p, ctx, at, depth, out);
            }
            _ => {}
        }
    }
}

/// Reads the block or function just opened, one level deeper; an `@font-face` in force at the
/// opening makes its URLs fonts.
fn nested(p: &mut Parser<'_>, ctx: Context, at: Option<At>, depth: usize, out: &mut Collector) {
    let ctx = if at == Some(At::FontFace) { Context { font_face: true, ..ctx } } else { ctx };
    let _ = p.parse_nested_block(|p| {
        level(p, ctx, depth + 1, out);
        Ok::<(), ParseError<()>>(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(css: &str) -> Vec<(String, LinkKind)> {
        scan(css, 100).urls
    }

    fn u(s: &str, k: LinkKind) -> (String, LinkKind) {
        (s.to_owned(), k)
    }

    #[test]
    fn fonts_backgrounds_and_imports() {
        let css = r#"
            @charset "utf-8";
            @import "base.css";
            @import url(print.css) print;
            @import url("theme.css");
            @namespace svg url(http://www.w3.org/2000/svg);
            /* url(commented.png) is not a URL */
            @font-face { font-family: Shop; src: url(/fonts/shop.woff2) format("woff2"), url('/fonts/shop.woff') format("woff"), local("Shop"); }
            .hero { background: #fff url( "img/hero.jpg" ) no-repeat; content: "url(in-a-string.png)"; }
            @media (min-width: 600px) { .logo { background-image: image-set("logo.png" 1x, url(logo@2x.png) 2x); } }
            .bad { background: url(a b.png); }
            .escaped { background: url(a\)b.png); }
            .data { background: url(data:image/png;base64,AAAA); }
        "#;
        assert_eq!(
            urls(css),
            vec![
                u("base.css", LinkKind::Stylesheet),
                u("print.css", LinkKind::Stylesheet),
                u("theme.css", LinkKind::Stylesheet),
                u("/fonts/shop.woff2", LinkKind::Font),
                u("/fonts/shop.woff", LinkKind::Font),
                u("img/hero.jpg", LinkKind::CssImage),
                u("logo.png", LinkKind::CssImage),
                u("logo@2x.png", LinkKind::CssImage),
                u("a)b.png", LinkKind::CssImage),
                u("data:image/png;base64,AAAA", LinkKind::CssImage),
            ]
        );
    }

    #[test]
    fn style_attribute_declarations() {
        assert_eq!(urls("background-image: url(/img/banner.webp)"), vec![u("/img/banner.webp", LinkKind::CssImage)]);
        assert_eq!(urls("color: red"), vec![]);
    }

    #[test]
    fn hostile_input_is_bounded() {
        let many = ".a{background:url(x.png)}".repeat(5_000);
        let found = scan(&many, 1_000);
        assert_eq!(found.urls.len(), 1_000);
        assert!(found.truncated);
        // Nested far deeper than any stylesheet: skipped past the limit, no stack overflow.
        let deep = format!("{}url(deep.png){}", "a{".repeat(100_000), "}".repeat(100_000));
        assert_eq!(scan(&deep, 10), CssUrls::default());
        let parens = format!("{}url(p.png)", "(".repeat(200_000));
        assert!(scan(&parens, 10).urls.is_empty());
        let shallow = format!("{}url(ok.png){}", "a{".repeat(5), "}".repeat(5));
        assert_eq!(urls(&shallow), vec![u("ok.png", LinkKind::CssImage)]);
        // Not CSS at all.
        assert_eq!(urls("\u{0}\u{fffd}<html>}}}{{{)))((("), vec![]);
        assert!(urls(&"url(".repeat(10_000)).len() <= 1);
    }
}
