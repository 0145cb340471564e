//! The coordinator's configuration: the audit defaults an API request narrows, and the engine's
//! own settings.
//!
//! Built once, by the `shoal` binary, from flags, `SHOAL_*` variables, the config file and defaults
//! (one validation for every command and for `shoal config check`), beside the workers' part
//! ([`shoal_worker::config::WorkerConfig`]); the engine only ever sees this validated form, so an
//! out-of-range value cannot reach it.

use shoal_shared::content::{ContentLimits, MIN_NEAR_DUPLICATE_PERCENT};
use shoal_shared::custom::{CustomRules, RuleError};
use shoal_shared::frontier::FrontierSettings;
use shoal_shared::pace::{PaceError, PaceLimits};
use shoal_shared::render::MAX_RENDER_BUDGET;
use shoal_shared::scope_rules::{RuleError as ScopeRuleError, ScopeRules};
use shoal_shared::task::SiteLimits;
use shoal_shared::wire::AuditOptions;
use shoal_store::Retention;
use shoal_worker::config::Identity;
use std::time::Duration;

/// Pages per site the browser check opens at most (`--browser-pages`, the API's `browser_pages`).
pub const MAX_BROWSER_PAGES: u16 = 50;

/// Checks an audit's extraction and search rules by compiling them as its workers will
/// ([`shoal_worker::custom::compile`]), so a rule that cannot run is refused before the audit
/// starts, by name.
///
/// # Errors
/// The first rule that does not compile.
pub fn check_custom(rules: &CustomRules) -> Result<(), RuleError> {
    shoal_worker::custom::compile(rules).map(drop)
}

/// What one audit runs with besides the coordinator's settings: its limits and its rules. The
/// engine's defaults ([`EngineConfig::defaults`]) narrowed by a request's options
/// ([`AuditSettings::narrow`]), or what a running audit was started with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditSettings {
    /// Per-site limits and pace.
    pub limits: SiteLimits,
    /// Extraction and search rules, checked: each compiles in the worker ([`check_custom`]).
    pub custom: CustomRules,
}

/// The coordinator engine's settings ([`crate::Coordinator::new`]).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The defaults of an audit (`--max-pages`, `--extract`, ...; the API may narrow them per
    /// audit).
    pub defaults: AuditSettings,
    /// Frontier-wide settings.
    pub frontier: FrontierSettings,
    /// How the workers name Shoal to sites, recorded with each audit's options. The binary takes it
    /// from the same validated flags as the workers' settings
    /// ([`shoal_worker::config::WorkerConfig::identity`]).
    pub identity: Identity,
    /// Sites in the frontier at once, over all running audits; the others wait their turn
    /// ([`crate::admission`]).
    pub max_active_sites: usize,
    /// How often a schedule may run at most (`shoal coordinator --schedule-min-interval`): the
    /// operator's, never an API caller's ([`crate::schedule::when`]).
    pub schedule_min_interval: Duration,
    /// Which ended audits are removed after each audit ends (`shoal coordinator --retain-audits`,
    /// `--retain-days`; the store's one rule, [`shoal_store::retention`]). Off by default.
    pub retention: Retention,
}

/// Sites in the frontier at once unless configured (`--active-sites`): what admission keeps
/// active (`crate::admission`).
pub const DEFAULT_MAX_ACTIVE_SITES: usize = 2_000;

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            defaults: AuditSettings::default(),
            frontier: FrontierSettings::default(),
            identity: Identity::default(),
            max_active_sites: DEFAULT_MAX_ACTIVE_SITES,
            schedule_min_interval: crate::schedule::when::DEFAULT_MIN_INTERVAL,
            retention: Retention::default(),
        }
    }
}

impl AuditSettings {
    /// An audit's settings: these defaults narrowed by a request's options. The limits take each
    /// option given (a scope-rule list the request gives replaces the default's list, the others
    /// stay); the rules are the request's when it gives either list (then they are the audit's
    /// whole set), else the defaults', compiled as the workers will compile them.
    ///
    /// # Errors
    /// [`OptionError`] saying what is wrong with the options (a 400 answer).
    pub fn narrow(&self, o: &AuditOptions) -> Result<AuditSettings, OptionError> {
        let d = &self.limits;
        let pace = PaceLimits::new(
            o.in_flight.unwrap_or(d.pace.max_in_flight()),
            o.gap_ms.map_or(d.pace.gap(), Duration::from_millis),
        )?;
        let limits = SiteLimits {
            max_pages: o.max_pages.unwrap_or(d.max_pages),
            max_depth: o.max_depth.unwrap_or(d.max_depth),
            max_resources: o.max_resources.unwrap_or(d.max_resources),
            pace,
            follow_nofollow: o.follow_nofollow.unwrap_or(d.follow_nofollow),
            max_sitemaps: o.max_sitemaps.unwrap_or(d.max_sitemaps),
            max_sitemap_bytes: o.max_sitemap_bytes.unwrap_or(d.max_sitemap_bytes),
            browser_pages: o.browser_pages.unwrap_or(d.browser_pages),
            render: o.render.unwrap_or(d.render),
            render_budget: o.render_budget.unwrap_or(d.render_budget),
            scope: scope_rules(d, o)?,
            content: ContentLimits {
                thin_page_words: o.thin_page_words.unwrap_or(d.content.thin_page_words),
                near_duplicate_percent: o.near_duplicate_percent.unwrap_or(d.content.near_duplicate_percent),
                image_budget_kib: o.image_budget_kib.unwrap_or(d.content.image_budget_kib),
            },
            ..d.clone()
        };
        if limits.max_pages == 0 {
            return Err(OptionError::NoPages);
        }
        let percent = limits.content.near_duplicate_percent;
        if !(MIN_NEAR_DUPLICATE_PERCENT..=100).contains(&percent) {
            return Err(OptionError::NearDuplicatePercent { percent });
        }
        if limits.browser_pages > MAX_BROWSER_PAGES {
            return Err(OptionError::BrowserPages);
        }
        if !(1..=MAX_RENDER_BUDGET).contains(&limits.render_budget) {
            return Err(OptionError::RenderBudget);
        }
        let custom = if o.extract.is_none() && o.search.is_none() {
            self.custom.clone()
        } else {
            let rules = CustomRules::new(o.extract.clone().unwrap_or_default(), o.search.clone().unwrap_or_default())?;
            check_custom(&rules)?;
            rules
        };
        Ok(AuditSettings { limits, custom })
    }
}

/// What is wrong with an audit's options ([`AuditSettings::narrow`]); its text is the 400 answer's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OptionError {
    /// `in_flight` or `gap_ms` out of range.
    #[error(transparent)]
    Pace(#[from] PaceError),
    /// `max_pages` is 0.
    #[error("max_pages must be at least 1")]
    NoPages,
    /// `near_duplicate_percent` out of range.
    #[error("near_duplicate_percent ({percent}) must be {MIN_NEAR_DUPLICATE_PERCENT}-100")]
    NearDuplicatePercent {
        /// The value given.
        percent: u8,
    },
    /// `render_budget` 0 or over [`MAX_RENDER_BUDGET`].
    #[error("render_budget must be 1-{MAX_RENDER_BUDGET}")]
    RenderBudget,
    /// `browser_pages` over [`MAX_BROWSER_PAGES`].
    #[error("browser_pages must be 0-{MAX_BROWSER_PAGES}")]
    BrowserPages,
    /// The extraction or search rules are too many, named twice, or cannot be compiled.
    #[error("extract/search: {0}")]
    Custom(#[from] RuleError),
    /// An include, exclude or strip-query rule is wrong.
    #[error(transparent)]
    Scope(#[from] ScopeRuleError),
}

/// The audit's scope rules: a list the request gives replaces the default's list, the others
/// stay.
fn scope_rules(d: &SiteLimits, o: &AuditOptions) -> Result<ScopeRules, ScopeRuleError> {
    if o.include.is_none() && o.exclude.is_none() && o.strip_query.is_none() {
        return Ok(d.scope.clone());
    }
    let include = o.include.as_deref().unwrap_or(d.scope.include());
    let exclude = o.exclude.as_deref().unwrap_or(d.scope.exclude());
    let strip = o.strip_query.as_deref().unwrap_or(d.scope.strip_query());
    ScopeRules::new(include, exclude, strip)
}
