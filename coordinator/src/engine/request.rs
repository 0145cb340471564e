//! Checking a request (a submit, or a schedule's list and options): its start URLs, and the
//! audit's settings, the coordinator's defaults narrowed by the request's options (pace, budgets,
//! scope rules, content thresholds, extraction and search rules) by
//! [`AuditSettings::narrow`](crate::config::AuditSettings::narrow); and whether a worker that can
//! run what the settings ask for is live ([`Coordinator::check_browser`]).

use super::{Coordinator, EngineError};
use crate::config::AuditSettings;
use shoal_shared::frontier::Frontier;
use shoal_shared::starts::{MAX_SITES_PER_AUDIT, StartList};
use shoal_shared::time::UnixMs;
use shoal_shared::url::NormalizedUrl;
use shoal_shared::wire::SubmitRequest;

impl<F: Frontier> Coordinator<F> {
    /// Checks a request (a submit, or a schedule's list and options) as a submit does: the start
    /// URLs by [`StartList`]'s rules and caps, the options against the defaults. Returns the start
    /// URLs and the audit's settings.
    ///
    /// # Errors
    /// [`EngineError::BadRequest`] saying what is wrong.
    pub fn check(&self, req: &SubmitRequest) -> Result<(Vec<NormalizedUrl>, AuditSettings), EngineError> {
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
        let settings = self.config.defaults.narrow(&req.options).map_err(|e| EngineError::BadRequest(e.to_string()))?;
        Ok((list.into_urls(), settings))
    }

    /// Refuses settings that need a browser worker
    /// ([`SiteLimits::needs_browser`](shoal_shared::task::SiteLimits::needs_browser)) while the
    /// frontier counts none live ([`Frontier::browser_workers`]). Why at submit: browser tasks are
    /// queued only after the crawl and only such a worker claims them, so the audit would
    /// otherwise crawl every site and then wait forever. `shoal audit` does not ask (it runs its
    /// own browser worker).
    ///
    /// # Errors
    /// [`EngineError::NoBrowserWorker`]; the frontier failed.
    pub async fn check_browser(&self, settings: &AuditSettings) -> Result<(), EngineError> {
        if !settings.limits.needs_browser() {
            return Ok(());
        }
        let live = self.frontier.browser_workers(UnixMs::from(std::time::SystemTime::now())).await?;
        if live == 0 {
            let l = &settings.limits;
            let mut why = Vec::new();
            if l.browser_pages > 0 {
                why.push(format!("browser_pages {}", l.browser_pages));
            }
            if shoal_shared::render::renders(l.render, l.render_budget) {
                why.push(format!("render {}", l.render));
            }
            return Err(EngineError::NoBrowserWorker { why: why.join(", ") });
        }
        Ok(())
    }
}
