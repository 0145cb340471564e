//! The API's wire types: what a client sends to submit an audit and what the coordinator answers
//! about audits and sites.
//!
//! They live in the core so that the server that answers and the client that asks (the `shoal
//! submit` and `shoal status` commands) share one definition: a field renamed on one side cannot
//! silently stop arriving on the other. Plain data with serde, no behaviour.

use crate::custom::{ExtractRule, SearchRule};
use crate::status::{AuditStatus, SiteStatus};
use serde::{Deserialize, Serialize};

/// Per-audit options a client may set; everything else comes from the coordinator's defaults.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditOptions {
    /// Pages per site.
    pub max_pages: Option<u32>,
    /// Link depth.
    pub max_depth: Option<u16>,
    /// Resource checks per site.
    pub max_resources: Option<u32>,
    /// Requests in flight per host (1-16).
    pub in_flight: Option<u32>,
    /// Milliseconds between request starts per host (0-60000).
    pub gap_ms: Option<u64>,
    /// Follow nofollow links.
    pub follow_nofollow: Option<bool>,
    /// Sitemap files read per site.
    #[serde(default)]
    pub max_sitemaps: Option<u32>,
    /// Sitemap bytes read per site (decompressed).
    #[serde(default)]
    pub max_sitemap_bytes: Option<u64>,
    /// Pages per site opened in headless Chromium after the crawl (0-50; 0 = off).
    #[serde(default)]
    pub browser_pages: Option<u16>,
    /// The rendered crawl: `never`, `auto` (the start page rendered, the rest when scripts add
    /// links or content) or `always`.
    #[serde(default)]
    pub render: Option<crate::render::RenderMode>,
    /// Pages per site rendered at most (1-100000).
    #[serde(default)]
    pub render_budget: Option<u32>,
    /// Only URLs matching one of these regular expressions are requested (the start URL always
    /// is); replaces the coordinator's `--include` list.
    #[serde(default)]
    pub include: Option<Vec<String>>,
    /// URLs matching one of these regular expressions are never requested; replaces the
    /// coordinator's `--exclude` list.
    #[serde(default)]
    pub exclude: Option<Vec<String>>,
    /// Query parameters removed from URLs before they are queued (`utm_*`, `*` for all);
    /// replaces the coordinator's `--strip-query` list.
    #[serde(default)]
    pub strip_query: Option<Vec<String>>,
    /// A page whose main text has fewer words is thin (0 = off).
    #[serde(default)]
    pub thin_page_words: Option<u32>,
    /// Pages at least this similar are near-duplicates (percent, 80-100).
    #[serde(default)]
    pub near_duplicate_percent: Option<u8>,
    /// Images larger than this many KiB are reported (0 = off).
    #[serde(default)]
    pub image_budget_kib: Option<u32>,
    /// Extraction rules (`price=css:.price`, docs/extraction.md). Given with or without `search`,
    /// the two lists are the audit's whole rule set instead of the coordinator's `--extract` and
    /// `--search`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>, example = json!(["price=css:.price"])))]
    pub extract: Option<Vec<ExtractRule>>,
    /// Search rules (`oos=regex:(?i)out of stock`, `!regex:` for pages without a match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>, example = json!(["oos=regex:(?i)out of stock"])))]
    pub search: Option<Vec<SearchRule>>,
}

/// A request to audit sites.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitRequest {
    /// Start URLs, one site each.
    pub urls: Vec<String>,
    /// Options.
    #[serde(default)]
    pub options: AuditOptions,
}

/// One site's state as the API reports it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteView {
    /// Site id.
    pub id: u64,
    /// Start URL.
    pub start_url: String,
    /// `running` or `done`.
    pub status: SiteStatus,
    /// Pages recorded.
    pub pages: u64,
    /// URLs recorded (all kinds).
    pub urls: u64,
    /// Findings recorded.
    pub findings: u64,
    /// Tasks queued in the frontier now.
    pub queued: u64,
    /// Tasks leased to workers now.
    pub leased: u64,
}

/// An audit's state as the API reports it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditView {
    /// Audit id.
    pub id: u64,
    /// `running`, `done`, `cancelled`, `interrupted`, `failed`.
    pub status: AuditStatus,
    /// Why it failed (only with `failed`): what state of it could not be read (docs/runbook.md,
    /// "A bad entry is quarantined").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Creation time (ms since the epoch).
    pub created_at_ms: u64,
    /// End time, if it ended.
    pub finished_at_ms: Option<u64>,
    /// Number of sites.
    pub sites_total: u64,
    /// Sites finished.
    pub sites_done: u64,
    /// Pages recorded.
    pub pages: u64,
    /// Findings recorded.
    pub findings: u64,
    /// Per-site detail (only in single-audit answers): one page of the sites in id order, at most
    /// [`SitePage::limit`], so an audit's status costs the same whatever its size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<SiteView>,
    /// Sites that wait for a place among the sites crawled at once (the coordinator's
    /// `--active-sites`); they are `running` with nothing queued until their turn.
    #[serde(default)]
    pub sites_waiting: u64,
    /// More sites follow `sites`: ask again with `?after=` this id for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sites_next_after: Option<u64>,
}

/// Which of an audit's sites a status lists (`GET /v1/audits/{id}?after=ID&limit=N`).
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SitePage {
    /// Only sites with a larger id (the previous page's `sites_next_after`).
    pub after: Option<u64>,
    /// At most this many sites ([`SitePage::DEFAULT_LIMIT`] when absent, at most
    /// [`SitePage::MAX_LIMIT`]).
    pub limit: Option<usize>,
}

impl SitePage {
    /// Sites per page unless asked otherwise.
    pub const DEFAULT_LIMIT: usize = 1_000;
    /// The most sites one page holds.
    pub const MAX_LIMIT: usize = 10_000;

    /// The page size in force.
    #[must_use]
    pub fn limit(&self) -> usize {
        self.limit.unwrap_or(Self::DEFAULT_LIMIT).clamp(1, Self::MAX_LIMIT)
    }
}

/// A request to add a recurring audit (`POST /v1/schedules`).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRequest {
    /// A name for people (1-200 characters, no control characters).
    pub name: String,
    /// Start URLs, one site each, checked like a submit's.
    pub urls: Vec<String>,
    /// Options of every run.
    #[serde(default)]
    pub options: AuditOptions,
    /// When: a cron pattern of five fields (`0 6 * * MON`) or an interval (`every 7d`).
    pub when: String,
    /// The IANA time zone the cron pattern is read in (`Europe/Berlin`); `UTC` if omitted.
    #[serde(default)]
    pub time_zone: Option<String>,
}

/// A recurring audit as the API reports it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleView {
    /// Schedule id.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// How many start URLs it has.
    pub sites: u64,
    /// Options of every run.
    pub options: AuditOptions,
    /// When, as given.
    pub when: String,
    /// The IANA time zone.
    pub time_zone: String,
    /// When it was added (ms since the epoch).
    pub created_at_ms: u64,
    /// When the next run is due (ms since the epoch); `None` when no time is left to match.
    pub next_run_ms: Option<u64>,
    /// The latest run's audit id.
    pub last_audit: Option<u64>,
    /// The latest run's status (`running`, `done`, `cancelled`, `interrupted`).
    pub last_status: Option<AuditStatus>,
    /// When the latest run started.
    pub last_started_ms: Option<u64>,
    /// The start URLs (only in `GET /v1/schedules/{id}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<String>,
}
