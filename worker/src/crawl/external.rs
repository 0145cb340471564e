//! Checking a link to another site: one HEAD (one GET only if HEAD answers with an error), under
//! that host's robots.txt and pace, with the result shared through the frontier's cache so that
//! a link many sites and audits share is asked about once.

use super::{Crawler, Job, MAX_REDIRECTS, fill_response};
use shoal_shared::frontier::{Frontier, FrontierError};
use shoal_shared::record::PageRecord;
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::url::NormalizedUrl;
use std::time::Duration;

/// When another lane is asking an external host the same thing, look again after this long.
const ASK_AGAIN: Duration = Duration::from_millis(500);

impl<F: Frontier> Crawler<F> {
    /// Whether this lane may ask a host for `key` now. If another lane is asking the same thing at
    /// this moment, the task goes back to the queue for a moment, to find the answer in the cache
    /// then. The lane that holds the ask may ask again (a retry after a 5xx or a 429 must not wait
    /// for its own lock to run out).
    pub(super) async fn first_to_ask(&self, job: &mut Job<'_>, key: &str) -> bool {
        let lock = format!("{key}#asking");
        let ttl = self.fetcher.settings().timeout * 2;
        let me = format!("{}|{}", job.task().site, job.lease.host).into_bytes();
        match self.frontier.cache_add(&lock, me.clone(), job.now, ttl).await {
            Ok(true) | Err(_) => true,
            Ok(false) if self.frontier.cache_get(&lock, job.now).await.ok().flatten().as_deref() == Some(&me[..]) => {
                true
            }
            Ok(false) => {
                let mut t = job.task().clone();
                t.not_before = job.now.plus(ASK_AGAIN);
                job.out.requeue = Some(t);
                false
            }
        }
    }

    /// Checks a link to another site: one HEAD, one GET only if HEAD answers with an error, the
    /// result shared through the frontier's cache so other sites and audits reuse it.
    pub(super) async fn external_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let key = format!("x:{url}");
        if let Some(blob) = self.frontier.cache_get(&key, job.now).await?
            && let Ok(cached) = rmp_serde::from_slice::<PageRecord>(&blob)
        {
            let mut rec = job.record();
            rec.status = cached.status;
            rec.error = cached.error;
            rec.redirect_to = cached.redirect_to;
            rec.content_type = cached.content_type;
            rec.response_ms = cached.response_ms;
            rec.fetched_at = cached.fetched_at;
            if let Some(target) = rec.redirect_to.as_deref().and_then(|t| NormalizedUrl::parse(t).ok()) {
                follow_redirect(job, &url, target);
            }
            job.publish(rec);
            return Ok(());
        }
        // The GET after a failed HEAD still holds the ask-lock its HEAD took.
        if !job.task().get_only && !self.first_to_ask(job, &key).await {
            return Ok(());
        }
        let mut rec = job.record();
        let Some(result) = self.check(job, &url).await else { return Ok(()) };
        match result {
            Ok(resp) => {
                fill_response(&mut rec, &resp);
                rec.error = None;
                if !self.transient_status(job, &resp) {
                    return Ok(());
                }
                let target = resp.header("location").and_then(|l| NormalizedUrl::join(url.as_url(), l).ok());
                rec.redirect_to = target.as_ref().map(ToString::to_string);
                if (300..400).contains(&resp.status)
                    && let Some(target) = target
                {
                    follow_redirect(job, &url, target);
                }
            }
            Err(e) => {
                rec.error = Some(e.kind());
                if e.is_retryable() && job.retry(None).is_none() {
                    return Ok(());
                }
            }
        }
        rec.links.clear();
        rec.headers.clear();
        if let Ok(blob) = rmp_serde::to_vec_named(&rec)
            && let Err(e) = self.frontier.cache_put(&key, blob, job.now, self.settings.external_cache_ttl).await
        {
            tracing::warn!(error = %e, "could not cache an external link result");
        }
        job.publish(rec);
        Ok(())
    }
}

/// A link check that is redirected checks where it leads, the same way: the target is a check of
/// its own, under its host's robots.txt and pace (its lane opens with robots.txt first), hop by
/// hop up to [`MAX_REDIRECTS`]. A loop or a longer chain stops there (the last 3xx is recorded).
/// The audit reports a broken target on the URL the site links to.
fn follow_redirect(job: &mut Job<'_>, url: &NormalizedUrl, target: NormalizedUrl) {
    let mut chain = job.task().chain.clone();
    chain.push(url.clone());
    if chain.contains(&target) || chain.len() > MAX_REDIRECTS {
        return;
    }
    let t = job.task();
    let mut next =
        Task::new(t.audit, t.site, target, TaskKind::External, t.depth, FoundVia::Redirect { from: url.clone() });
    next.chain = chain;
    job.out.discovered.push(next);
}
