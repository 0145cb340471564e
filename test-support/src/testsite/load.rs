//! Host-wide behaviours for issue 17's politeness tests: servers that degrade under load, state a
//! quota, or ask to come back later. Each wraps whatever the site's route answers.
//!
//! - [`Site::single_worker`]: one worker and a queue. Requests are served one at a time in arrival
//!   order, each taking `service`; a request's response time is its wait in the queue plus its
//!   service, so it grows with the number of requests in flight, as on a small shared server.
//!   [`Site::on_the_server_of`] puts more hosts on the same machine (one queue for all of them).
//! - [`Site::slower_when_crowded`]: every request takes `alone`, plus `per_other` for each other
//!   request of the machine in progress when it arrived: fast at one request in flight, slower
//!   from the second on (issue 41's host that queues from 2).
//! - [`Site::quota`]: a quota of `limit` requests per `window` (a fixed window from the first
//!   request), stated in the IETF draft's `RateLimit-Policy` and `RateLimit` fields; a request
//!   over the quota answers 429 with `Retry-After`.
//! - [`Site::unavailable_first`]: 503 with `Retry-After` for the first requests other than
//!   robots.txt.

use super::{Route, Site, Throttle};
use axum::http::HeaderValue;
use axum::response::Response;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How a site behaves as a whole (see the module's doc).
#[derive(Clone, Debug)]
pub(crate) enum Load {
    /// One worker, a FIFO queue (tokio's mutex is fair).
    Queue { service: Duration, worker: Arc<tokio::sync::Mutex<()>> },
    /// `alone` plus `per_other` per other request in progress at arrival.
    Crowded { alone: Duration, per_other: Duration, active: Arc<AtomicU32> },
    /// A stated quota over a fixed window.
    Quota { limit: u32, window: Duration, state: Arc<Mutex<Option<(Instant, u32)>>> },
}

impl Site {
    /// One worker and a queue: every request waits for the ones before it, then takes `service`.
    #[must_use]
    pub fn single_worker(mut self, service: Duration) -> Site {
        self.load = Some(Load::Queue { service, worker: Arc::new(tokio::sync::Mutex::new(())) });
        self
    }

    /// Fast alone, slower when crowded: each request takes `alone`, plus `per_other` for every
    /// other request of this machine in progress when it arrived.
    #[must_use]
    pub fn slower_when_crowded(mut self, alone: Duration, per_other: Duration) -> Site {
        self.load = Some(Load::Crowded { alone, per_other, active: Arc::new(AtomicU32::new(0)) });
        self
    }

    /// Served by the same simulated machine as `other` (its one worker and queue, or its quota):
    /// several hosts on one shared server, at one IP.
    #[must_use]
    pub fn on_the_server_of(mut self, other: &Site) -> Site {
        self.load = other.load.clone();
        self
    }

    /// A quota of `limit` requests per `window` (whole seconds), stated on every answer; requests
    /// over it answer 429.
    #[must_use]
    pub fn quota(mut self, limit: u32, window: Duration) -> Site {
        self.load = Some(Load::Quota { limit, window, state: Arc::new(Mutex::new(None)) });
        self
    }

    /// `503 Service Unavailable` with `Retry-After: {retry_after}` for the first `times` requests
    /// to this host other than robots.txt, whatever their path.
    ///
    /// # Panics
    /// If `retry_after` is not a valid header value.
    #[must_use]
    pub fn unavailable_first(mut self, retry_after: &str, times: u32) -> Site {
        self.throttle = Some(Throttle { times, answer: Route::status(503).header("retry-after", retry_after) });
        self
    }
}

impl Load {
    /// Answers `route`'s `n`th response under this behaviour.
    pub(crate) async fn serve(&self, route: &Route, n: u32, extra: Duration, cancel: &CancellationToken) -> Response {
        match self {
            Load::Queue { service, worker } => {
                let turn = tokio::select! {
                    turn = worker.lock() => turn,
                    () = cancel.cancelled() => return Route::status(503).respond_ready(0),
                };
                tokio::select! {
                    () = tokio::time::sleep(*service) => {}
                    () = cancel.cancelled() => return Route::status(503).respond_ready(0),
                }
                let response = route.respond(n, extra, cancel).await;
                drop(turn);
                response
            }
            Load::Crowded { alone, per_other, active } => {
                // Counted down when this request ends, however it ends (a cancelled one too).
                struct InProgress<'a>(&'a AtomicU32);
                impl Drop for InProgress<'_> {
                    fn drop(&mut self) {
                        self.0.fetch_sub(1, Ordering::SeqCst);
                    }
                }
                let others = active.fetch_add(1, Ordering::SeqCst);
                let _in_progress = InProgress(active);
                let took = alone.saturating_add(per_other.saturating_mul(others));
                tokio::select! {
                    () = tokio::time::sleep(took) => {}
                    () = cancel.cancelled() => return Route::status(503).respond_ready(0),
                }
                route.respond(n, extra, cancel).await
            }
            Load::Quota { limit, window, state } => {
                let now = Instant::now();
                let (used, reset) = {
                    let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
                    let (start, used) = match *s {
                        Some((start, used)) if now.duration_since(start) < *window => (start, used + 1),
                        _ => (now, 1),
                    };
                    *s = Some((start, used));
                    (used, window.saturating_sub(now.duration_since(start)))
                };
                // Whole seconds, rounded up: never earlier than the real reset.
                let t = reset.as_millis().div_ceil(1000);
                let w = window.as_secs();
                let mut response = if used > *limit {
                    Route::status(429).header("retry-after", &t.to_string()).respond_ready(0)
                } else {
                    route.respond(n, extra, cancel).await
                };
                let remaining = limit.saturating_sub(used);
                let h = response.headers_mut();
                if let Ok(v) = HeaderValue::from_str(&format!("\"default\";q={limit};w={w}")) {
                    h.insert("ratelimit-policy", v);
                }
                if let Ok(v) = HeaderValue::from_str(&format!("\"default\";r={remaining};t={t}")) {
                    h.insert("ratelimit", v);
                }
                response
            }
        }
    }
}
