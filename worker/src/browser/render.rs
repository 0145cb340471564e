//! One page of the rendered crawl (`--render`, [`shoal_shared::render`]): loaded in headless
//! Chromium with the browser check's manners (the worker's proxy and address guard, the site's
//! robots.txt for every request, the probe cancelling form submits, pop-ups closed, nothing
//! clicked or typed), its DOM read by the crawl's extractor, and nothing else: no screenshot, no
//! axe-core, no key, no consent click.
//!
//! The browser context (cookies, storage, cache, service workers) is kept from one page of a site
//! to the next, so the site's bundles are fetched once per site as a visitor's browser fetches
//! them, and is closed before a page of another site is rendered: nothing a site left behind is
//! seen by another.

use std::time::Instant;

use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use shoal_shared::browser::RenderedPage;
use shoal_shared::ids::{AuditId, SiteId};
use tokio::task::JoinSet;
use tracing::debug;

use super::intercept::{SharedNet, lock};
use super::js::load;
use super::page::{close_context, close_other_tabs, close_tab, landed, new_context, new_tab, prepare};
use super::rendered::{self, PageLinks};
use super::{Browser, RobotsCheck};

/// The browser context of the site whose pages are being rendered.
#[derive(Debug)]
pub(super) struct SiteContext {
    site: SiteId,
    id: BrowserContextId,
}

impl Browser {
    /// Renders `url` of `site` (see the module documentation) within the rendering time limit
    /// ([`super::BrowserSettings::render_timeout`]). Never panics; a failure is in
    /// [`RenderedPage::error`]. One page at a time, like [`Browser::check_page`].
    ///
    /// Also returns the rendered page's links to pages, for the crawl to record and follow.
    pub async fn render_page(
        &self,
        audit: AuditId,
        site: SiteId,
        url: &str,
        robots: RobotsCheck,
    ) -> (RenderedPage, PageLinks) {
        let started = Instant::now();
        let browser = self.inner.lock().await;
        self.pages.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _ = self.proxy.take_refused();
        let mut record =
            RenderedPage { audit, site, url: url.to_owned(), final_url: url.to_owned(), ..RenderedPage::default() };
        if !matches!(url::Url::parse(url).map(|u| u.scheme().to_owned()).as_deref(), Ok("http" | "https")) {
            record.error = Some("not an http(s) URL".to_owned());
            return (record, PageLinks::default());
        }
        let context = {
            let mut held = self.render_context.lock().await;
            match held.take() {
                Some(c) if c.site == site => c.id,
                other => {
                    if let Some(old) = other {
                        // Another site's cookies, storage and cache end here.
                        close_context(&browser, old.id).await;
                    }
                    match new_context(&browser, self.proxy.addr()).await {
                        Ok(id) => id,
                        Err(e) => {
                            record.error = Some(e);
                            return (record, PageLinks::default());
                        }
                    }
                }
            }
        };
        let net = SharedNet::default();
        let work = async {
            let (page, created) = new_tab(&browser, &context).await?;
            let mut tasks = JoinSet::new();
            if let Some(created) = created {
                tasks.spawn(close_other_tabs(page.clone(), context.clone(), created));
            }
            let read = async {
                prepare(&page, (&self.gate, robots), &net, &mut tasks).await?;
                load(&page, url).await?;
                let (final_url, status) = landed(&page).await?;
                let facts = rendered::read_links(&page, &final_url).await?;
                Ok::<_, String>((final_url, status, facts))
            }
            .await;
            tasks.abort_all();
            close_tab(page, url).await;
            read
        };
        let limit = self.settings.render_timeout;
        let outcome = tokio::select! {
            r = tokio::time::timeout(limit, work) => r.unwrap_or_else(|_| {
                Err(format!("the page was not rendered within {} s", limit.as_secs()))
            }),
            used = self.over_memory() => {
                self.end_process();
                let limit = self.settings.memory_limit.div_ceil(1024 * 1024);
                Err(format!(
                    "the page took Chromium to {} MiB of memory, over the limit of {limit} MiB; the render was stopped",
                    used.div_ceil(1024 * 1024)
                ))
            }
        };
        let mut follow = PageLinks::default();
        match outcome {
            Ok((final_url, status, (facts, links))) => {
                record.final_url = final_url;
                record.status = status;
                record.rendered = Some(facts);
                follow = links;
                *self.render_context.lock().await = Some(SiteContext { site, id: context });
            }
            Err(e) => {
                record.error = Some(e);
                // A context a page failed in (or timed out in) is not trusted with the next page.
                close_context(&browser, context).await;
            }
        }
        {
            let n = lock(&net);
            // What went over the network: a bundle Chromium took from the site's cache is no request.
            let first = n.seen.iter().filter(|s| s.phase == 0 && s.network);
            record.requests = u32::try_from(first.clone().count()).unwrap_or(u32::MAX);
            record.bytes = first.map(|s| s.bytes).sum();
            record.robots_blocked.clone_from(&n.robots_blocked);
            record.blocked.clone_from(&n.blocked);
        }
        for target in self.proxy.take_refused() {
            if record.blocked.len() < super::intercept::MAX_BLOCKED && !record.blocked.contains(&target) {
                record.blocked.push(target);
            }
        }
        record.render_ms = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
        debug!(url, ms = record.render_ms, error = ?record.error, "page rendered");
        (record, follow)
    }
}
