//! The health score of a site and the impact of each of its issues: formula `shoal-health/1`,
//! documented for users in `docs/report-scoring.md`.
//!
//! Why this shape:
//! - **Only stored data goes in**: each issue group's stored severity, its number of distinct URLs,
//!   and the site's number of pages. No clock, no option, no order of rows, nothing a later Shoal
//!   version would read differently: the same audit data gives the same score in every version
//!   that implements `shoal-health/1`, so a trend compares like with like. A different formula
//!   gets a new name ([`FORMULA`]), which the JSON reports carry.
//! - **An issue costs for existing at all, and more the more of the site it reaches.** A penalty
//!   is `weight(severity) × (1/4 + 3/4 × reach)`: an expired certificate (one finding, but every
//!   visitor meets it) and a title missing on every page both matter, and one broken link on a
//!   1,000-page site matters less than a broken link on every page. Checks that run once per site
//!   (certificate, security headers, probes: [`Scope::Site`]) reach the whole site.
//! - **Penalties multiply**: `score = 100 × Π (1 − penalty)`, rounded. Many issues compound, the
//!   score never goes below 0, and no single warning can sink a site the way an error can.
//! - **Informational codes do not count** ([`Scope::Info`]: the audit's own budgets, a published
//!   llms.txt, the site slowing Shoal down): they describe the audit, not a fault of the site.
//! - **A site with no page that answered 2xx has no score**: nothing of it was seen (unreachable,
//!   robots.txt, redirected away), and a number would pretend otherwise.
//!
//! Issues are listed by their impact, the points the issue alone takes off the score
//! (`100 × penalty`): severity times the share of the site it reaches.

use shoal_shared::finding::Severity;
use std::cmp::Ordering;

/// The formula's name, written next to every score (JSON `health.formula`).
pub const FORMULA: &str = "shoal-health/1";

/// The share of an issue's weight it costs for existing at all; the rest grows with its reach.
const BASE_SHARE: f64 = 0.25;

/// How much an issue of each severity weighs (the penalty of one that reaches the whole site).
#[must_use]
pub fn weight(severity: Severity) -> f64 {
    match severity {
        Severity::Error => 0.5,
        Severity::Warning => 0.15,
        Severity::Notice => 0.02,
    }
}

/// How far one finding of a code reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// About one URL: the issue reaches as many pages as it has URLs.
    Page,
    /// About the whole site (its certificate, headers of every answer, robots.txt, a probe): the
    /// issue reaches every page.
    Site,
    /// About the audit rather than a fault of the site: listed, never scored.
    Info,
}

impl Scope {
    /// The stable spelling (JSON `issues[].scope`).
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            Scope::Page => "page",
            Scope::Site => "site",
            Scope::Info => "info",
        }
    }
}

/// Codes about the whole site: checks that run once per site or host.
pub const SITE_CODES: &[&str] = &[
    "robots_unreachable",
    "crawl_delay_too_high",
    "start_disallowed",
    "robots_txt_too_large",
    "start_unreachable",
    "https_redirect_missing",
    "no_https",
    "tls_certificate_expired",
    "tls_certificate_expiring",
    "tls_self_signed",
    "tls_untrusted",
    "tls_hostname_mismatch",
    "tls_old_version",
    "hsts_missing",
    "csp_missing",
    "content_type_options_missing",
    "frame_protection_missing",
    "referrer_policy_missing",
    "soft_404",
    "security_txt_missing",
    "security_txt_invalid",
    "security_txt_expired",
    "llms_txt_invalid",
    "wp_rest_api_exposed",
    "wp_xmlrpc_exposed",
    "wp_uploads_listing",
    "wp_default_post",
    "impressum_missing",
    "impressum_incomplete",
    "privacy_policy_missing",
    // The DNS, e-mail and domain checks (SPEC §9): one domain per site, so about the whole site.
    "dns_name_servers",
    "dns_domain_missing",
    "dns_lookup_failed",
    "dnssec_unsigned",
    "caa_missing",
    "caa_iodef_missing",
    "caa_invalid",
    "mx_missing",
    "mx_cname",
    "mx_ip_address",
    "mx_unresolvable",
    "spf_missing",
    "spf_multiple",
    "spf_invalid",
    "spf_too_many_lookups",
    "spf_pass_all",
    "spf_neutral_all",
    "spf_softfail_all",
    "dmarc_missing",
    "dmarc_invalid",
    "dmarc_policy_none",
    "dmarc_reports_missing",
    "dmarc_subdomain_policy_none",
    "dkim_not_found",
    "mta_sts_missing",
    "mta_sts_invalid",
    "mta_sts_mx_mismatch",
    "mta_sts_testing",
    "tls_rpt_missing",
    "tls_rpt_invalid",
    "smtp_unreachable",
    "smtp_protocol_error",
    "smtp_starttls_missing",
    "smtp_starttls_failed",
    "smtp_certificate_expired",
    "smtp_certificate_expiring",
    "smtp_certificate_untrusted",
    "smtp_certificate_hostname",
    "smtp_tls_old_version",
    "domain_expiring",
    "domain_expired",
    "domain_hold",
    "domain_transfer_blocked",
    "domain_rdap_failed",
];

/// Codes that describe the audit, not a fault of the site.
pub const INFO_CODES: &[&str] = &[
    "page_limit_reached",
    "depth_limit_reached",
    "resource_limit_reached",
    "sitemap_limit_reached",
    "llms_txt_present",
    // What robots.txt tells AI crawlers is the owner's choice; the notice asks to check it.
    "ai_crawlers_inconsistent",
    // The user's own search rules flag what they asked for, not a fault Shoal judges.
    "custom_search",
    "rate_limited",
    "slowed_down",
    // A DNS or registry question without an answer says what the audit could not check.
    "dns_lookup_failed",
    "domain_rdap_failed",
    // The browser could not measure a page: says what the browser check could not see.
    "browser_page_failed",
    // The user's own --include/--exclude rules kept the URL out.
    "url_excluded",
];

/// The scope of a code by its stored spelling. A code this version does not know is about its
/// URL ([`Scope::Page`]): the cautious reading, since it then costs by the pages it names.
#[must_use]
pub fn scope(code: &str) -> Scope {
    if SITE_CODES.contains(&code) {
        Scope::Site
    } else if INFO_CODES.contains(&code) {
        Scope::Info
    } else {
        Scope::Page
    }
}

/// A score from 0 to 100: a number that cannot be out of range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Score(u8);

impl Score {
    /// The number, 0 to 100.
    #[must_use]
    pub fn get(self) -> u8 {
        self.0
    }

    /// A score of `points`, if it is at most 100.
    #[must_use]
    pub fn new(points: u8) -> Option<Score> {
        (points <= 100).then_some(Score(points))
    }

    /// From a product in `[0, 1]`, rounded to the nearest point (clamped, so rounding noise cannot
    /// leave the range).
    fn from_fraction(f: f64) -> Score {
        let points = (f.clamp(0.0, 1.0) * 100.0).round();
        // In 0..=100 after the clamp, so the cast is exact.
        Score(points as u8)
    }
}

/// What [`penalty`] needs to know of one issue group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weighed<'a> {
    /// The code, by its stored spelling.
    pub code: &'a str,
    /// The group's severity.
    pub severity: Severity,
    /// Its distinct URLs.
    pub urls: u64,
}

/// The share of a site's score one issue group takes (0 for informational codes), given the site's
/// `pages` (URLs of kind `page`; at least 1 is assumed).
#[must_use]
pub fn penalty(issue: Weighed<'_>, pages: u64) -> f64 {
    let reach = match scope(issue.code) {
        Scope::Info => return 0.0,
        Scope::Site => 1.0,
        Scope::Page => (issue.urls as f64 / pages.max(1) as f64).min(1.0),
    };
    weight(issue.severity) * (BASE_SHARE + (1.0 - BASE_SHARE) * reach)
}

/// The health score of a site from its issue groups, its `pages` and how many of them answered
/// 2xx (`None` when none did: nothing was seen to score). The groups are taken in code order
/// whatever order they come in, so the floating-point product is the same for the same data.
#[must_use]
pub fn score(groups: &[Weighed<'_>], pages: u64, answered: u64) -> Option<Score> {
    if answered == 0 {
        return None;
    }
    let mut sorted: Vec<&Weighed<'_>> = groups.iter().collect();
    sorted.sort_by(|a, b| a.code.cmp(b.code).then(a.severity.cmp(&b.severity)));
    let kept = sorted.iter().fold(1.0_f64, |acc, g| acc * (1.0 - penalty(**g, pages)));
    Some(Score::from_fraction(kept))
}

/// The order issues are listed in: larger impact first, then worse severity, more URLs, code.
#[must_use]
pub fn by_impact(a: (f64, Weighed<'_>), b: (f64, Weighed<'_>)) -> Ordering {
    b.0.total_cmp(&a.0).then(a.1.severity.cmp(&b.1.severity)).then(b.1.urls.cmp(&a.1.urls)).then(a.1.code.cmp(b.1.code))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_shared::finding::Code;

    fn w(code: &str, severity: Severity, urls: u64) -> Weighed<'_> {
        Weighed { code, severity, urls }
    }

    fn points(groups: &[Weighed<'_>], pages: u64) -> u8 {
        score(groups, pages, 1).expect("scored").get()
    }

    #[test]
    fn the_documented_examples() {
        // docs/report-scoring.md, "Examples".
        assert_eq!(points(&[], 100), 100, "no issue");
        assert_eq!(points(&[w("tls_certificate_expired", Severity::Error, 1)], 100), 50, "one site-wide error");
        assert_eq!(points(&[w("title_missing", Severity::Error, 1)], 100), 87, "one page of 100");
        assert_eq!(points(&[w("title_missing", Severity::Error, 100)], 100), 50, "every page");
        assert_eq!(points(&[w("h1_missing", Severity::Warning, 100)], 100), 85);
        let headers = [
            w("csp_missing", Severity::Notice, 1),
            w("content_type_options_missing", Severity::Notice, 1),
            w("frame_protection_missing", Severity::Notice, 1),
            w("referrer_policy_missing", Severity::Notice, 1),
        ];
        assert_eq!(points(&headers, 100), 92, "four missing header notices");
        let typical = [
            w("hsts_missing", Severity::Warning, 1),
            w("description_missing", Severity::Warning, 30),
            w("img_missing_alt", Severity::Warning, 20),
            w("broken_internal_link", Severity::Error, 2),
            headers[0],
            headers[1],
            headers[2],
            headers[3],
        ];
        assert_eq!(points(&typical, 100), 59);
    }

    #[test]
    fn informational_codes_and_unknown_sites_do_not_score() {
        let info = [w("page_limit_reached", Severity::Notice, 1), w("rate_limited", Severity::Warning, 1)];
        assert_eq!(points(&info, 10), 100);
        assert_eq!(score(&[w("start_unreachable", Severity::Error, 1)], 0, 0), None, "nothing answered");
        assert_eq!(scope("a_code_from_a_newer_shoal"), Scope::Page);
    }

    #[test]
    fn the_score_is_bounded_monotonic_and_independent_of_order() {
        let mut many: Vec<Weighed<'_>> = Code::ALL.iter().map(|c| w(c.as_str(), c.severity(), 1_000)).collect();
        let all = points(&many, 10);
        assert!(all <= 5, "every issue on every page: {all}");
        many.reverse();
        assert_eq!(points(&many, 10), all, "the order of the groups does not matter");
        // More URLs never raise the score; a worse severity never raises it.
        let mut last = 100;
        for urls in [0, 1, 2, 5, 10, 50, 100, 1000] {
            let s = points(&[w("title_missing", Severity::Error, urls)], 100);
            assert!(s <= last, "{urls} URLs: {s} > {last}");
            last = s;
        }
        for (better, worse) in [(Severity::Notice, Severity::Warning), (Severity::Warning, Severity::Error)] {
            assert!(points(&[w("x", better, 3)], 10) > points(&[w("x", worse, 3)], 10));
        }
    }

    #[test]
    fn impact_orders_by_penalty_then_severity_urls_and_code() {
        let pages = 100;
        let mut groups = [
            w("h1_missing", Severity::Warning, 100),
            w("broken_internal_link", Severity::Error, 1),
            w("hsts_missing", Severity::Warning, 1),
            w("tls_certificate_expired", Severity::Error, 1),
            w("title_too_long", Severity::Notice, 100),
            w("description_missing", Severity::Warning, 100),
        ];
        groups.sort_by(|a, b| by_impact((penalty(*a, pages), *a), (penalty(*b, pages), *b)));
        let order: Vec<&str> = groups.iter().map(|g| g.code).collect();
        assert_eq!(
            order,
            [
                "tls_certificate_expired",
                "description_missing",
                "h1_missing",
                "hsts_missing",
                "broken_internal_link",
                "title_too_long"
            ]
        );
    }

    #[test]
    fn the_scoring_page_names_every_site_and_info_code() {
        let doc = include_str!("../../docs/report-scoring.md");
        let row = |scope: &str| {
            doc.lines()
                .map(str::trim_start)
                .find(|l| l.starts_with(&format!("| `{scope}` |")))
                .unwrap_or_else(|| panic!("{scope} row"))
        };
        for (scope, codes) in [("site", SITE_CODES), ("info", INFO_CODES)] {
            let line = row(scope);
            for code in codes {
                let by_prefix = code.match_indices('_').any(|(i, _)| line.contains(&format!("`{}_*`", &code[..i])));
                assert!(line.contains(&format!("`{code}`")) || by_prefix, "{code} in the {scope} row");
            }
        }
        assert!(doc.contains(&format!("**`{FORMULA}`**")));
    }

    #[test]
    fn site_and_info_lists_name_real_codes() {
        for code in SITE_CODES.iter().chain(INFO_CODES) {
            assert!(Code::parse(code).is_some(), "{code} is a code");
        }
    }
}
