//! The content thresholds (issue 37): part of the crawl settings ([`super::CrawlArgs`] flattens
//! them, so they are config keys and `SHOAL_*` variables like the others), validated once into
//! the site limits; a submit may narrow them per audit (the API's audit options).

use super::ConfigError;
use clap::Args;
use shoal_shared::content::{
    ContentLimits, DEFAULT_IMAGE_BUDGET_KIB, DEFAULT_NEAR_DUPLICATE_PERCENT, DEFAULT_THIN_PAGE_WORDS,
    MIN_NEAR_DUPLICATE_PERCENT,
};

/// `--thin-page-words`, `--near-duplicate-percent`, `--image-budget-kib`.
#[derive(Debug, Args, Clone)]
pub struct ContentArgs {
    /// A page whose main text (its main element, or the body without navigation, header, footer and
    /// asides) has fewer words than this is reported as thin (content_thin); 0 turns it off.
    #[arg(long, env = "SHOAL_THIN_PAGE_WORDS", value_name = "WORDS", default_value_t = DEFAULT_THIN_PAGE_WORDS)]
    pub thin_page_words: u32,
    /// Pages whose main texts are at least this similar (percent of equal SimHash bits, 80-100)
    /// are reported as near-duplicates (content_near_duplicate).
    #[arg(long, env = "SHOAL_NEAR_DUPLICATE_PERCENT", value_name = "PERCENT", default_value_t = DEFAULT_NEAR_DUPLICATE_PERCENT)]
    pub near_duplicate_percent: u8,
    /// An image larger than this many KiB (as checked, from its Content-Length) is reported
    /// (image_too_large); 0 turns it off.
    #[arg(long, env = "SHOAL_IMAGE_BUDGET_KIB", value_name = "KIB", default_value_t = DEFAULT_IMAGE_BUDGET_KIB)]
    pub image_budget_kib: u32,
}

impl ContentArgs {
    /// The thresholds, checked.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the flag and what is wrong.
    pub fn validate(&self) -> Result<ContentLimits, ConfigError> {
        check_percent(self.near_duplicate_percent)?;
        Ok(ContentLimits {
            thin_page_words: self.thin_page_words,
            near_duplicate_percent: self.near_duplicate_percent,
            image_budget_kib: self.image_budget_kib,
        })
    }
}

/// Checks a near-duplicate threshold (the flag's and the API's rule).
///
/// # Errors
/// [`ConfigError::Invalid`] saying what is wrong, naming the flag.
pub fn check_percent(percent: u8) -> Result<(), ConfigError> {
    if (MIN_NEAR_DUPLICATE_PERCENT..=100).contains(&percent) {
        Ok(())
    } else {
        Err(ConfigError::Invalid(format!(
            "--near-duplicate-percent ({percent}) must be {MIN_NEAR_DUPLICATE_PERCENT}-100"
        )))
    }
}
