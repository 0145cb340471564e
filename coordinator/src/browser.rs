//! The browser phase of a site, after its crawl: the rendered crawl's rounds (`--render`,
//! [`shoal_shared::render`]) and the browser check's pages (`--browser-pages N`).
//!
//! When the frontier reports a site's crawl over ([`Event::CrawlDone`]), the engine asks the audit
//! database for the site's next round of the rendered crawl ([`AuditDb::plan_render`]: under
//! `auto` the start page first, then the decision; under `always` every HTML page not rendered
//! yet, within the budget) and queues it as render tasks ([`Frontier::queue_browser`]). The
//! frontier crawls what the round found and reports the crawl over again, until a round finds
//! nothing to render. Then the browser check's pages are queued (the start page and the N-1 most
//! linked other pages that were crawled: status 200, HTML), and the site is done once they are.
//! A start page robots.txt kept us from was never crawled, so such a site gets none; pages
//! robots.txt disallows were never crawled either, and the worker checks the lane's rules again
//! at claim.
//!
//! [`AuditDb::plan_render`]: shoal_store::AuditDb::plan_render

use crate::engine::{Coordinator, EngineError};
use shoal_shared::frontier::Frontier;
use shoal_shared::record::Event;
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_shared::url::NormalizedUrl;

impl<F: Frontier> Coordinator<F> {
    /// Queues the next browser tasks of every site whose crawl ended in `events` (committed
    /// already): a round of the rendered crawl, or the browser check's pages. Safe to repeat: the
    /// frontier ignores a site that is not waiting for them, and a page is planned for rendering
    /// once per audit.
    pub(crate) async fn queue_browser_pages(&self, events: &[Event]) -> Result<(), EngineError> {
        for e in events {
            let Event::CrawlDone { audit, site } = e else { continue };
            let (audit, site) = (*audit, *site);
            // Planned only while the site waits for it: a CrawlDone delivered again (a replay)
            // while the tasks its first delivery queued still run would otherwise see them as
            // lost.
            if !self.frontier().progress(site).await?.is_some_and(|p| p.awaiting_browser) {
                continue;
            }
            let Some(info) = self.frontier().site_info(site).await? else { continue };
            let (mode, budget) = (info.limits.render, info.limits.render_budget);
            let round = self.write(move |db| db.plan_render(site, mode, budget)).await?;
            let tasks: Vec<Task> = if round.is_empty() {
                let n = usize::from(info.limits.browser_pages);
                let urls = self.write(move |db| db.browser_targets(site, n)).await?;
                let tasks: Vec<Task> = urls
                    .iter()
                    .filter_map(|u| NormalizedUrl::parse(u).ok())
                    .map(|u| Task::new(audit, site, u, TaskKind::Browser, 0, FoundVia::Standard))
                    .collect();
                tracing::info!(audit = %audit, site = %site, pages = tasks.len(), "crawl over; queueing browser pages");
                tasks
            } else {
                let tasks: Vec<Task> = round
                    .iter()
                    .filter_map(|t| NormalizedUrl::parse(&t.url).ok().map(|u| (u, t.depth)))
                    .map(|(u, depth)| Task::new(audit, site, u, TaskKind::Render, depth, FoundVia::Standard))
                    .collect();
                tracing::info!(audit = %audit, site = %site, pages = tasks.len(), "crawl over; queueing a round of rendered pages");
                tasks
            };
            self.frontier().queue_browser(site, tasks, UnixMs::from(std::time::SystemTime::now())).await?;
        }
        Ok(())
    }
}
