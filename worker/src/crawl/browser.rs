//! A browser task (`--browser-pages`): one page of an audited site opened in headless Chromium
//! after its crawl, through the engine in [`crate::browser`]. One Chromium per worker process,
//! started at the first browser task, started afresh when it crashed or after
//! [`PAGES_PER_CHROMIUM`](crate::browser::PAGES_PER_CHROMIUM) pages (a worker runs for months), and
//! shut down with the worker ([`Crawler::shutdown_browser`]);
//! the frontier hands browser tasks only to a worker started with `--browser`
//! ([`shoal_shared::frontier::Frontier::claim_browser`]) and paces them, so this task only opens the
//! page and publishes what it saw.

use super::{Crawler, Job};
use crate::browser::{Browser, BrowserSettings, PageLinks, RobotsCheck};
use shoal_shared::browser::RenderedPage;
use shoal_shared::frontier::{Frontier, FrontierError};
use shoal_shared::ids::SiteId;
use shoal_shared::record::{Event, LinkRecord};
use shoal_shared::robots::Verdict;
use shoal_shared::task::{FoundVia, Task, TaskKind};
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
                // A render is a load and a read: the check's limit bounds it too.
                render_timeout: crate::browser::DEFAULT_RENDER_TIMEOUT.min(self.settings.browser_timeout),
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

    /// The worker's Chromium, started (or started afresh: crashed, worn out) when needed; `Err`
    /// with why it could not start.
    async fn started<'a>(&self, slot: &'a BrowserSlot) -> Result<tokio::sync::MutexGuard<'a, Option<Browser>>, String> {
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
                    return Err(e.to_string());
                }
            }
        }
        Ok(guard)
    }

    /// A browser task that reached a worker without a browser (cannot happen: the frontier hands
    /// browser tasks only to `--browser` workers) goes back for another worker.
    fn put_back(job: &mut Job<'_>) {
        tracing::warn!(url = %job.task().url, "a browser task reached a worker without --browser; putting it back");
        let mut t = job.task().clone();
        t.not_before = job.now.plus(Duration::from_secs(1));
        job.out.requeue = Some(t);
    }

    /// Opens the leased page in the browser and publishes what it saw and its findings.
    pub(super) async fn browser_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let Some(slot) = &self.browser else {
            Self::put_back(job);
            return Ok(());
        };
        let (audit, site) = (job.task().audit, job.task().site);
        let url = job.task().url.to_string();
        let robots = match self.browser_robots(site).await {
            Ok(r) => r,
            Err(e) => {
                // Without the site's rules the page is not opened: its requests could not be held
                // to them. The error leaves the lease uncompleted, so it expires and the task is
                // tried again (given up after its third expiry).
                tracing::warn!(url, error = %e, "the site's robots.txt rules could not be read for a browser page");
                return Err(e);
            }
        };
        let guard = match self.started(slot).await {
            Ok(g) => g,
            Err(error) => {
                let page = shoal_shared::browser::BrowserPage {
                    audit,
                    site,
                    url: url.clone(),
                    final_url: url,
                    error: Some(error),
                    ..shoal_shared::browser::BrowserPage::default()
                };
                job.out.events.push(Event::Browser(Box::new(page)));
                return Ok(());
            }
        };
        let Some(browser) = guard.as_ref() else { return Ok(()) };
        let page = browser.check_page(audit, site, &url, robots).await;
        drop(guard);
        for f in shoal_shared::browser::findings(&page) {
            job.out.events.push(Event::Finding(f));
        }
        job.out.events.push(Event::Browser(Box::new(page)));
        Ok(())
    }

    /// Renders the leased page for the rendered crawl (`--render`) and publishes it; the links it
    /// shows are offered to the frontier as the page's links are (scope rules, robots.txt, the
    /// seen set and the budgets apply), so a page only scripts link to is crawled too.
    pub(super) async fn render_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let Some(slot) = &self.browser else {
            Self::put_back(job);
            return Ok(());
        };
        let (audit, site) = (job.task().audit, job.task().site);
        let url = job.task().url.clone();
        let robots = match self.browser_robots(site).await {
            Ok(r) => r,
            Err(e) => {
                // Not rendered without the site's rules: the error leaves the lease uncompleted,
                // so it expires and the task is tried again (given up after its third expiry).
                tracing::warn!(url = %url, error = %e, "the site's robots.txt rules could not be read for a rendered page");
                return Err(e);
            }
        };
        let (page, found) = match self.started(slot).await {
            Ok(guard) => match guard.as_ref() {
                Some(browser) => browser.render_page(audit, site, url.as_str(), robots).await,
                None => return Ok(()),
            },
            Err(error) => {
                let page = RenderedPage {
                    audit,
                    site,
                    url: url.to_string(),
                    final_url: url.to_string(),
                    error: Some(error),
                    ..RenderedPage::default()
                };
                (page, PageLinks::default())
            }
        };
        let mut page = page;
        let follow_nofollow = job.site.limits.follow_nofollow;
        let mut queued = std::collections::HashSet::new();
        for link in found.links {
            let Ok(target) = NormalizedUrl::from_url(link.url) else { continue };
            let target = job.scoped(target);
            let internal = job.scope.contains(target.as_url());
            let nofollow = link.nofollow || found.nofollow;
            page.links.push(LinkRecord {
                url: target.to_string(),
                kind: link.kind,
                nofollow,
                internal,
                text: link.text,
            });
            // Links to other sites are the raw crawl's to check; the rendered crawl follows the
            // site's own pages.
            if !internal || (nofollow && !follow_nofollow) || !queued.insert(target.clone()) {
                continue;
            }
            if !self.allowed(job, &target).await? {
                continue;
            }
            let t = job.task();
            let task =
                Task::new(t.audit, t.site, target, TaskKind::Page, t.depth + 1, FoundVia::Link { from: url.clone() });
            job.out.discovered.push(task);
        }
        for f in shoal_shared::browser::render_findings(&page) {
            job.out.events.push(Event::Finding(f));
        }
        job.out.events.push(Event::Render(Box::new(page)));
        Ok(())
    }
}
