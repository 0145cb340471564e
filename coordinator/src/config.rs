//! The typed crawl configuration every role runs from.
//!
//! Built once, by the `shoal` binary, from flags, `SHOAL_*` variables, the config file and defaults
//! (one validation for every command and for `shoal config check`); the engine and the workers only
//! ever see this validated form, so an out-of-range value cannot reach them.

use shoal_shared::custom::CustomRules;
use shoal_shared::frontier::FrontierSettings;
use shoal_shared::task::SiteLimits;
use shoal_worker::crawl::CrawlSettings;
use shoal_worker::fetch::FetchSettings;

/// Pages per site the browser check opens at most (`--browser-pages`, the API's `browser_pages`).
pub const MAX_BROWSER_PAGES: u16 = 50;

/// Everything a crawl needs, validated.
#[derive(Debug, Clone)]
pub struct CrawlConfig {
    /// Per-site limits and pace (the defaults of an audit; the API may narrow them per audit).
    pub limits: SiteLimits,
    /// The extraction and search rules of an audit (`--extract`, `--search`; the API's options
    /// replace them per audit), checked: each compiles in the worker ([`crate::check_rules`]).
    pub custom: CustomRules,
    /// Fetcher settings.
    pub fetch: FetchSettings,
    /// Extraction and robots settings.
    pub crawl: CrawlSettings,
    /// Frontier-wide settings.
    pub frontier: FrontierSettings,
    /// Sites in the frontier at once, over all running audits; the others wait their turn
    /// ([`crate::admission`]).
    pub max_active_sites: usize,
    /// How often a schedule may run at most (`shoal coordinator --schedule-min-interval`): the
    /// operator's, never an API caller's ([`crate::schedule::when`]).
    pub schedule_min_interval: std::time::Duration,
}

impl Default for CrawlConfig {
    fn default() -> Self {
        CrawlConfig {
            limits: SiteLimits::default(),
            custom: CustomRules::default(),
            fetch: FetchSettings::default(),
            crawl: CrawlSettings::default(),
            frontier: FrontierSettings::default(),
            max_active_sites: crate::admission::DEFAULT_MAX_ACTIVE_SITES,
            schedule_min_interval: crate::schedule::when::DEFAULT_MIN_INTERVAL,
        }
    }
}
