//! Start URLs as a user gives them: one site each, checked, deduplicated, in order, capped.
//!
//! The one rule for what counts as a start URL, whether it comes from the command line, a `--file`
//! list or the API: a bare host name means `https://`, the URL must normalise, a repeat is dropped,
//! and one audit takes at most [`MAX_SITES_PER_AUDIT`] of them.

use crate::url::NormalizedUrl;
use std::collections::HashSet;

/// Sites per audit at most (a batch of thousands is the point; this only stops mistakes).
pub const MAX_SITES_PER_AUDIT: usize = 100_000;

/// Why a start URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A start URL that cannot be crawled.
    #[error("start URL {url:?}: {reason}")]
    BadUrl {
        /// As given.
        url: String,
        /// Why.
        reason: String,
    },
    /// More start URLs than one audit takes.
    #[error("more than {max} start URLs in one audit: split the list into several audits")]
    TooMany {
        /// The cap ([`MAX_SITES_PER_AUDIT`]).
        max: usize,
    },
}

/// Start URLs in the order given, without duplicates (a set beside the list, so a list of 100,000
/// is not compared pairwise).
#[derive(Debug, Default)]
pub struct StartList {
    urls: Vec<NormalizedUrl>,
    seen: HashSet<NormalizedUrl>,
    given: usize,
}

impl StartList {
    /// Adds one start URL as given (with or without a scheme).
    ///
    /// # Errors
    /// [`StartError::BadUrl`] if it does not normalise, [`StartError::TooMany`] past the cap
    /// (counting repeats, so the cap also bounds the work of reading a list).
    pub fn push(&mut self, raw: &str) -> Result<(), StartError> {
        self.given += 1;
        if self.given > MAX_SITES_PER_AUDIT {
            return Err(StartError::TooMany { max: MAX_SITES_PER_AUDIT });
        }
        let with_scheme = if raw.contains("://") { raw.to_owned() } else { format!("https://{raw}") };
        let parsed = NormalizedUrl::parse(&with_scheme)
            .map_err(|e| StartError::BadUrl { url: raw.to_owned(), reason: e.to_string() })?;
        if self.seen.insert(parsed.clone()) {
            self.urls.push(parsed);
        }
        Ok(())
    }

    /// The start URLs kept, in the order given.
    #[must_use]
    pub fn into_urls(self) -> Vec<NormalizedUrl> {
        self.urls
    }

    /// True when no URL was kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.urls.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_hosts_get_https_and_repeats_go() {
        let mut l = StartList::default();
        for u in ["example.com", "https://example.com/", "http://example.org/a"] {
            l.push(u).expect("a valid start URL");
        }
        let urls: Vec<String> = l.into_urls().iter().map(ToString::to_string).collect();
        assert_eq!(urls, ["https://example.com/", "http://example.org/a"]);
    }

    #[test]
    fn bad_url_says_which() {
        let mut l = StartList::default();
        let e = l.push("http://[::1").expect_err("an unclosed IPv6 literal");
        assert!(matches!(e, StartError::BadUrl { ref url, .. } if url == "http://[::1"), "{e}");
    }
}
