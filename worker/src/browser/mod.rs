//! The browser check (SPEC §10): one page at a time in Debian's headless Chromium, driven over the
//! DevTools protocol with `chromiumoxide`, measured the way a first-time visitor meets it.
//!
//! What one [`Browser::check_page`] does, in order (`page.rs`): a fresh browser context (no
//! cookies or cache from the page before), the probe script (`js/probe.js`) injected before the
//! page's own scripts, request interception on (`intercept.rs`: every request the page makes
//! passes the worker's address guard first), the page loaded at 1366x768, Core Web Vitals read,
//! desktop and phone screenshots, axe-core (`axe.rs`), Tab through the page (`keyboard.rs`), and
//! the consent banner (`consent.rs`): what loaded before any interaction, its Reject clicked, the
//! page opened again and what still loads. Everything runs under one hard time limit
//! ([`BrowserSettings::page_timeout`]); a page that fails is a [`BrowserPage`] with its `error`,
//! never a panic.
//!
//! Manners and safety: Chromium's own user agent; `--resolve HOST=IP` as `--host-resolver-rules`;
//! downloads denied, permission prompts denied, pop-ups blocked (and `window.open` a no-op), forms
//! never submitted (the probe cancels every submit), nothing typed (the only key is Tab, the only
//! click the consent banner's Reject).

mod axe;
mod consent;
mod intercept;
mod keyboard;
mod page;

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use chromiumoxide::browser::BrowserConfig;
use chromiumoxide::cdp::browser_protocol::browser::{SetDownloadBehaviorBehavior, SetDownloadBehaviorParams};
use futures_util::StreamExt;
use shoal_shared::browser::BrowserPage;
use shoal_shared::ids::{AuditId, SiteId};
use tokio::sync::Mutex;
use tokio::task::JoinSet;
use tracing::{debug, warn};

use crate::guard::Guard;

/// Where Debian installs Chromium.
pub const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";
/// The default hard limit for one page: load, measurements, keyboard and consent together.
pub const DEFAULT_PAGE_TIMEOUT: Duration = Duration::from_secs(45);
/// How long Chromium may take to start and print its DevTools address.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(30);

/// How the browser engine runs.
#[derive(Debug, Clone)]
pub struct BrowserSettings {
    /// The Chromium binary (default [`DEFAULT_CHROMIUM`]).
    pub chromium: PathBuf,
    /// The crawler's `--allow-private`: without it, the page's requests to private, loopback and
    /// link-local addresses are refused.
    pub allow_private: bool,
    /// The crawler's `--resolve HOST=IP` map, applied to the browser too.
    pub resolve: Vec<(String, IpAddr)>,
    /// The hard limit per page (load and every check).
    pub page_timeout: Duration,
}

impl Default for BrowserSettings {
    fn default() -> Self {
        BrowserSettings {
            chromium: PathBuf::from(DEFAULT_CHROMIUM),
            allow_private: false,
            resolve: Vec::new(),
            page_timeout: DEFAULT_PAGE_TIMEOUT,
        }
    }
}

/// Chromium is missing or could not be started.
#[derive(Debug, thiserror::Error)]
#[error("headless Chromium ({path}) could not be started: {reason}")]
pub struct BrowserError {
    /// The binary tried.
    pub path: PathBuf,
    /// Why not.
    pub reason: String,
}

/// Which addresses the page's requests may reach: the worker's [`Guard`], plus (tests only)
/// addresses refused although the guard would allow them, so a test on loopback can watch a
/// refused connection not happen.
#[derive(Debug, Clone)]
pub(crate) struct AddressPolicy {
    pub(crate) guard: Guard,
    pub(crate) refuse: Vec<IpAddr>,
}

impl AddressPolicy {
    pub(crate) fn check(&self, ip: IpAddr) -> Result<(), String> {
        if self.refuse.contains(&ip) {
            return Err(format!("{ip} is refused by this worker's address policy"));
        }
        self.guard.check(ip).map_err(|e| format!("{ip}: {e}"))
    }
}

/// Headless Chromium and the task that reads its DevTools connection. One page is checked at a
/// time; [`Browser::shutdown`] closes Chromium and removes its profile.
#[derive(Debug)]
pub struct Browser {
    inner: Mutex<chromiumoxide::Browser>,
    tasks: JoinSet<()>,
    settings: BrowserSettings,
    policy: AddressPolicy,
    profile: tempfile::TempDir,
    /// False once the DevTools connection ended (Chromium crashed or was killed): every later
    /// page would fail, so the owner starts a new one ([`Browser::worn_out`]).
    connected: Arc<AtomicBool>,
    /// Pages checked so far, for [`PAGES_PER_CHROMIUM`].
    pages: AtomicU32,
}

/// Pages one Chromium checks before its owner starts a fresh one: a worker runs for months, and a
/// browser's memory (caches, leaked renderer state) is bounded by restarting it, not by trust.
pub const PAGES_PER_CHROMIUM: u32 = 200;

impl Browser {
    /// Starts Chromium with a fresh profile in a temporary folder.
    pub async fn launch(settings: BrowserSettings) -> Result<Browser, BrowserError> {
        Browser::launch_refusing(settings, Vec::new()).await
    }

    /// [`Browser::launch`], but requests to the addresses `refuse` are refused as if they were
    /// private even with `allow_private`: how the tests, which run on loopback with
    /// `allow_private`, check that a refused address gets no connection.
    pub async fn launch_refusing(settings: BrowserSettings, refuse: Vec<IpAddr>) -> Result<Browser, BrowserError> {
        let fail = |reason: String| BrowserError { path: settings.chromium.clone(), reason };
        if !settings.chromium.exists() {
            return Err(fail("no such file (install it: apt-get install chromium)".to_owned()));
        }
        let profile = tempfile::Builder::new()
            .prefix("shoal-chromium-")
            .tempdir()
            .map_err(|e| fail(format!("temporary profile folder: {e}")))?;
        let config = BrowserConfig::builder()
            .chrome_executable(&settings.chromium)
            .disable_default_args()
            .no_sandbox()
            .user_data_dir(profile.path())
            .viewport(None::<chromiumoxide::handler::viewport::Viewport>)
            .launch_timeout(LAUNCH_TIMEOUT)
            .request_timeout(settings.page_timeout)
            // The launcher writes each argument as `--{it}`.
            .args(launch_args(&settings.resolve).iter().map(|a| a.trim_start_matches("--").to_owned()))
            .build()
            .map_err(fail)?;
        let (browser, mut handler) = chromiumoxide::Browser::launch(config).await.map_err(|e| fail(e.to_string()))?;
        let mut tasks = JoinSet::new();
        let connected = Arc::new(AtomicBool::new(true));
        let alive = connected.clone();
        tasks.spawn(async move {
            // The DevTools connection: every command's answer and every event passes here. An
            // event this protocol version cannot read is skipped inside the handler; an error
            // that reaches us is the connection failing, after which the loop would only spin.
            while let Some(event) = handler.next().await {
                if let Err(e) = event {
                    warn!(error = %e, "DevTools connection to Chromium failed");
                    break;
                }
            }
            alive.store(false, Ordering::Relaxed);
        });
        // Downloads are denied in the default context (and in each page's own context, page.rs).
        let deny = SetDownloadBehaviorParams::new(SetDownloadBehaviorBehavior::Deny);
        if let Err(e) = browser.execute(deny).await {
            warn!(error = %e, "could not deny downloads");
            let mut browser = browser;
            let _ = browser.kill().await;
            tasks.abort_all();
            return Err(fail(format!("DevTools did not answer: {e}")));
        }
        let policy = AddressPolicy { guard: Guard::new(settings.allow_private), refuse };
        Ok(Browser {
            inner: Mutex::new(browser),
            tasks,
            settings,
            policy,
            profile,
            connected,
            pages: AtomicU32::new(0),
        })
    }

    /// Opens `url` and checks it (see the module documentation). Never panics; a failure is in
    /// [`BrowserPage::error`]. One page at a time: concurrent calls wait for each other.
    pub async fn check_page(&self, audit: AuditId, site: SiteId, url: &str) -> BrowserPage {
        let browser = self.inner.lock().await;
        self.pages.fetch_add(1, Ordering::Relaxed);
        page::check(&browser, &self.settings, &self.policy, audit, site, url).await
    }

    /// The folder of this Chromium's profile: it names the browser's processes (`--user-data-dir`).
    #[must_use]
    pub fn profile_dir(&self) -> &std::path::Path {
        self.profile.path()
    }

    /// Whether this Chromium should be shut down and a fresh one started before the next page:
    /// its DevTools connection ended, or it has checked [`PAGES_PER_CHROMIUM`] pages.
    #[must_use]
    pub fn worn_out(&self) -> bool {
        !self.connected.load(Ordering::Relaxed) || self.pages.load(Ordering::Relaxed) >= PAGES_PER_CHROMIUM
    }

    /// Closes Chromium (killing it if it does not exit within 5 s), stops the DevTools task and
    /// removes the profile folder.
    pub async fn shutdown(self) {
        let Browser { inner, mut tasks, profile, .. } = self;
        let mut browser = inner.into_inner();
        let closed = tokio::time::timeout(Duration::from_secs(5), async {
            let _ = browser.close().await;
            browser.wait().await
        })
        .await;
        if !matches!(closed, Ok(Ok(_))) {
            let _ = browser.kill().await;
        }
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        if let Err(e) = profile.close() {
            debug!(error = %e, "chromium profile folder");
        }
    }
}

/// Chromium's command line: the tests' flags (tests/src/chromium.rs), our manners, and the
/// `--resolve` map. `--headless`, `--no-sandbox`, `--user-data-dir` and the DevTools port are
/// added by the launcher.
fn launch_args(resolve: &[(String, IpAddr)]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--no-default-browser-check",
        "--no-proxy-server",
        "--disable-dev-shm-usage",
        "--disable-breakpad",
        "--disable-default-apps",
        "--disable-extensions",
        "--mute-audio",
        "--hide-scrollbars",
        "--password-store=basic",
        "--use-mock-keychain",
        // Permission prompts (notifications, location, camera...) are answered No.
        "--deny-permission-prompts",
        // Frames stay in the page's process, so the page's request interception sees their
        // requests too; http stays http (no automatic upgrade attempts).
        "--disable-site-isolation-trials",
        "--disable-features=site-per-process,IsolateOrigins,HttpsUpgrades,HttpsFirstBalancedModeAutoEnable,Translate,MediaRouter,OptimizationHints",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    if !resolve.is_empty() {
        let rules: Vec<String> = resolve
            .iter()
            .map(|(host, ip)| match ip {
                IpAddr::V4(v4) => format!("MAP {host} {v4}"),
                IpAddr::V6(v6) => format!("MAP {host} [{v6}]"),
            })
            .collect();
        args.push(format!("--host-resolver-rules={}", rules.join(",")));
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_becomes_host_resolver_rules() {
        let args = launch_args(&[
            ("a.test".into(), "127.0.0.1".parse().expect("ip")),
            ("b.test".into(), "::1".parse().expect("ip")),
        ]);
        assert!(args.contains(&"--host-resolver-rules=MAP a.test 127.0.0.1,MAP b.test [::1]".to_owned()), "{args:?}");
        assert!(args.contains(&"--no-proxy-server".to_owned()));
        assert!(!launch_args(&[]).iter().any(|a| a.starts_with("--host-resolver-rules")));
    }

    #[test]
    fn the_policy_refuses_listed_addresses_even_when_private_is_allowed() {
        let loopback: IpAddr = "127.0.0.1".parse().expect("ip");
        let second: IpAddr = "127.0.0.2".parse().expect("ip");
        let open = AddressPolicy { guard: Guard::new(true), refuse: vec![second] };
        assert!(open.check(loopback).is_ok());
        assert!(open.check(second).is_err());
        let strict = AddressPolicy { guard: Guard::new(false), refuse: Vec::new() };
        assert!(strict.check(loopback).is_err());
        assert!(strict.check("169.254.169.254".parse().expect("ip")).is_err());
    }

    #[tokio::test]
    async fn a_missing_chromium_is_an_error_not_a_panic() {
        let settings = BrowserSettings { chromium: "/nonexistent/chromium".into(), ..BrowserSettings::default() };
        let err = Browser::launch(settings).await.expect_err("no chromium there");
        assert!(err.to_string().contains("/nonexistent/chromium"), "{err}");
    }
}
