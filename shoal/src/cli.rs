//! Command-line interface: argument definitions, validated into typed settings.
//!
//! Every flag also reads a `SHOAL_*` environment variable (SPEC §1). Defaults are the named
//! constants of the crates that own them, so `--help` shows what the code does.

use clap::{Args, Parser, Subcommand, ValueEnum};

mod report;
pub use report::{BrandingArgs, FailOn, ReportArgs, ReportFormat};

mod browser;
mod content;
mod custom;
mod domain;
mod manual;
mod mcp;
mod options;
mod prune;
mod schedule;
mod scope;
mod token;

pub use browser::{BrowserArgs, MAX_BROWSER_PAGES};
pub use content::ContentArgs;
pub use custom::CustomArgs;
pub use domain::DomainArgs;
pub use manual::{CompletionsArgs, ManArgs};
pub use mcp::McpArgs;
pub use options::AuditOptionArgs;
pub use prune::{DEFAULT_PRUNE_WAIT_S, PruneArgs, RetainArgs};
pub use schedule::{ScheduleAddArgs, ScheduleCommand, ScheduleListArgs, ScheduleRemoveArgs};
pub use scope::ScopeArgs;
use shoal_coordinator::schedule::notify::NotifySettings;
use shoal_coordinator::{AuditSettings, EngineConfig};
use shoal_frontier_redis::RedisTarget;
use shoal_shared::frontier::{DEFAULT_LEASE_BATCH, FrontierSettings};
use shoal_shared::pace::{DEFAULT_MAX_IN_FLIGHT_PER_IP, PaceLimits};
use shoal_shared::robots::ProductToken;
use shoal_shared::starts::{StartError, StartList};
use shoal_shared::task::{
    DEFAULT_MAX_DEPTH, DEFAULT_MAX_PAGES, DEFAULT_MAX_RESOURCES, DEFAULT_MAX_SITEMAP_BYTES, DEFAULT_MAX_SITEMAPS,
    SiteLimits,
};
use shoal_shared::url::NormalizedUrl;
use shoal_worker::config::WorkerConfig;
use shoal_worker::crawl::CrawlSettings;
use shoal_worker::extract::ExtractCaps;
use shoal_worker::fetch::{DEFAULT_MAX_BODY, FetchSettings};
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;
pub use token::{ScopeName, TokenAddArgs, TokenCommand, TokenListArgs, TokenRemoveArgs};

/// What `shoal --version` prints after the name: the package version and the commit the binary
/// was built from (`build.rs`: the repository's HEAD, else the `SHOAL_COMMIT` build variable, else
/// `unknown`), so a report or a bug can be traced to its source.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("SHOAL_BUILD_COMMIT"), ")");

/// Shoal: a polite website-audit crawler.
#[derive(Debug, Parser)]
#[command(
    name = "shoal",
    version = VERSION,
    about,
    long_about = None,
    propagate_version = true,
    after_help = "Start here:\n  shoal audit https://example.com/ --report html --out report.html\n\n\
                  Many sites: shoal audit --file sites.txt. A fleet: shoal coordinator + shoal worker (README).\n\
                  Site owners: Shoal obeys robots.txt (ShoalBot by default) and waits between requests; see shoal botpage."
)]
pub struct Cli {
    /// Log format: `human` on a terminal, `json` for log collectors.
    #[arg(long, global = true, env = "SHOAL_LOG_FORMAT", value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
    /// A TOML configuration file (docs/config.md). Its values count where neither a flag nor a
    /// SHOAL_* environment variable gives one: defaults < file < environment < flags.
    #[arg(long, global = true, env = "SHOAL_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Readable lines.
    Human,
    /// One JSON object per line.
    Json,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Audit one or more sites on this machine (no Redis needed) and store the results in the audit
    /// database.
    Audit(Box<AuditArgs>),
    /// Write a report of an audit from the audit database.
    Report(ReportArgs),
    /// Check URLs against a robots.txt file exactly as the crawler would.
    Robots(RobotsArgs),
    /// Run the coordinator service: HTTP API, audit database, aggregation of workers' results.
    Coordinator(Box<CoordinatorArgs>),
    /// Run a stateless worker that fetches for the coordinator's audits (any number, anywhere).
    Worker(Box<WorkerArgs>),
    /// Submit an audit to a coordinator.
    Submit(SubmitArgs),
    /// Show audits on a coordinator.
    Status(StatusArgs),
    /// Recurring audits on a coordinator: add, list, remove.
    #[command(subcommand)]
    Schedule(ScheduleCommand),
    /// Remove old audits from the audit database (per start URL the latest N stay, or those that
    /// ended within DAYS), with everything they hold, and give the space back.
    Prune(PruneArgs),
    /// API tokens with scopes (read, submit, site) in the audit database: add, list, remove.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Check a configuration file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Write the page for site owners (shoalbot.md, shoalbot.html) from the settings the crawler
    /// uses, so it says what the crawler does.
    Botpage(Box<BotpageArgs>),
    /// Print the shell completion script for bash, zsh, fish, elvish or PowerShell.
    Completions(CompletionsArgs),
    /// Print the man page shoal(1), or with --dir write a page per command into a directory.
    Man(ManArgs),
    /// Serve the audit database to an AI assistant over MCP (Model Context Protocol) on standard
    /// input and output: audits, site health, issues, comparisons, finding codes, robots.txt.
    Mcp(McpArgs),
}

/// `shoal config`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate a configuration file together with the environment, and print every setting of
    /// one command with its value and where it came from (default, file, env, flag).
    Check(ConfigCheckArgs),
}

/// `shoal config check`.
#[derive(Debug, Args)]
pub struct ConfigCheckArgs {
    /// The file to check (default: --config or SHOAL_CONFIG; without any, only the environment).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The command whose effective settings are shown and validated.
    #[arg(long = "for", value_enum, default_value_t = ConfigTarget::Audit)]
    pub target: ConfigTarget,
    /// Flags of that command, after `--`, to see what they change (`-- --max-pages 50`).
    #[arg(last = true, value_name = "FLAGS")]
    pub flags: Vec<String>,
}

/// The commands a configuration file configures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConfigTarget {
    /// `shoal audit`.
    Audit,
    /// `shoal coordinator`.
    Coordinator,
    /// `shoal worker`.
    Worker,
    /// `shoal submit`.
    Submit,
    /// `shoal status`.
    Status,
    /// `shoal report`.
    Report,
    /// `shoal prune`.
    Prune,
    /// `shoal botpage`.
    Botpage,
    /// `shoal mcp`.
    Mcp,
}

/// `shoal botpage`.
#[derive(Debug, Args)]
pub struct BotpageArgs {
    /// Directory to write shoalbot.md and shoalbot.html into (created if missing).
    #[arg(long, env = "SHOAL_BOTPAGE_OUT", value_name = "DIR", default_value = ".")]
    pub out: PathBuf,
    /// Who runs the crawl, as site owners should read it (a company, team or person).
    #[arg(long, env = "SHOAL_OPERATOR_NAME")]
    pub operator_name: Option<String>,
    /// How site owners reach the operator: an email address or an http(s) URL.
    #[arg(long, env = "SHOAL_OPERATOR_CONTACT")]
    pub operator_contact: Option<String>,
    /// Where the page is published (http or https); the User-Agent's +URL should point there.
    #[arg(long, env = "SHOAL_INFO_URL")]
    pub info_url: Option<String>,
    /// The crawl settings the page describes: the same keys, variables and flags the crawling
    /// commands read.
    #[command(flatten)]
    pub crawl: CrawlArgs,
}

/// Where the shared frontier lives.
#[derive(Debug, Args, Clone)]
pub struct RedisArgs {
    /// Redis URL: `redis://[:PASSWORD@]HOST:PORT/DB`, `rediss://` for TLS, `redis+unix:///path`;
    /// or the master that Sentinels watch, followed across failovers:
    /// `redis+sentinel://[:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE` (`rediss+sentinel://` for
    /// TLS; `?sentinel_password=P` when the Sentinels have their own).
    #[arg(long, env = "SHOAL_REDIS", default_value = "redis://127.0.0.1:6379")]
    pub redis: String,
    /// Key namespace in Redis: one per deployment, so several can share a server.
    #[arg(long, env = "SHOAL_NAMESPACE", default_value = "default")]
    pub namespace: String,
    /// PEM file of the certificate authority to verify a `rediss://` server against, instead of
    /// the system's (a private CA, as managed Redis services and self-run TLS setups use).
    #[arg(long, env = "SHOAL_REDIS_CA", value_name = "FILE")]
    pub redis_ca: Option<PathBuf>,
}

impl RedisArgs {
    /// The Redis server to connect to, its CA read.
    ///
    /// # Errors
    /// [`ConfigError::File`] if `--redis-ca` cannot be read, [`ConfigError::Invalid`] if it is
    /// given for a URL without TLS, or if a Sentinel URL cannot be read.
    pub fn target(&self) -> Result<RedisTarget, ConfigError> {
        let target = match &self.redis_ca {
            None => RedisTarget::new(self.redis.clone()),
            Some(path) => {
                let pem = std::fs::read(path).map_err(|error| ConfigError::File { path: path.clone(), error })?;
                RedisTarget::with_ca(self.redis.clone(), pem)
                    .map_err(|e| ConfigError::Invalid(format!("--redis-ca: {e}")))?
            }
        };
        target.check().map_err(|e| ConfigError::Invalid(format!("--redis: {e}")))?;
        Ok(target)
    }
}

/// `shoal coordinator`.
#[derive(Debug, Args)]
pub struct CoordinatorArgs {
    /// Redis.
    #[command(flatten)]
    pub redis: RedisArgs,
    /// The audit database (SQLite).
    #[arg(long, env = "SHOAL_DB", default_value = "shoal.db")]
    pub db: PathBuf,
    /// Address the HTTP API listens on.
    #[arg(long, env = "SHOAL_LISTEN", default_value = "127.0.0.1:8750")]
    pub listen: std::net::SocketAddr,
    /// Bearer token API clients and dashboard logins must present (required; at least 16 visible
    /// ASCII characters, e.g. from `openssl rand -hex 32`).
    #[arg(long, env = "SHOAL_TOKEN", hide_env_values = true)]
    pub token: String,
    /// POST a signed JSON summary here when a scheduled run ends (docs/notify.md). Off if omitted.
    #[arg(long, env = "SHOAL_NOTIFY_URL", value_name = "URL")]
    pub notify_url: Option<String>,
    /// The HMAC-SHA256 key the webhook's body is signed with (X-Shoal-Signature); at least 16
    /// visible ASCII characters. Required with --notify-url.
    #[arg(long, env = "SHOAL_NOTIFY_SECRET", hide_env_values = true, value_name = "SECRET")]
    pub notify_secret: Option<String>,
    /// How often one schedule may run at most: an `every` interval shorter than this, or a cron
    /// pattern with two times closer than this, is refused, and schedules already stored run no
    /// more often. `<n><unit>` with s, m, h, d or w (docs/schedules.md).
    #[arg(
        long,
        env = "SHOAL_SCHEDULE_MIN_INTERVAL",
        value_name = "SPAN",
        default_value = "1h",
        value_parser = shoal_coordinator::schedule::when::parse_min_interval
    )]
    pub schedule_min_interval: Duration,
    /// Retention: old audits removed after each audit ends.
    #[command(flatten)]
    pub retain: RetainArgs,
    /// Defaults for submitted audits (limits and pace) and the frontier (per-IP cap, lease time).
    #[command(flatten)]
    pub crawl: CrawlArgs,
    /// The operator's name and logo on the dashboard's reports.
    #[command(flatten)]
    pub branding: BrandingArgs,
}

impl CoordinatorArgs {
    /// The webhook settings, validated: both flags or neither.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for a bad URL or secret, or one flag without the other.
    pub fn notify(&self) -> Result<Option<NotifySettings>, ConfigError> {
        match (&self.notify_url, &self.notify_secret) {
            (None, None) => Ok(None),
            (Some(url), Some(secret)) => {
                NotifySettings::new(url, secret).map(Some).map_err(|e| ConfigError::Invalid(e.to_string()))
            }
            (Some(_), None) => Err(ConfigError::Invalid("--notify-url needs --notify-secret to sign with".into())),
            (None, Some(_)) => Err(ConfigError::Invalid("--notify-secret is set but --notify-url is not".into())),
        }
    }
}

/// `shoal worker`.

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Redis.
    #[command(flatten)]
    pub redis: RedisArgs,
    /// Fetches in flight at most in this worker.
    #[arg(long, env = "SHOAL_CONCURRENCY", default_value_t = 32)]
    pub concurrency: usize,
    /// Also run the browser check's page loads (`--browser-pages` of the audits): starts
    /// Chromium (--chromium) at the first one. Workers without it never take them.
    #[arg(long, env = "SHOAL_BROWSER")]
    pub browser: bool,
    /// This worker's name in leases and logs (default: host name and process id).
    #[arg(long, env = "SHOAL_WORKER_ID")]
    pub id: Option<String>,
    /// Serve Prometheus metrics on this address (`/metrics`), e.g. 0.0.0.0:9750. Off if omitted.
    #[arg(long, env = "SHOAL_METRICS_LISTEN")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Fetch settings (user agent, robots token, timeouts, caps, address guard). Limits and pace
    /// come with each audit from the coordinator.
    #[command(flatten)]
    pub crawl: CrawlArgs,
}

/// Where a client finds the coordinator.
#[derive(Debug, Args, Clone)]
pub struct ClientArgs {
    /// The coordinator's base URL.
    #[arg(long, env = "SHOAL_COORDINATOR", default_value = "http://127.0.0.1:8750")]
    pub coordinator: String,
    /// Bearer token: the coordinator's --token.
    #[arg(long, env = "SHOAL_TOKEN", hide_env_values = true)]
    pub token: String,
}

/// `shoal submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// Start URLs, one site each.
    #[arg(value_name = "URL")]
    pub urls: Vec<String>,
    /// A file with one start URL per line (blank lines and lines starting with # are skipped;
    /// lines up to 8 KiB, at most 100,000 URLs).
    #[arg(long, env = "SHOAL_FILE", value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Coordinator.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Wait until the audit ends, showing progress.
    #[arg(long, env = "SHOAL_WAIT")]
    pub wait: bool,
    /// Per-audit options.
    #[command(flatten)]
    pub options: AuditOptionArgs,
}

/// `shoal status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// One audit (all if omitted).
    pub audit: Option<u64>,
    /// Coordinator.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Print the coordinator's JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// With an audit: list its sites after this site id (the `sites_next_after` of the page
    /// before).
    #[arg(long, value_name = "SITE_ID", requires = "audit")]
    pub after: Option<u64>,
    /// With an audit: list at most this many of its sites (default 1,000, at most 10,000).
    #[arg(long, value_name = "N", requires = "audit")]
    pub limit: Option<usize>,
}

/// `shoal audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Start URLs, one site each (e.g. `https://example.com/`).
    #[arg(value_name = "URL")]
    pub urls: Vec<String>,
    /// A file with one start URL per line (blank lines and lines starting with # are skipped;
    /// lines up to 8 KiB, at most 100,000 URLs).
    #[arg(long, env = "SHOAL_FILE", value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// The audit database (SQLite), created if missing; every audit is kept in it until `shoal
    /// prune` removes it.
    #[arg(long, env = "SHOAL_DB", default_value = "shoal.db")]
    pub db: PathBuf,
    /// Crawl settings.
    #[command(flatten)]
    pub crawl: CrawlArgs,
    /// Fetches in flight at most, across all sites (each host still gets at most --in-flight).
    #[arg(long, env = "SHOAL_CONCURRENCY", default_value_t = 64)]
    pub concurrency: usize,
    /// Never show a progress bar, even on a terminal (log lines instead).
    #[arg(long, env = "SHOAL_NO_PROGRESS")]
    pub no_progress: bool,
    /// Serve Prometheus metrics on this address (`/metrics`) while the audit runs. Off if omitted.
    #[arg(long, env = "SHOAL_METRICS_LISTEN")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// After the audit, write a report in this format (to --out, or standard output for json).
    #[arg(long, env = "SHOAL_REPORT", value_enum)]
    pub report: Option<ReportFormat>,
    /// Where --report writes (a file for json, a directory for csv).
    #[arg(long, env = "SHOAL_OUT")]
    pub out: Option<PathBuf>,
    /// The operator's name and logo on the HTML report.
    #[command(flatten)]
    pub branding: BrandingArgs,
}

/// Settings shared by every command that crawls.
#[derive(Debug, Args, Clone)]
pub struct CrawlArgs {
    /// Allow crawling loopback, private, link-local and other non-public addresses (tests, intranets).
    #[arg(long, env = "SHOAL_ALLOW_PRIVATE")]
    pub allow_private: bool,
    /// Resolve HOST to IP instead of asking DNS (repeatable). The address guard still applies.
    #[arg(long = "resolve", value_name = "HOST=IP", env = "SHOAL_RESOLVE", value_delimiter = ',')]
    pub resolve: Vec<String>,
    /// Resolve only names given with --resolve; no DNS queries at all (tests, air-gapped runs).
    #[arg(long, env = "SHOAL_NO_DNS")]
    pub no_dns: bool,
    /// The User-Agent header sent with every request.
    #[arg(long, env = "SHOAL_USER_AGENT", default_value_t = FetchSettings::default().user_agent)]
    pub user_agent: String,
    /// The product token matched against robots.txt User-agent lines.
    #[arg(long, env = "SHOAL_ROBOTS_TOKEN", default_value = "ShoalBot")]
    pub robots_token: String,
    /// Pages fetched per site at most.
    #[arg(long, env = "SHOAL_MAX_PAGES", default_value_t = DEFAULT_MAX_PAGES)]
    pub max_pages: u32,
    /// Link depth followed at most (the start page is depth 0).
    #[arg(long, env = "SHOAL_MAX_DEPTH", default_value_t = DEFAULT_MAX_DEPTH)]
    pub max_depth: u16,
    /// Resource checks (images, scripts, stylesheets) per site at most.
    #[arg(long, env = "SHOAL_MAX_RESOURCES", default_value_t = DEFAULT_MAX_RESOURCES)]
    pub max_resources: u32,
    /// Sitemap files read per site at most (robots.txt's and those their indexes list). None are
    /// read once the page budget is spent.
    #[arg(long, env = "SHOAL_MAX_SITEMAPS", default_value_t = DEFAULT_MAX_SITEMAPS)]
    pub max_sitemaps: u32,
    /// Sitemap bytes read per site at most, decompressed, all files together (one file is never
    /// read past 50 MB).
    #[arg(long, env = "SHOAL_MAX_SITEMAP_BYTES", default_value_t = DEFAULT_MAX_SITEMAP_BYTES)]
    pub max_sitemap_bytes: u64,
    /// Requests in flight to one host at most (1-16).
    #[arg(long, env = "SHOAL_IN_FLIGHT", default_value_t = 4)]
    pub in_flight: u32,
    /// Milliseconds between request starts to one host at least (0-60000). robots.txt Crawl-delay can
    /// only raise it.
    #[arg(long, env = "SHOAL_GAP_MS", default_value_t = 300)]
    pub gap_ms: u64,
    /// Requests in flight to one server IP at most, across all its hosts.
    #[arg(long, env = "SHOAL_IP_IN_FLIGHT", default_value_t = DEFAULT_MAX_IN_FLIGHT_PER_IP)]
    pub ip_in_flight: u16,
    /// Sites crawled at once at most, over all running audits (coordinator and `shoal audit`); the
    /// rest of a large audit waits in the coordinator and starts as sites finish, taking turns
    /// between audits.
    #[arg(long, env = "SHOAL_ACTIVE_SITES", default_value_t = shoal_coordinator::admission::DEFAULT_MAX_ACTIVE_SITES)]
    pub active_sites: usize,
    /// Seconds a request may take, body included.
    #[arg(long, env = "SHOAL_TIMEOUT_S", default_value_t = 15)]
    pub timeout_s: u64,
    /// Decompressed body bytes read per response at most; more is reported.
    #[arg(long, env = "SHOAL_MAX_BODY_BYTES", default_value_t = DEFAULT_MAX_BODY)]
    pub max_body_bytes: u64,
    /// Links per page considered at most; more is reported.
    #[arg(long, env = "SHOAL_MAX_LINKS", default_value_t = shoal_worker::extract::DEFAULT_MAX_LINKS)]
    pub max_links: usize,
    /// Follow rel=nofollow links and links on nofollow pages too.
    #[arg(long, env = "SHOAL_FOLLOW_NOFOLLOW")]
    pub follow_nofollow: bool,
    /// Do not check links to other sites (by default each is checked with one HEAD, and one GET
    /// only if HEAD fails, after that host's robots.txt allows it, under that host's pace).
    #[arg(long, env = "SHOAL_NO_EXTERNAL")]
    pub no_external: bool,
    /// Turn the latency guards (per host and per server IP) off: a host is then slowed down only
    /// by a 429, a 503 with Retry-After, its Crawl-delay or a quota it states, not when its
    /// answers get slower.
    #[arg(long, env = "SHOAL_NO_LATENCY_GUARD")]
    pub no_latency_guard: bool,
    /// Seconds an external link's result (and another site's robots.txt, at most 24 h) is reused
    /// across sites and audits.
    #[arg(long, env = "SHOAL_EXTERNAL_CACHE_S", default_value_t = 21_600)]
    pub external_cache_s: u64,
    /// Extra trusted CA certificates (PEM file) for fetching and for the certificate check, for
    /// intranets and tests. The certificate check then judges against these roots only.
    #[arg(long, env = "SHOAL_CA_FILE", value_name = "PATH")]
    pub ca_file: Option<PathBuf>,
    /// Which URLs of a site are requested: --include, --exclude, --strip-query.
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// The DNS, e-mail and domain checks (SPEC §9).
    #[command(flatten)]
    pub domain: DomainArgs,
    /// The browser check (SPEC §10).
    #[command(flatten)]
    pub browser: BrowserArgs,
    /// The content thresholds: thin pages, near-duplicates, the image budget.
    #[command(flatten)]
    pub content: ContentArgs,
    /// Custom extraction and search rules.
    #[command(flatten)]
    pub custom: CustomArgs,
    /// Seconds a lease lasts without a renewal (3-600). Workers renew their leases every third
    /// of it while the fetch runs, so a dead worker's URLs go to another worker about this long
    /// after its last renewal, and a slow fetch is never handed out twice.
    #[arg(long, env = "SHOAL_LEASE_TTL_S", default_value_t = 10)]
    pub lease_ttl_s: u64,
    /// URLs of one host a worker may take in one lease at most (1-32), on hosts with no gap in
    /// force (`--gap-ms 0`, no Crawl-delay, not slowed). It fetches them one after another on the
    /// host's one slot, and Redis does the per-lease work once for all of them; no further one
    /// starts once the lease has run 2 s. 1 turns it off.
    #[arg(long, env = "SHOAL_LEASE_BATCH", default_value_t = DEFAULT_LEASE_BATCH)]
    pub lease_batch: u8,
}

/// `shoal robots`.
#[derive(Debug, Args)]
pub struct RobotsArgs {
    /// The robots.txt file to read.
    #[arg(long)]
    pub file: PathBuf,
    /// The crawler to check for: a bare product token (ShoalBot) or a full User-Agent string.
    #[arg(long, default_value = "ShoalBot")]
    pub agent: String,
    /// Print the file's Sitemap URLs, one per line, instead of verdicts.
    #[arg(long)]
    pub sitemaps: bool,
    /// Print the Crawl-delay in seconds for the agent (or `none`) instead of verdicts.
    #[arg(long)]
    pub crawl_delay: bool,
    /// Print each documented AI crawler's verdict per URL instead of --agent's (docs/ai-crawlers.md).
    #[arg(long, conflicts_with_all = ["sitemaps", "crawl_delay"])]
    pub ai_crawlers: bool,
    /// URLs to check.
    #[arg(value_name = "URL")]
    pub urls: Vec<String>,
}

/// Settings that are wrong, with what to do about them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A start URL that cannot be crawled.
    #[error("start URL {url:?}: {reason}")]
    BadUrl {
        /// As given.
        url: String,
        /// Why.
        reason: String,
    },
    /// No start URL at all.
    #[error("no start URL: give URLs as arguments or --file")]
    NoUrls,
    /// --file unreadable.
    #[error("cannot read {path}: {error}")]
    File {
        /// The file.
        path: PathBuf,
        /// The cause (shown in this error's text, so not its source: no repetition with `{:#}`).
        error: std::io::Error,
    },
    /// A line of --file that is refused, or the file is over a cap.
    #[error("{path}: {error}")]
    FileLine {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line number (shown in this error's text, so not its source).
        error: crate::sitelist::ListError,
    },
    /// More start URLs than one audit takes.
    #[error("more than {max} start URLs in one audit: split the list into several audits")]
    TooManyUrls {
        /// The cap ([`shoal_shared::starts::MAX_SITES_PER_AUDIT`]).
        max: usize,
    },
    /// A value out of range.
    #[error("{0}")]
    Invalid(String),
}

impl CrawlArgs {
    /// Validates the flags into settings (the same as `CrawlConfig::try_from`).
    ///
    /// # Errors
    /// [`ConfigError`] naming the flag and what is wrong with it.
    pub fn validate(&self) -> Result<CrawlConfig, ConfigError> {
        CrawlConfig::try_from(self)
    }
}

/// Everything a crawling command runs with, validated from its crawl flags: the workers' part and
/// the coordinator engine's part, each declared in the crate that uses it. `shoal audit` runs
/// both; `shoal worker` the first; `shoal coordinator` the second.
#[derive(Debug, Clone)]
pub struct CrawlConfig {
    /// The fetcher's and the crawler's settings.
    pub worker: WorkerConfig,
    /// The engine's settings and the defaults of an audit; its `identity` is the worker part's
    /// ([`WorkerConfig::identity`]), set here, once.
    pub engine: EngineConfig,
}

/// The one validation from raw crawl options (flags over `SHOAL_*` over the config file over
/// defaults) to the typed settings, used by every command and by `shoal config check`.
impl TryFrom<&CrawlArgs> for CrawlConfig {
    type Error = ConfigError;

    fn try_from(args: &CrawlArgs) -> Result<CrawlConfig, ConfigError> {
        let this = args;
        let pace = PaceLimits::new(this.in_flight, Duration::from_millis(this.gap_ms))
            .map_err(|e| ConfigError::Invalid(format!("--in-flight/--gap-ms: {e}")))?;
        if this.max_pages == 0 {
            return Err(ConfigError::Invalid("--max-pages must be at least 1".into()));
        }
        if this.ip_in_flight == 0 {
            return Err(ConfigError::Invalid("--ip-in-flight must be at least 1".into()));
        }
        if !(1..=300).contains(&this.timeout_s) {
            return Err(ConfigError::Invalid("--timeout-s must be 1-300".into()));
        }
        if this.max_body_bytes < 1024 {
            return Err(ConfigError::Invalid("--max-body-bytes must be at least 1024".into()));
        }
        if !(1..=32).contains(&this.lease_batch) {
            return Err(ConfigError::Invalid(format!("--lease-batch ({}) must be 1-32", this.lease_batch)));
        }
        if !(3..=600).contains(&this.lease_ttl_s) {
            return Err(ConfigError::Invalid(format!(
                "--lease-ttl-s ({}) must be 3-600: leases are renewed every third of it",
                this.lease_ttl_s
            )));
        }
        let token = ProductToken::from_agent(&this.robots_token);
        if token.as_str().is_empty() {
            return Err(ConfigError::Invalid(format!(
                "--robots-token {:?} has no token characters (letters, '-', '_')",
                this.robots_token
            )));
        }
        if this.user_agent.trim().is_empty() || this.user_agent.chars().any(char::is_control) {
            return Err(ConfigError::Invalid("--user-agent must be non-empty printable text".into()));
        }
        let mut resolve = HashMap::new();
        for r in &this.resolve {
            let (host, ip) =
                r.split_once('=').ok_or_else(|| ConfigError::Invalid(format!("--resolve {r:?}: expected HOST=IP")))?;
            let ip: IpAddr = ip
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .map_err(|e| ConfigError::Invalid(format!("--resolve {r:?}: {e}")))?;
            resolve.insert(host.trim().to_ascii_lowercase(), ip);
        }
        let domain = this.domain.validate()?;
        this.browser.validate()?;
        let content = this.content.validate()?;
        let custom = this.custom.validate()?;
        let limits = SiteLimits {
            max_pages: this.max_pages,
            max_depth: this.max_depth,
            max_resources: this.max_resources,
            pace,
            follow_nofollow: this.follow_nofollow,
            max_sitemaps: this.max_sitemaps,
            max_sitemap_bytes: this.max_sitemap_bytes,
            // With --no-dns no question may leave the machine, so there is nothing to check.
            dns_checks: !this.domain.no_dns_checks && !this.no_dns,
            smtp: !this.domain.no_smtp,
            browser_pages: this.browser.browser_pages,
            render: this.browser.render,
            render_budget: this.browser.render_budget,
            scope: this.scope.validate()?,
            content,
        };
        let timeout = Duration::from_secs(this.timeout_s);
        let (extra_roots_pem, tls_roots) = match &this.ca_file {
            None => (None, shoal_worker::tls::Roots::webpki()),
            Some(path) => {
                let pem = std::fs::read(path).map_err(|error| ConfigError::File { path: path.clone(), error })?;
                let roots = shoal_worker::tls::Roots::from_pem(&pem)
                    .map_err(|e| ConfigError::Invalid(format!("--ca-file {}: {e}", path.display())))?;
                (Some(pem), roots)
            }
        };
        let fetch = FetchSettings {
            user_agent: this.user_agent.clone(),
            timeout,
            max_body: this.max_body_bytes,
            allow_private: this.allow_private,
            resolve,
            no_dns: this.no_dns,
            extra_roots_pem,
            dns_servers: domain.dns_servers,
        };
        let crawl = CrawlSettings {
            token: token.clone(),
            extract: ExtractCaps {
                max_links: this.max_links.max(1),
                robots_token: Some(token.as_str().to_owned()),
                ..ExtractCaps::default()
            },
            tls_roots,
            check_external: !this.no_external,
            latency_guard: !this.no_latency_guard,
            external_cache_ttl: Duration::from_secs(this.external_cache_s),
            smtp_port: domain.smtp_port,
            helo_name: domain.helo_name,
            rdap_url: domain.rdap_url,
            chromium: this.browser.chromium.clone(),
            browser_timeout: Duration::from_secs(this.browser.browser_timeout_s),
            browser_memory_limit: this.browser.browser_memory_mb.saturating_mul(1024 * 1024),
            ..CrawlSettings::default()
        };
        let frontier = FrontierSettings {
            max_in_flight_per_ip: this.ip_in_flight,
            lease_ttl_ms: this.lease_ttl_s.saturating_mul(1000),
            lease_batch: this.lease_batch,
            // The slow start opens on the guard's samples: without them it would never open.
            slow_start: !this.no_latency_guard,
        };
        if this.active_sites == 0 {
            return Err(ConfigError::Invalid("--active-sites must be at least 1".into()));
        }
        let worker = WorkerConfig { fetch, crawl };
        let engine = EngineConfig {
            defaults: AuditSettings { limits, custom },
            frontier,
            identity: worker.identity(),
            max_active_sites: this.active_sites,
            // A coordinator's own setting, not a crawl flag: `shoal coordinator` sets it.
            schedule_min_interval: shoal_coordinator::schedule::when::DEFAULT_MIN_INTERVAL,
            // Also the coordinator's own (`--retain-audits`, `--retain-days`): off here.
            retention: shoal_store::Retention::default(),
        };
        Ok(CrawlConfig { worker, engine })
    }
}

/// The shortest API token accepted (see [`shoal_server::auth::MIN_TOKEN_LEN`]).
pub const MIN_TOKEN_LEN: usize = shoal_server::auth::MIN_TOKEN_LEN;

/// Checks the API token ([`shoal_server::auth::check_token`]: 16 or more visible ASCII
/// characters), as a configuration error.
///
/// # Errors
/// [`ConfigError::Invalid`] saying what is wrong and how to make a good token.
pub fn check_token(token: &str) -> Result<(), ConfigError> {
    shoal_server::auth::check_token(token).map_err(|e| ConfigError::Invalid(e.0))
}

/// Reads start URLs from arguments and `--file`, validated and deduplicated, in order.
///
/// The file is streamed ([`crate::sitelist`]): each line is checked as it is read, a bad one is
/// reported with its line number, and memory holds only the URLs kept. At most
/// [`shoal_shared::starts::MAX_SITES_PER_AUDIT`] start URLs are given in all (arguments and file together).
///
/// # Errors
/// A bad URL, an unreadable file, a line or file over a cap, or no URL at all.
pub fn start_urls(urls: &[String], file: Option<&PathBuf>) -> Result<Vec<NormalizedUrl>, ConfigError> {
    let mut list = StartList::default();
    for u in urls {
        list.push(u)?;
    }
    if let Some(path) = file {
        let f = std::fs::File::open(path).map_err(|error| ConfigError::File { path: path.clone(), error })?;
        let input = std::io::BufReader::with_capacity(64 * 1024, f);
        crate::sitelist::read_entries(input, crate::sitelist::Caps::default(), |_, entry| {
            list.push(entry).map_err(|e| ConfigError::from(e).to_string())
        })
        .map_err(|error| ConfigError::FileLine { path: path.clone(), error })?;
    }
    if list.is_empty() {
        return Err(ConfigError::NoUrls);
    }
    Ok(list.into_urls())
}

impl From<StartError> for ConfigError {
    fn from(e: StartError) -> ConfigError {
        match e {
            StartError::BadUrl { url, reason } => ConfigError::BadUrl { url, reason },
            StartError::TooMany { max } => ConfigError::TooManyUrls { max },
            other => ConfigError::Invalid(other.to_string()),
        }
    }
}
