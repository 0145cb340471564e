//! What the bot page says about the browser check (SPEC §10, `--browser-pages`): how many pages
//! of each audited site are opened in headless Chromium, how far apart, under which user agent,
//! and what is never done there. Taken from the crawl's settings and the frontier's constant.

use crate::cli::CrawlConfig;
use shoal_shared::frontier::BROWSER_MIN_GAP;

/// The page's section on the browser check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserCheck {
    /// Pages per audited site opened in the browser (0: the check is off by default).
    pub pages: u16,
    /// The least time between the starts of two page loads to one host.
    pub gap: String,
    /// How long one page load and its checks may take.
    pub timeout: String,
}

impl BrowserCheck {
    /// From the crawl's own settings.
    #[must_use]
    pub fn from_config(config: &CrawlConfig) -> BrowserCheck {
        BrowserCheck {
            pages: config.engine.defaults.limits.browser_pages,
            gap: super::duration(config.engine.defaults.limits.pace.gap().max(BROWSER_MIN_GAP)),
            timeout: super::duration(config.worker.crawl.browser_timeout),
        }
    }
}
