//! hreflang alternates as a crawl sees them: the ones on the site are queued as pages, so that
//! the site analysis can judge what they answer and whether they name the page back
//! (`store/src/hreflang.rs`); robots.txt and the page budget apply as to any link, and an
//! alternate robots.txt disallows is reported here, where that is known.

use super::{Crawler, Job};
use shoal_shared::finding::Code;
use shoal_shared::frontier::{Frontier, FrontierError};
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::url::NormalizedUrl;
use std::collections::HashSet;

impl<F: Frontier> Crawler<F> {
    /// Queues the alternates `page` has on the site (`entries`: value, URL as written) as pages
    /// found `via` at `depth`; findings about them are on `page`.
    pub(super) async fn queue_alternates(
        &self,
        job: &mut Job<'_>,
        page: &NormalizedUrl,
        entries: &[(String, String)],
        via: &FoundVia,
        depth: u16,
    ) -> Result<(), FrontierError> {
        let mut seen = HashSet::new();
        for (value, href) in entries {
            let Ok(target) = NormalizedUrl::parse(href) else { continue };
            let target = job.scoped(target);
            if target == *page || !job.scope.contains(target.as_url()) || !seen.insert(target.clone()) {
                continue;
            }
            if !self.allowed(job, &target).await? {
                let value: String = value.chars().take(40).collect();
                job.finding_related(
                    Code::HreflangTargetDisallowed,
                    page.as_str(),
                    format!("{target} ({value}): robots.txt disallows it"),
                    vec![target.to_string()],
                );
                continue;
            }
            let t = job.task();
            let task = Task::new(t.audit, t.site, target, TaskKind::Page, depth, via.clone());
            job.out.discovered.push(task);
        }
        Ok(())
    }
}
