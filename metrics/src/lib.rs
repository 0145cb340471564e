//! Shoal's Prometheus metrics, in OpenMetrics text.
//!
//! One registry per process ([`metrics()`]), shared by the worker loop, the fetcher and the
//! coordinator, so `shoal audit` (both in one process) exports everything from one endpoint. No
//! label ever carries a host or URL: a batch has thousands of hosts, and every label value is a
//! new series in Prometheus.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::LazyLock;

/// Label set of request counters: method and status class.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `GET` or `HEAD`.
    pub method: &'static str,
    /// `2xx`, `3xx`, `4xx`, `5xx`, or the error kind (`timeout`, `connect`, `dns`, …).
    pub class: &'static str,
}

/// Label set of finding counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SeverityLabels {
    /// `error`, `warning`, `notice`.
    pub severity: &'static str,
}

/// Label set of the worker cache gauges: the cache's fixed name, never a host or URL.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CacheLabels {
    /// `sites`, `robots`, `send_marks`, `addresses`.
    pub cache: &'static str,
}

/// Every metric Shoal exports. Names are the constants passed to `register` below.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Requests made, by method and status class (or error kind).
    pub requests: Family<RequestLabels, Counter>,
    /// Request start to end of body.
    pub fetch_seconds: Histogram,
    /// Decompressed body bytes read.
    pub response_bytes: Counter,
    /// URLs not requested because robots.txt disallows them.
    pub robots_denials: Counter,
    /// URLs not requested because the audit's --include/--exclude rules keep them out.
    pub scope_exclusions: Counter,
    /// 429 answers; each puts its host in slow mode for the rest of the audit.
    pub rate_limited: Counter,
    /// Requests scheduled again after a 429, 5xx or network failure.
    pub retries: Counter,
    /// Times a request about to leave later than its slot asked the frontier when it may
    /// (`Frontier::depart`): how often this machine is too busy to send on time.
    pub late_departures: Counter,
    /// Changes of a host's pace from how it answered: a latency-guard step (slower or back) or a
    /// quota first stated, counted as their notes are stored (coordinator).
    pub pace_adjustments: Counter,
    /// Fetches in flight in this process.
    pub in_flight: Gauge,
    /// Leases completed by this process.
    pub leases_completed: Counter,
    /// Lease renewals sent by this process's heartbeat (one per lease per beat).
    pub leases_renewed: Counter,
    /// Entries in this worker's caches, by cache (`sites`, `robots`, `send_marks`, `addresses`).
    pub cache_entries: Family<CacheLabels, Gauge>,
    /// Tasks queued in the frontier for running sites (coordinator).
    pub queue_depth: Gauge,
    /// Tasks leased to workers now (coordinator).
    pub leased: Gauge,
    /// Workers started with `--browser` whose announcement is live (coordinator): at 0, audits
    /// that need a browser are refused.
    pub browser_workers: Gauge,
    /// Expired leases reclaimed (coordinator).
    pub leases_reclaimed: Counter,
    /// Findings stored, by severity (coordinator).
    pub findings: Family<SeverityLabels, Counter>,
    /// Page records stored (coordinator).
    pub pages_stored: Counter,
    /// Sites finished (coordinator).
    pub sites_done: Counter,
    /// Sites not yet finished in running audits (coordinator).
    pub sites_running: Gauge,
    /// Audits running (coordinator).
    pub audits_running: Gauge,
    /// Events log entries quarantined: skipped whole or in part as unreadable, or naming a site the
    /// audit database does not hold (coordinator).
    pub events_quarantined: Counter,
    /// Sites quarantined because their state in the frontier could not be read (coordinator).
    pub sites_quarantined: Counter,
    /// Audits ended `failed` (coordinator).
    pub audits_failed: Counter,
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("shoal");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register("requests", "HTTP requests made, by method and status class or error kind", requests.clone());
        let fetch_seconds = Histogram::new(exponential_buckets(0.005, 2.0, 13));
        registry.register("fetch_seconds", "Time from request start to end of body", fetch_seconds.clone());
        let response_bytes = Counter::default();
        registry.register("response_bytes", "Decompressed response body bytes read", response_bytes.clone());
        let robots_denials = Counter::default();
        registry.register(
            "robots_denials",
            "URLs not requested because robots.txt disallows them",
            robots_denials.clone(),
        );
        let scope_exclusions = Counter::default();
        registry.register(
            "scope_exclusions",
            "URLs not requested because the audit's include/exclude rules keep them out",
            scope_exclusions.clone(),
        );
        let rate_limited = Counter::default();
        registry.register("rate_limited", "429 answers; each puts its host in slow mode", rate_limited.clone());
        let retries = Counter::default();
        registry.register("retries", "Requests scheduled again after a 429, 5xx or network failure", retries.clone());
        let late_departures = Counter::default();
        registry.register(
            "late_departures",
            "Times a request later than its slot asked the frontier when it may leave",
            late_departures.clone(),
        );
        let pace_adjustments = Counter::default();
        registry.register(
            "pace_adjustments",
            "Changes of a host's pace from how it answered (latency guard steps, quotas first stated)",
            pace_adjustments.clone(),
        );
        let in_flight = Gauge::default();
        registry.register("fetches_in_flight", "Fetches in flight in this process", in_flight.clone());
        let leases_completed = Counter::default();
        registry.register("leases_completed", "Leases completed by this process", leases_completed.clone());
        let cache_entries = Family::<CacheLabels, Gauge>::default();
        registry.register(
            "worker_cache_entries",
            "Entries in this worker's bounded caches, by cache",
            cache_entries.clone(),
        );
        let leases_renewed = Counter::default();
        registry.register("leases_renewed", "Lease renewals sent by this process's heartbeat", leases_renewed.clone());
        let queue_depth = Gauge::default();
        registry.register("queue_depth", "Tasks queued in the frontier for running sites", queue_depth.clone());
        let leased = Gauge::default();
        registry.register("leased", "Tasks leased to workers now", leased.clone());
        let browser_workers = Gauge::default();
        registry.register(
            "browser_workers",
            "Live workers started with --browser (at 0, audits that need a browser are refused)",
            browser_workers.clone(),
        );
        let leases_reclaimed = Counter::default();
        registry.register("leases_reclaimed", "Expired leases reclaimed", leases_reclaimed.clone());
        let findings = Family::<SeverityLabels, Counter>::default();
        registry.register("findings", "Findings stored, by severity", findings.clone());
        let pages_stored = Counter::default();
        registry.register("pages_stored", "Page records stored in the audit database", pages_stored.clone());
        let sites_done = Counter::default();
        registry.register("sites_done", "Sites finished", sites_done.clone());
        let sites_running = Gauge::default();
        registry.register("sites_running", "Sites not yet finished in running audits", sites_running.clone());
        let audits_running = Gauge::default();
        registry.register("audits_running", "Audits running", audits_running.clone());
        let events_quarantined = Counter::default();
        registry.register(
            "events_quarantined",
            "Events log entries skipped whole or in part as unreadable, or naming a site the audit database does not hold",
            events_quarantined.clone(),
        );
        let sites_quarantined = Counter::default();
        registry.register(
            "sites_quarantined",
            "Sites taken out of the crawl because their state in the frontier could not be read",
            sites_quarantined.clone(),
        );
        let audits_failed = Counter::default();
        registry.register("audits_failed", "Audits ended failed", audits_failed.clone());
        Metrics {
            registry,
            requests,
            fetch_seconds,
            response_bytes,
            robots_denials,
            scope_exclusions,
            rate_limited,
            retries,
            late_departures,
            pace_adjustments,
            in_flight,
            leases_completed,
            leases_renewed,
            cache_entries,
            queue_depth,
            leased,
            browser_workers,
            leases_reclaimed,
            findings,
            pages_stored,
            sites_done,
            sites_running,
            audits_running,
            events_quarantined,
            sites_quarantined,
            audits_failed,
        }
    }

    /// The OpenMetrics text exposition of every metric.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// The content type of [`Metrics::encode`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// This process's metrics.
#[must_use]
pub fn metrics() -> &'static Metrics {
    &METRICS
}

/// The status class label of an HTTP status.
#[must_use]
pub fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        500..=599 => "5xx",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_every_metric_and_no_host_labels() {
        let m = metrics();
        m.requests.get_or_create(&RequestLabels { method: "GET", class: status_class(200) }).inc();
        m.findings.get_or_create(&SeverityLabels { severity: "error" }).inc();
        m.fetch_seconds.observe(0.02);
        let text = m.encode();
        for name in [
            "shoal_requests_total",
            "shoal_fetch_seconds_bucket",
            "shoal_response_bytes_total",
            "shoal_robots_denials_total",
            "shoal_scope_exclusions_total",
            "shoal_rate_limited_total",
            "shoal_retries_total",
            "shoal_late_departures_total",
            "shoal_pace_adjustments_total",
            "shoal_fetches_in_flight",
            "shoal_queue_depth",
            "shoal_browser_workers",
            "shoal_leases_reclaimed_total",
            "shoal_findings_total",
            "shoal_sites_running",
            "shoal_audits_running",
            "shoal_events_quarantined_total",
            "shoal_sites_quarantined_total",
            "shoal_audits_failed_total",
        ] {
            assert!(text.contains(name), "{name} missing:\n{text}");
        }
        assert!(text.contains(r#"shoal_requests_total{method="GET",class="2xx"} 1"#), "{text}");
        assert!(text.ends_with("# EOF\n"));
        assert!(!text.contains("host="), "no per-host labels");
    }
}
