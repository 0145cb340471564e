//! `shoal botpage`: the page for site owners, from the settings the crawler uses.
//!
//! Site owners who see ShoalBot in their logs want to know who it is, what it will request, how
//! fast, and how to slow or stop it. The answer must be what the crawler really does, so nothing
//! here restates a number: [`BotPage::from_config`] reads the same validated [`CrawlConfig`]
//! (`CrawlConfig::try_from`, in [`crate::cli`]) the crawl runs with, the pace
//! constants and arithmetic of `shoal_shared::pace` (the retry schedule and slow mode are
//! computed by calling the code that applies them), and the standard probes from
//! [`site_seed`], the function that seeds every site.
//!
//! Both pages are askama templates (`templates/botpage/`): the HTML one is self-contained and
//! escapes every value; the Markdown one escapes configured text with the `md` and `code` filters below, so
//! an operator name like `<b>Evil</b>` shows as text in both.

mod beyond;
mod browser;

pub use beyond::BeyondHttp;
pub use browser::BrowserCheck;

use crate::cli::{BotpageArgs, ConfigError, CrawlConfig};
use crate::{Exit, Failure};
use askama::Template;
use shoal_coordinator::seed::site_seed;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::pace::{HostPace, MAX_GAP, MAX_RETRIES, MAX_RETRY_WAIT, RetryDecision, retry_decision};
use shoal_shared::robots::ProductToken;
use shoal_shared::task::{ProbeKind, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_shared::url::NormalizedUrl;
use shoal_worker::crawl::{MAX_REDIRECTS, MAX_ROBOTS_REDIRECTS, MAX_SITEMAP_INDEX_DEPTH, ROBOTS_MAX_BYTES};
use std::path::PathBuf;
use std::time::Duration;

/// The Markdown page's file name.
pub const MARKDOWN_FILE: &str = "shoalbot.md";
/// The HTML page's file name.
pub const HTML_FILE: &str = "shoalbot.html";
/// A start URL to compute the standard probes with (only their paths are shown).
const EXAMPLE_START: &str = "https://www.example.com/";

/// How site owners reach whoever runs the crawl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contact {
    /// As configured (an email address or a URL).
    pub text: String,
    /// A safe link target: `mailto:` or http(s) only.
    pub href: String,
}

/// Who runs the crawl, from `operator_name`, `operator_contact` and `info_url`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Operator {
    /// A company, team or person.
    pub name: Option<String>,
    /// Email address or URL.
    pub contact: Option<Contact>,
    /// Where the page is published.
    pub info_url: Option<String>,
}

impl Operator {
    /// Validates the operator settings: printable text, an email address or http(s) URL as the
    /// contact, an http(s) URL as the page's address (never a `javascript:` link on the page).
    pub fn new(name: Option<&str>, contact: Option<&str>, info_url: Option<&str>) -> Result<Operator, ConfigError> {
        let text = |flag: &str, v: Option<&str>| -> Result<Option<String>, ConfigError> {
            match v.map(str::trim).filter(|v| !v.is_empty()) {
                Some(v) if v.chars().any(char::is_control) => {
                    Err(ConfigError::Invalid(format!("--{flag} must be printable text on one line")))
                }
                v => Ok(v.map(str::to_owned)),
            }
        };
        let name = text("operator-name", name)?;
        let contact = text("operator-contact", contact)?
            .map(|c| {
                contact_href(&c).map(|href| Contact { text: c.clone(), href }).ok_or_else(|| {
                    ConfigError::Invalid(format!(
                        "--operator-contact {c:?}: expected an email address or an http(s) URL"
                    ))
                })
            })
            .transpose()?;
        let info_url = text("info-url", info_url)?
            .map(|u| {
                http_url(&u).ok_or_else(|| ConfigError::Invalid(format!("--info-url {u:?}: expected an http(s) URL")))
            })
            .transpose()?;
        Ok(Operator { name, contact, info_url })
    }
}

fn http_url(s: &str) -> Option<String> {
    url::Url::parse(s).ok().filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some()).map(String::from)
}

fn contact_href(c: &str) -> Option<String> {
    let email = c.strip_prefix("mailto:").unwrap_or(c);
    if !c.contains("://") {
        let (local, domain) = email.split_once('@')?;
        let ok = |s: &str| !s.is_empty() && !s.chars().any(|ch| ch.is_whitespace() || "<>\"'@?&#/\\".contains(ch));
        return (ok(local) && ok(domain) && domain.contains('.')).then(|| format!("mailto:{email}"));
    }
    http_url(c)
}

/// One standard request made for every site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// What is requested: a path, or how the URL is formed (when `is_path` is false).
    pub path: String,
    /// Whether `path` is a literal path (shown as code).
    pub is_path: bool,
    /// Why.
    pub why: &'static str,
}

/// Everything the page says, each value taken from the crawler's own settings and code.
#[derive(Debug, Clone)]
pub struct BotPage {
    /// Shoal's version.
    pub version: &'static str,
    /// The User-Agent header, exactly.
    pub user_agent: String,
    /// The robots.txt product token.
    pub token: String,
    /// What server rules match in the User-Agent (letters, `-`, `_` only: safe in any config).
    pub server_pattern: String,
    /// Who runs the crawl.
    pub operator: Operator,
    /// Requests in flight to one host at most.
    pub in_flight: u32,
    /// Gap between request starts to one host.
    pub gap: String,
    /// Requests in flight to one server IP at most.
    pub ip_in_flight: u16,
    /// Per-request time limit.
    pub timeout: String,
    /// Pages per site at most.
    pub max_pages: u32,
    /// Link depth at most.
    pub max_depth: u16,
    /// Resource and external checks per site at most.
    pub max_resources: u32,
    /// Body bytes read per response at most.
    pub max_body: String,
    /// Links considered per page at most.
    pub max_links: usize,
    /// Whether nofollow links are followed.
    pub follow_nofollow: bool,
    /// Whether links to other sites are checked.
    pub check_external: bool,
    /// How long an external check's result is reused.
    pub external_cache: String,
    /// robots.txt bytes read at most.
    pub robots_max: String,
    /// Redirects followed for robots.txt.
    pub robots_redirects: usize,
    /// Redirect hops followed for other requests.
    pub max_redirects: usize,
    /// Sitemap bytes read at most.
    pub sitemap_max: String,
    /// Sitemap URLs kept at most.
    pub sitemap_urls: usize,
    /// Sitemap index levels followed.
    pub sitemap_depth: u8,
    /// Retries of one URL at most.
    pub max_retries: u8,
    /// Waits between retries when the server gives no Retry-After.
    pub backoff: Vec<String>,
    /// Longest wait before giving up a URL.
    pub max_retry_wait: String,
    /// In-flight cap of a host in slow mode.
    pub slow_in_flight: u32,
    /// Gap of a host in slow mode.
    pub slow_gap: String,
    /// Largest Crawl-delay obeyed; above it the host is not crawled.
    pub crawl_delay_max: String,
    /// The latency guard (issue 17), from the same settings and rules as the crawl.
    pub guard: GuardPage,
    /// The standard requests of every site (after robots.txt and besides the start page).
    pub probes: Vec<Probe>,
    /// The WordPress probes.
    pub wordpress_probes: Vec<&'static str>,
    /// The DNS, e-mail and domain checks (SPEC §9).
    pub beyond: BeyondHttp,
    /// The browser check (SPEC §10).
    pub browser: BrowserCheck,
}

impl BotPage {
    /// Validates the `botpage` settings exactly as a crawl validates its own.
    pub fn from_args(args: &BotpageArgs) -> Result<BotPage, ConfigError> {
        let config = args.crawl.validate()?;
        let operator =
            Operator::new(args.operator_name.as_deref(), args.operator_contact.as_deref(), args.info_url.as_deref())?;
        Ok(BotPage::from_config(&config, operator))
    }

    /// The page for a crawl configuration.
    #[must_use]
    pub fn from_config(config: &CrawlConfig, operator: Operator) -> BotPage {
        let pace = config.engine.defaults.limits.pace;
        let mut slow = HostPace::new(pace);
        slow.enter_slow_mode(UnixMs(0));
        let token = config.worker.crawl.token.as_str().to_owned();
        BotPage {
            version: env!("CARGO_PKG_VERSION"),
            server_pattern: server_pattern(&config.worker.fetch.user_agent, &token),
            user_agent: config.worker.fetch.user_agent.clone(),
            token,
            operator,
            in_flight: pace.max_in_flight(),
            gap: duration(pace.gap()),
            ip_in_flight: config.engine.frontier.max_in_flight_per_ip,
            timeout: duration(config.worker.fetch.timeout),
            max_pages: config.engine.defaults.limits.max_pages,
            max_depth: config.engine.defaults.limits.max_depth,
            max_resources: config.engine.defaults.limits.max_resources,
            max_body: bytes(config.worker.fetch.max_body),
            max_links: config.worker.crawl.extract.max_links,
            follow_nofollow: config.engine.defaults.limits.follow_nofollow,
            check_external: config.worker.crawl.check_external,
            external_cache: duration(config.worker.crawl.external_cache_ttl),
            robots_max: bytes(ROBOTS_MAX_BYTES),
            robots_redirects: MAX_ROBOTS_REDIRECTS,
            max_redirects: MAX_REDIRECTS,
            sitemap_max: bytes(config.worker.crawl.sitemap.max_bytes),
            sitemap_urls: config.worker.crawl.sitemap.max_urls,
            sitemap_depth: MAX_SITEMAP_INDEX_DEPTH,
            max_retries: MAX_RETRIES,
            backoff: backoff_schedule().into_iter().map(duration).collect(),
            max_retry_wait: duration(MAX_RETRY_WAIT),
            slow_in_flight: slow.max_in_flight(),
            slow_gap: duration(slow.gap()),
            crawl_delay_max: duration(MAX_GAP),
            guard: GuardPage::from_config(config),
            probes: standard_probes(config),
            // The worker's own list (SPEC §2), so the page cannot name other probes than it makes.
            wordpress_probes: shoal_worker::crawl::WORDPRESS_PROBES.iter().map(|(_, path)| *path).collect(),
            beyond: BeyondHttp::from_config(config),
            browser: BrowserCheck::from_config(config),
        }
    }

    /// The Markdown page.
    pub fn markdown(&self) -> askama::Result<String> {
        MarkdownPage { p: self }.render()
    }

    /// The HTML page (self-contained: inline style, no scripts, no external assets).
    pub fn html(&self) -> askama::Result<String> {
        HtmlPage { p: self }.render()
    }
}

/// What the bot page says about the latency guard and stated quotas: the rule's numbers and what
/// one step does to this configuration's pace (`shoal_shared::latency`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardPage {
    /// Whether the guard is on (`--no-latency-guard` turns it off).
    pub on: bool,
    /// Recent answers kept per host.
    pub window: usize,
    /// The recent median must reach this many times the baseline ...
    pub ratio: u32,
    /// ... and this much above it.
    pub min_rise: String,
    /// In-flight cap and gap after one step, from the configured pace.
    pub step_in_flight: u32,
    /// The gap after one step.
    pub step_gap: String,
    /// Steps at most, and the factor of the last one.
    pub max_level: u8,
    /// `2^max_level`.
    pub max_factor: u32,
    /// Calm answers in a row before one step back.
    pub recover: u8,
    /// The per-IP cap after one step of the server's guard (all hosts at one address).
    pub ip_step_in_flight: u32,
    /// The gap between any two requests to a slowed server IP, after one step and after the last.
    pub ip_step_gap: String,
    /// The same after the last step.
    pub ip_max_gap: String,
    /// An answer this many times the fastest (and `min_rise` more) closes the slow start: "1.5".
    pub step_ratio: String,
    /// Whether new hosts and addresses start at one request in flight (the guard's slow start).
    pub slow_start: bool,
}

impl GuardPage {
    fn from_config(config: &CrawlConfig) -> GuardPage {
        use shoal_shared::latency as l;
        let pace = config.engine.defaults.limits.pace;
        let (step_in_flight, step_gap) = l::guarded(pace.max_in_flight(), pace.gap(), 1);
        GuardPage {
            on: config.worker.crawl.latency_guard,
            window: l::GUARD_WINDOW,
            ratio: l::GUARD_RATIO,
            min_rise: duration(l::GUARD_MIN_RISE),
            step_in_flight,
            step_gap: duration(step_gap),
            max_level: l::GUARD_MAX_LEVEL,
            max_factor: 1 << l::GUARD_MAX_LEVEL,
            recover: l::GUARD_RECOVER,
            ip_step_in_flight: l::ip_cap(config.engine.frontier.max_in_flight_per_ip, 1),
            ip_step_gap: duration(l::ip_gap(1)),
            ip_max_gap: duration(l::ip_gap(l::GUARD_MAX_LEVEL)),
            step_ratio: ratio(l::GUARD_STEP_RATIO),
            slow_start: config.engine.frontier.slow_start,
        }
    }
}

#[derive(Template)]
#[template(path = "botpage/shoalbot.md", escape = "none")]
struct MarkdownPage<'a> {
    p: &'a BotPage,
}

#[derive(Template)]
#[template(path = "botpage/shoalbot.html")]
struct HtmlPage<'a> {
    p: &'a BotPage,
}

/// A fraction as the page says it: `(3, 2)` is "1.5".
fn ratio((num, den): (u32, u32)) -> String {
    let tenths = (u64::from(num) * 10 + u64::from(den) / 2) / u64::from(den.max(1));
    if tenths % 10 == 0 { format!("{}", tenths / 10) } else { format!("{}.{}", tenths / 10, tenths % 10) }
}

/// The waits between retries without a Retry-After, by asking the retry rule itself.
fn backoff_schedule() -> Vec<Duration> {
    let now = UnixMs(0);
    (0..=MAX_RETRIES)
        .map_while(|done| match retry_decision(done, None, now) {
            RetryDecision::RetryAt(t) => Some(t.since(now)),
            RetryDecision::GiveUp(_) => None,
        })
        .collect()
}

/// The standard probes every site gets, as [`site_seed`] makes them.
fn standard_probes(config: &CrawlConfig) -> Vec<Probe> {
    let Ok(start) = NormalizedUrl::parse(EXAMPLE_START) else { return Vec::new() };
    let seed = site_seed(AuditId(0), SiteId(0), &start, &config.engine.defaults);
    seed.initial
        .iter()
        .filter_map(|task| {
            let TaskKind::Probe(kind) = task.kind else { return None };
            let url = task.url.as_url();
            let path = url.path().to_owned() + url.query().map(|q| format!("?{q}")).as_deref().unwrap_or_default();
            Some(match kind {
                ProbeKind::LlmsTxt => Probe { path, is_path: true, why: "once per site: is there an llms.txt?" },
                ProbeKind::SecurityTxt => Probe { path, is_path: true, why: "a security contact (RFC 9116)" },
                ProbeKind::Soft404 => Probe {
                    path: path.rsplit_once('-').map_or(path.clone(), |(p, _)| format!("{p}-<random>")),
                    is_path: true,
                    why: "a path that cannot exist, to see whether missing pages answer 404",
                },
                ProbeKind::HttpsRedirect => Probe {
                    path: "the http:// form of an https start page".to_owned(),
                    is_path: false,
                    why: "does it redirect to https?",
                },
                ProbeKind::WpJson | ProbeKind::WpXmlrpc | ProbeKind::WpUploads | ProbeKind::WpP1 => {
                    Probe { path, is_path: true, why: "WordPress exposure check" }
                }
            })
        })
        .collect()
}

/// What server rules should match: the robots token if the User-Agent contains it, else the
/// User-Agent's own product token, else its longest word. Letters, `-` and `_` only, so it is
/// safe inside an nginx or Apache regex and quotes.
fn server_pattern(user_agent: &str, token: &str) -> String {
    if !token.is_empty() && user_agent.to_ascii_lowercase().contains(&token.to_ascii_lowercase()) {
        return token.to_owned();
    }
    let product = ProductToken::from_agent(user_agent);
    if product.as_str().len() >= 3 {
        return product.as_str().to_owned();
    }
    user_agent
        .split(|c: char| !(c.is_ascii_alphabetic() || c == '-' || c == '_'))
        .max_by_key(|w| w.len())
        .filter(|w| !w.is_empty())
        .unwrap_or(token)
        .to_owned()
}

/// A duration as people read it: `300 ms`, `1.5 s`, `15 s`, `6 h`.
#[must_use]
pub fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms} ms");
    }
    if ms.is_multiple_of(3_600_000) {
        return format!("{} h", ms / 3_600_000);
    }
    if ms >= 120_000 && ms.is_multiple_of(60_000) {
        return format!("{} min", ms / 60_000);
    }
    if ms.is_multiple_of(1000) {
        return format!("{} s", ms / 1000);
    }
    let s = format!("{}.{:03}", ms / 1000, ms % 1000);
    format!("{} s", s.trim_end_matches('0'))
}

/// A size in binary units when exact (`500 KiB`, `5 MiB`), else in bytes.
#[must_use]
pub fn bytes(n: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    match n {
        n if n >= MIB && n.is_multiple_of(MIB) => format!("{} MiB", n / MIB),
        n if n >= 1024 && n.is_multiple_of(1024) => format!("{} KiB", n / 1024),
        n => format!("{n} bytes"),
    }
}

/// Writes both pages into `args.out`; warns about what site owners would miss (no operator, no
/// contact, a User-Agent that does not point at the page).
pub fn write(args: &BotpageArgs) -> Result<Vec<PathBuf>, Failure> {
    let input = |e: anyhow::Error| Failure { exit: Exit::Input, error: e };
    let page = BotPage::from_args(args).map_err(|e| input(e.into()))?;
    if page.operator.name.is_none() || page.operator.contact.is_none() {
        tracing::warn!("operator_name or operator_contact is not set: site owners will not know whom to ask");
    }
    if let Some(info) = &page.operator.info_url
        && !page.user_agent.contains(info.trim_end_matches('/'))
    {
        tracing::warn!(info_url = %info, user_agent = %page.user_agent, "the User-Agent does not point at info_url");
    }
    if !page.user_agent.to_ascii_lowercase().contains(&page.token.to_ascii_lowercase()) {
        tracing::warn!(token = %page.token, user_agent = %page.user_agent, "the User-Agent does not contain the robots token");
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| input(anyhow::anyhow!("cannot create {}: {e}", args.out.display())))?;
    let mut written = Vec::new();
    for (name, text) in [(MARKDOWN_FILE, page.markdown()), (HTML_FILE, page.html())] {
        let text = text.map_err(|e| Failure { exit: Exit::Internal, error: e.into() })?;
        let path = args.out.join(name);
        std::fs::write(&path, text).map_err(|e| input(anyhow::anyhow!("cannot write {}: {e}", path.display())))?;
        tracing::info!(file = %path.display(), "wrote");
        written.push(path);
    }
    Ok(written)
}

/// Markdown escaping for the Markdown page (askama has no Markdown escaper).
mod filters {
    use std::fmt::Display;

    /// Inline text: every character Markdown or embedded HTML would interpret is
    /// backslash-escaped, line breaks become spaces.
    #[askama::filter_fn]
    pub fn md<T: Display>(s: T, _: &dyn askama::Values) -> askama::Result<String> {
        let mut out = String::new();
        for c in s.to_string().chars() {
            match c {
                '\n' | '\r' => out.push(' '),
                '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '|' | '!' | '~' | '#' | '(' | ')' => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
        Ok(out)
    }

    /// A code span whose fence is longer than any run of backticks inside it.
    #[askama::filter_fn]
    pub fn code<T: Display>(s: T, _: &dyn askama::Values) -> askama::Result<String> {
        let s = s.to_string().replace(['\n', '\r'], " ");
        let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
        let fence = "`".repeat(longest + 1);
        let pad = if s.starts_with('`') || s.ends_with('`') { " " } else { "" };
        Ok(format!("{fence}{pad}{s}{pad}{fence}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_shared::pace::{PaceLimits, SLOW_MODE_GAP};

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(Duration::from_millis(300)), "300 ms");
        assert_eq!(duration(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(duration(Duration::from_millis(1250)), "1.25 s");
        assert_eq!(duration(Duration::from_secs(60)), "60 s");
        assert_eq!(duration(Duration::from_secs(21_600)), "6 h");
        assert_eq!(bytes(500 * 1024), "500 KiB");
        assert_eq!(bytes(5 * 1024 * 1024), "5 MiB");
        assert_eq!(bytes(1000), "1000 bytes");
    }

    #[test]
    fn schedule_and_slow_mode_come_from_the_pace_rules() {
        assert_eq!(backoff_schedule(), vec![Duration::from_millis(500), Duration::from_secs(1)]);
        let mut slow = HostPace::new(PaceLimits::default());
        slow.enter_slow_mode(UnixMs(0));
        assert_eq!((slow.max_in_flight(), slow.gap()), (1, SLOW_MODE_GAP));
        // The page says a Crawl-delay above MAX_GAP closes the host: so does the rule.
        let mut hp = HostPace::new(PaceLimits::default());
        assert!(hp.set_crawl_delay(MAX_GAP, UnixMs(0)));
        assert!(!hp.set_crawl_delay(MAX_GAP + Duration::from_millis(1), UnixMs(0)));
    }

    #[test]
    fn server_pattern_matches_the_user_agent() {
        assert_eq!(server_pattern("ShoalBot/0.1 (+https://x)", "ShoalBot"), "ShoalBot");
        assert_eq!(server_pattern("AcmeAudit/1.0", "ShoalBot"), "AcmeAudit");
        assert_eq!(server_pattern("Mozilla/5.0 (compatible; FooBot/1.0)", "Other"), "FooBot");
        assert_eq!(server_pattern("42/1 (x; some-crawler)", "T"), "some-crawler");
    }

    #[test]
    fn contacts_are_emails_or_web_links_only() {
        let op = |c: &str| Operator::new(None, Some(c), None).map(|o| o.contact.map(|c| c.href));
        assert_eq!(op("crawl@acme.example").ok().flatten().as_deref(), Some("mailto:crawl@acme.example"));
        assert_eq!(op("https://acme.example/bot").ok().flatten().as_deref(), Some("https://acme.example/bot"));
        assert!(op("javascript:alert(1)").is_err());
        assert!(op("crawl@acme.example?subject=x").is_err());
        assert!(Operator::new(None, None, Some("ftp://x.example/")).is_err());
    }
}
