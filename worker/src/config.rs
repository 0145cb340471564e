//! What a worker runs with: how it fetches and how it crawls, validated once by the `shoal`
//! binary from flags, `SHOAL_*` variables and the config file. Both roles that crawl hold it: a
//! `shoal worker` process, and `shoal audit`'s in-process workers.

use crate::crawl::CrawlSettings;
use crate::fetch::FetchSettings;

/// A worker's settings: the fetcher's and the crawler's.
#[derive(Debug, Clone, Default)]
pub struct WorkerConfig {
    /// How the fetcher connects and what it accepts.
    pub fetch: FetchSettings,
    /// Extraction, robots, domain and browser settings.
    pub crawl: CrawlSettings,
}

impl WorkerConfig {
    /// How these settings name Shoal to the sites it visits; an audit records it with its options.
    #[must_use]
    pub fn identity(&self) -> Identity {
        Identity { user_agent: self.fetch.user_agent.clone(), robots_token: self.crawl.token.as_str().to_owned() }
    }
}

/// How Shoal names itself to a site: the `User-Agent` it sends and the product token it obeys in
/// robots.txt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The `User-Agent` header.
    pub user_agent: String,
    /// The robots.txt product token.
    pub robots_token: String,
}

impl Default for Identity {
    fn default() -> Self {
        WorkerConfig::default().identity()
    }
}
