//! A crawler and a job to call one step of a task on, with no network and nothing crawled: the
//! answer is made up by the test, and what the step did is read from the completion.

use super::{CrawlSettings, Crawler, Job};
use crate::fetch::{FetchSettings, Fetched, Fetcher};
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderValue};
use shoal_shared::finding::Code;
use shoal_shared::frontier::embedded::EmbeddedFrontier;
use shoal_shared::frontier::{Completion, FrontierSettings, Lease, SiteInfo};
use shoal_shared::ids::{AuditId, LeaseId, SiteId, WorkerId};
use shoal_shared::record::Event;
use shoal_shared::task::{FoundVia, SiteLimits, Task, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_shared::url::NormalizedUrl;
use std::sync::Arc;
use std::time::Duration;

/// The time every test job runs at.
pub(super) const NOW: UnixMs = UnixMs(1_000_000_000);

/// The site every test job belongs to.
pub(super) const START: &str = "https://a.test/";

pub(super) fn url(s: &str) -> NormalizedUrl {
    NormalizedUrl::parse(s).expect("test URL parses")
}

/// A crawler over an empty embedded frontier that resolves no name.
pub(super) fn crawler() -> Crawler<EmbeddedFrontier> {
    let fetcher = Fetcher::new(FetchSettings { no_dns: true, ..FetchSettings::default() }).expect("fetcher builds");
    Crawler::new(Arc::new(EmbeddedFrontier::new(FrontierSettings::default())), fetcher, CrawlSettings::default())
}

/// A lease of `url` as a task of `kind` already retried `retries` times.
pub(super) fn lease(target: &str, kind: TaskKind, retries: u8) -> Lease {
    let target = url(target);
    let mut task = Task::new(AuditId(1), SiteId(1), target.clone(), kind, 0, FoundVia::Standard);
    task.retries = retries;
    Lease {
        id: LeaseId(1),
        worker: WorkerId("test".into()),
        host: target.host_key(),
        ip: Some([127, 0, 0, 1].into()),
        task,
        started_at: NOW,
        deadline: NOW.plus(Duration::from_secs(60)),
        gap_ms: 0,
        resolve: false,
        expired: 0,
        robots_at: NOW,
        more: Vec::new(),
    }
}

/// The site of [`START`], with default limits.
pub(super) fn site() -> SiteInfo {
    SiteInfo { audit: AuditId(1), start: url(START), limits: SiteLimits::default(), custom: Default::default() }
}

/// A job for `lease`, as `process` would start it.
pub(super) fn job<'a>(lease: &'a Lease, site: &'a SiteInfo) -> Job<'a> {
    Job { lease, site, scope: site.scope(), now: NOW, out: Completion::default(), unresolved: None, sent: false }
}

/// An answer with `status`, `headers` and `body`; `truncated` as if over the fetch cap.
pub(super) fn response(status: u16, headers: &[(&'static str, &str)], body: &str, truncated: bool) -> Fetched {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.insert(*name, HeaderValue::from_str(value).expect("test header value"));
    }
    Fetched {
        status,
        headers: map,
        body: Bytes::from(body.to_owned()),
        truncated,
        elapsed: Duration::ZERO,
        head_after: Duration::ZERO,
        ip: None,
    }
}

/// The findings of a completion, as (code, detail), in order.
pub(super) fn findings(out: &Completion) -> Vec<(Code, String)> {
    out.events
        .iter()
        .filter_map(|e| match e {
            Event::Finding(f) => Some((f.code, f.detail.clone())),
            _ => None,
        })
        .collect()
}
