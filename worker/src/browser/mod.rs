//! The browser check (SPEC §10): one page at a time in Debian's headless Chromium, driven over the
//! DevTools protocol with `chromiumoxide`, measured the way a first-time visitor meets it.
//!
//! What one [`Browser::check_page`] does, in order (`page.rs`): a fresh browser context (no
//! cookies or cache from the page before), the probe script (`js/probe.js`) injected before the
//! page's own scripts, request interception on (`intercept.rs`: every request of the checked tab
//! passes the worker's address guard first, for the record), the page loaded at 1366x768, Core
//! Web Vitals read, the rendered DOM's facts and the load's script errors (`rendered.rs`), desktop
//! and phone screenshots, axe-core (`axe.rs`), Tab through the page
//! (`keyboard.rs`), and the consent banner (`consent.rs`): what loaded before any interaction,
//! its Reject clicked, the page opened again and what still loads. Everything runs under one hard
//! time limit ([`BrowserSettings::page_timeout`]) and one memory limit
//! ([`BrowserSettings::memory_limit`]); a page that fails is a [`BrowserPage`] with its `error`,
//! never a panic.
//!
//! Where Chromium may connect: only to the worker's own proxies (`proxy.rs`). A checked page's
//! browser context has one that resolves every name with the worker's resolver, checks the
//! address with the worker's guard and connects to exactly that address: every tab, pop-up,
//! frame, worker, prefetch and WebRTC relay of the page passes it by construction. Everything
//! Chromium sends on its own behalf (updates, its clock, account services) goes to one that
//! refuses it all. Chromium's own resolver answers nothing, QUIC is off and WebRTC may not send
//! UDP outside the proxy. How Chromium lives and dies: `process.rs` (its
//! processes end with the worker, even on SIGKILL; a dead worker's profile folder is removed).
//!
//! Manners and safety: Chromium's own user agent; downloads denied, permission prompts denied,
//! pop-ups blocked (`window.open` a no-op, links and forms that target another window do
//! nothing, and a tab opened anyway is closed), prerendering off, forms never submitted (the
//! probe cancels every submit), nothing typed (the only key is Tab, the only click the consent
//! banner's Reject).
//!
//! Why the steps of a page (`page.rs`, `intercept.rs`, `consent.rs`, `keyboard.rs`) fail with a
//! `String`: the text is the page's `error` ("not measured: …") or a measurement's note, read by
//! the site owner in the report; no caller branches on it.

mod axe;
mod consent;
mod intercept;
mod js;
mod keyboard;
mod page;
mod process;
mod proxy;
mod render;
mod rendered;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::browser::{SetDownloadBehaviorBehavior, SetDownloadBehaviorParams};
use chromiumoxide::handler::HandlerConfig;
use futures_util::StreamExt;
use shoal_shared::browser::BrowserPage;
use shoal_shared::ids::{AuditId, SiteId};
use tokio::sync::Mutex;
use tokio::task::JoinSet;
use tracing::{debug, warn};

use crate::fetch::Fetcher;
use process::Chromium;
use proxy::{Gate, Proxy};

pub use process::PROFILE_PREFIX;
pub use rendered::PageLinks;

/// Whether robots.txt keeps the page's requests from a URL: `Some(why)` (the deciding rule) when
/// it does, `None` when it allows it or has no say (a host other than the audited site's, whose
/// rules the crawl has not read). Given by the crawl for each page ([`Browser::check_page`]).
pub type RobotsCheck = Arc<dyn Fn(&url::Url) -> Option<String> + Send + Sync>;

/// A [`RobotsCheck`] with no rules: for a page checked outside an audit (the engine's own tests),
/// where no robots.txt was read.
#[must_use]
pub fn no_robots_rules() -> RobotsCheck {
    Arc::new(|_| None)
}

/// Where Debian installs Chromium.
pub const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";
/// The default hard limit for one page: load, measurements, keyboard and consent together.
pub const DEFAULT_PAGE_TIMEOUT: Duration = Duration::from_secs(45);
/// The default limit on the memory of all of one Chromium's processes together (proportional
/// set size): an idle headless Chromium takes about 300 MiB, a heavy shop page a few hundred
/// more; a page that takes it past this is stopped and reported.
pub const DEFAULT_MEMORY_LIMIT_MIB: u64 = 2_048;
/// The default hard limit for rendering one page of the rendered crawl (`--render`): its load and
/// reading its DOM.
pub const DEFAULT_RENDER_TIMEOUT: Duration = Duration::from_secs(20);
/// How long Chromium may take to start and open its DevTools port.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the memory of Chromium's processes is read while a page is checked.
const MEMORY_POLL: Duration = Duration::from_millis(200);

/// How the browser engine runs. Which addresses it may reach and how names resolve come from the
/// worker's [`Fetcher`] (`--allow-private`, `--resolve`, `--dns-server`, `--no-dns`).
#[derive(Debug, Clone)]
pub struct BrowserSettings {
    /// The Chromium binary (default [`DEFAULT_CHROMIUM`]).
    pub chromium: PathBuf,
    /// The hard limit per page (load and every check).
    pub page_timeout: Duration,
    /// The hard limit per rendered page of the rendered crawl (default [`DEFAULT_RENDER_TIMEOUT`]).
    pub render_timeout: Duration,
    /// The most memory all of Chromium's processes may use together while a page is checked, in
    /// bytes (default [`DEFAULT_MEMORY_LIMIT_MIB`]).
    pub memory_limit: u64,
}

impl Default for BrowserSettings {
    fn default() -> Self {
        BrowserSettings {
            chromium: PathBuf::from(DEFAULT_CHROMIUM),
            page_timeout: DEFAULT_PAGE_TIMEOUT,
            render_timeout: DEFAULT_RENDER_TIMEOUT,
            memory_limit: DEFAULT_MEMORY_LIMIT_MIB * 1024 * 1024,
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

/// Headless Chromium, its proxy and the task that reads its DevTools connection. One page is
/// checked at a time; [`Browser::shutdown`] closes Chromium and removes its profile.
#[derive(Debug)]
pub struct Browser {
    inner: Mutex<chromiumoxide::Browser>,
    tasks: JoinSet<()>,
    settings: BrowserSettings,
    gate: Gate,
    /// The checked pages' proxy (their browser contexts are made with it).
    proxy: Proxy,
    /// Where Chromium's own traffic goes (`--proxy-server`): nowhere.
    closed: Proxy,
    process: std::sync::Mutex<Chromium>,
    /// False once the DevTools connection ended (Chromium crashed or was killed): every later
    /// page would fail, so the owner starts a new one ([`Browser::worn_out`]).
    connected: Arc<AtomicBool>,
    /// Pages checked so far, for [`PAGES_PER_CHROMIUM`].
    pages: AtomicU32,
    /// The browser context of the site the rendered crawl renders now (`render.rs`).
    render_context: Mutex<Option<render::SiteContext>>,
}

/// Pages one Chromium checks before its owner starts a fresh one: a worker runs for months, and a
/// browser's memory (caches, leaked renderer state) is bounded by restarting it, not by trust.
pub const PAGES_PER_CHROMIUM: u32 = 200;

impl Browser {
    /// Starts Chromium with a fresh profile in a temporary folder, reaching the network only
    /// through `fetcher`'s resolver and address guard.
    pub async fn launch(settings: BrowserSettings, fetcher: &Fetcher) -> Result<Browser, BrowserError> {
        Browser::launch_refusing(settings, fetcher, Vec::new()).await
    }

    /// [`Browser::launch`], but connections to the addresses `refuse` are refused as if they were
    /// private even with `--allow-private`: how the tests, which run on loopback with
    /// `--allow-private`, check that a refused address gets no connection.
    pub async fn launch_refusing(
        settings: BrowserSettings,
        fetcher: &Fetcher,
        refuse: Vec<IpAddr>,
    ) -> Result<Browser, BrowserError> {
        let path = settings.chromium.clone();
        let fail = |reason: String| BrowserError { path: path.clone(), reason };
        if !settings.chromium.exists() {
            return Err(fail("no such file (install it: apt-get install chromium)".to_owned()));
        }
        let gate = Gate::guarded(fetcher.clone(), refuse);
        let proxy = Proxy::start(gate.clone()).await.map_err(|e| fail(format!("the browser's proxy: {e}")))?;
        let closed = match Proxy::start(Gate::Closed).await {
            Ok(p) => p,
            Err(e) => {
                proxy.shutdown().await;
                return Err(fail(format!("the browser's proxy: {e}")));
            }
        };
        let args = launch_args(closed.addr());
        let bin = settings.chromium.clone();
        let started = tokio::task::spawn_blocking(move || Chromium::start(&bin, &args, LAUNCH_TIMEOUT)).await;
        let (process, ws_url) = match started {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => {
                tokio::join!(proxy.shutdown(), closed.shutdown());
                return Err(fail(e.to_string()));
            }
            Err(e) => {
                tokio::join!(proxy.shutdown(), closed.shutdown());
                return Err(fail(format!("starting Chromium: {e}")));
            }
        };
        let config = HandlerConfig { request_timeout: settings.page_timeout, ..HandlerConfig::default() };
        let (browser, mut handler) = match chromiumoxide::Browser::connect_with_config(ws_url, config).await {
            Ok(pair) => pair,
            Err(e) => {
                drop(process);
                tokio::join!(proxy.shutdown(), closed.shutdown());
                return Err(fail(format!("DevTools connection: {e}")));
            }
        };
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
        let browser = Browser {
            inner: Mutex::new(browser),
            tasks,
            settings,
            gate,
            proxy,
            closed,
            process: std::sync::Mutex::new(process),
            connected,
            pages: AtomicU32::new(0),
            render_context: Mutex::new(None),
        };
        // Downloads are denied in the default context (and in each page's own context, page.rs).
        let deny = SetDownloadBehaviorParams::new(SetDownloadBehaviorBehavior::Deny);
        let denied = browser.inner.lock().await.execute(deny).await;
        if let Err(e) = denied {
            browser.shutdown().await;
            return Err(fail(format!("DevTools did not answer: {e}")));
        }
        Ok(browser)
    }

    /// Opens `url` and checks it (see the module documentation). Never panics; a failure is in
    /// [`BrowserPage::error`]. One page at a time: concurrent calls wait for each other. A page
    /// that takes Chromium past [`BrowserSettings::memory_limit`] ends Chromium (the owner starts
    /// a fresh one, [`Browser::worn_out`]) and is recorded with
    /// [`BrowserPage::memory_exceeded_mib`].
    pub async fn check_page(&self, audit: AuditId, site: SiteId, url: &str, robots: RobotsCheck) -> BrowserPage {
        let browser = self.inner.lock().await;
        self.pages.fetch_add(1, Ordering::Relaxed);
        // What the proxy refused before this page is not this page's.
        let _ = self.proxy.take_refused();
        let check = page::check(&browser, &self.settings, &self.gate, self.proxy.addr(), (audit, site, url), robots);
        let mut page = tokio::select! {
            page = check => page,
            used = self.over_memory() => {
                // Ended now, not after the page's time limit: the memory is the machine's.
                self.end_process();
                let limit = self.settings.memory_limit / (1024 * 1024);
                // Rounded up: over the limit by less than 1 MiB is still over it.
                let used = used.div_ceil(1024 * 1024);
                warn!(url, used_mib = used, limit_mib = limit, "a page took Chromium past its memory limit; Chromium ended");
                BrowserPage {
                    audit,
                    site,
                    url: url.to_owned(),
                    final_url: url.to_owned(),
                    error: Some(format!("the page took Chromium to {used} MiB of memory, over the limit of {limit} MiB; the check was stopped")),
                    memory_exceeded_mib: Some(u32::try_from(used).unwrap_or(u32::MAX)),
                    ..BrowserPage::default()
                }
            }
        };
        for target in self.proxy.take_refused() {
            if page.blocked.len() < intercept::MAX_BLOCKED && !page.blocked.contains(&target) {
                page.blocked.push(target);
            }
        }
        page
    }

    /// Returns (the bytes in use) once Chromium's processes use more than the limit.
    async fn over_memory(&self) -> u64 {
        loop {
            tokio::time::sleep(MEMORY_POLL).await;
            let over =
                self.process.lock().unwrap_or_else(std::sync::PoisonError::into_inner).over(self.settings.memory_limit);
            if let Some(used) = over {
                return used;
            }
        }
    }

    fn end_process(&self) {
        self.process.lock().unwrap_or_else(std::sync::PoisonError::into_inner).end();
        self.connected.store(false, Ordering::Relaxed);
    }

    /// The folder of this Chromium's profile: it names the browser's processes (`--user-data-dir`).
    #[must_use]
    pub fn profile_dir(&self) -> PathBuf {
        self.process.lock().unwrap_or_else(std::sync::PoisonError::into_inner).profile_dir().to_path_buf()
    }

    /// Whether this Chromium should be shut down and a fresh one started before the next page:
    /// its DevTools connection ended, or it has checked [`PAGES_PER_CHROMIUM`] pages.
    #[must_use]
    pub fn worn_out(&self) -> bool {
        !self.connected.load(Ordering::Relaxed) || self.pages.load(Ordering::Relaxed) >= PAGES_PER_CHROMIUM
    }

    /// Closes Chromium (ending its processes if it does not exit within 5 s), stops the DevTools
    /// task and the proxy, and removes the profile folder.
    pub async fn shutdown(self) {
        let Browser { inner, mut tasks, proxy, closed, process, .. } = self;
        let mut browser = inner.into_inner();
        if tokio::time::timeout(Duration::from_secs(5), browser.close()).await.is_err() {
            debug!("Chromium did not close within 5 s");
        }
        let mut process = process.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Whatever did not exit on Browser.close ends with the group; the profile goes with it.
        if let Err(e) = tokio::task::spawn_blocking(move || process.end()).await {
            warn!(error = %e, "ending Chromium's processes");
        }
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        tokio::join!(proxy.shutdown(), closed.shutdown());
    }
}

/// Chromium's command line (the supervisor adds `--user-data-dir` and the DevTools port): our
/// manners, and Chromium's own traffic to `closed` (the checked pages' contexts get the guarded
/// proxy, `page.rs`).
fn launch_args(closed: SocketAddr) -> Vec<String> {
    let mut args: Vec<String> = [
        "--headless",
        "--no-sandbox",
        "--disable-setuid-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-dev-shm-usage",
        "--disable-breakpad",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--no-pings",
        "--mute-audio",
        "--hide-scrollbars",
        "--password-store=basic",
        "--use-mock-keychain",
        // Permission prompts (notifications, location, camera...) are answered No.
        "--deny-permission-prompts",
        // Everything through the worker's proxy, loopback included (Chromium bypasses proxies
        // for loopback unless told not to), over TCP only.
        "--proxy-bypass-list=<-loopback>",
        "--disable-quic",
        // Chromium's own resolver answers nothing but the proxy's address (the rules apply to IP
        // literals too): names are the proxy's to resolve, so a page cannot make Chromium look
        // anything up (no system resolver, no DNS-over-HTTPS).
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        // WebRTC may not send UDP outside the proxy (its relays then go through the proxy over TCP).
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        // Frames stay in the page's process, so the page's request interception sees their
        // requests too; http stays http (no automatic upgrade attempts); no prefetching,
        // prerendering or DNS-over-HTTPS.
        "--disable-site-isolation-trials",
        "--disable-features=site-per-process,IsolateOrigins,HttpsUpgrades,HttpsFirstBalancedModeAutoEnable,Translate,MediaRouter,OptimizationHints,Prerender2,NoStatePrefetch,SpeculationRulesPrefetchFuture,PrefetchProxy,DnsOverHttps,AsyncDns,NetworkPrediction",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    args.push(format!("--proxy-server=http://{closed}"));
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chromium_reaches_the_network_only_through_the_proxy() {
        let args = launch_args("127.0.0.1:4321".parse().expect("addr"));
        for want in [
            "--proxy-server=http://127.0.0.1:4321",
            "--proxy-bypass-list=<-loopback>",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--disable-quic",
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        ] {
            assert!(args.iter().any(|a| a == want), "{want} in {args:?}");
        }
        assert!(!args.iter().any(|a| a.starts_with("--no-proxy-server")), "{args:?}");
    }

    #[tokio::test]
    async fn a_missing_chromium_is_an_error_not_a_panic() {
        let settings = BrowserSettings { chromium: "/nonexistent/chromium".into(), ..BrowserSettings::default() };
        let fetcher = Fetcher::new(crate::fetch::FetchSettings::default()).expect("fetcher");
        let err = Browser::launch(settings, &fetcher).await.expect_err("no chromium there");
        assert!(err.to_string().contains("/nonexistent/chromium"), "{err}");
    }
}
