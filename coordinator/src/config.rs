//! The typed crawl configuration every role runs from.
//!
//! Built once, by the `shoal` binary, from flags, `SHOAL_*` variables, the config file and defaults
//! (one validation for every command and for `shoal config check`); the engine and the workers only
//! ever see this validated form, so an out-of-range value cannot reach them.

use shoal_shared::frontier::FrontierSettings;
use shoal_shared::task::SiteLimits;
use shoal_worker::crawl::CrawlSettings;
use shoal_worker::fetch::FetchSettings;

/// Everything a crawl needs, validated.
#[derive(Debug, Clone)]
pub struct CrawlConfig {
    /// Per-site limits and pace (the defaults of an audit; the API may narrow them per audit).
    pub limits: SiteLimits,
    /// Fetcher settings.
    pub fetch: FetchSettings,
    /// Extraction and robots settings.
    pub crawl: CrawlSettings,
    /// Frontier-wide settings.
    pub frontier: FrontierSettings,
}
