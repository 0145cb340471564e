//! The rendered crawl (issue 38, `--render never|auto|always`): which pages of a site are opened in
//! headless Chromium so their facts and links are the ones a browser sees, and the rule `auto`
//! decides by.
//!
//! How a rendered crawl runs (the coordinator's `coordinator/src/browser.rs`, the plan in
//! `store/src/render.rs`): the raw crawl goes first; when a site's crawl has no work left
//! ([`crate::record::Event::CrawlDone`]) its pages not rendered yet are queued as render tasks
//! ([`crate::task::TaskKind::Render`]), one *round*. The links a rendered page shows are offered
//! to the frontier like any page's, so a page only scripts link to is crawled, and when that
//! crawl ends the next round renders it. The site ends after the round that found nothing new to
//! render (or at the budget). Under `auto` the first round is the start page alone, and the site
//! renders further only when [`decide`] says so.

use crate::browser::Rendered;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Rendered pages per site at most unless configured (`--render-budget`).
pub const DEFAULT_RENDER_BUDGET: u32 = 500;
/// The most `--render-budget` may be.
pub const MAX_RENDER_BUDGET: u32 = 100_000;
/// The main text of the raw HTML below this many words, with much more after rendering: the
/// content is the scripts'. (The site analysis's `rendered_only_content` uses the same bar.)
pub const THIN_RAW_WORDS: u32 = 50;
/// Main text after rendering at least this many words (a page, not a widget's labels).
pub const RENDERED_WORDS: u32 = 100;

/// Whether a site's pages are rendered in headless Chromium.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RenderMode {
    /// Only the HTML the server sends is read (no browser).
    #[default]
    Never,
    /// The start page is rendered once and compared with its HTML; the rest of the site is
    /// rendered only when scripts add links or content there ([`decide`]).
    Auto,
    /// Every HTML page (up to the budget) is rendered.
    Always,
}

impl RenderMode {
    /// The spelling of the flag, the config file and the API.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RenderMode::Never => "never",
            RenderMode::Auto => "auto",
            RenderMode::Always => "always",
        }
    }
}

impl fmt::Display for RenderMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--render` value that is none of the three.
#[derive(Debug, thiserror::Error)]
#[error("render must be never, auto or always, not {0:?}")]
pub struct BadRenderMode(String);

impl FromStr for RenderMode {
    type Err = BadRenderMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "never" => Ok(RenderMode::Never),
            "auto" => Ok(RenderMode::Auto),
            "always" => Ok(RenderMode::Always),
            other => Err(BadRenderMode(other.to_owned())),
        }
    }
}

/// What was decided for one site, stored with it and shown in its report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum RenderDecision {
    /// `--render always`: every HTML page is rendered.
    Always,
    /// `auto`, and the start page's scripts add links or content: the site is rendered.
    Rendered {
        /// What the scripts added ([`decide`]).
        reason: String,
    },
    /// `auto`, and the start page's scripts add nothing the crawl needs: only the start page was
    /// rendered.
    Raw {
        /// What was compared.
        reason: String,
    },
    /// `auto`, but the start page could not be rendered (no Chromium, the load failed, robots.txt
    /// kept the start page out): the site is crawled from its HTML.
    NotRendered {
        /// Why.
        reason: String,
    },
}

impl RenderDecision {
    /// Whether the rest of the site's pages are rendered.
    #[must_use]
    pub fn renders_site(&self) -> bool {
        matches!(self, RenderDecision::Always | RenderDecision::Rendered { .. })
    }
}

/// What the raw HTML of a page showed, for the comparison with its rendered version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawFacts {
    /// The page's URL (a link to itself is no link to another page).
    pub url: String,
    /// Every link the raw page had (any kind), absolute and normalised as the crawl records them.
    pub links: Vec<String>,
    /// Words of its main text.
    pub words: u32,
}

/// The links of the rendered page to pages (other than itself) that its HTML does not link to, in
/// rendered order, each once.
#[must_use]
pub fn rendered_only_links<'a>(raw: &RawFacts, rendered: &'a Rendered) -> Vec<&'a str> {
    let mut had: std::collections::HashSet<&str> = raw.links.iter().map(String::as_str).collect();
    had.insert(raw.url.as_str());
    let mut seen = std::collections::HashSet::new();
    rendered.links.iter().map(String::as_str).filter(|l| !had.contains(l) && seen.insert(*l)).collect()
}

/// Whether the page's main text exists only after rendering: under [`THIN_RAW_WORDS`] in the
/// HTML, at least [`RENDERED_WORDS`] and three times as many after.
#[must_use]
pub fn rendered_only_content(raw_words: u32, rendered_words: u32) -> bool {
    raw_words < THIN_RAW_WORDS && rendered_words >= RENDERED_WORDS && rendered_words >= raw_words.saturating_mul(3)
}

/// `auto`'s rule, on the start page: the site is rendered when its scripts add links to pages or
/// its main text ([`rendered_only_links`], [`rendered_only_content`]). Returns the decision with
/// the counts that made it.
#[must_use]
pub fn decide(raw: &RawFacts, rendered: &Rendered) -> RenderDecision {
    let links = rendered_only_links(raw, rendered).len();
    let content = rendered_only_content(raw.words, rendered.words);
    let counts = format!(
        "start page: {} link(s) in the HTML, {links} more after rendering; {} word(s) in the HTML, {} rendered",
        raw.links.len(),
        raw.words,
        rendered.words
    );
    if links > 0 || content {
        RenderDecision::Rendered { reason: counts }
    } else {
        RenderDecision::Raw { reason: counts }
    }
}

/// Whether a site needs its rendering phase at all.
#[must_use]
pub fn renders(mode: RenderMode, budget: u32) -> bool {
    mode != RenderMode::Never && budget > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(links: &[&str], words: u32) -> Rendered {
        Rendered { links: links.iter().map(|l| (*l).to_owned()).collect(), words, ..Rendered::default() }
    }

    #[test]
    fn modes_read_and_print_their_spelling() {
        for m in [RenderMode::Never, RenderMode::Auto, RenderMode::Always] {
            assert_eq!(m.as_str().parse::<RenderMode>().expect("parses"), m);
            assert_eq!(serde_json::to_value(m).expect("encodes"), serde_json::json!(m.as_str()));
        }
        let err = "sometimes".parse::<RenderMode>().expect_err("not a mode");
        assert!(err.to_string().contains("never, auto or always"), "{err}");
        assert_eq!(RenderMode::default(), RenderMode::Never);
    }

    #[test]
    fn auto_renders_a_site_whose_scripts_add_links_or_its_text_and_no_other() {
        let raw = RawFacts { url: "https://s/".into(), links: vec!["https://s/a".into()], words: 10 };
        let shell = decide(&raw, &rendered(&["https://s/", "https://s/a", "https://s/b", "https://s/b"], 12));
        assert!(shell.renders_site(), "{shell:?}");
        let RenderDecision::Rendered { reason } = shell else { unreachable!() };
        assert!(reason.contains("1 more after rendering"), "{reason}");

        let text = decide(&RawFacts { words: 3, ..RawFacts::default() }, &rendered(&[], 400));
        assert!(text.renders_site(), "{text:?}");

        let same = decide(&raw, &rendered(&["https://s/a"], 12));
        assert!(!same.renders_site(), "{same:?}");
        // Some words more on a page that had its text already: not the scripts' content.
        assert!(!decide(&RawFacts { words: 300, ..RawFacts::default() }, &rendered(&[], 1000)).renders_site());
    }

    #[test]
    fn the_content_bar_is_exact() {
        assert!(rendered_only_content(49, 147));
        assert!(!rendered_only_content(50, 1000));
        assert!(!rendered_only_content(49, 146), "under 3 times");
        assert!(!rendered_only_content(0, 99));
        assert!(rendered_only_content(0, 100));
    }

    #[test]
    fn a_decision_round_trips_with_its_reason() {
        let d = RenderDecision::NotRendered { reason: "no Chromium".into() };
        let json = serde_json::to_value(&d).expect("encodes");
        assert_eq!(json["decision"], "not_rendered");
        assert_eq!(serde_json::from_value::<RenderDecision>(json).expect("decodes"), d);
    }
}
