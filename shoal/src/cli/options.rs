//! The per-audit options of `shoal submit` and `shoal schedule add`: what a client may set for one
//! audit (budgets, pace, the browser check, scope rules, content thresholds, extraction and search
//! rules), sent as the API's [`AuditOptions`]; the coordinator narrows its defaults by them
//! (`AuditSettings::narrow`), so they are checked there, once for every client.

use clap::Args;
use shoal_shared::custom::{ExtractRule, SearchRule};
use shoal_shared::render::RenderMode;
use shoal_shared::wire::AuditOptions;

/// The per-audit options a client may set (`shoal submit`, `shoal schedule add`); the rest comes
/// from the coordinator's defaults.
#[derive(Debug, Args, Clone)]
pub struct AuditOptionArgs {
    /// Pages per site (coordinator's default if omitted).
    #[arg(long)]
    pub max_pages: Option<u32>,
    /// Link depth (coordinator's default if omitted).
    #[arg(long)]
    pub max_depth: Option<u16>,
    /// Resource checks per site (coordinator's default if omitted).
    #[arg(long)]
    pub max_resources: Option<u32>,
    /// Requests in flight per host, 1-16 (coordinator's default if omitted).
    #[arg(long)]
    pub in_flight: Option<u32>,
    /// Milliseconds between request starts per host, 0-60000 (coordinator's default if omitted).
    #[arg(long)]
    pub gap_ms: Option<u64>,
    /// Follow nofollow links.
    #[arg(long)]
    pub follow_nofollow: bool,
    /// Sitemap files read per site (coordinator's default if omitted).
    #[arg(long)]
    pub max_sitemaps: Option<u32>,
    /// Sitemap bytes read per site, decompressed (coordinator's default if omitted).
    #[arg(long)]
    pub max_sitemap_bytes: Option<u64>,
    /// Pages per site opened in headless Chromium after the crawl, 0-50 (coordinator's default
    /// if omitted; the fleet needs a worker started with --browser).
    #[arg(long)]
    pub browser_pages: Option<u16>,
    /// The rendered crawl: never, auto or always (coordinator's default if omitted; the fleet
    /// needs a worker started with --browser).
    #[arg(long, value_name = "never|auto|always")]
    pub render: Option<RenderMode>,
    /// Pages per site rendered at most (coordinator's default if omitted).
    #[arg(long, value_name = "N")]
    pub render_budget: Option<u32>,
    /// Request only URLs matching this regular expression (repeatable; replaces the
    /// coordinator's --include list).
    #[arg(long, value_name = "REGEX")]
    pub include: Vec<String>,
    /// Never request URLs matching this regular expression (repeatable; replaces the
    /// coordinator's --exclude list).
    #[arg(long, value_name = "REGEX")]
    pub exclude: Vec<String>,
    /// Remove this query parameter before URLs are queued (repeatable; utm_* for a prefix, * for
    /// all; replaces the coordinator's --strip-query list).
    #[arg(long, value_name = "PARAM")]
    pub strip_query: Vec<String>,
    /// Words under which a page's main text is thin, 0 = off (coordinator's default if omitted).
    #[arg(long)]
    pub thin_page_words: Option<u32>,
    /// Near-duplicate threshold in percent, 80-100 (coordinator's default if omitted).
    #[arg(long)]
    pub near_duplicate_percent: Option<u8>,
    /// Image size budget in KiB, 0 = off (coordinator's default if omitted).
    #[arg(long)]
    pub image_budget_kib: Option<u32>,
    /// Extraction rules, repeatable (NAME=css:SELECTOR, NAME=css:SELECTOR@ATTR, NAME=regex:RE).
    /// With --search, the audit's whole rule set instead of the coordinator's.
    #[arg(long, value_name = "NAME=KIND:EXPR")]
    pub extract: Vec<ExtractRule>,
    /// Search rules, repeatable (NAME=regex:RE, NAME=!regex:RE).
    #[arg(long, value_name = "NAME=[!]regex:EXPR")]
    pub search: Vec<SearchRule>,
}

impl AuditOptionArgs {
    /// The options as the API takes them.
    #[must_use]
    pub fn to_options(&self) -> AuditOptions {
        AuditOptions {
            max_pages: self.max_pages,
            max_depth: self.max_depth,
            max_resources: self.max_resources,
            in_flight: self.in_flight,
            gap_ms: self.gap_ms,
            follow_nofollow: self.follow_nofollow.then_some(true),
            max_sitemaps: self.max_sitemaps,
            max_sitemap_bytes: self.max_sitemap_bytes,
            browser_pages: self.browser_pages,
            render: self.render,
            render_budget: self.render_budget,
            include: (!self.include.is_empty()).then(|| self.include.clone()),
            exclude: (!self.exclude.is_empty()).then(|| self.exclude.clone()),
            strip_query: (!self.strip_query.is_empty()).then(|| self.strip_query.clone()),
            thin_page_words: self.thin_page_words,
            near_duplicate_percent: self.near_duplicate_percent,
            image_budget_kib: self.image_budget_kib,
            extract: (!self.extract.is_empty() || !self.search.is_empty()).then(|| self.extract.clone()),
            search: (!self.extract.is_empty() || !self.search.is_empty()).then(|| self.search.clone()),
        }
    }
}
