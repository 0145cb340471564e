//! Reading a stylesheet of the site (`<link rel=stylesheet>`, `@import`): one GET instead of the
//! resource check's HEAD, and every `url()` it loads (fonts, backgrounds, imported sheets) is
//! checked like any other resource. Relative URLs resolve against the stylesheet's own URL.
//!
//! Bounded: at most [`STYLESHEET_MAX_BYTES`] are read (a longer sheet is reported and read up to
//! its last complete rule, so a cut never invents half a URL) and at most [`STYLESHEET_MAX_URLS`]
//! `url()`s are taken from it (the rest reported); the scanner itself is linear (`crate::css`).

use super::page::is_html;
use super::{Crawler, Job};
use crate::checks;
use crate::css;
use crate::fetch::{Fetched, Method};
use shoal_shared::finding::Code;
use shoal_shared::frontier::{Frontier, FrontierError};
use shoal_shared::record::{LinkKind, LinkRecord, PageRecord};
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::url::NormalizedUrl;
use std::collections::HashSet;

/// Bytes of one stylesheet read at most (decompressed): several times the largest framework
/// bundles.
pub const STYLESHEET_MAX_BYTES: u64 = 2 * 1024 * 1024;
/// `url()`s taken from one stylesheet at most.
pub const STYLESHEET_MAX_URLS: usize = 1_000;

impl<F: Frontier> Crawler<F> {
    pub(super) async fn stylesheet_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let mut rec = job.record();
        let cap = STYLESHEET_MAX_BYTES.min(self.fetcher.settings().max_body);
        let result = self.fetch(job, Method::Get, &url, Some(cap)).await;
        let Some(resp) = self.answered(job, &mut rec, result) else { return Ok(()) };
        if (300..400).contains(&resp.status) {
            self.redirect(job, &mut rec, &resp).await?;
        }
        for (code, detail) in checks::response_checks(&resp, false, true) {
            job.finding(code, url.as_str(), detail);
        }
        if (200..300).contains(&resp.status) {
            if is_html(&resp) {
                if !job.is_external_lane() {
                    // An HTML page after all: crawled as one, as a resource check's would be.
                    let t = job.task();
                    let page = Task::new(t.audit, t.site, url.clone(), TaskKind::Page, t.depth, t.found_via.clone());
                    job.out.discovered.push(page);
                }
            } else if is_css(&resp) {
                self.stylesheet_urls(job, &mut rec, &url, &resp).await?;
            }
        }
        job.publish(rec);
        Ok(())
    }

    /// Records the sheet's `url()`s as its links and queues them: the site's own as resource
    /// checks (an `@import` read as a stylesheet in turn), other sites' as link checks.
    async fn stylesheet_urls(
        &self,
        job: &mut Job<'_>,
        rec: &mut PageRecord,
        url: &NormalizedUrl,
        resp: &Fetched,
    ) -> Result<(), FrontierError> {
        let text = String::from_utf8_lossy(&resp.body);
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let text = if resp.truncated {
            job.finding(
                Code::BodyTooLarge,
                url.as_str(),
                format!("stylesheet over {} bytes: the url()s after that were not checked", resp.body.len()),
            );
            text.rfind('}').map_or("", |i| &text[..=i])
        } else {
            text
        };
        let found = css::scan(text, STYLESHEET_MAX_URLS);
        if found.truncated {
            job.finding(
                Code::TooManyLinks,
                url.as_str(),
                format!("stylesheet with more than {STYLESHEET_MAX_URLS} url()s: the rest were not checked"),
            );
        }
        let mut recorded = HashSet::new();
        let mut queued = HashSet::new();
        for (raw, kind) in found.urls {
            let Ok(target) = NormalizedUrl::join(url.as_url(), &raw) else { continue };
            let target = job.scoped(target);
            if target == *url {
                continue; // `url(#filter)`: the sheet itself
            }
            let internal = job.scope.contains(target.as_url());
            if !recorded.insert((target.clone(), kind)) {
                continue;
            }
            rec.links.push(LinkRecord { url: target.to_string(), kind, nofollow: false, internal, text: None });
            if !queued.insert(target.clone()) {
                continue;
            }
            let t = job.task();
            let (kind, via) = (
                if internal {
                    TaskKind::Resource { stylesheet: kind == LinkKind::Stylesheet }
                } else if self.settings.check_external {
                    TaskKind::External
                } else {
                    continue;
                },
                FoundVia::Link { from: url.clone() },
            );
            if internal && !self.allowed(job, &target).await? {
                continue;
            }
            let task = Task::new(t.audit, t.site, target, kind, t.depth + 1, via);
            job.out.discovered.push(task);
        }
        Ok(())
    }
}

/// Whether the answer is CSS by its Content-Type (browsers apply nothing else as a stylesheet;
/// a sheet without one is read as CSS, as a browser in quirks mode would).
fn is_css(resp: &Fetched) -> bool {
    resp.header("content-type")
        .is_none_or(|ct| ct.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("text/css")))
}
