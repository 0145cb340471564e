//! Checking a request (a submit, or a schedule's list and options): its start URLs, and the
//! audit's limits, the coordinator's defaults narrowed by the request's options (pace, budgets,
//! scope rules, content thresholds).

use super::{Coordinator, EngineError};
use shoal_shared::frontier::Frontier;
use shoal_shared::pace::PaceLimits;
use shoal_shared::scope_rules::ScopeRules;
use shoal_shared::starts::{MAX_SITES_PER_AUDIT, StartList};
use shoal_shared::task::SiteLimits;
use shoal_shared::url::NormalizedUrl;
use shoal_shared::wire::{AuditOptions, SubmitRequest};
use std::time::Duration;

impl<F: Frontier> Coordinator<F> {
    /// Checks a request (a submit, or a schedule's list and options) as a submit does: the start
    /// URLs by [`StartList`]'s rules and caps, the options against the defaults. Returns the start
    /// URLs and the audit's limits.
    ///
    /// # Errors
    /// [`EngineError::BadRequest`] saying what is wrong.
    pub fn check(&self, req: &SubmitRequest) -> Result<(Vec<NormalizedUrl>, SiteLimits), EngineError> {
        if req.urls.len() > MAX_SITES_PER_AUDIT {
            return Err(EngineError::BadRequest(format!("more than {MAX_SITES_PER_AUDIT} sites")));
        }
        let mut list = StartList::default();
        for u in &req.urls {
            list.push(u).map_err(|e| EngineError::BadRequest(e.to_string()))?;
        }
        if list.is_empty() {
            return Err(EngineError::BadRequest("no start URL: give at least one".into()));
        }
        let limits = self.limits(&req.options)?;
        Ok((list.into_urls(), limits))
    }

    /// The limits of an audit: the defaults, narrowed by the request's options.
    fn limits(&self, o: &AuditOptions) -> Result<SiteLimits, EngineError> {
        let d = &self.defaults.limits;
        let pace = PaceLimits::new(
            o.in_flight.unwrap_or(d.pace.max_in_flight()),
            o.gap_ms.map_or(d.pace.gap(), Duration::from_millis),
        )
        .map_err(|e| EngineError::BadRequest(e.to_string()))?;
        let limits = SiteLimits {
            max_pages: o.max_pages.unwrap_or(d.max_pages),
            max_depth: o.max_depth.unwrap_or(d.max_depth),
            max_resources: o.max_resources.unwrap_or(d.max_resources),
            pace,
            follow_nofollow: o.follow_nofollow.unwrap_or(d.follow_nofollow),
            max_sitemaps: o.max_sitemaps.unwrap_or(d.max_sitemaps),
            max_sitemap_bytes: o.max_sitemap_bytes.unwrap_or(d.max_sitemap_bytes),
            browser_pages: o.browser_pages.unwrap_or(d.browser_pages),
            scope: Self::scope_rules(d, o)?,
            content: shoal_shared::content::ContentLimits {
                thin_page_words: o.thin_page_words.unwrap_or(d.content.thin_page_words),
                near_duplicate_percent: o.near_duplicate_percent.unwrap_or(d.content.near_duplicate_percent),
                image_budget_kib: o.image_budget_kib.unwrap_or(d.content.image_budget_kib),
            },
            ..d.clone()
        };
        if limits.max_pages == 0 {
            return Err(EngineError::BadRequest("max_pages must be at least 1".into()));
        }
        let percent = limits.content.near_duplicate_percent;
        if !(shoal_shared::content::MIN_NEAR_DUPLICATE_PERCENT..=100).contains(&percent) {
            return Err(EngineError::BadRequest(format!(
                "near_duplicate_percent ({percent}) must be {}-100",
                shoal_shared::content::MIN_NEAR_DUPLICATE_PERCENT
            )));
        }
        if limits.browser_pages > crate::config::MAX_BROWSER_PAGES {
            return Err(EngineError::BadRequest(format!(
                "browser_pages must be 0-{}",
                crate::config::MAX_BROWSER_PAGES
            )));
        }
        Ok(limits)
    }

    /// The audit's scope rules: a list the request gives replaces the default's list, the others
    /// stay.
    fn scope_rules(d: &SiteLimits, o: &AuditOptions) -> Result<ScopeRules, EngineError> {
        if o.include.is_none() && o.exclude.is_none() && o.strip_query.is_none() {
            return Ok(d.scope.clone());
        }
        let include = o.include.as_deref().unwrap_or(d.scope.include());
        let exclude = o.exclude.as_deref().unwrap_or(d.scope.exclude());
        let strip = o.strip_query.as_deref().unwrap_or(d.scope.strip_query());
        ScopeRules::new(include, exclude, strip).map_err(|e| EngineError::BadRequest(e.to_string()))
    }
}
