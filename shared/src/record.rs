//! What a fetch produced, as it travels from a worker to the audit database.

use crate::finding::Finding;
use crate::ids::{AuditId, SiteId};
pub use crate::link::{LinkKind, LinkRecord};
use crate::task::{FoundVia, ProbeKind, TaskKind};
use crate::time::UnixMs;
use serde::{Deserialize, Serialize};

use crate::spelled::spelled;

/// What kind of URL a record is about: its task's kind, without the task's scheduling details
/// (a sitemap's index depth). `pages.kind` in the audit database and `kind` in the reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum UrlKind {
    /// `/robots.txt` of a host.
    Robots,
    /// An HTML page of the site, or whatever a navigation link points at.
    #[default]
    Page,
    /// A sitemap.
    Sitemap,
    /// A resource of the site (image, script, stylesheet, …): checked, not parsed.
    Resource,
    /// A link to another site, checked.
    External,
    /// One of the fixed standard probes (`probe_*`).
    Probe(ProbeKind),
    /// The DNS checks of a domain (no request; no record is published for it).
    DomainDns,
    /// A conversation with a mail server (no HTTP request; no record is published for it).
    Smtp,
    /// A domain's MTA-STS policy file.
    MtaStsPolicy,
    /// The IANA RDAP bootstrap file.
    RdapBootstrap,
    /// The registry's RDAP record of a domain.
    Rdap,
    /// A page opened in headless Chromium (its record is `Event::Browser`, not a page record).
    Browser,
    /// A page rendered for the rendered crawl (its record is `Event::Render`).
    Render,
}

spelled!(UrlKind, "a URL kind such as `page` or `resource`", {
    Robots => "robots",
    Page => "page",
    Sitemap => "sitemap",
    Resource => "resource",
    External => "external",
    Probe(ProbeKind::LlmsTxt) => "probe_llms_txt",
    Probe(ProbeKind::SecurityTxt) => "probe_security_txt",
    Probe(ProbeKind::Soft404) => "probe_soft_404",
    Probe(ProbeKind::HttpsRedirect) => "probe_https_redirect",
    Probe(ProbeKind::WpJson) => "probe_wp_json",
    Probe(ProbeKind::WpXmlrpc) => "probe_wp_xmlrpc",
    Probe(ProbeKind::WpUploads) => "probe_wp_uploads",
    Probe(ProbeKind::WpP1) => "probe_wp_p1",
    DomainDns => "domain_dns",
    Smtp => "smtp",
    MtaStsPolicy => "mta_sts_policy",
    RdapBootstrap => "rdap_bootstrap",
    Rdap => "rdap",
    Browser => "browser",
    Render => "render",
});

impl From<TaskKind> for UrlKind {
    fn from(kind: TaskKind) -> UrlKind {
        match kind {
            TaskKind::Robots => UrlKind::Robots,
            TaskKind::Page => UrlKind::Page,
            TaskKind::Sitemap { .. } => UrlKind::Sitemap,
            TaskKind::Resource { .. } => UrlKind::Resource,
            TaskKind::External => UrlKind::External,
            TaskKind::Probe(p) => UrlKind::Probe(p),
            TaskKind::DomainDns => UrlKind::DomainDns,
            TaskKind::Smtp => UrlKind::Smtp,
            TaskKind::MtaStsPolicy => UrlKind::MtaStsPolicy,
            TaskKind::RdapBootstrap => UrlKind::RdapBootstrap,
            TaskKind::Rdap => UrlKind::Rdap,
            TaskKind::Browser => UrlKind::Browser,
            TaskKind::Render => UrlKind::Render,
        }
    }
}

// The names of a task's kind and of how it was found are their record's (`UrlKind`,
// `Discovery`): one spelling each, declared with the record, so the task module needs nothing of
// this one.
impl TaskKind {
    /// A short stable name, for the database and reports: its [`UrlKind`]'s.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        UrlKind::from(*self).as_str()
    }
}

impl ProbeKind {
    /// A short stable name (`probe_…`): its [`UrlKind`]'s.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        UrlKind::Probe(*self).as_str()
    }
}

impl FoundVia {
    /// How it was found, without where from: what a record keeps.
    #[must_use]
    pub fn discovery(&self) -> Discovery {
        match self {
            FoundVia::Start => Discovery::Start,
            FoundVia::Link { .. } => Discovery::Link,
            FoundVia::Sitemap { .. } => Discovery::Sitemap,
            FoundVia::Redirect { .. } => Discovery::Redirect,
            FoundVia::Standard => Discovery::Standard,
        }
    }

    /// A short stable name, for the database and reports: its [`Discovery`]'s.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        self.discovery().as_str()
    }
}

/// How a URL came to be requested: [`FoundVia`] without the URL it was found from (that is
/// [`PageRecord::found_from`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Discovery {
    /// A start URL given by the user.
    #[default]
    Start,
    /// A link on a crawled page.
    Link,
    /// A sitemap.
    Sitemap,
    /// The `Location` of a redirect.
    Redirect,
    /// robots.txt (its Sitemap lines) or the fixed probes.
    Standard,
}

spelled!(Discovery, "how a URL was found, such as `link` or `sitemap`", {
    Start => "start",
    Link => "link",
    Sitemap => "sitemap",
    Redirect => "redirect",
    Standard => "standard",
});

/// Why a request got no usable answer. A website's failure, recorded as data (`pages.error` in the
/// audit database, `error` in the reports), never an error of Shoal's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FetchFailure {
    /// The name does not resolve.
    Dns,
    /// The host resolves only to addresses the address guard refuses.
    PrivateAddress,
    /// The response's head is over the header cap; it was not read.
    HeadersTooLarge,
    /// Over the time limit.
    Timeout,
    /// Connection refused, reset, TLS failure.
    Connect,
    /// The answer could not be read (protocol error, broken body).
    Protocol,
    /// The body is over the size cap; only its first part was read (the status is recorded too).
    BodyTooLarge,
    /// Given up without an answer: its leases expired (workers died or hung on it) or processing
    /// it failed inside Shoal (`fetch_abandoned` says why).
    Abandoned,
}

spelled!(FetchFailure, "a fetch failure such as `timeout` or `dns`", {
    Dns => "dns",
    PrivateAddress => "private_address",
    HeadersTooLarge => "headers_too_large",
    Timeout => "timeout",
    Connect => "connect",
    Protocol => "protocol",
    BodyTooLarge => "body_too_large",
    Abandoned => "abandoned",
});

/// The hreflang alternates a sitemap names for one of its URLs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SitemapAlternates {
    /// The `<loc>`, normalised: the page the alternates are about.
    pub page: String,
    /// (language, URL) pairs, URLs as in [`PageRecord::hreflang`].
    pub alternates: Vec<(String, String)>,
}

/// Everything recorded about one fetched URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PageRecord {
    /// The audit.
    pub audit: AuditId,
    /// The site.
    pub site: SiteId,
    /// The URL requested.
    pub url: String,
    /// What kind of task it was (`page`, `resource`, `robots`, …).
    pub kind: UrlKind,
    /// The HTTP status, if an answer came.
    pub status: Option<u16>,
    /// Why no answer came (`timeout`, `connect`, `dns`, `private_address`, …), or why it is
    /// incomplete (`body_too_large`).
    pub error: Option<FetchFailure>,
    /// For redirects, the resolved Location.
    pub redirect_to: Option<String>,
    /// Link depth from the start page.
    pub depth: u16,
    /// How it was found: `start`, `link`, `sitemap`, `redirect`, `standard`.
    pub found_via: Discovery,
    /// The page it was first found on, or the sitemap, or the redirecting URL.
    pub found_from: Option<String>,
    /// Content-Type header.
    pub content_type: Option<String>,
    /// Body bytes read (decompressed).
    pub bytes: u64,
    /// Time to the end of the body, in milliseconds.
    pub response_ms: u64,
    /// When the request started.
    pub fetched_at: UnixMs,
    /// `<title>`.
    pub title: Option<String>,
    /// Meta description.
    pub meta_description: Option<String>,
    /// h1 texts.
    pub h1: Vec<String>,
    /// rel=canonical, resolved.
    pub canonical: Option<String>,
    /// Meta robots directives, lower-case.
    pub meta_robots: Vec<String>,
    /// X-Robots-Tag header values.
    pub x_robots_tag: Vec<String>,
    /// (language, URL) pairs from `<link rel=alternate hreflang>` elements; URLs normalised (and
    /// stripped of the parameters `--strip-query` names) when they are http(s) URLs, as written
    /// otherwise.
    pub hreflang: Vec<(String, String)>,
    /// (language, URL) pairs from the `Link` response header's `rel=alternate; hreflang=…`, URLs
    /// as in [`PageRecord::hreflang`].
    #[serde(default)]
    pub hreflang_header: Vec<(String, String)>,
    /// On a sitemap's record: the alternates its `<url>` entries name for their `<loc>`
    /// (`<xhtml:link rel="alternate" hreflang>`).
    #[serde(default)]
    pub sitemap_hreflang: Vec<SitemapAlternates>,
    /// Links on the page.
    pub links: Vec<LinkRecord>,
    /// Selected response headers (security, caching, compression), lower-case names.
    pub headers: Vec<(String, String)>,
    /// Words of the page's main text (`<main>`, or the body without navigation, header, footer
    /// and asides; [`crate::content`]); `None` for anything but a parsed HTML page.
    #[serde(default)]
    pub word_count: Option<u32>,
    /// Hash of the main text's normalised words: equal for exact duplicates.
    #[serde(default)]
    pub text_hash: Option<u64>,
    /// SimHash of the main text: close for near-duplicates.
    #[serde(default)]
    pub text_simhash: Option<u64>,
    /// The Schema.org types of the page's structured data (JSON-LD, microdata, RDFa Lite), each
    /// once, in the order first found, capped.
    #[serde(default)]
    pub structured_types: Vec<String>,
    /// `<link rel=next>` target, normalised as links are.
    #[serde(default)]
    pub rel_next: Option<String>,
    /// `<link rel=prev>` (or `previous`) target, normalised as links are.
    #[serde(default)]
    pub rel_prev: Option<String>,
    /// On an HTML page: the values the audit's extraction rules (`--extract`) found, as (rule
    /// name, value) in rule order; a rule that found nothing has no pair. Values are cut at
    /// [`MAX_VALUE_BYTES`](crate::custom::MAX_VALUE_BYTES).
    #[serde(default)]
    pub extracted: Vec<(String, String)>,
    /// On a page of the site: the AI crawlers its host's robots.txt blocks from this URL
    /// ([`crate::ai_crawlers`]). `None` on other kinds of URL, and from workers that predate it.
    #[serde(default)]
    pub ai_blocked: Option<crate::ai_crawlers::AiBlocked>,
}

impl PageRecord {
    /// A record for a task, before the fetch fills it in.
    #[must_use]
    pub fn for_task(audit: AuditId, site: SiteId, url: &str, kind: TaskKind, depth: u16, via: &FoundVia) -> PageRecord {
        let found_from = match via {
            FoundVia::Link { from } | FoundVia::Redirect { from } => Some(from.to_string()),
            FoundVia::Sitemap { sitemap } => Some(sitemap.to_string()),
            FoundVia::Start | FoundVia::Standard => None,
        };
        PageRecord {
            audit,
            site,
            url: url.to_owned(),
            kind: kind.into(),
            depth,
            found_via: via.discovery(),
            found_from,
            ..PageRecord::default()
        }
    }
}

/// What workers publish and the coordinator aggregates into the audit database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "e", rename_all = "snake_case")]
pub enum Event {
    /// A URL was fetched (or given up on).
    Page(Box<PageRecord>),
    /// A finding about one URL.
    Finding(Finding),
    /// The frontier has no queued, delayed or leased work left for the site.
    SiteDone {
        /// The audit.
        audit: AuditId,
        /// The site.
        site: SiteId,
    },
    /// What the browser check saw on one page (`--browser-pages`).
    Browser(Box<crate::browser::BrowserPage>),
    /// A page rendered for the rendered crawl (`--render`).
    Render(Box<crate::browser::RenderedPage>),
    /// The site's crawl has no work left, and it has a browser phase
    /// ([`crate::task::SiteLimits::needs_browser`]): the coordinator chooses the pages from the
    /// audit database and queues them ([`crate::frontier::Frontier::queue_browser`]); the site is
    /// done after they are, or (a round of the rendered crawl) publishes this again once what they
    /// found was crawled.
    CrawlDone {
        /// The audit.
        audit: AuditId,
        /// The site.
        site: SiteId,
    },
}

impl Event {
    /// The audit and site it is about.
    #[must_use]
    pub fn site(&self) -> (AuditId, SiteId) {
        match self {
            Event::Page(p) => (p.audit, p.site),
            Event::Finding(f) => (f.audit, f.site),
            Event::Browser(b) => (b.audit, b.site),
            Event::Render(r) => (r.audit, r.site),
            Event::SiteDone { audit, site } | Event::CrawlDone { audit, site } => (*audit, *site),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::url::NormalizedUrl;

    /// The spellings the audit database and the reports document (`docs/report-json.md`,
    /// `store/src/schema.rs`, the site analysis's SQL): these never change.
    const URL_KINDS: &[(UrlKind, &str)] = &[
        (UrlKind::Robots, "robots"),
        (UrlKind::Page, "page"),
        (UrlKind::Sitemap, "sitemap"),
        (UrlKind::Resource, "resource"),
        (UrlKind::External, "external"),
        (UrlKind::Probe(ProbeKind::LlmsTxt), "probe_llms_txt"),
        (UrlKind::Probe(ProbeKind::SecurityTxt), "probe_security_txt"),
        (UrlKind::Probe(ProbeKind::Soft404), "probe_soft_404"),
        (UrlKind::Probe(ProbeKind::HttpsRedirect), "probe_https_redirect"),
        (UrlKind::Probe(ProbeKind::WpJson), "probe_wp_json"),
        (UrlKind::Probe(ProbeKind::WpXmlrpc), "probe_wp_xmlrpc"),
        (UrlKind::Probe(ProbeKind::WpUploads), "probe_wp_uploads"),
        (UrlKind::Probe(ProbeKind::WpP1), "probe_wp_p1"),
        (UrlKind::DomainDns, "domain_dns"),
        (UrlKind::Smtp, "smtp"),
        (UrlKind::MtaStsPolicy, "mta_sts_policy"),
        (UrlKind::RdapBootstrap, "rdap_bootstrap"),
        (UrlKind::Rdap, "rdap"),
        (UrlKind::Browser, "browser"),
        (UrlKind::Render, "render"),
    ];
    const DISCOVERIES: &[(Discovery, &str)] = &[
        (Discovery::Start, "start"),
        (Discovery::Link, "link"),
        (Discovery::Sitemap, "sitemap"),
        (Discovery::Redirect, "redirect"),
        (Discovery::Standard, "standard"),
    ];
    const FAILURES: &[(FetchFailure, &str)] = &[
        (FetchFailure::Dns, "dns"),
        (FetchFailure::PrivateAddress, "private_address"),
        (FetchFailure::HeadersTooLarge, "headers_too_large"),
        (FetchFailure::Timeout, "timeout"),
        (FetchFailure::Connect, "connect"),
        (FetchFailure::Protocol, "protocol"),
        (FetchFailure::BodyTooLarge, "body_too_large"),
        (FetchFailure::Abandoned, "abandoned"),
    ];

    /// Every value of `all` has the documented spelling in `table`, and the table has nothing
    /// else; each round-trips through `as_str`/`parse`, `Display`, JSON and rmp-serde's named
    /// encoding, always as the bare spelling.
    fn check_spellings<T>(all: &[T], table: &[(T, &str)], as_str: fn(&T) -> &'static str, parse: fn(&str) -> Option<T>)
    where
        T: Copy + PartialEq + std::fmt::Debug + std::fmt::Display + Serialize + for<'de> Deserialize<'de>,
    {
        assert_eq!(all.len(), table.len(), "every value is in the documented table");
        for (value, name) in table {
            assert!(all.contains(value), "{value:?} is in ALL");
            assert_eq!(as_str(value), *name, "{value:?}");
            assert_eq!(parse(name), Some(*value), "{name}");
            assert_eq!(value.to_string(), *name, "Display of {value:?}");

            let json = serde_json::to_string(value).expect("encodes as JSON");
            assert_eq!(json, format!("\"{name}\""), "JSON of {value:?}");
            assert_eq!(serde_json::from_str::<T>(&json).expect("decodes from JSON"), *value);

            let rmp = rmp_serde::to_vec_named(value).expect("encodes as rmp");
            let as_string = rmp_serde::to_vec_named(name).expect("encodes as rmp");
            assert_eq!(rmp, as_string, "rmp of {value:?}: the same bytes as the string it replaced");
            assert_eq!(rmp_serde::from_slice::<String>(&rmp).expect("a bare string"), *name, "rmp of {value:?}");
            assert_eq!(rmp_serde::from_slice::<T>(&rmp).expect("decodes from rmp"), *value);
        }
        assert_eq!(parse(""), None);
        assert_eq!(parse("Page"), None, "spellings are exact, not case-insensitive");
    }

    #[test]
    fn url_kinds_have_their_documented_spellings() {
        check_spellings(UrlKind::ALL, URL_KINDS, UrlKind::as_str, UrlKind::parse);
    }

    #[test]
    fn discoveries_have_their_documented_spellings() {
        check_spellings(Discovery::ALL, DISCOVERIES, Discovery::as_str, Discovery::parse);
    }

    #[test]
    fn fetch_failures_have_their_documented_spellings() {
        check_spellings(FetchFailure::ALL, FAILURES, FetchFailure::as_str, FetchFailure::parse);
    }

    #[test]
    fn link_kinds_read_back_from_their_stored_spelling() {
        const LINK_KINDS: &[(LinkKind, &str)] = &[
            (LinkKind::Anchor, "anchor"),
            (LinkKind::Image, "image"),
            (LinkKind::Script, "script"),
            (LinkKind::Stylesheet, "stylesheet"),
            (LinkKind::Icon, "icon"),
            (LinkKind::Iframe, "iframe"),
            (LinkKind::Media, "media"),
            (LinkKind::OtherLink, "other_link"),
            (LinkKind::SitemapEntry, "sitemap_entry"),
            (LinkKind::Canonical, "canonical"),
            (LinkKind::PageLink, "page_link"),
            (LinkKind::Preload, "preload"),
            (LinkKind::Font, "font"),
            (LinkKind::CssImage, "css_image"),
        ];
        // A new kind fails to compile here until the table above has it.
        let position = |k: LinkKind| match k {
            LinkKind::Anchor => 0,
            LinkKind::Image => 1,
            LinkKind::Script => 2,
            LinkKind::Stylesheet => 3,
            LinkKind::Icon => 4,
            LinkKind::Iframe => 5,
            LinkKind::Media => 6,
            LinkKind::OtherLink => 7,
            LinkKind::SitemapEntry => 8,
            LinkKind::Canonical => 9,
            LinkKind::PageLink => 10,
            LinkKind::Preload => 11,
            LinkKind::Font => 12,
            LinkKind::CssImage => 13,
        };
        for (i, (kind, name)) in LINK_KINDS.iter().enumerate() {
            assert_eq!(position(*kind), i);
            assert_eq!(kind.as_str(), *name);
            assert_eq!(LinkKind::parse(name), Some(*kind), "{name}");
            assert_eq!(serde_json::to_value(kind).expect("encodes"), *name, "the wire spelling is the stored one");
        }
        assert_eq!(LinkKind::parse("Anchor"), None);
        assert_eq!(LinkKind::parse("link"), None);
    }

    #[test]
    fn a_task_kind_is_recorded_under_its_own_name() {
        let mut kinds = vec![
            TaskKind::Robots,
            TaskKind::Page,
            TaskKind::Sitemap { index_depth: 0 },
            TaskKind::Sitemap { index_depth: 2 },
            TaskKind::Resource { stylesheet: false },
            TaskKind::Resource { stylesheet: true },
            TaskKind::External,
            TaskKind::DomainDns,
            TaskKind::Smtp,
            TaskKind::MtaStsPolicy,
            TaskKind::RdapBootstrap,
            TaskKind::Rdap,
        ];
        kinds.extend(URL_KINDS.iter().filter_map(|(k, _)| match k {
            UrlKind::Probe(p) => Some(TaskKind::Probe(*p)),
            _ => None,
        }));
        for k in kinds {
            assert_eq!(UrlKind::from(k).as_str(), k.as_str(), "{k:?}");
            if let TaskKind::Probe(p) = k {
                assert_eq!(p.as_str(), k.as_str(), "{p:?}");
            }
        }
        let from = NormalizedUrl::parse("https://a.test/").expect("parses");
        let vias = [
            (FoundVia::Start, Discovery::Start),
            (FoundVia::Link { from: from.clone() }, Discovery::Link),
            (FoundVia::Sitemap { sitemap: from.clone() }, Discovery::Sitemap),
            (FoundVia::Redirect { from }, Discovery::Redirect),
            (FoundVia::Standard, Discovery::Standard),
        ];
        for (via, d) in vias {
            assert_eq!((via.discovery(), via.as_str()), (d, d.as_str()), "{via:?}");
        }
    }

    #[test]
    fn an_unknown_spelling_is_a_clear_decoding_error() {
        let e = serde_json::from_str::<FetchFailure>("\"teapot\"").expect_err("not a failure");
        let msg = e.to_string();
        assert!(msg.contains("unknown variant `teapot`") && msg.contains("`body_too_large`"), "{msg}");

        let e = serde_json::from_str::<UrlKind>("7").expect_err("not a string");
        assert!(e.to_string().contains("expected a URL kind"), "{e}");

        let rmp = rmp_serde::to_vec_named("sitemap_entry").expect("encodes");
        let e = rmp_serde::from_slice::<Discovery>(&rmp).expect_err("a link kind, not a discovery");
        assert!(e.to_string().contains("unknown variant `sitemap_entry`"), "{e}");

        let mut rec = serde_json::to_value(PageRecord::default()).expect("encodes");
        rec["kind"] = "probe_nothing".into();
        let e = serde_json::from_value::<PageRecord>(rec).expect_err("unknown kind");
        assert!(e.to_string().contains("unknown variant `probe_nothing`"), "{e}");
    }

    #[test]
    fn a_record_carries_the_spellings_in_json_and_rmp() {
        let via = FoundVia::Link { from: NormalizedUrl::parse("https://a.test/").expect("parses") };
        let mut rec = PageRecord::for_task(
            AuditId(1),
            SiteId(2),
            "https://a.test/x",
            TaskKind::Probe(ProbeKind::Soft404),
            1,
            &via,
        );
        rec.error = Some(FetchFailure::PrivateAddress);
        let json_kind = serde_json::Value::from("probe_soft_404");
        let json_via = serde_json::Value::from("link");
        let json_error = serde_json::Value::from("private_address");
        let json = serde_json::to_value(&rec).expect("encodes");
        assert_eq!((&json["kind"], &json["found_via"], &json["error"]), (&json_kind, &json_via, &json_error));
        assert_eq!(json["found_from"], "https://a.test/");
        assert_eq!(serde_json::from_value::<PageRecord>(json).expect("decodes"), rec);

        // The Redis frontier's encoding (events, the external-check cache): map keys and the
        // same strings.
        let rmp = rmp_serde::to_vec_named(&rec).expect("encodes");
        let fields: serde_json::Value = rmp_serde::from_slice(&rmp).expect("a map of named fields");
        assert_eq!((&fields["kind"], &fields["found_via"], &fields["error"]), (&json_kind, &json_via, &json_error));
        assert_eq!(rmp_serde::from_slice::<PageRecord>(&rmp).expect("decodes"), rec);

        let none = PageRecord::default();
        assert_eq!((none.kind, none.found_via, none.error), (UrlKind::Page, Discovery::Start, None));
    }

    /// Records and site info from a worker or coordinator of before issue 37 (no extracted values,
    /// no AI verdicts, no rules) still decode, and the other way round the new fields are skipped:
    /// a rolling upgrade mixes versions on the events stream and in Redis.
    #[test]
    fn records_and_site_info_without_the_issue_37_fields_decode() {
        let mut rec = PageRecord { url: "https://a.test/".into(), status: Some(200), ..PageRecord::default() };
        let mut old = serde_json::to_value(&rec).expect("encodes");
        let fields = old.as_object_mut().expect("a map");
        assert!(fields.remove("extracted").is_some() && fields.remove("ai_blocked").is_some());
        let bytes = rmp_serde::to_vec_named(&old).expect("encodes the old shape");
        assert_eq!(rmp_serde::from_slice::<PageRecord>(&bytes).expect("decodes"), rec);

        rec.extracted = vec![("price".into(), "19.99".into())];
        rec.ai_blocked = Some(crate::ai_crawlers::AiBlocked::from_bits(0b101));
        let bytes = rmp_serde::to_vec_named(&rec).expect("encodes");
        let back: PageRecord = rmp_serde::from_slice(&bytes).expect("decodes");
        assert_eq!(back, rec);

        let start = NormalizedUrl::parse("https://a.test/").expect("parses");
        let info = crate::frontier::SiteInfo {
            audit: AuditId(1),
            start,
            limits: crate::task::SiteLimits::default(),
            custom: crate::custom::CustomRules::parse(&["p=css:.price"], &[] as &[&str]).expect("valid"),
        };
        let mut old = serde_json::to_value(&info).expect("encodes");
        old.as_object_mut().expect("a map").remove("custom");
        let bytes = rmp_serde::to_vec_named(&old).expect("encodes the old shape");
        let decoded: crate::frontier::SiteInfo = rmp_serde::from_slice(&bytes).expect("decodes");
        assert!(decoded.custom.is_empty());
        let both = rmp_serde::to_vec_named(&info).expect("encodes");
        assert_eq!(rmp_serde::from_slice::<crate::frontier::SiteInfo>(&both).expect("decodes"), info);
    }
}
