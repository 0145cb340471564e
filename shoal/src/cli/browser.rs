//! The flags of the browser check (SPEC §10, `--browser-pages`): part of the crawl settings
//! ([`super::CrawlArgs`] flattens them, so they are config keys and `SHOAL_*` variables like the
//! others), validated once into the site limits and the worker's crawl settings.

use super::ConfigError;
use clap::Args;
use shoal_shared::render::{DEFAULT_RENDER_BUDGET, MAX_RENDER_BUDGET, RenderMode};
use std::path::PathBuf;

pub use shoal_coordinator::config::MAX_BROWSER_PAGES;

/// `--browser-pages`, `--chromium`, `--browser-timeout-s`, `--browser-memory-mb`, `--render`,
/// `--render-budget`.
#[derive(Debug, Args, Clone)]
pub struct BrowserArgs {
    /// After each site's crawl, open its start page and the N-1 most linked pages robots.txt
    /// allows in headless Chromium (Core Web Vitals, accessibility, keyboard, screenshots,
    /// consent banner), at most 50; 0 turns the browser check off. Needs Chromium (`shoal audit`
    /// runs it in-process; on a fleet, workers started with --browser).
    #[arg(long, env = "SHOAL_BROWSER_PAGES", value_name = "N", default_value_t = 0)]
    pub browser_pages: u16,
    /// The Chromium binary the browser check starts.
    #[arg(long, env = "SHOAL_CHROMIUM", value_name = "PATH", default_value = "/usr/bin/chromium")]
    pub chromium: PathBuf,
    /// Seconds one page load and its checks may take in the browser (5-110).
    #[arg(long, env = "SHOAL_BROWSER_TIMEOUT_S", value_name = "SECONDS", default_value_t = 60)]
    pub browser_timeout_s: u64,
    /// The most memory (MiB) all of Chromium's processes may use together while a page is
    /// checked (256-65536); a page that takes it further is stopped and reported
    /// (`browser_memory_exceeded`), and Chromium is started afresh.
    #[arg(long, env = "SHOAL_BROWSER_MEMORY_MB", value_name = "MIB", default_value_t = shoal_worker::browser::DEFAULT_MEMORY_LIMIT_MIB)]
    pub browser_memory_mb: u64,
    /// The rendered crawl: `never` reads only the HTML servers send; `always` renders every HTML
    /// page in headless Chromium and takes its links and facts from the rendered page too;
    /// `auto` renders each site's start page once and the rest of the site only when its scripts
    /// add links or content (docs/rendering.md). Needs Chromium like --browser-pages.
    #[arg(long, env = "SHOAL_RENDER", value_name = "never|auto|always", default_value_t = RenderMode::Never)]
    pub render: RenderMode,
    /// Pages per site rendered at most (1-100000).
    #[arg(long, env = "SHOAL_RENDER_BUDGET", value_name = "N", default_value_t = DEFAULT_RENDER_BUDGET)]
    pub render_budget: u32,
}

impl BrowserArgs {
    /// Checks the values.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the flag and what is wrong.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.browser_pages > MAX_BROWSER_PAGES {
            return Err(ConfigError::Invalid(format!(
                "--browser-pages ({}) must be 0-{MAX_BROWSER_PAGES}",
                self.browser_pages
            )));
        }
        if !(5..=110).contains(&self.browser_timeout_s) {
            return Err(ConfigError::Invalid(
                "--browser-timeout-s must be 5-110 (a worker drops a task after 120 s)".into(),
            ));
        }
        if !(1..=MAX_RENDER_BUDGET).contains(&self.render_budget) {
            return Err(ConfigError::Invalid(format!("--render-budget must be 1-{MAX_RENDER_BUDGET}")));
        }
        if !(256..=65_536).contains(&self.browser_memory_mb) {
            return Err(ConfigError::Invalid("--browser-memory-mb must be 256-65536".into()));
        }
        Ok(())
    }
}
