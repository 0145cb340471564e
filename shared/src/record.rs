//! What a fetch produced, as it travels from a worker to the audit database.

use crate::finding::Finding;
use crate::ids::{AuditId, SiteId};
use crate::task::{FoundVia, TaskKind};
use crate::time::UnixMs;
use serde::{Deserialize, Serialize};

/// Where a link points, as recorded (not all are followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// `<a href>`, `<area href>`.
    Anchor,
    /// `<img src>`.
    Image,
    /// `<script src>`.
    Script,
    /// `<link rel=stylesheet>`.
    Stylesheet,
    /// `<link rel=icon>`.
    Icon,
    /// `<iframe src>`.
    Iframe,
    /// `<source>`, `<video>`, `<audio>`.
    Media,
    /// Other `<link href>`.
    OtherLink,
    /// A `<loc>` of a sitemap (recorded on the sitemap's record, so sitemap coverage can be
    /// checked against what the URLs answer).
    SitemapEntry,
    /// The page's rel=canonical target (so canonical targets can be checked).
    Canonical,
}

impl LinkKind {
    /// Whether following it means fetching a page (vs checking a resource).
    #[must_use]
    pub fn is_navigation(&self) -> bool {
        matches!(self, LinkKind::Anchor | LinkKind::Iframe)
    }

    /// The stable spelling.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            LinkKind::Anchor => "anchor",
            LinkKind::Image => "image",
            LinkKind::Script => "script",
            LinkKind::Stylesheet => "stylesheet",
            LinkKind::Icon => "icon",
            LinkKind::Iframe => "iframe",
            LinkKind::Media => "media",
            LinkKind::OtherLink => "other_link",
            LinkKind::SitemapEntry => "sitemap_entry",
            LinkKind::Canonical => "canonical",
        }
    }
}

/// A link found on a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkRecord {
    /// Normalised target.
    pub url: String,
    /// What kind of element.
    pub kind: LinkKind,
    /// `rel=nofollow` on the link (or the page is nofollow).
    pub nofollow: bool,
    /// Within the site's scope.
    pub internal: bool,
    /// Anchor text, trimmed and capped.
    #[serde(default)]
    pub text: Option<String>,
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
    pub kind: String,
    /// The HTTP status, if an answer came.
    pub status: Option<u16>,
    /// Why no answer came (`timeout`, `connect`, `dns`, `private_address`, `body_too_large`, …).
    pub error: Option<String>,
    /// For redirects, the resolved Location.
    pub redirect_to: Option<String>,
    /// Link depth from the start page.
    pub depth: u16,
    /// `start`, `link`, `sitemap`, `redirect`, `standard`.
    pub found_via: String,
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
    /// (language, URL) pairs from hreflang alternates.
    pub hreflang: Vec<(String, String)>,
    /// Links on the page.
    pub links: Vec<LinkRecord>,
    /// Selected response headers (security, caching, compression), lower-case names.
    pub headers: Vec<(String, String)>,
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
            kind: kind.as_str().to_owned(),
            depth,
            found_via: via.as_str().to_owned(),
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
}
