//! A browser task (`--browser-pages`): one page of an audited site opened in headless Chromium
//! after its crawl, through the engine in [`crate::browser`]. One Chromium per worker process,
//! started at the first browser task, started afresh when it crashed or after
//! [`PAGES_PER_CHROMIUM`](crate::browser::PAGES_PER_CHROMIUM) pages (a worker runs for months), and
//! shut down with the worker ([`Crawler::shutdown_browser`]);
//! the frontier hands browser tasks only to a worker started with `--browser`
//! ([`shoal_shared::frontier::Frontier::claim_browser`]) and paces them, so this task only opens the
//! page and publishes what it saw.

use super::{Crawler, Job};
use crate::browser::{Browser, BrowserSettings, RobotsCheck};
use shoal_shared::frontier::{Frontier, FrontierError};
use shoal_shared::ids::SiteId;
use shoal_shared::record::Event;
use shoal_shared::robots::Verdict;
use shoal_shared::url::NormalizedUrl;
use std::sync::Arc;
use std::time::Duration;

/// How long a page load and its checks may take at most, by default: well inside the worker's
/// processing limit ([`crate::run::MAX_PROCESSING`]).
pub const DEFAULT_PAGE_TIMEOUT: Duration = Duration::from_secs(60);

/// The worker's browser: what it is started with, and Chromium once started.
pub(super) struct BrowserSlot {
    settings: BrowserSettings,
    browser: tokio::sync::Mutex<Option<Browser>>,
}

impl<F: Frontier> Crawler<F> {
    /// This crawler runs browser tasks: Chromium ([`CrawlSettings::chromium`](super::CrawlSettings))
    /// is started at the first one. It reaches the network only through this crawler's fetcher
    /// (its resolver and address guard: `--allow-private`, `--resolve`, `--dns-server`,
    /// `--no-dns`), like the crawler's own requests.
    #[must_use]
    pub fn with_browser(mut self) -> Crawler<F> {
        self.browser = Some(BrowserSlot {
            settings: BrowserSettings {
                chromium: self.settings.chromium.clone(),
                page_timeout: self.settings.browser_timeout,
                memory_limit: self.settings.browser_memory_limit,
            },
            browser: tokio::sync::Mutex::new(None),
        });
        self
    }

    /// Whether this crawler can run browser tasks.
    pub fn has_browser(&self) -> bool {
        self.browser.is_some()
    }

    /// Stops Chromium if it was started (the worker's shutdown).
    pub async fn shutdown_browser(&self) {
        if let Some(slot) = &self.browser
            && let Some(b) = slot.browser.lock().await.take()
        {
            b.shutdown().await;
            tracing::info!("browser stopped");
        }
    }

    /// The robots.txt rules of the site's own hosts (its start host and www/apex twin, each a lane
    /// of the crawl), for every request of a page it opens: a host whose lane exists but whose
    /// rules are not read yet holds everything back; a host the crawl has no lane for (another
    /// site's) is not covered.
    async fn browser_robots(&self, site: SiteId) -> Result<RobotsCheck, FrontierError> {
        let hosts = self.site(site).await?.map(|info| info.scope().host_keys()).unwrap_or_default();
        let mut lanes = Vec::new();
        for host in hosts {
            if self.frontier.robots(site, &host).await?.is_some() {
                let rules = self.lane_rules(site, &host, None).await?;
                lanes.push((host, rules));
            }
        }
        Ok(Arc::new(move |u: &url::Url| {
            let url = NormalizedUrl::parse(u.as_str()).ok()?;
            let host = url.host_key();
            let (_, rules) = lanes.iter().find(|(h, _)| *h == host)?;
            match rules.rules.check(&url) {
                Some(Verdict::Disallowed { rule }) => Some(rule),
                Some(_) => None,
                None => Some("robots.txt not read yet".to_owned()),
            }
        }))
    }

    /// Opens the leased page in the browser and publishes what it saw and its findings. A worker
    /// without a browser (cannot happen: the frontier does not hand it browser tasks) puts the
    /// task back for another worker.
    pub(super) async fn browser_task(&self, job: &mut Job<'_>) {
        let Some(slot) = &self.browser else {
            tracing::warn!(url = %job.task().url, "a browser task reached a worker without --browser; putting it back");
            let mut t = job.task().clone();
            t.not_before = job.now.plus(Duration::from_secs(1));
            job.out.requeue = Some(t);
            return;
        };
        let (audit, site) = (job.task().audit, job.task().site);
        let url = job.task().url.to_string();
        let robots = match self.browser_robots(site).await {
            Ok(r) => r,
            Err(e) => {
                // Without the site's rules the page is not opened: its requests could not be held
                // to them. The lease expires and the task is tried again.
                tracing::warn!(url, error = %e, "the site's robots.txt rules could not be read for a browser page");
                return;
            }
        };
        let mut guard = slot.browser.lock().await;
        if let Some(old) = guard.take_if(|b| b.worn_out()) {
            old.shutdown().await;
            tracing::info!("browser restarted (its connection ended or it reached its page limit)");
        }
        if guard.is_none() {
            match Browser::launch(slot.settings.clone(), &self.fetcher).await {
                Ok(b) => {
                    tracing::info!(chromium = %slot.settings.chromium.display(), "browser started");
                    *guard = Some(b);
                }
                Err(e) => {
                    tracing::error!(error = %e, "the browser could not start");
                    let page = shoal_shared::browser::BrowserPage {
                        audit,
                        site,
                        url: url.clone(),
                        final_url: url,
                        error: Some(e.to_string()),
                        ..shoal_shared::browser::BrowserPage::default()
                    };
                    job.out.events.push(Event::Browser(Box::new(page)));
                    return;
                }
            }
        }
        let Some(browser) = guard.as_ref() else { return };
        let page = browser.check_page(audit, site, &url, robots).await;
        drop(guard);
        for f in shoal_shared::browser::findings(&page) {
            job.out.events.push(Event::Finding(f));
        }
        job.out.events.push(Event::Browser(Box::new(page)));
    }
}
