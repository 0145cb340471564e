//! Reading a sitemap (from robots.txt, or listed in a sitemap index): its URLs are queued as
//! pages of the site, and every way it breaks the sitemap protocol or our caps is one finding.

use super::{Crawler, Job, MAX_SITEMAP_INDEX_DEPTH};
use crate::fetch::{Fetched, Method};
use crate::sitemap::{EntryAlternates, SitemapKind, parse_sitemap};
use shoal_shared::finding::Code;
use shoal_shared::frontier::{Frontier, FrontierError, limit_finding};
use shoal_shared::record::{Event, LinkKind, LinkRecord, PageRecord, SitemapAlternates};
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::url::{MAX_URL_LEN, NormalizedUrl, UrlError};

impl<F: Frontier> Crawler<F> {
    pub(super) async fn sitemap_task(&self, job: &mut Job<'_>, index_depth: u8) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let limits = job.site.limits.clone();
        if self
            .frontier
            .progress(job.task().site)
            .await?
            .is_some_and(|p| p.pages_enqueued >= u64::from(limits.max_pages))
        {
            // The page budget is spent: a sitemap could only list pages that will not be fetched.
            let t = job.task();
            let f = limit_finding(t.audit, t.site, &job.site.start, &limits, Code::SitemapLimitReached);
            job.out.events.push(Event::Finding(f));
            return Ok(());
        }
        let mut rec = job.record();
        // Read no more than what is left of the site's sitemap budget, and at most the per-file cap.
        let cap = self.settings.sitemap.max_bytes.min(limits.max_sitemap_bytes.max(1));
        let result = self.fetch(job, Method::Get, &url, Some(cap)).await;
        let Some(resp) = self.answered(job, &mut rec, result) else { return Ok(()) };
        job.out.sitemap_bytes = resp.body.len() as u64;
        match resp.status {
            300..=399 => self.redirect(job, &mut rec, &resp).await?,
            200..=299 => self.sitemap_body(job, &mut rec, &url, &resp, index_depth).await?,
            s => job.finding(Code::SitemapInvalid, url.as_str(), format!("HTTP {s}")),
        }
        job.publish(rec);
        Ok(())
    }

    async fn sitemap_body(
        &self,
        job: &mut Job<'_>,
        rec: &mut PageRecord,
        url: &NormalizedUrl,
        resp: &Fetched,
        index_depth: u8,
    ) -> Result<(), FrontierError> {
        let parsed = parse_sitemap(&resp.body, &self.settings.sitemap);
        let mut problems = Vec::new();
        if let Some(e) = &parsed.error {
            problems.push(e.clone());
        }
        if parsed.over_size || resp.truncated {
            problems.push(format!("over {} bytes", self.settings.sitemap.max_bytes));
        }
        if parsed.over_count {
            problems.push(format!("over {} URLs", self.settings.sitemap.max_urls));
        }
        let (kind, depth) = match parsed.kind {
            SitemapKind::Index if index_depth >= MAX_SITEMAP_INDEX_DEPTH => {
                problems.push(format!("sitemap index nested deeper than {MAX_SITEMAP_INDEX_DEPTH}"));
                (None, 0)
            }
            SitemapKind::Index => (Some(TaskKind::Sitemap { index_depth: index_depth + 1 }), 0),
            SitemapKind::UrlSet => (Some(TaskKind::Page), 1),
            SitemapKind::Unknown => {
                problems.push("not a sitemap (no <urlset> or <sitemapindex>)".into());
                (None, 0)
            }
        };
        // URLs over the length cap are skipped, and said so (SPEC §7: over a cap is a finding).
        let mut too_long = parsed.oversized_locs;
        let mut locs = Vec::with_capacity(parsed.urls.len());
        for loc in &parsed.urls {
            match NormalizedUrl::parse(loc) {
                Ok(u) => locs.push(u),
                Err(UrlError::TooLong { .. }) => too_long += 1,
                Err(_) => {}
            }
        }
        if too_long > 0 && kind.is_some() {
            problems.push(format!("URLs over the {MAX_URL_LEN}-byte URL cap skipped: {too_long}"));
        }
        if !problems.is_empty() {
            job.finding(Code::SitemapInvalid, url.as_str(), problems.join("; "));
        }
        let Some(kind) = kind else { return Ok(()) };
        for u in locs {
            let u = job.scoped(u);
            let internal = job.scope.contains(u.as_url());
            if kind == TaskKind::Page {
                // Recorded so the audit can check what every listed URL answers.
                let entry = LinkRecord {
                    url: u.to_string(),
                    kind: LinkKind::SitemapEntry,
                    nofollow: false,
                    internal,
                    text: None,
                };
                rec.links.push(entry);
            }
            if !internal || !self.allowed(job, &u).await? {
                continue;
            }
            let t = job.task();
            let task = Task::new(t.audit, t.site, u, kind, depth, FoundVia::Sitemap { sitemap: url.clone() });
            job.out.discovered.push(task);
        }
        if kind == TaskKind::Page {
            self.sitemap_alternates(job, rec, url, parsed.alternates, parsed.alternates_over).await?;
        }
        Ok(())
    }

    /// The hreflang alternates the sitemap names for its URLs: recorded on the sitemap's record
    /// (the site analysis judges them with the pages' own), and the ones on the site queued as
    /// pages found in the sitemap.
    async fn sitemap_alternates(
        &self,
        job: &mut Job<'_>,
        rec: &mut PageRecord,
        url: &NormalizedUrl,
        entries: Vec<EntryAlternates>,
        over: bool,
    ) -> Result<(), FrontierError> {
        if over {
            let max = self.settings.sitemap.max_alternates;
            job.finding(Code::HreflangTooMany, url.as_str(), format!("sitemap: over {max} hreflang alternates"));
        }
        let via = FoundVia::Sitemap { sitemap: url.clone() };
        for entry in entries {
            let Ok(page) = NormalizedUrl::parse(&entry.loc) else { continue };
            let page = job.scoped(page);
            if !job.scope.contains(page.as_url()) {
                continue; // a sitemap may list other sites' URLs; their alternates are theirs
            }
            let alternates: Vec<(String, String)> = entry.alternates.iter().map(|a| job.alternate(a)).collect();
            self.queue_alternates(job, &page, &alternates, &via, 1).await?;
            rec.sitemap_hreflang.push(SitemapAlternates { page: page.to_string(), alternates });
        }
        Ok(())
    }
}
