//! The browser engine (`worker/src/browser/`) in real headless Chromium against the test server's
//! browser pages (`test-support/src/testsite/browser.rs`): what it measures must be what the pages are
//! built to show, and the server's log must agree with what it says was loaded. These tests fail,
//! never skip, when Chromium is missing.

use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::time::Duration;

use shoal_shared::browser::{BrowserPage, findings};
use shoal_shared::finding::Code;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_tests::chromium::chromium;
use shoal_tests::testsite::TestServer;
use shoal_tests::testsite::browser::{SHOP, SLOW_IMAGE_DELAY, TRACKER, browser_sites};
use shoal_worker::browser::{Browser, BrowserSettings};
use shoal_worker::fetch::{FetchSettings, Fetcher};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// A second loopback address, refused by the test's address policy: it stands for a private
/// address a page's script must not reach, while still being a listener the test can watch.
const REFUSED: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

struct World {
    server: TestServer,
    browser: Browser,
    /// Listens on the refused address; nothing may connect.
    refused: TcpListener,
}

async fn world() -> World {
    let bin = chromium(); // fail first, and clearly, when Chromium is missing
    let refused = TcpListener::bind((REFUSED, 0)).expect("listen on 127.0.0.2");
    refused.set_nonblocking(true).expect("nonblocking");
    let port = refused.local_addr().expect("addr").port();
    let server = TestServer::start(browser_sites(port)).await.expect("test server");
    let settings =
        BrowserSettings { chromium: bin, page_timeout: Duration::from_secs(60), ..BrowserSettings::default() };
    let fetcher = Fetcher::new(FetchSettings {
        allow_private: true,
        no_dns: true,
        resolve: [(SHOP.to_owned(), LOOPBACK), (TRACKER.to_owned(), LOOPBACK)].into_iter().collect(),
        ..FetchSettings::default()
    })
    .expect("fetcher");
    let browser = Browser::launch_refusing(settings, &fetcher, vec![REFUSED]).await.expect("chromium starts");
    World { server, browser, refused }
}

impl World {
    async fn check(&self, path: &str) -> BrowserPage {
        let page = self
            .browser
            .check_page(AuditId(1), SiteId(1), &self.server.url(SHOP, path), shoal_worker::browser::no_robots_rules())
            .await;
        assert_eq!(page.error, None, "{path}: {page:?}");
        assert_eq!(page.status, Some(200), "{path}");
        page
    }
}

fn codes(page: &BrowserPage) -> Vec<Code> {
    findings(page).into_iter().map(|f| f.code).collect()
}

fn jpeg(bytes: &[u8]) -> bool {
    bytes.len() > 1_000 && bytes.starts_with(&[0xff, 0xd8, 0xff])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vitals_accessibility_and_keyboard_are_measured_as_the_pages_are_built() {
    let w = world().await;

    let shift = w.check("/shift").await;
    let cls = shift.vitals.cls_milli.expect("CLS measured");
    assert!(cls > 250, "CLS {cls}/1000 on the shifting page");
    assert!(codes(&shift).contains(&Code::BrowserClsPoor));
    assert!(jpeg(&shift.desktop_jpeg) && jpeg(&shift.phone_jpeg), "screenshots");
    assert!(shift.vitals.fcp_ms.is_some() && shift.vitals.ttfb_ms.is_some(), "{:?}", shift.vitals);
    assert!(
        shift.resources.iter().any(|r| r.kind == "document" && r.requests >= 1 && r.bytes > 500),
        "{:?}",
        shift.resources
    );

    let stable = w.check("/stable").await;
    let cls = stable.vitals.cls_milli.expect("CLS measured");
    assert!(cls <= 10, "CLS {cls}/1000 on the stable page");
    assert!(!codes(&stable).iter().any(|c| matches!(
        c,
        Code::BrowserClsHigh | Code::BrowserClsPoor | Code::BrowserLcpSlow | Code::BrowserLcpPoor
    )));

    let slow = w.check("/slow").await;
    let lcp = slow.vitals.lcp_ms.expect("LCP measured");
    let delay = SLOW_IMAGE_DELAY.as_millis() as u32;
    assert!(lcp >= delay && lcp < delay + 5_000, "LCP {lcp} ms with the image held {delay} ms");
    assert!(codes(&slow).contains(&Code::BrowserLcpSlow), "{:?}", codes(&slow));

    let a11y = w.check("/a11y").await;
    let rules: Vec<&str> = a11y.axe.iter().map(|v| v.rule.as_str()).collect();
    for rule in ["image-alt", "color-contrast", "label"] {
        assert!(rules.contains(&rule), "{rule} in {rules:?}");
    }
    let alt = a11y.axe.iter().find(|v| v.rule == "image-alt").expect("image-alt");
    assert_eq!(alt.elements, 1);
    assert!(alt.sample_selector.contains("img"), "{alt:?}");
    let f = findings(&a11y);
    assert!(f.iter().any(|f| f.code == Code::A11yCritical && f.detail.starts_with("image-alt:")), "{f:?}");

    let trap = w.check("/trap").await;
    assert!(
        trap.keyboard.trap.iter().any(|s| s.contains("t1")) && trap.keyboard.trap.iter().any(|s| s.contains("t2")),
        "{:?}",
        trap.keyboard
    );
    assert!(!trap.keyboard.has_skip_link);
    assert!(!trap.keyboard.backwards.is_empty(), "{:?}", trap.keyboard);
    let c = codes(&trap);
    assert!(c.contains(&Code::KeyboardFocusTrap) && c.contains(&Code::KeyboardNoSkipLink), "{c:?}");

    let plain = w.check("/nofocus").await;
    assert!(plain.keyboard.has_skip_link, "{:?}", plain.keyboard);
    assert!(plain.keyboard.trap.is_empty(), "{:?}", plain.keyboard);
    assert_eq!(plain.keyboard.no_focus_indicator.len(), 3, "{:?}", plain.keyboard);
    assert!(codes(&plain).contains(&Code::KeyboardNoFocusVisible));
    // The stable page's default focus ring is visible (it has no links: nothing tabbed).
    assert!(stable.keyboard.no_focus_indicator.is_empty(), "{:?}", stable.keyboard);
    w.browser.shutdown().await;
    let _ = w.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consent_and_the_address_guard_are_checked_from_the_server_log() {
    let w = world().await;

    let consent = w.check("/consent").await;
    assert!(consent.consent.banner_found, "{:?}", consent.consent);
    assert_eq!(consent.consent.reject_control.as_deref(), Some("reject all"));
    assert!(consent.consent.reject_clicked);
    assert_eq!(consent.consent.trackers_before, [TRACKER], "{:?}", consent.consent);
    assert!(consent.consent.trackers_after_reject.is_empty(), "{:?}", consent.consent);
    assert!(consent.third_party_hosts.contains(&TRACKER.to_owned()), "{:?}", consent.third_party_hosts);
    let c = codes(&consent);
    assert!(c.contains(&Code::ConsentTrackingBeforeConsent) && !c.contains(&Code::ConsentTrackingAfterReject), "{c:?}");
    // The log: the page opened twice (first visit, then again after Reject); the tracker only
    // between the two.
    let log = w.server.log();
    let pages: Vec<_> = log.for_host(SHOP).into_iter().filter(|r| r.path == "/consent").map(|r| r.start).collect();
    assert_eq!(pages.len(), 2, "{}", log.dump());
    let tracker: Vec<_> = log.for_host(TRACKER).into_iter().filter(|r| r.path == "/t.js").map(|r| r.start).collect();
    assert_eq!(tracker.len(), 1, "{}", log.dump());
    assert!(pages[0] < tracker[0] && tracker[0] < pages[1], "{}", log.dump());

    let leaky = w.check("/consent-leaky").await;
    assert_eq!(leaky.consent.reject_control.as_deref(), Some("alle ablehnen"));
    assert_eq!(leaky.consent.trackers_after_reject, [TRACKER], "{:?}", leaky.consent);
    assert!(codes(&leaky).contains(&Code::ConsentTrackingAfterReject));
    let log = w.server.log();
    let second_visit = log
        .for_host(SHOP)
        .into_iter()
        .filter(|r| r.path == "/consent-leaky")
        .map(|r| r.start)
        .nth(1)
        .expect("opened again");
    assert!(log.for_host(TRACKER).into_iter().any(|r| r.path == "/t.js" && r.start > second_visit), "{}", log.dump());

    let no_reject = w.check("/consent-noreject").await;
    assert!(no_reject.consent.banner_found && no_reject.consent.reject_control.is_none(), "{:?}", no_reject.consent);
    assert!(codes(&no_reject).contains(&Code::ConsentNoRejectOption));

    let private = w.check("/private").await;
    assert!(private.blocked.iter().any(|u| u.starts_with("http://127.0.0.2:")), "{:?}", private.blocked);
    // The script ran (its allowed fetch reached the server); its refused fetch, its WebSocket and
    // its worker's fetch to the refused address got no connection.
    assert_eq!(w.server.log().count(SHOP, "/reached"), 1, "{}", w.server.log().dump());
    match w.refused.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the refused address got a connection: {other:?}"),
    }
    w.browser.shutdown().await;
    let _ = w.server.shutdown().await;
}

/// A Chromium that dies under a long-running worker is noticed (`worn_out`), so the worker starts a
/// fresh one instead of failing every later page; a live one is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chromium_that_died_is_worn_out() {
    let settings = BrowserSettings { chromium: chromium(), ..BrowserSettings::default() };
    let fetcher = Fetcher::new(FetchSettings { no_dns: true, ..FetchSettings::default() }).expect("fetcher");
    let browser = Browser::launch(settings, &fetcher).await.expect("chromium starts");
    assert!(!browser.worn_out(), "a fresh Chromium is not worn out");
    let profile = browser.profile_dir().display().to_string();
    let mut killed = 0;
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if String::from_utf8_lossy(&cmdline).contains(&profile) {
            let pid = entry.file_name().to_string_lossy().into_owned();
            if std::process::Command::new("kill").args(["-9", &pid]).status().is_ok_and(|s| s.success()) {
                killed += 1;
            }
        }
    }
    assert!(killed > 0, "found Chromium's processes by their profile {profile}");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !browser.worn_out() {
        assert!(std::time::Instant::now() < deadline, "a killed Chromium still counts as connected");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    browser.shutdown().await;
}
