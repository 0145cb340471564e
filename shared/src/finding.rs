//! Findings: what an audit tells the site owner to fix, each with a stable code.
//!
//! The codes are part of the report's contract (JSON, CSV, comparisons between audits), so they are
//! an enum with a fixed snake_case spelling; `docs/findings.md` documents each one.

use crate::ids::{AuditId, SiteId};
use serde::{Deserialize, Serialize};

/// The path prefix of the soft-404 probe (a path that cannot exist; its 16 hex digits after this
/// are derived from the audit, so each audit asks for a new one).
pub const SOFT_404_PROBE_PREFIX: &str = "/shoal-soft-404-check-";

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Broken for visitors or search engines: fix first.
    Error,
    /// Likely a problem.
    Warning,
    /// Worth knowing.
    Notice,
}

crate::spelled::spelled!(Severity, "a severity: `error`, `warning` or `notice`", {
    Error => "error",
    Warning => "warning",
    Notice => "notice",
});

macro_rules! codes {
    ($( $(#[$m:meta])* $variant:ident = $name:literal, $sev:ident, $family:literal, $msg:literal; )*) => {
        /// A finding's stable code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum Code {
            $( $(#[$m])* #[serde(rename = $name)] $variant, )*
        }

        impl Code {
            /// Every code, in documentation order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The stable snake_case spelling.
            #[must_use]
            pub fn as_str(&self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            /// Its severity.
            #[must_use]
            pub fn severity(&self) -> Severity {
                match self { $(Code::$variant => Severity::$sev,)* }
            }

            /// The family it belongs to (for grouping in reports).
            #[must_use]
            pub fn family(&self) -> &'static str {
                match self { $(Code::$variant => $family,)* }
            }

            /// A one-line explanation for reports.
            #[must_use]
            pub fn message(&self) -> &'static str {
                match self { $(Code::$variant => $msg,)* }
            }

            /// Looks a code up by its spelling.
            #[must_use]
            pub fn parse(s: &str) -> Option<Code> {
                match s { $($name => Some(Code::$variant),)* _ => None }
            }
        }
    };
}

codes! {
    /// A link between pages of the site leads to an error.
    BrokenInternalLink = "broken_internal_link", Error, "links", "An internal link leads to a page that answers with an error.";
    /// An image, script, stylesheet or other resource of the site fails.
    BrokenResource = "broken_resource", Error, "links", "A resource used by a page (image, script, stylesheet) answers with an error.";
    /// A link to another site leads to an error.
    BrokenExternalLink = "broken_external_link", Warning, "links", "A link to another site leads to an error or does not resolve.";
    /// A page could not be fetched at all (network failure, timeouts, retries exhausted).
    FetchFailed = "fetch_failed", Error, "links", "The URL could not be fetched: network error, timeout or too many retries.";
    /// A link's href could not be turned into a URL.
    InvalidLink = "invalid_link", Notice, "links", "A link's address is not a valid URL or is over the length cap.";
    /// More than one redirect before the final page.
    RedirectChain = "redirect_chain", Warning, "redirects", "The URL redirects more than once before reaching a page.";
    /// Redirects that come back to a URL already in the chain.
    RedirectLoop = "redirect_loop", Error, "redirects", "The URL's redirects form a loop and never reach a page.";
    /// More than 10 redirect hops.
    RedirectLimit = "redirect_limit", Error, "redirects", "The URL redirects more than 10 times.";
    /// A redirect to a URL robots.txt forbids us to fetch.
    RedirectToDisallowed = "redirect_to_disallowed", Warning, "redirects", "The URL redirects to an address that robots.txt disallows.";
    /// A redirect with a temporary status (302, 303, 307).
    RedirectTemporary = "redirect_temporary", Notice, "redirects", "A temporary redirect (302/303/307) is used where a permanent one (301/308) may be meant.";
    /// A redirect without a usable Location header.
    RedirectInvalid = "redirect_invalid", Error, "redirects", "A redirect has no Location header or an invalid one.";
    /// No title element.
    TitleMissing = "title_missing", Error, "content", "The page has no <title>.";
    /// An empty title element.
    TitleEmpty = "title_empty", Error, "content", "The page's <title> is empty.";
    /// The same title on several pages.
    TitleDuplicate = "title_duplicate", Warning, "content", "Several pages share the same <title>.";
    /// Title over 60 characters.
    TitleTooLong = "title_too_long", Notice, "content", "The <title> is over 60 characters and will be cut off in search results.";
    /// No meta description.
    DescriptionMissing = "description_missing", Warning, "content", "The page has no meta description.";
    /// Empty meta description.
    DescriptionEmpty = "description_empty", Warning, "content", "The page's meta description is empty.";
    /// The same description on several pages.
    DescriptionDuplicate = "description_duplicate", Warning, "content", "Several pages share the same meta description.";
    /// Description over 160 characters.
    DescriptionTooLong = "description_too_long", Notice, "content", "The meta description is over 160 characters.";
    /// No h1.
    H1Missing = "h1_missing", Warning, "content", "The page has no <h1> heading.";
    /// Several h1.
    H1Multiple = "h1_multiple", Notice, "content", "The page has more than one <h1> heading.";
    /// Main text under the thin-page threshold (`--thin-page-words`).
    ContentThin = "content_thin", Warning, "content", "The page's main text has fewer words than the thin-page threshold (200 by default).";
    /// The same main text as other pages.
    ContentDuplicate = "content_duplicate", Warning, "content", "The page's main text is the same as that of other pages of the site.";
    /// Main text nearly the same as other pages'.
    ContentNearDuplicate = "content_near_duplicate", Warning, "content", "The page's main text is nearly the same as that of other pages of the site (near-duplicate threshold, 90 % by default).";
    /// robots.txt could not be read (5xx, 429, timeout, network) after retries: host off limits.
    RobotsUnreachable = "robots_unreachable", Error, "robots", "robots.txt could not be fetched (server error, rate limit or network failure), so nothing else was requested from the host.";
    /// Crawl-delay over 60 s: host off limits.
    CrawlDelayTooHigh = "crawl_delay_too_high", Warning, "robots", "robots.txt asks for a Crawl-delay above 60 s, so the host was not crawled.";
    /// The start URL itself is disallowed.
    StartDisallowed = "start_disallowed", Warning, "robots", "robots.txt disallows the start URL, so the site was not crawled.";
    /// robots.txt over the 500 KiB cap: rules after the cut are ignored.
    RobotsTxtTooLarge = "robots_txt_too_large", Warning, "robots", "robots.txt is over 500 KiB; only the first 500 KiB were parsed and any rules after that were ignored.";
    /// A response over the body size cap.
    BodyTooLarge = "body_too_large", Warning, "safety", "The response body is over the size cap; only the first part was read.";
    /// A response whose headers are over the header cap.
    HeadersTooLarge = "headers_too_large", Warning, "safety", "The response has more than 200 header fields or more than 256 KiB of headers; it was not read.";
    /// More links than the per-page cap.
    TooManyLinks = "too_many_links", Notice, "safety", "The page has more links than the per-page cap; the rest were not followed.";
    /// HTML nested deeper than browsers build, or too costly to parse: only the part before was read.
    HtmlTooComplex = "html_too_complex", Warning, "safety", "The page's HTML is nested deeper than 512 elements, has a tag with more than 256 attributes, or is too costly to parse; only the part before that point was read.";
    /// A host that resolves to a private or loopback address.
    PrivateAddress = "private_address", Error, "safety", "The host resolves to a private, loopback or otherwise non-public address and was not contacted.";
    /// The start host does not resolve or is unreachable.
    StartUnreachable = "start_unreachable", Error, "availability", "The start page could not be reached at all.";
    /// A 429 was answered: the host was slowed down for the rest of the audit.
    RateLimited = "rate_limited", Warning, "availability", "The server answered 429 Too Many Requests; Shoal slowed down to 1 request at a time, 3 s apart.";
    /// The server's answers got slower (or it stated a quota): Shoal changed its pace (issue 17).
    SlowedDown = "slowed_down", Notice, "availability", "Shoal changed its pace for this host, or for every host at its server IP, during the audit: responses got slower than usual, or the server stated a request quota.";
    /// Server errors (5xx).
    ServerError = "server_error", Error, "availability", "The server answered with a 5xx error.";
    /// A URL given up after its leases expired or its processing failed: a poison task never
    /// keeps an audit from ending.
    FetchAbandoned = "fetch_abandoned", Warning, "availability", "Shoal gave the URL up: the workers processing it died, hung or failed on it, three times or in a way retrying cannot mend; the rest of the audit went on.";
    /// A URL the audit's --include/--exclude rules kept out: never requested.
    UrlExcluded = "url_excluded", Notice, "scope", "The URL was not requested: the audit's include/exclude rules keep it out.";
    /// The page budget was reached.
    PageLimitReached = "page_limit_reached", Notice, "limits", "The site has more pages than the page budget; the audit covers the first ones found.";
    /// The depth limit cut links off.
    DepthLimitReached = "depth_limit_reached", Notice, "limits", "Links deeper than the depth limit were not followed.";
    /// The resource-check budget was reached.
    ResourceLimitReached = "resource_limit_reached", Notice, "limits", "The site has more resources than the resource-check budget.";
    /// The sitemap budget was reached (or the page budget spent): further sitemaps were not read.
    SitemapLimitReached = "sitemap_limit_reached", Notice, "limits", "The site's sitemaps are over the sitemap budget (files or bytes), or the page budget was spent; the remaining sitemaps were not read.";
    /// Part of the site's results could not be read back from the frontier (an unreadable entry of
    /// the events log), or the site's crawl state could not be read and the site was given up (its
    /// audit ends `failed`). Raised by the coordinator, never by a check of the site.
    ResultsIncomplete = "results_incomplete", Warning, "limits", "Part of this site's results could not be read back inside Shoal and is missing from the report, or the site's crawl state could not be read and its crawl was given up.";
    /// A sitemap that could not be parsed or is over a cap.
    SitemapInvalid = "sitemap_invalid", Warning, "indexing", "A sitemap could not be parsed completely or is over the 50 MB / 50,000 URL caps.";
    /// Page marked noindex.
    Noindex = "noindex", Notice, "indexing", "The page asks search engines not to index it (meta robots or X-Robots-Tag).";
    /// Page marked nofollow.
    NofollowPage = "nofollow_page", Notice, "indexing", "The page asks crawlers not to follow any of its links (meta robots or X-Robots-Tag).";
    /// A URL listed in a sitemap answers with an error.
    SitemapUrlError = "sitemap_url_error", Warning, "indexing", "A URL listed in a sitemap answers with an error status.";
    /// A URL listed in a sitemap redirects.
    SitemapUrlRedirect = "sitemap_url_redirect", Warning, "indexing", "A URL listed in a sitemap redirects; sitemaps should list final URLs.";
    /// A URL listed in a sitemap is noindex.
    SitemapUrlNoindex = "sitemap_url_noindex", Warning, "indexing", "A URL listed in a sitemap asks not to be indexed.";
    /// Found only through a sitemap.
    OrphanPage = "orphan_page", Warning, "indexing", "The page is listed in a sitemap but no crawled page links to it.";
    /// Far from the start page.
    DeepPage = "deep_page", Notice, "indexing", "The page is 4 or more clicks away from the start page.";
    /// Several canonical links.
    CanonicalMultiple = "canonical_multiple", Warning, "canonical", "The page declares more than one rel=canonical.";
    /// Canonical outside head.
    CanonicalInBody = "canonical_in_body", Warning, "canonical", "The rel=canonical link is outside <head>, where search engines ignore it.";
    /// Canonical not a URL.
    CanonicalInvalid = "canonical_invalid", Error, "canonical", "The rel=canonical value is not a valid http(s) URL.";
    /// Canonical on another site.
    CanonicalOtherSite = "canonical_other_site", Notice, "canonical", "The rel=canonical points to another site.";
    /// Canonical target fails.
    CanonicalBroken = "canonical_broken", Error, "canonical", "The rel=canonical target answers with an error.";
    /// Canonical target redirects.
    CanonicalRedirect = "canonical_redirect", Warning, "canonical", "The rel=canonical target redirects; it should be the final URL.";
    // hreflang (issue 37): from `<link>`, the `Link` header and sitemaps (shared::hreflang).
    /// An hreflang value that is not an ISO 639-1 language with an optional ISO 3166-1 region.
    HreflangInvalidCode = "hreflang_invalid_code", Error, "hreflang", "An hreflang value is not a valid ISO 639-1 language code with an optional ISO 3166-1 alpha-2 region (or x-default), so search engines ignore it.";
    /// The page's alternates do not name the page itself.
    HreflangSelfMissing = "hreflang_self_missing", Warning, "hreflang", "The page lists hreflang alternates but none of them is the page itself.";
    /// An alternate does not name the page back.
    HreflangReturnMissing = "hreflang_return_missing", Error, "hreflang", "An hreflang alternate does not link back to the page (no return link), so search engines ignore the pair.";
    /// Several URLs for one hreflang value.
    HreflangConflict = "hreflang_conflict", Warning, "hreflang", "The page names more than one URL for the same hreflang language (and region).";
    /// No x-default among the alternates.
    HreflangXDefaultMissing = "hreflang_x_default_missing", Notice, "hreflang", "The page lists hreflang alternates but no x-default for users no language version fits.";
    /// An alternate answers with an error or not at all.
    HreflangTargetError = "hreflang_target_error", Error, "hreflang", "An hreflang alternate answers with an error status or not at all.";
    /// An alternate redirects.
    HreflangTargetRedirect = "hreflang_target_redirect", Warning, "hreflang", "An hreflang alternate redirects; alternates should be final URLs that answer 200.";
    /// An alternate is noindex.
    HreflangTargetNoindex = "hreflang_target_noindex", Warning, "hreflang", "An hreflang alternate asks search engines not to index it.";
    /// An alternate's canonical names another URL.
    HreflangTargetCanonicalised = "hreflang_target_canonicalised", Warning, "hreflang", "An hreflang alternate declares another URL as its canonical; alternates should be canonical URLs.";
    /// robots.txt disallows an alternate.
    HreflangTargetDisallowed = "hreflang_target_disallowed", Warning, "hreflang", "robots.txt disallows an hreflang alternate, so search engines cannot confirm it.";
    /// `<html lang>` names another language than the page's own hreflang.
    HreflangLangMismatch = "hreflang_lang_mismatch", Warning, "hreflang", "The page's <html lang> names another language (or region) than the hreflang entry that points to the page itself.";
    /// More alternates than the cap.
    HreflangTooMany = "hreflang_too_many", Notice, "hreflang", "The page or sitemap lists more hreflang alternates than Shoal reads; the rest were not checked.";
    /// The http:// start page does not redirect to https.
    HttpsRedirectMissing = "https_redirect_missing", Warning, "https", "The http:// form of the start page does not redirect to https://.";
    /// Site only on http.
    NoHttps = "no_https", Warning, "https", "The site is audited over plain http; visitors' traffic is not encrypted.";
    /// http:// resources on an https page.
    MixedContent = "mixed_content", Warning, "https", "An https page loads resources over plain http (mixed content).";
    /// Expired certificate.
    TlsCertificateExpired = "tls_certificate_expired", Error, "https", "The TLS certificate has expired.";
    /// Certificate expires soon.
    TlsCertificateExpiring = "tls_certificate_expiring", Warning, "https", "The TLS certificate expires within 30 days.";
    /// Self-signed.
    TlsSelfSigned = "tls_self_signed", Error, "https", "The TLS certificate is self-signed.";
    /// Untrusted issuer or not yet valid.
    TlsUntrusted = "tls_untrusted", Error, "https", "The TLS certificate is not trusted (unknown issuer, not yet valid or otherwise invalid).";
    /// Name mismatch.
    TlsHostnameMismatch = "tls_hostname_mismatch", Error, "https", "The TLS certificate does not cover the host name.";
    /// Old TLS.
    TlsOldVersion = "tls_old_version", Warning, "https", "The server negotiated TLS older than 1.2.";
    /// No HSTS.
    HstsMissing = "hsts_missing", Warning, "security_headers", "The https start page sends no Strict-Transport-Security header.";
    /// No CSP.
    CspMissing = "csp_missing", Notice, "security_headers", "The start page sends no Content-Security-Policy header.";
    /// No nosniff.
    ContentTypeOptionsMissing = "content_type_options_missing", Notice, "security_headers", "The start page sends no X-Content-Type-Options: nosniff header.";
    /// No frame protection.
    FrameProtectionMissing = "frame_protection_missing", Notice, "security_headers", "The start page sends neither X-Frame-Options nor a CSP frame-ancestors directive.";
    /// No Referrer-Policy.
    ReferrerPolicyMissing = "referrer_policy_missing", Notice, "security_headers", "The start page sends no Referrer-Policy header.";
    /// Soft 404.
    Soft404 = "soft_404", Warning, "soft_404", "A URL that cannot exist answers 200 instead of 404 (soft 404).";
    /// No security.txt.
    SecurityTxtMissing = "security_txt_missing", Notice, "security_txt", "There is no /.well-known/security.txt (RFC 9116).";
    /// Invalid security.txt.
    SecurityTxtInvalid = "security_txt_invalid", Warning, "security_txt", "security.txt lacks a required Contact or Expires field or is malformed (RFC 9116).";
    /// Expired security.txt.
    SecurityTxtExpired = "security_txt_expired", Warning, "security_txt", "security.txt has expired (its Expires date is past).";
    /// llms.txt present.
    LlmsTxtPresent = "llms_txt_present", Notice, "llms_txt", "The site publishes /llms.txt.";
    /// llms.txt that does not follow its published format (llmstxt.org).
    LlmsTxtInvalid = "llms_txt_invalid", Notice, "llms_txt", "/llms.txt does not follow the llms.txt format (an H1 title first, an optional blockquote summary, H2 sections of Markdown link lists), so tools may misread it.";
    /// robots.txt blocks some AI crawlers from pages it lets others read.
    AiCrawlersInconsistent = "ai_crawlers_inconsistent", Notice, "ai_crawlers", "robots.txt treats AI crawlers differently: some are blocked from pages that others may read.";
    /// WordPress REST API open.
    WpRestApiExposed = "wp_rest_api_exposed", Notice, "wordpress", "The WordPress REST API (/wp-json/) answers publicly.";
    /// xmlrpc.php open.
    WpXmlrpcExposed = "wp_xmlrpc_exposed", Warning, "wordpress", "WordPress xmlrpc.php is reachable (a common brute-force and amplification target).";
    /// Uploads directory listing.
    WpUploadsListing = "wp_uploads_listing", Warning, "wordpress", "The WordPress uploads directory lists its files.";
    /// Default post reachable.
    WpDefaultPost = "wp_default_post", Notice, "wordpress", "The WordPress default post (/?p=1) is still published.";
    /// Images without alt.
    ImgMissingAlt = "img_missing_alt", Warning, "accessibility", "Images on the page have no alt attribute.";
    /// No html lang.
    HtmlLangMissing = "html_lang_missing", Warning, "accessibility", "The <html> element has no lang attribute.";
    /// Slow answer.
    SlowResponse = "slow_response", Warning, "performance", "The response took more than 1 second.";
    /// Heavy page.
    HeavyPage = "heavy_page", Warning, "performance", "The HTML of the page is larger than 1 MB.";
    /// No compression.
    CompressionMissing = "compression_missing", Notice, "performance", "A text response over 1 KB was sent without compression.";
    /// No caching headers.
    CachingHeadersMissing = "caching_headers_missing", Notice, "performance", "A static resource has no caching headers (Cache-Control, Expires, ETag or Last-Modified).";
    /// A site under a German, Austrian, Swiss or Liechtenstein domain (or in German) whose start
    /// page links to no Impressum.
    ImpressumMissing = "impressum_missing", Warning, "legal", "The site is German, Austrian, Swiss or Liechtenstein (by its domain or its language), and its start page links to no Impressum (provider identification).";
    /// An Impressum without an e-mail address or a postal address.
    ImpressumIncomplete = "impressum_incomplete", Warning, "legal", "The Impressum gives no e-mail address or no postal address.";
    /// No privacy policy linked from the start page of a European site.
    PrivacyPolicyMissing = "privacy_policy_missing", Notice, "legal", "The site is European (by its domain) or German, and its start page links to no privacy policy.";
    // Structured data (issue 37): JSON-LD, microdata and RDFa Lite of each page.
    /// A JSON-LD block that does not parse.
    StructuredDataInvalid = "structured_data_invalid", Error, "structured_data", "A JSON-LD block of the page is not valid JSON (or is over the size cap), so search engines ignore all of it.";
    /// An `@type` Schema.org does not define.
    StructuredDataUnknownType = "structured_data_unknown_type", Warning, "structured_data", "An item's type is not a Schema.org type, so search engines do not understand it.";
    /// A rich-result type without a property Google requires.
    StructuredDataMissingRequired = "structured_data_missing_required", Error, "structured_data", "An item of a type Google shows rich results for lacks a property Google requires, so it cannot get a rich result.";
    /// A rich-result type without a property Google recommends.
    StructuredDataMissingRecommended = "structured_data_missing_recommended", Notice, "structured_data", "An item of a type Google shows rich results for lacks a property Google recommends.";
    /// A property whose value is not of the expected kind.
    StructuredDataWrongValue = "structured_data_wrong_value", Warning, "structured_data", "A property of an item has a value of the wrong kind (a date that is not ISO 8601, a price that is not a number, a text where an item is expected).";
    // On-page basics (issue 37): mobile viewport, social previews, pagination, images.
    /// No viewport meta.
    ViewportMissing = "viewport_missing", Warning, "on_page", "The page has no <meta name=\"viewport\">, so phones show it as a shrunken desktop page.";
    /// A viewport meta that does not fit the device or blocks zooming.
    ViewportInvalid = "viewport_invalid", Warning, "on_page", "The page's viewport does not follow the device's width, or it stops visitors from zooming.";
    /// No Open Graph basics at all.
    OpenGraphMissing = "open_graph_missing", Notice, "on_page", "The page has no Open Graph tags (og:title, og:image, og:url), so shared links show no proper preview.";
    /// Some Open Graph basics missing or not absolute URLs.
    OpenGraphIncomplete = "open_graph_incomplete", Notice, "on_page", "The page's Open Graph tags lack og:title, og:image or og:url, or give a relative or invalid URL.";
    /// No Twitter card.
    TwitterCardMissing = "twitter_card_missing", Notice, "on_page", "The page has no twitter:card tag, so X (Twitter) shows no card for shared links.";
    /// A Twitter card of an unknown kind or without title or image.
    TwitterCardIncomplete = "twitter_card_incomplete", Notice, "on_page", "The page's Twitter card has an unknown kind, or no title or image (neither twitter: nor og: tags).";
    /// rel=next/prev to a URL that does not answer 200.
    PaginationBroken = "pagination_broken", Warning, "on_page", "A rel=next or rel=prev link points to a URL that does not answer 200 (an error, a redirect or no answer).";
    /// Images without width and height attributes.
    ImgMissingDimensions = "img_missing_dimensions", Notice, "on_page", "Images on the page have no width and height attributes, so the layout jumps while they load.";
    /// An image over the size budget.
    ImageTooLarge = "image_too_large", Warning, "on_page", "An image is larger than the image size budget (100 KiB by default).";
    /// Fewer than two name servers, or one whose name does not resolve.
    DnsNameServers = "dns_name_servers", Warning, "dns", "The domain has fewer than two name servers, or a name server whose own name does not resolve.";
    /// The domain does not exist in DNS (NXDOMAIN) or has no name servers at all.
    DnsDomainMissing = "dns_domain_missing", Error, "dns", "The domain does not resolve: DNS says it does not exist, or it has no name servers.";
    /// A DNS question of the check got an error for an answer (SERVFAIL, REFUSED), or --no-dns.
    DnsLookupFailed = "dns_lookup_failed", Notice, "dns", "A DNS lookup of the domain failed (the server answered with an error such as SERVFAIL or REFUSED), so some DNS checks could not be made.";
    /// Questions about the domain got no answer in time (its name servers are silent or slow).
    DnsTimeout = "dns_timeout", Warning, "dns", "The domain's name servers gave no answer to some DNS questions in time, so the checks that needed them could not be made.";
    /// The resolver Shoal asks (`--dns-server`, or the system's) answers nothing at all.
    DnsResolverSilent = "dns_resolver_silent", Error, "dns", "The DNS resolver Shoal was set to use gave no answer at all, so no name could be looked up; the audit's sites that needed one end unreachable.";
    /// No DNSSEC.
    DnssecUnsigned = "dnssec_unsigned", Notice, "dns", "The domain is not DNSSEC-signed.";
    /// No CAA record.
    CaaMissing = "caa_missing", Notice, "dns", "The domain publishes no CAA record, so any certificate authority may issue certificates for it.";
    /// CAA without iodef.
    CaaIodefMissing = "caa_iodef_missing", Notice, "dns", "The CAA records name no iodef contact for reports of refused certificate requests.";
    /// A CAA record that cannot be used.
    CaaInvalid = "caa_invalid", Warning, "dns", "A CAA record is malformed or has an unknown critical tag, so certificate authorities may refuse to issue.";
    /// No MX record (and no null MX).
    MxMissing = "mx_missing", Notice, "mail", "The domain has no MX record: mail to it goes to its A record, or nowhere.";
    /// MX to a CNAME.
    MxCname = "mx_cname", Warning, "mail", "An MX record points at an alias (CNAME), which RFC 2181 forbids; some mail servers refuse to deliver.";
    /// MX to an IP address.
    MxIpAddress = "mx_ip_address", Error, "mail", "An MX record names an IP address instead of a host name; mail servers cannot deliver to it.";
    /// MX host without address.
    MxUnresolvable = "mx_unresolvable", Error, "mail", "A mail server named by an MX record has no address (no A or AAAA record).";
    /// No SPF record.
    SpfMissing = "spf_missing", Warning, "mail", "The domain publishes no SPF record, so anyone can send mail that claims to come from it.";
    /// More than one SPF record.
    SpfMultiple = "spf_multiple", Error, "mail", "The domain publishes more than one SPF record; receivers treat that as a permanent error.";
    /// An SPF record that does not parse.
    SpfInvalid = "spf_invalid", Error, "mail", "The SPF record (or one it includes) is malformed; receivers treat it as a permanent error.";
    /// Over the 10 DNS lookups of RFC 7208.
    SpfTooManyLookups = "spf_too_many_lookups", Error, "mail", "Evaluating the SPF record takes more than 10 DNS lookups (RFC 7208), so receivers treat it as a permanent error.";
    /// `+all`.
    SpfPassAll = "spf_pass_all", Error, "mail", "The SPF record ends in +all: it allows every server in the world to send as the domain.";
    /// `?all` (or no `all`).
    SpfNeutralAll = "spf_neutral_all", Warning, "mail", "The SPF record ends in ?all (or has no all): it asserts nothing about other servers.";
    /// `~all`.
    SpfSoftfailAll = "spf_softfail_all", Notice, "mail", "The SPF record ends in ~all (soft fail): mail from other servers is marked, not refused.";
    /// No DMARC record.
    DmarcMissing = "dmarc_missing", Warning, "mail", "The domain publishes no DMARC record (_dmarc), so receivers get no policy for mail that fails SPF and DKIM.";
    /// DMARC that does not parse.
    DmarcInvalid = "dmarc_invalid", Error, "mail", "The DMARC record is malformed or there is more than one; receivers ignore it.";
    /// p=none.
    DmarcPolicyNone = "dmarc_policy_none", Warning, "mail", "The DMARC policy is p=none: failing mail is only monitored, never quarantined or rejected.";
    /// No rua.
    DmarcReportsMissing = "dmarc_reports_missing", Notice, "mail", "The DMARC record asks for no aggregate reports (rua), so nobody learns who sends as the domain.";
    /// sp=none under a stricter p.
    DmarcSubdomainPolicyNone = "dmarc_subdomain_policy_none", Notice, "mail", "The DMARC subdomain policy is sp=none: mail from invented subdomains is not refused.";
    /// No DKIM key under the common selectors.
    DkimNotFound = "dkim_not_found", Notice, "mail", "No DKIM key was found under the common selectors tried (the domain may use another selector).";
    /// No MTA-STS.
    MtaStsMissing = "mta_sts_missing", Notice, "mail", "The domain publishes no MTA-STS policy, so senders may deliver its mail without TLS.";
    /// An MTA-STS record or policy that cannot be used.
    MtaStsInvalid = "mta_sts_invalid", Error, "mail", "The MTA-STS record or policy is malformed or could not be fetched; senders ignore it.";
    /// Policy does not cover the MX hosts.
    MtaStsMxMismatch = "mta_sts_mx_mismatch", Error, "mail", "The MTA-STS policy does not list every MX host; senders enforcing it will not deliver to the others.";
    /// Policy in testing mode.
    MtaStsTesting = "mta_sts_testing", Notice, "mail", "The MTA-STS policy is in testing mode: failures are reported, not enforced.";
    /// No TLS-RPT.
    TlsRptMissing = "tls_rpt_missing", Notice, "mail", "The domain publishes no TLS-RPT record (_smtp._tls), so it gets no reports of failed TLS deliveries.";
    /// TLS-RPT that does not parse.
    TlsRptInvalid = "tls_rpt_invalid", Warning, "mail", "The TLS-RPT record is malformed; senders send no reports.";
    /// The mail server did not answer.
    SmtpUnreachable = "smtp_unreachable", Error, "mail", "The mail server could not be reached on its SMTP port, or did not greet in time.";
    /// The mail server answered the greeting or EHLO with an error or garbage.
    SmtpProtocolError = "smtp_protocol_error", Error, "mail", "The mail server's greeting or EHLO answer is an error or not valid SMTP.";
    /// No STARTTLS.
    SmtpStarttlsMissing = "smtp_starttls_missing", Warning, "mail", "The mail server does not offer STARTTLS: mail to it travels unencrypted.";
    /// STARTTLS offered but failing.
    SmtpStarttlsFailed = "smtp_starttls_failed", Error, "mail", "The mail server offers STARTTLS but refuses it or the TLS handshake fails.";
    /// Expired mail server certificate.
    SmtpCertificateExpired = "smtp_certificate_expired", Error, "mail", "The mail server's TLS certificate has expired.";
    /// Mail server certificate expires soon.
    SmtpCertificateExpiring = "smtp_certificate_expiring", Warning, "mail", "The mail server's TLS certificate expires within 30 days.";
    /// Mail server certificate untrusted or self-signed.
    SmtpCertificateUntrusted = "smtp_certificate_untrusted", Warning, "mail", "The mail server's TLS certificate is self-signed or not trusted; senders that verify (MTA-STS, DANE) will not deliver.";
    /// Mail server certificate for another name.
    SmtpCertificateHostname = "smtp_certificate_hostname", Warning, "mail", "The mail server's TLS certificate does not cover its MX host name.";
    /// Old TLS on the mail server.
    SmtpTlsOldVersion = "smtp_tls_old_version", Warning, "mail", "The mail server negotiates TLS older than 1.2.";
    /// Registration expires within 30 days.
    DomainExpiring = "domain_expiring", Warning, "domain", "The domain's registration expires within 30 days.";
    /// Registration expired.
    DomainExpired = "domain_expired", Error, "domain", "The domain's registration has expired.";
    /// Status codes that stop the domain from resolving.
    DomainHold = "domain_hold", Error, "domain", "The registry or registrar has put the domain on hold (or it is pending deletion): it does not resolve.";
    /// Status codes that stop a transfer.
    DomainTransferBlocked = "domain_transfer_blocked", Notice, "domain", "The domain's status blocks transfers to another registrar (a lock, or a pending transfer, deletion or redemption).";
    /// The registry's RDAP service gave no usable answer.
    DomainRdapFailed = "domain_rdap_failed", Notice, "domain", "The registry's RDAP service gave no usable answer, so the registration was not checked.";
    /// A custom search rule (`--search`) flags the page.
    CustomSearch = "custom_search", Notice, "custom", "A custom search rule (--search) flags the page: its text matches the rule's expression, or, for a !regex: rule, does not.";
    // The browser check (SPEC §10): a page opened in headless Chromium (shared::browser).
    /// Largest Contentful Paint over 2.5 s.
    BrowserLcpSlow = "browser_lcp_slow", Warning, "browser", "The page's largest element took more than 2.5 s to appear (Largest Contentful Paint, measured in headless Chromium).";
    /// Largest Contentful Paint over 4 s.
    BrowserLcpPoor = "browser_lcp_poor", Error, "browser", "The page's largest element took more than 4 s to appear (Largest Contentful Paint: poor).";
    /// Cumulative Layout Shift over 0.1.
    BrowserClsHigh = "browser_cls_high", Warning, "browser", "Content moves while the page loads (Cumulative Layout Shift above 0.1).";
    /// Cumulative Layout Shift over 0.25.
    BrowserClsPoor = "browser_cls_poor", Error, "browser", "Content moves a lot while the page loads (Cumulative Layout Shift above 0.25: poor).";
    /// Interaction to Next Paint over 200 ms.
    BrowserInpSlow = "browser_inp_slow", Warning, "browser", "The page took more than 200 ms to respond to a key press (Interaction to Next Paint).";
    /// Interaction to Next Paint over 500 ms.
    BrowserInpPoor = "browser_inp_poor", Error, "browser", "The page took more than 500 ms to respond to a key press (Interaction to Next Paint: poor).";
    /// Total blocking time over 200 ms (INP's lab proxy when no interaction was measured).
    BrowserTbtHigh = "browser_tbt_high", Warning, "browser", "Scripts blocked the page for more than 200 ms while it loaded (Total Blocking Time), so it reacts late to visitors.";
    /// Total blocking time over 600 ms.
    BrowserTbtPoor = "browser_tbt_poor", Error, "browser", "Scripts blocked the page for more than 600 ms while it loaded (Total Blocking Time: poor).";
    /// An axe-core rule of critical impact fails.
    A11yCritical = "a11y_critical", Error, "browser", "An accessibility rule of critical impact fails (axe-core): some visitors cannot use this part of the page at all.";
    /// An axe-core rule of serious impact fails.
    A11ySerious = "a11y_serious", Error, "browser", "An accessibility rule of serious impact fails (axe-core).";
    /// An axe-core rule of moderate impact fails.
    A11yModerate = "a11y_moderate", Warning, "browser", "An accessibility rule of moderate impact fails (axe-core).";
    /// An axe-core rule of minor impact fails.
    A11yMinor = "a11y_minor", Notice, "browser", "An accessibility rule of minor impact fails (axe-core).";
    /// Focused elements without a visible focus indicator.
    KeyboardNoFocusVisible = "keyboard_no_focus_visible", Warning, "browser", "Elements reached with the Tab key show no visible sign of focus, so keyboard users lose their place.";
    /// Tab focus cycles among some elements and never reaches the rest.
    KeyboardFocusTrap = "keyboard_focus_trap", Error, "browser", "Keyboard focus is trapped: pressing Tab cycles among a few elements and never reaches the rest of the page.";
    /// The first focusable element is not a skip link.
    KeyboardNoSkipLink = "keyboard_no_skip_link", Notice, "browser", "The page has no skip link: keyboard users must Tab through the whole header to reach the content.";
    /// Tab moves focus backwards in reading order.
    KeyboardFocusBackwards = "keyboard_focus_backwards", Warning, "browser", "Pressing Tab moves focus backwards in the page's reading order.";
    /// Third-party trackers loaded or cookies set before any consent.
    ConsentTrackingBeforeConsent = "consent_tracking_before_consent", Error, "browser", "Third-party trackers loaded before the visitor consented.";
    /// Trackers still loading after Reject was clicked.
    ConsentTrackingAfterReject = "consent_tracking_after_reject", Error, "browser", "Third-party trackers still load after the visitor clicked Reject on the cookie banner.";
    /// A consent banner with no reject option on its first layer.
    ConsentNoRejectOption = "consent_no_reject_option", Warning, "browser", "The cookie banner offers no way to reject on its first layer (no Reject or Decline button was found).";
    /// The page could not be measured in the browser.
    BrowserPageFailed = "browser_page_failed", Notice, "browser", "The page could not be checked in headless Chromium (it did not load in time, was refused by the address guard, or the browser failed).";
    /// The page took headless Chromium past the worker's browser memory limit.
    BrowserMemoryExceeded = "browser_memory_exceeded", Warning, "browser", "Opening the page took the browser past the audit's memory limit (--browser-memory-mb), so its check was stopped: a visitor's browser or phone would struggle too.";
    /// Uncaught script errors while the page loaded.
    BrowserScriptErrors = "browser_script_errors", Warning, "browser", "Scripts failed with uncaught errors while the page loaded in headless Chromium: part of the page may not work or not appear.";
    /// Resources of the page that the site's robots.txt disallows, held back by the browser.
    BrowserRobotsBlocked = "browser_robots_blocked", Notice, "browser", "The page loads resources that the site's robots.txt disallows: Shoal's browser held them back, as search engines' renderers do, so the page they render may lack them.";
    // Raw against rendered (issue 38): the crawl's facts of a page against the same facts read
    // from the DOM Chromium built (shared::browser::Rendered), compared by the site analysis.
    /// The title differs after JavaScript runs.
    RenderedTitleChanged = "rendered_title_changed", Notice, "browser", "JavaScript changes the page's title: search engines that do not run scripts, link previews and many crawlers show the other one.";
    /// The meta description differs after JavaScript runs.
    RenderedDescriptionChanged = "rendered_description_changed", Notice, "browser", "JavaScript changes the page's meta description: what the HTML says and what a rendering search engine reads differ.";
    /// The h1 headings differ after JavaScript runs.
    RenderedH1Changed = "rendered_h1_changed", Notice, "browser", "JavaScript changes the page's main heading (h1): crawlers that do not run scripts read another one, or none.";
    /// The canonical URL differs between the HTML and the rendered page.
    RenderedCanonicalMismatch = "rendered_canonical_mismatch", Warning, "browser", "The canonical URL in the HTML and the one after JavaScript runs differ (or only one of them has one): search engines may follow either.";
    /// noindex in one version of the page and not in the other.
    RenderedNoindexMismatch = "rendered_noindex_mismatch", Error, "browser", "The page says noindex in one version and not in the other (its HTML, or after JavaScript runs): search engines may drop a page you want found, or index one you meant to hide.";
    /// Links to pages that exist only after JavaScript runs.
    RenderedOnlyLinks = "rendered_only_links", Warning, "browser", "Links to pages exist only after JavaScript runs: crawlers that do not render never find the pages behind them.";
    /// The main text exists only after JavaScript runs.
    RenderedOnlyContent = "rendered_only_content", Warning, "browser", "The page's main text appears only after JavaScript runs: its HTML is (nearly) empty for crawlers that do not render.";
}

impl Code {
    /// What makes a finding of this code the same problem in two audits of a site: its URL and a
    /// stable key, never the numbers a detail measures ("1234 ms", "9 days left", "72
    /// characters"), which move between audits while the problem stays. The key is the detail
    /// only where it names *which* thing is wrong and a URL can have several (`invalid_link`: the
    /// href); the soft-404 probe's URL is reduced to the origin it probed, since each audit asks
    /// for a new random path.
    #[must_use]
    pub fn identity<'a>(&self, url: &'a str, detail: &'a str) -> (&'a str, &'a str) {
        let url = match self {
            Code::Soft404 => url.find(SOFT_404_PROBE_PREFIX).map_or(url, |i| &url[..=i]),
            _ => url,
        };
        let key = match self {
            // Which item, property or block is wrong: a page can have several.
            Code::InvalidLink
            | Code::StructuredDataInvalid
            | Code::StructuredDataUnknownType
            | Code::StructuredDataMissingRequired
            | Code::StructuredDataMissingRecommended
            | Code::StructuredDataWrongValue => detail,
            // Which link (`next: URL answers 404`), not what it answers today.
            Code::PaginationBroken => detail.split(" answers ").next().unwrap_or(detail),
            // The axe rule the finding is about (its detail starts "rule-id:"), or the search rule
            // that flags the page ("name: …"); a page can have several.
            Code::A11yCritical | Code::A11ySerious | Code::A11yModerate | Code::A11yMinor | Code::CustomSearch => {
                detail.split(':').next().unwrap_or(detail)
            }
            // Which value or which alternate: the detail's first word (a page can have several);
            // the rest (a status, the reason) may change while the problem stays.
            Code::HreflangInvalidCode
            | Code::HreflangConflict
            | Code::HreflangReturnMissing
            | Code::HreflangTargetError
            | Code::HreflangTargetRedirect
            | Code::HreflangTargetNoindex
            | Code::HreflangTargetCanonicalised
            | Code::HreflangTargetDisallowed => detail.split(' ').next().unwrap_or(detail),
            _ => "",
        };
        (url, key)
    }
}

/// One finding about one URL of one site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The audit.
    pub audit: AuditId,
    /// The site.
    pub site: SiteId,
    /// What was found.
    pub code: Code,
    /// The URL the finding is about.
    pub url: String,
    /// Specifics: the status, the rule, the chain, the duplicate's value.
    pub detail: String,
    /// Other URLs involved: the pages linking to a broken URL, the redirect chain, the pages sharing
    /// a title.
    #[serde(default)]
    pub related: Vec<String>,
    /// About the site's registrable domain, not the site alone (its DNS records, mail servers,
    /// registration: SPEC §9): an audit checks a domain once, with one of its sites, and the audit
    /// database gives the finding to every site of the audit under the same registrable domain.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub domain_wide: bool,
}

impl Finding {
    /// A finding with no related URLs.
    #[must_use]
    pub fn new(audit: AuditId, site: SiteId, code: Code, url: impl Into<String>, detail: impl Into<String>) -> Finding {
        Finding { audit, site, code, url: url.into(), detail: detail.into(), related: Vec::new(), domain_wide: false }
    }

    /// Its severity (from the code).
    #[must_use]
    pub fn severity(&self) -> Severity {
        self.code.severity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_keeps_what_is_wrong_and_drops_what_is_measured() {
        let u = "https://a.test/page";
        assert_eq!(Code::SlowResponse.identity(u, "1234 ms"), Code::SlowResponse.identity(u, "987 ms"));
        assert_eq!(Code::TlsCertificateExpiring.identity(u, "9 days left"), (u, ""));
        assert_ne!(Code::InvalidLink.identity(u, "http://[a"), Code::InvalidLink.identity(u, "http://[b"));
        let probe = |hex: &str| format!("https://a.test/shoal-soft-404-check-{hex}");
        let (a, b) = (probe("00112233aabbccdd"), probe("ffeeddcc99887766"));
        assert_eq!(Code::Soft404.identity(&a, "x").0, Code::Soft404.identity(&b, "y").0);
        assert_eq!(Code::Soft404.identity(&a, "x").0, "https://a.test/");
        // hreflang: which alternate (or value) is the key, what it answers is not.
        let t = Code::HreflangTargetError;
        assert_eq!(
            t.identity(u, "https://a.test/fr/ (fr) answers 404"),
            t.identity(u, "https://a.test/fr/ (fr) answers 410")
        );
        assert_ne!(
            t.identity(u, "https://a.test/fr/ (fr) answers 404"),
            t.identity(u, "https://a.test/es/ (es) answers 404")
        );
        let i = Code::HreflangInvalidCode;
        assert_ne!(i.identity(u, "en-UK: why"), i.identity(u, "en_US: why"));
    }

    #[test]
    fn severities_parse_their_spelling() {
        for s in [Severity::Error, Severity::Warning, Severity::Notice] {
            assert_eq!(Severity::parse(s.as_str()), Some(s));
        }
        assert_eq!(Severity::parse("Error"), None);
        assert_eq!(Severity::parse("info"), None);
    }

    #[test]
    fn codes_round_trip_and_are_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for c in Code::ALL {
            let s = c.as_str();
            assert!(seen.insert(s), "duplicate code {s}");
            assert!(s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit()), "{s}");
            assert_eq!(Code::parse(s), Some(*c));
            let json = format!("\"{s}\"");
            assert_eq!(serde_json_like(c), json, "serde spelling of {s} matches as_str");
        }
    }

    fn serde_json_like(c: &Code) -> String {
        // rmp-serde named encoding writes the variant name; check it equals as_str via a round trip.
        let bytes = rmp_serde::to_vec_named(c).expect("encodes");
        let back: Code = rmp_serde::from_slice(&bytes).expect("decodes");
        assert_eq!(&back, c);
        let s: String = rmp_serde::from_slice(&bytes).expect("a code is encoded as its name");
        format!("\"{s}\"")
    }
}
