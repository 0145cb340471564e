//! The flags of custom extraction and search (`--extract`, `--search`): part of the crawl settings
//! ([`super::CrawlArgs`] flattens them, so they are config keys and `SHOAL_*` variables like the
//! others), parsed by clap into typed rules and checked once into the audit's
//! [`CustomRules`] (each compiled as the workers will compile it).

use super::ConfigError;
use clap::Args;
use shoal_shared::custom::{CustomRules, ExtractRule, SearchRule};

/// `--extract`, `--search`.
#[derive(Debug, Args, Clone)]
pub struct CustomArgs {
    /// Read a value from every HTML page (repeatable): NAME=css:SELECTOR (the first match's
    /// text), NAME=css:SELECTOR@ATTRIBUTE (its attribute) or NAME=regex:EXPRESSION (the first
    /// match in the HTML, its first group if it has one). Values are cut at 1 KiB and shown per
    /// page in every report; at most 20 rules with --search (docs/extraction.md). In SHOAL_EXTRACT,
    /// one rule per line.
    #[arg(long, env = "SHOAL_EXTRACT", value_name = "NAME=KIND:EXPR", value_delimiter = '\n')]
    pub extract: Vec<ExtractRule>,
    /// Flag every HTML page whose visible text matches (repeatable): NAME=regex:EXPRESSION, or
    /// NAME=!regex:EXPRESSION for the pages with no match (a `custom_search` finding). In
    /// SHOAL_SEARCH, one rule per line.
    #[arg(long, env = "SHOAL_SEARCH", value_name = "NAME=[!]regex:EXPR", value_delimiter = '\n')]
    pub search: Vec<SearchRule>,
}

impl CustomArgs {
    /// The rules as one checked set, each compiled as the workers will compile it.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the rule and what is wrong with it.
    pub fn validate(&self) -> Result<CustomRules, ConfigError> {
        let rules = CustomRules::new(self.extract.clone(), self.search.clone())
            .map_err(|e| ConfigError::Invalid(format!("--extract/--search: {e}")))?;
        shoal_coordinator::config::check_custom(&rules)
            .map_err(|e| ConfigError::Invalid(format!("--extract/--search: {e}")))?;
        Ok(rules)
    }
}
