//! The scope rules (`--include`, `--exclude`, `--strip-query`; issue 37): part of the crawl
//! settings ([`super::CrawlArgs`] flattens them, so they are config keys and `SHOAL_*` variables
//! like the others), validated once into compiled, size-limited rules
//! ([`shoal_shared::scope_rules::ScopeRules`]) that travel with each audit to the workers.

use super::ConfigError;
use clap::Args;
use shoal_shared::scope_rules::ScopeRules;

/// `--include`, `--exclude`, `--strip-query`.
#[derive(Debug, Args, Clone, Default)]
pub struct ScopeArgs {
    /// Request only the site's URLs that match this regular expression (repeatable: any one
    /// matching is enough; one per line in the environment variable). The start URL is always
    /// fetched; robots.txt, sitemaps and the standard probes are not affected.
    #[arg(long = "include", value_name = "REGEX", env = "SHOAL_INCLUDE", value_delimiter = '\n')]
    pub include: Vec<String>,
    /// Never request URLs that match this regular expression (repeatable; one per line in the
    /// environment variable), the site's own and links to other sites alike; each is reported
    /// once as url_excluded. Wins over --include.
    #[arg(long = "exclude", value_name = "REGEX", env = "SHOAL_EXCLUDE", value_delimiter = '\n')]
    pub exclude: Vec<String>,
    /// Remove this query parameter from URLs before they are queued (repeatable;
    /// comma-separated in the environment variable): a name, a prefix ending in * (utm_*), or *
    /// for the whole query.
    #[arg(long = "strip-query", value_name = "PARAM", env = "SHOAL_STRIP_QUERY", value_delimiter = ',')]
    pub strip_query: Vec<String>,
}

impl ScopeArgs {
    /// Compiles the rules under their limits.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the flag and the rule that cannot be used.
    pub fn validate(&self) -> Result<ScopeRules, ConfigError> {
        ScopeRules::new(&self.include, &self.exclude, &self.strip_query)
            .map_err(|e| ConfigError::Invalid(format!("--{e}")))
    }
}
