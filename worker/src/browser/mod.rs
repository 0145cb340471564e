//! The browser engine (issue 15, built on branch `issue-15-engine`): this file is the agreed
//! interface only, so the plumbing compiles before the engine is merged; the engine's own
//! `worker/src/browser/` replaces it at the merge. Until then a launch fails with a clear error,
//! which the crawl task records on the page (`BrowserPage::error`).

use shoal_shared::browser::BrowserPage;
use shoal_shared::ids::{AuditId, SiteId};

/// How the browser is started and what it may reach.
#[derive(Debug, Clone)]
pub struct BrowserSettings {
    /// The Chromium binary (Debian's `/usr/bin/chromium` by default).
    pub chromium: std::path::PathBuf,
    /// The crawler's `--allow-private`.
    pub allow_private: bool,
    /// The crawler's `--resolve HOST=IP` map.
    pub resolve: Vec<(String, std::net::IpAddr)>,
    /// Hard limit per page load and its checks.
    pub page_timeout: std::time::Duration,
}

/// One headless Chromium.
#[derive(Debug)]
pub struct Browser {
    _settings: BrowserSettings,
}

/// Chromium is missing or failed to start.
#[derive(Debug)]
pub struct BrowserError {
    /// What went wrong.
    pub detail: String,
}

impl std::fmt::Display for BrowserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the browser could not start: {}", self.detail)
    }
}

impl std::error::Error for BrowserError {}

impl Browser {
    /// Starts Chromium.
    ///
    /// # Errors
    /// Always, until the engine is merged.
    pub async fn launch(settings: BrowserSettings) -> Result<Browser, BrowserError> {
        Err(BrowserError { detail: format!("the browser engine is not built in ({})", settings.chromium.display()) })
    }

    /// Checks one page. Never panics; a failure is in `BrowserPage::error`.
    pub async fn check_page(&self, audit: AuditId, site: SiteId, url: &str) -> BrowserPage {
        BrowserPage {
            audit,
            site,
            url: url.to_owned(),
            final_url: url.to_owned(),
            error: Some("the browser engine is not built in".to_owned()),
            ..BrowserPage::default()
        }
    }

    /// Stops Chromium.
    pub async fn shutdown(self) {}
}
