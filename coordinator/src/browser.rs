//! The browser phase of a site (`--browser-pages N`): when the frontier reports a site's crawl
//! over ([`Event::CrawlDone`]), the engine picks the pages to open from the audit database (the
//! start page and the N-1 most linked other pages that were crawled: status 200, HTML) and queues
//! them as browser tasks ([`Frontier::queue_browser`]); the site is done once they are. A start
//! page robots.txt kept us from was never crawled, so such a site gets none; pages robots.txt
//! disallows were never crawled either, and the worker checks the lane's rules again at claim.

use crate::engine::{Coordinator, EngineError};
use shoal_shared::frontier::Frontier;
use shoal_shared::record::Event;
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_shared::url::NormalizedUrl;

impl<F: Frontier> Coordinator<F> {
    /// Queues the browser tasks of every site whose crawl ended in `events` (committed already).
    /// Safe to repeat: the frontier ignores a site that is not waiting for them.
    pub(crate) async fn queue_browser_pages(&self, events: &[Event]) -> Result<(), EngineError> {
        for e in events {
            let Event::CrawlDone { audit, site } = e else { continue };
            let (audit, site) = (*audit, *site);
            let Some(info) = self.frontier().site_info(site).await? else { continue };
            let n = usize::from(info.limits.browser_pages);
            let urls = self.write(move |db| db.browser_targets(site, n)).await?;
            let tasks: Vec<Task> = urls
                .iter()
                .filter_map(|u| NormalizedUrl::parse(u).ok())
                .map(|u| Task::new(audit, site, u, TaskKind::Browser, 0, FoundVia::Standard))
                .collect();
            tracing::info!(audit = %audit, site = %site, pages = tasks.len(), "crawl over; queueing browser pages");
            self.frontier().queue_browser(site, tasks, UnixMs::from(std::time::SystemTime::now())).await?;
        }
        Ok(())
    }
}
