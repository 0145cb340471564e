//! Checking a resource of the site (an image, a script, a stylesheet, a download): whether it
//! answers, never what it contains, so a HEAD does unless the server answers it with an error.

use super::{Crawler, Job};
use crate::checks;
use crate::fetch::{FetchError, Fetched, Method};
use shoal_shared::frontier::{Frontier, FrontierError};
use shoal_shared::pace::{StatusPace, status_pace};
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_shared::url::NormalizedUrl;

/// Resource bodies read after a failed HEAD: enough to see the error, no more.
const RESOURCE_GET_BYTES: u64 = 64 * 1024;

impl<F: Frontier> Crawler<F> {
    pub(super) async fn resource_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let mut rec = job.record();
        let Some(result) = self.check(job, &url).await else { return Ok(()) };
        let Some(resp) = self.answered(job, &mut rec, result) else { return Ok(()) };
        if (300..400).contains(&resp.status) {
            self.redirect(job, &mut rec, &resp).await?;
        }
        for (code, detail) in checks::response_checks(&resp, false, true) {
            job.finding(code, url.as_str(), detail);
        }
        let budget = job.site.limits.content.image_budget_kib;
        if let Some((code, detail)) = checks::onpage::image_size_check(&resp, budget) {
            // The page it was found on: where the owner sees it (others may use it too).
            let related = match &job.task().found_via {
                FoundVia::Link { from } => vec![from.to_string()],
                _ => Vec::new(),
            };
            job.finding_related(code, url.as_str(), detail, related);
        }
        if (200..300).contains(&resp.status) && super::page::is_html(&resp) && !job.is_external_lane() {
            // An HTML page, whatever linked to it: crawled as one (the frontier queues the page
            // although the URL was checked as a resource; its record replaces this one).
            let t = job.task();
            let page = Task::new(t.audit, t.site, url.clone(), TaskKind::Page, t.depth, t.found_via.clone());
            job.out.discovered.push(page);
        }
        job.publish(rec);
        Ok(())
    }

    /// A resource or external check: one HEAD; if it answers with an error a retry would not mend
    /// (a final status, see [`status_pace`]), the one GET is a request of its own, queued again
    /// under the host's pace (`None` then: nothing to record yet).
    pub(super) async fn check(&self, job: &mut Job<'_>, url: &NormalizedUrl) -> Option<Result<Fetched, FetchError>> {
        if job.task().get_only {
            return Some(self.fetch(job, Method::Get, url, Some(RESOURCE_GET_BYTES)).await);
        }
        let result = self.fetch(job, Method::Head, url, None).await;
        if let Ok(r) = &result
            && r.status >= 400
            && status_pace(r.status) == StatusPace::Final
        {
            let mut t = job.task().clone();
            t.get_only = true;
            t.not_before = UnixMs(0);
            job.out.requeue = Some(t);
            return None;
        }
        Some(result)
    }
}
