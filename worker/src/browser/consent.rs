//! Consent: what tracks the visitor before they said anything, whether the cookie banner has a
//! Reject control (`js/consent.js`: the common consent platforms, then button texts in English,
//! German, French, Spanish, Italian and Dutch), and what still tracks after Reject was clicked and
//! the page was opened again (the consent tool has had its say by then).
//!
//! A tracker is a host of another site that is a known tracking or advertising service, or that
//! set (or tried to set) a cookie.

use std::collections::HashSet;
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::network::GetCookiesParams;
use serde::Deserialize;
use shoal_shared::browser::Consent;

use super::intercept::{SharedNet, lock};
use super::js::{eval, load};

/// How long the page may react to the Reject click before it is opened again.
const AFTER_CLICK: Duration = Duration::from_millis(1_500);
/// The consent banner finder, a function of one argument (`click`).
const CONSENT_JS: &str = include_str!("js/consent.js");

/// Tracking and advertising services (registrable domains and the hosts under them).
const KNOWN_TRACKERS: &[&str] = &[
    "google-analytics.com",
    "analytics.google.com",
    "googletagmanager.com",
    "doubleclick.net",
    "googlesyndication.com",
    "googleadservices.com",
    "facebook.net",
    "facebook.com",
    "hotjar.com",
    "hotjar.io",
    "clarity.ms",
    "bat.bing.com",
    "ads.linkedin.com",
    "licdn.com",
    "ads-twitter.com",
    "analytics.twitter.com",
    "analytics.tiktok.com",
    "ct.pinterest.com",
    "sc-static.net",
    "criteo.com",
    "criteo.net",
    "taboola.com",
    "outbrain.com",
    "adnxs.com",
    "scorecardresearch.com",
    "quantserve.com",
    "mixpanel.com",
    "mxpnl.com",
    "segment.com",
    "segment.io",
    "amplitude.com",
    "heapanalytics.com",
    "fullstory.com",
    "mouseflow.com",
    "crazyegg.com",
    "mc.yandex.ru",
    "hs-analytics.net",
    "hs-scripts.com",
    "adsrvr.org",
    "amazon-adsystem.com",
    "rubiconproject.com",
    "pubmatic.com",
    "openx.net",
    "casalemedia.com",
    "demdex.net",
    "omtrdc.net",
    "everesttech.net",
    "tealiumiq.com",
    "optimizely.com",
    "etracker.com",
    "etracker.de",
    "webtrekk.net",
    "wt-safetag.com",
    "ioam.de",
    "xiti.com",
    "ati-host.net",
    "matomo.cloud",
];

/// Whether `host` belongs to the same site as `site` (the www/apex twin counts as the site).
pub(crate) fn same_site(host: &str, site: &str) -> bool {
    let bare = |h: &str| {
        let h = h.trim_end_matches('.').to_ascii_lowercase();
        h.strip_prefix("www.").map(str::to_owned).unwrap_or(h)
    };
    bare(host) == bare(site)
}

fn known_tracker(host: &str) -> bool {
    KNOWN_TRACKERS.iter().any(|d| host == *d || host.strip_suffix(d).is_some_and(|rest| rest.ends_with('.')))
}

/// Trackers of another site requested in `phase`.
fn trackers(net: &SharedNet, site: &str, phase: u8) -> Vec<String> {
    let n = lock(net);
    n.hosts(phase)
        .into_iter()
        .filter(|h| !same_site(h, site))
        .filter(|h| known_tracker(h) || n.cookie_hosts.contains(&(h.clone(), phase)))
        .collect()
}

#[derive(Debug, Deserialize)]
struct Found {
    banner: bool,
    reject: Option<String>,
    #[serde(default)]
    clicked: bool,
}

/// Every cookie of the hosts the page talked to: (name, domain, value).
async fn cookies(page: &Page, net: &SharedNet) -> Result<HashSet<(String, String, String)>, String> {
    let urls: Vec<String> = {
        let n = lock(net);
        let mut hosts: Vec<String> = n.seen.iter().map(|s| s.host.clone()).collect();
        hosts.sort();
        hosts.dedup();
        hosts.into_iter().take(200).flat_map(|h| [format!("http://{h}/"), format!("https://{h}/")]).collect()
    };
    let got =
        page.execute(GetCookiesParams::builder().urls(urls).build()).await.map_err(|e| format!("cookies: {e}"))?;
    Ok(got.result.cookies.iter().map(|c| (c.name.clone(), c.domain.clone(), c.value.clone())).collect())
}

fn names(set: &HashSet<(String, String, String)>) -> Vec<String> {
    let mut v: Vec<String> = set.iter().map(|(n, d, _)| format!("{n} ({})", d.trim_start_matches('.'))).collect();
    v.sort();
    v.dedup();
    v
}

/// The consent check of the loaded page `url` of site `site`; leaves the page reloaded after the
/// Reject click (if there was one).
pub(crate) async fn run(page: &Page, site: &str, net: &SharedNet) -> Result<Consent, String> {
    let before = cookies(page, net).await?;
    let mut consent =
        Consent { trackers_before: trackers(net, site, 0), cookies_before: names(&before), ..Consent::default() };
    let found: Found = eval(page, &format!("({CONSENT_JS})(false)")).await?;
    consent.banner_found = found.banner;
    consent.reject_control = found.reject;
    if consent.reject_control.is_none() {
        return Ok(consent);
    }
    lock(net).phase = 1;
    let clicked: Found = eval(page, &format!("({CONSENT_JS})(true)")).await?;
    consent.reject_clicked = clicked.clicked;
    if !clicked.clicked {
        return Ok(consent);
    }
    tokio::time::sleep(AFTER_CLICK).await;
    // The next page view, with the visitor's No stored: what loads now loads against their will.
    let here: String = eval(page, "location.href").await?;
    load(page, &here).await?;
    consent.trackers_after_reject = trackers(net, site, 1);
    let after = cookies(page, net).await?;
    consent.cookies_after_reject = names(&after.difference(&before).cloned().collect());
    Ok(consent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_and_trackers() {
        assert!(same_site("www.a.test", "a.test"));
        assert!(same_site("a.test", "WWW.a.test."));
        assert!(!same_site("cdn.a.test", "a.test"));
        assert!(known_tracker("www.google-analytics.com"));
        assert!(known_tracker("googletagmanager.com"));
        assert!(!known_tracker("notgoogletagmanager.com"));
        assert!(!known_tracker("a.test"));
    }

    #[test]
    fn the_banner_finder_knows_the_platforms_and_languages() {
        for needle in [
            "onetrust-reject-all-handler",
            "CybotCookiebotDialogBodyButtonDecline",
            "didomi-notice-disagree-button",
            "uc-deny-all-button",
            "qc-cmp2",
            "truste-consent-required",
            "cky-btn-reject",
            "cn-decline",
            "cmplz-deny",
            "BorlabsCookieBox",
            "'reject all'",
            "'alle ablehnen'",
            "'ablehnen'",
            "'tout refuser'",
            "'refuser'",
            "'rechazar todo'",
            "'rifiuta tutto'",
            "'alles weigeren'",
            "'weigeren'",
            "'decline'",
        ] {
            assert!(CONSENT_JS.contains(needle), "{needle}");
        }
    }
}
