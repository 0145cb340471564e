//! Units of work in the frontier: what to fetch, why, and how it was found.

use crate::ids::{AuditId, SiteId};
use crate::pace::PaceLimits;
use crate::scope_rules::ScopeRules;
use crate::time::UnixMs;
use crate::url::NormalizedUrl;
use serde::{Deserialize, Serialize};

/// What kind of request a task is; decides how the worker fetches and what it records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "snake_case")]
pub enum TaskKind {
    /// `/robots.txt` of one host; always the first request to it.
    Robots,
    /// An HTML page (or whatever a link points at) of the site: GET, parse, follow links.
    Page,
    /// A sitemap named in robots.txt; `index_depth` counts sitemap indexes above it (max 2).
    Sitemap {
        /// Levels of sitemap index above this one.
        index_depth: u8,
    },
    /// A resource of the site (image, script, stylesheet, font, …): checked, not parsed, except
    /// that a stylesheet is read (one bounded GET instead of the HEAD) for the `url()`s it loads.
    Resource {
        /// Named by a `<link rel=stylesheet>` or an `@import`: read with one GET and its
        /// `url()`s checked too. Absent in tasks of older versions: a plain check.
        #[serde(default)]
        stylesheet: bool,
    },
    /// One of the fixed standard probes of SPEC §2.
    Probe(ProbeKind),
    /// A link to another site, checked (one HEAD, one GET only if HEAD fails), never crawled.
    External,
    /// The DNS checks of an audited site's registrable domain and start host (SPEC §9: NS, MX,
    /// SPF, DMARC, DKIM, CAA, DNSSEC, MTA-STS and TLS-RPT records; the domain's once per audit,
    /// by the first of its sites to get there, the CAA set for every site's own host). Its URL is
    /// `dns://<start host>:53/`: no web server is asked, so its lane has no robots.txt.
    DomainDns,
    /// One conversation with a mail server of an audited domain (banner, EHLO, STARTTLS, QUIT;
    /// never MAIL, RCPT or DATA). Its URL is `smtp://<mx host>:<port>/`; its lane has no robots.txt
    /// but the mail server's own pace and address.
    Smtp,
    /// The MTA-STS policy (`https://mta-sts.<domain>/.well-known/mta-sts.txt`), fetched as an
    /// ordinary request: that host's robots.txt first, its pace, the address guard.
    MtaStsPolicy,
    /// The IANA RDAP bootstrap file, read to find the registry that answers for a domain's TLD
    /// (shared by every site through the result cache).
    RdapBootstrap,
    /// The registry's RDAP record of an audited domain (expiry date, status codes).
    Rdap,
    /// One page opened in headless Chromium after the site's crawl (SPEC §10, `--browser-pages`):
    /// claimed only by workers started with `--browser` ([`crate::frontier::Frontier::claim_browser`]),
    /// paced through its host's pace, one at a time per host and at least
    /// [`crate::frontier::BROWSER_MIN_GAP`] apart.
    Browser,
    /// One page rendered in headless Chromium for the rendered crawl (`--render`,
    /// [`crate::render`]): loaded, its DOM read by the crawl's extractor, its links offered to the
    /// frontier; no screenshot, no click, no key. Claimed and paced as [`TaskKind::Browser`].
    Render,
}

impl TaskKind {
    /// Whether the task counts against the site's page budget.
    #[must_use]
    pub fn is_page(&self) -> bool {
        matches!(self, TaskKind::Page)
    }

    /// Whether the task counts against the site's resource-check budget (resources of the site
    /// and links to other sites).
    #[must_use]
    pub fn is_check(&self) -> bool {
        matches!(self, TaskKind::Resource { .. } | TaskKind::External)
    }

    /// The checks of SPEC §9 (DNS, mail, domain registration): for audited sites only, queued by
    /// the site's own DNS task, never because a page linked somewhere.
    #[must_use]
    pub fn is_beyond_http(&self) -> bool {
        matches!(
            self,
            TaskKind::DomainDns | TaskKind::Smtp | TaskKind::MtaStsPolicy | TaskKind::RdapBootstrap | TaskKind::Rdap
        )
    }

    /// Whether its lane starts with robots.txt: every HTTP request does; a DNS check or a mail
    /// conversation asks no web server anything.
    #[must_use]
    pub fn needs_robots(&self) -> bool {
        !matches!(self, TaskKind::DomainDns | TaskKind::Smtp)
    }

    /// Whether a task of this kind may open its host's lane when the site has none there yet (a
    /// link to another site, or a check of SPEC §9 on a host of its own); other tasks are only
    /// queued in the lanes the site was seeded with.
    #[must_use]
    pub fn opens_lane(&self) -> bool {
        matches!(self, TaskKind::External) || self.is_beyond_http()
    }

    /// Whether it is a page load in the browser (only browser-capable workers claim it).
    #[must_use]
    pub fn is_browser(&self) -> bool {
        matches!(self, TaskKind::Browser | TaskKind::Render)
    }
}

/// The standard probes, each still subject to robots.txt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    /// `/llms.txt`.
    LlmsTxt,
    /// `/.well-known/security.txt`.
    SecurityTxt,
    /// One random path that cannot exist (soft-404 check).
    Soft404,
    /// The `http://` form of an https start page (does it redirect to https?).
    HttpsRedirect,
    /// `/wp-json/` on a site that looks like WordPress.
    WpJson,
    /// `/xmlrpc.php` on a site that looks like WordPress.
    WpXmlrpc,
    /// `/wp-content/uploads/` on a site that looks like WordPress.
    WpUploads,
    /// `/?p=1` on a site that looks like WordPress.
    WpP1,
}

/// How a URL came to be requested.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "via", rename_all = "snake_case")]
pub enum FoundVia {
    /// A start URL given by the user.
    Start,
    /// A link on a crawled page.
    Link {
        /// The page the link was found on.
        from: NormalizedUrl,
    },
    /// A sitemap.
    Sitemap {
        /// The sitemap it was listed in.
        sitemap: NormalizedUrl,
    },
    /// The `Location` of a redirect.
    Redirect {
        /// The URL that redirected here.
        from: NormalizedUrl,
    },
    /// robots.txt (its Sitemap lines) or the fixed probes.
    Standard,
}

/// Queue order within a host lane: lower first. Links come before sitemap-only URLs, so the page
/// budget is spent on what visitors can reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Priority(pub u8);

impl Priority {
    /// Robots, start URLs, redirects, links, resources.
    pub const NORMAL: Priority = Priority(1);
    /// Sitemaps and the URLs found only in them, probes.
    pub const LOW: Priority = Priority(2);
}

/// One URL to fetch, with everything a stateless worker needs to fetch it and record the result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// The audit it belongs to.
    pub audit: AuditId,
    /// The site it belongs to.
    pub site: SiteId,
    /// What to fetch.
    pub url: NormalizedUrl,
    /// How to fetch it.
    pub kind: TaskKind,
    /// Link depth from the start page (start = 0).
    pub depth: u16,
    /// How it was found.
    pub found_via: FoundVia,
    /// Queue order.
    pub priority: Priority,
    /// Retries already made (429, 5xx, network).
    #[serde(default)]
    pub retries: u8,
    /// Not to be started before this time (retries, Retry-After).
    #[serde(default)]
    pub not_before: UnixMs,
    /// For redirect targets: the URLs that redirected here, first first (loop and hop checks).
    #[serde(default)]
    pub chain: Vec<NormalizedUrl>,
    /// A resource or external check whose HEAD answered with an error: the one GET it is allowed,
    /// as a request of its own under the host's pace.
    #[serde(default)]
    pub get_only: bool,
}

impl Task {
    /// A new task with no retries, no delay and no redirect chain.
    #[must_use]
    pub fn new(
        audit: AuditId,
        site: SiteId,
        url: NormalizedUrl,
        kind: TaskKind,
        depth: u16,
        found_via: FoundVia,
    ) -> Task {
        let priority = match (&kind, &found_via) {
            (TaskKind::Sitemap { .. } | TaskKind::Probe(_), _) | (_, FoundVia::Sitemap { .. }) => Priority::LOW,
            _ => Priority::NORMAL,
        };
        Task {
            audit,
            site,
            url,
            kind,
            depth,
            found_via,
            priority,
            retries: 0,
            not_before: UnixMs(0),
            chain: Vec::new(),
            get_only: false,
        }
    }
}

/// Where a task stands in its audit's seen set ([`Task::seen_keys`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeenKeys {
    /// The key the task takes when it is queued; a task whose key is taken already is not queued.
    pub own: u64,
    /// A key that also keeps the task out: a resource check is not queued for a URL already
    /// queued as a page (the page's GET tells more than a HEAD would).
    pub blocked_by: Option<u64>,
}

/// Set on a URL's fingerprint to make the key of its resource check, distinct from its page key.
const CHECK_KEY: u64 = 0x9e37_79b9_7f4a_7c15;

impl Task {
    /// The keys of this task in the audit's seen set. A site's own URLs are crawled as pages once
    /// per audit and checked as resources once; a URL first seen as a resource (an `<img>`, a
    /// `<link>`) that a later link names as a page is still crawled as one, so how a URL was
    /// first seen never decides alone. A link to another site is checked once per *site* (each
    /// linking site gets its own record and finding; the frontier's result cache keeps the other
    /// host from being asked twice).
    #[must_use]
    pub fn seen_keys(&self) -> SeenKeys {
        match self.kind {
            // A mail server, a registry or the bootstrap file serves many sites of one audit:
            // each site asks (and gets its own findings) once; the result cache keeps the server
            // itself from being asked more than once per audit.
            TaskKind::External
            | TaskKind::DomainDns
            | TaskKind::Smtp
            | TaskKind::MtaStsPolicy
            | TaskKind::RdapBootstrap
            | TaskKind::Rdap => SeenKeys {
                own: xxhash_rust::xxh3::xxh3_64(format!("{}|{}", self.site, self.url).as_bytes()),
                blocked_by: None,
            },
            // Queued after the crawl for a page already crawled: a key of its own, so the seen set
            // never swallows it.
            TaskKind::Browser => SeenKeys {
                own: xxhash_rust::xxh3::xxh3_64(format!("browser|{}", self.url).as_bytes()),
                blocked_by: None,
            },
            TaskKind::Render => SeenKeys {
                own: xxhash_rust::xxh3::xxh3_64(format!("render|{}", self.url).as_bytes()),
                blocked_by: None,
            },
            TaskKind::Resource { .. } => {
                let page = self.url.fingerprint();
                SeenKeys { own: page ^ CHECK_KEY, blocked_by: Some(page) }
            }
            // A probe followed through redirects judges where it ends (a soft 404 often ends on
            // the home page, crawled already): its hops are its own, not the pages'.
            TaskKind::Probe(p) if !self.chain.is_empty() => SeenKeys {
                own: xxhash_rust::xxh3::xxh3_64(format!("probe|{}|{}", p.as_str(), self.url).as_bytes()),
                blocked_by: None,
            },
            _ => SeenKeys { own: self.url.fingerprint(), blocked_by: None },
        }
    }

    /// The key this task takes in the seen set ([`SeenKeys::own`]).
    #[must_use]
    pub fn seen_key(&self) -> u64 {
        self.seen_keys().own
    }
}

/// Default page budget per site.
pub const DEFAULT_MAX_PAGES: u32 = 500;
/// Default link depth limit.
pub const DEFAULT_MAX_DEPTH: u16 = 5;
/// Default budget of resource checks per site.
pub const DEFAULT_MAX_RESOURCES: u32 = 2_000;
/// Default budget of sitemap files read per site (robots.txt's and those its indexes list).
pub const DEFAULT_MAX_SITEMAPS: u32 = 20;
/// Default budget of sitemap bytes read per site, decompressed (one file may have 50 MB).
pub const DEFAULT_MAX_SITEMAP_BYTES: u64 = 50 * 1024 * 1024;

fn default_max_sitemaps() -> u32 {
    DEFAULT_MAX_SITEMAPS
}

fn default_max_sitemap_bytes() -> u64 {
    DEFAULT_MAX_SITEMAP_BYTES
}

fn default_render_budget() -> u32 {
    crate::render::DEFAULT_RENDER_BUDGET
}

fn yes() -> bool {
    true
}

/// Per-site limits, chosen by the user for an audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteLimits {
    /// Pages fetched at most.
    pub max_pages: u32,
    /// Links followed this deep at most (start page is depth 0).
    pub max_depth: u16,
    /// Resource checks at most.
    pub max_resources: u32,
    /// The user's pace for the site's hosts.
    pub pace: PaceLimits,
    /// Follow `rel=nofollow` links and links on `nofollow` pages too.
    pub follow_nofollow: bool,
    /// Sitemap files read at most. No more are read once this many were queued, once
    /// [`SiteLimits::max_sitemap_bytes`] were read, or once the page budget is spent.
    #[serde(default = "default_max_sitemaps")]
    pub max_sitemaps: u32,
    /// Sitemap bytes read at most (decompressed, all files together).
    #[serde(default = "default_max_sitemap_bytes")]
    pub max_sitemap_bytes: u64,
    /// Run the DNS, mail and domain checks of SPEC §9 for the site (`--no-dns-checks` turns them
    /// off; a site seeded by an older coordinator has none queued, whatever this says).
    #[serde(default = "yes")]
    pub dns_checks: bool,
    /// Talk to the domain's mail servers (`--no-smtp` turns it off; the DNS checks still run).
    #[serde(default = "yes")]
    pub smtp: bool,
    /// Pages opened in headless Chromium after the crawl (`--browser-pages`; 0 = off): the start
    /// page and the most linked other pages robots.txt allows.
    #[serde(default)]
    pub browser_pages: u16,
    /// The rendered crawl (`--render`, [`crate::render`]): which pages are opened in headless
    /// Chromium for their facts and links. Absent in limits of older coordinators: never.
    #[serde(default)]
    pub render: crate::render::RenderMode,
    /// Pages per site rendered at most (`--render-budget`).
    #[serde(default = "default_render_budget")]
    pub render_budget: u32,
    /// The user's `--include`, `--exclude` and `--strip-query` rules: which URLs of the site may
    /// be requested. Workers apply them before offering a URL to the frontier.
    #[serde(default, skip_serializing_if = "ScopeRules::is_empty")]
    pub scope: ScopeRules,
    /// The content thresholds (thin pages, near-duplicates, image budget); a site seeded by an
    /// older coordinator gets the defaults.
    #[serde(default)]
    pub content: crate::content::ContentLimits,
}

impl Default for SiteLimits {
    fn default() -> Self {
        SiteLimits {
            max_pages: DEFAULT_MAX_PAGES,
            max_depth: DEFAULT_MAX_DEPTH,
            max_resources: DEFAULT_MAX_RESOURCES,
            pace: PaceLimits::default(),
            follow_nofollow: false,
            max_sitemaps: DEFAULT_MAX_SITEMAPS,
            max_sitemap_bytes: DEFAULT_MAX_SITEMAP_BYTES,
            dns_checks: true,
            smtp: true,
            browser_pages: 0,
            render: crate::render::RenderMode::Never,
            render_budget: crate::render::DEFAULT_RENDER_BUDGET,
            scope: ScopeRules::default(),
            content: crate::content::ContentLimits::default(),
        }
    }
}

impl SiteLimits {
    /// Whether an audit with these limits needs a worker started with `--browser` (one that runs
    /// Chromium and claims browser tasks, [`crate::frontier::Frontier::claim_browser`]): the one
    /// rule of it. The coordinator refuses such an audit while no browser worker is live, and
    /// `shoal audit` runs an in-process one for it, and the frontier gives such a site a phase in
    /// the browser after its crawl (it publishes [`crate::record::Event::CrawlDone`] and waits for
    /// the coordinator to queue the browser tasks): all ask here, so a new reason to open pages in
    /// Chromium (the browser check's pages, the rendered crawl) is added in this one place.
    #[must_use]
    pub fn needs_browser(&self) -> bool {
        self.browser_pages > 0 || crate::render::renders(self.render, self.render_budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_task_of_an_older_version_decodes_as_a_plain_check() {
        // Tasks queued in Redis before stylesheets were read have no `stylesheet` field.
        let old: TaskKind = serde_json::from_str(r#"{"k":"resource"}"#).expect("decodes");
        assert_eq!(old, TaskKind::Resource { stylesheet: false });
        let rmp_old = rmp_serde::to_vec_named(&serde_json::json!({"k": "resource"})).expect("encodes");
        assert_eq!(rmp_serde::from_slice::<TaskKind>(&rmp_old).expect("decodes"), old);
        let css = TaskKind::Resource { stylesheet: true };
        let rmp = rmp_serde::to_vec_named(&css).expect("encodes");
        assert_eq!(rmp_serde::from_slice::<TaskKind>(&rmp).expect("decodes"), css);
        assert!(css.is_check());
        assert_eq!(css.as_str(), "resource", "recorded as a resource like any other");
    }

    #[test]
    fn limits_carry_their_scope_rules_and_leave_them_out_when_there_are_none() {
        let plain = serde_json::to_value(SiteLimits::default()).expect("encodes");
        assert!(plain.get("scope").is_none(), "{plain}");
        let rules = ScopeRules::new(&[], &["/cart".to_owned()], &[]).expect("valid");
        let limits = SiteLimits { scope: rules.clone(), ..SiteLimits::default() };
        let rmp = rmp_serde::to_vec_named(&limits).expect("encodes");
        assert_eq!(rmp_serde::from_slice::<SiteLimits>(&rmp).expect("decodes").scope, rules);
        let back: SiteLimits = serde_json::from_value(plain).expect("limits of an older version decode");
        assert!(back.scope.is_empty());
    }
}
