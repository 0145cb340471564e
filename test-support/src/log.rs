//! The test server's request log: what a site owner would see in an access log, with timings precise
//! enough to check politeness (requests in flight, gaps between request starts).
//!
//! The server appends an entry the moment a request arrives and completes it when the response body
//! has been handed to the connection (or the client went away), so a request that never finishes is
//! still visible. Tests take a [`RequestLog`] snapshot and assert on it.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use serde::Serialize;

/// One request as the server saw it.
///
/// `start` is taken as the first thing the handler does; `end` when the last byte of the response
/// body was handed to the connection, or when the server gave up on the request (client hung up,
/// shutdown). Intervals are therefore never longer than what the client observed, so an overlap in
/// this log is a real overlap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedRequest {
    /// Host name from the `Host` header (or the request target's authority): lowercase, port removed.
    pub host: String,
    /// Request method, e.g. `GET`.
    pub method: String,
    /// Path and query exactly as requested, e.g. `/p/1?x=2`.
    pub path: String,
    /// Every request header in arrival order, names lowercase, values lossily decoded as UTF-8.
    pub headers: Vec<(String, String)>,
    /// When the request reached the handler.
    pub start: Instant,
    /// When the response was complete; `None` while it is still being served.
    pub end: Option<Instant>,
    /// Status sent; `None` if no response head was produced (client hung up first, or still waiting).
    pub status: Option<u16>,
}

impl LoggedRequest {
    /// First value of a request header (name case-insensitive), so tests can check the user agent,
    /// the absence of cookies, etc.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// How long the server was busy with the request, if it has finished.
    pub fn duration(&self) -> Option<Duration> {
        self.end.map(|end| end.saturating_duration_since(self.start))
    }
}

/// A snapshot of the request log, in arrival order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestLog {
    requests: Vec<LoggedRequest>,
}

impl From<Vec<LoggedRequest>> for RequestLog {
    /// Builds a log from entries (sorted by start), e.g. to unit-test assertions on synthetic logs.
    fn from(mut requests: Vec<LoggedRequest>) -> Self {
        requests.sort_by_key(|r| r.start);
        RequestLog { requests }
    }
}

impl RequestLog {
    /// All requests, in arrival order.
    pub fn all(&self) -> &[LoggedRequest] {
        &self.requests
    }

    /// Number of requests logged.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// True when the server saw no request at all.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Requests for one host (lowercase, no port), in arrival order.
    pub fn for_host(&self, host: &str) -> Vec<&LoggedRequest> {
        self.requests.iter().filter(|r| r.host == host).collect()
    }

    /// Distinct hosts that received requests, sorted.
    pub fn hosts(&self) -> Vec<String> {
        let hosts: BTreeSet<&str> = self.requests.iter().map(|r| r.host.as_str()).collect();
        hosts.into_iter().map(str::to_owned).collect()
    }

    /// Requests grouped by host, each group in arrival order; for summaries over many hosts.
    pub fn by_host(&self) -> HashMap<&str, Vec<&LoggedRequest>> {
        let mut groups: HashMap<&str, Vec<&LoggedRequest>> = HashMap::new();
        for r in &self.requests {
            groups.entry(r.host.as_str()).or_default().push(r);
        }
        groups
    }

    /// Paths (with query) requested from a host, in arrival order, repeats included.
    pub fn paths(&self, host: &str) -> Vec<String> {
        self.for_host(host).iter().map(|r| r.path.clone()).collect()
    }

    /// The first path requested from a host: robots.txt must come first.
    pub fn first_path(&self, host: &str) -> Option<String> {
        self.requests.iter().find(|r| r.host == host).map(|r| r.path.clone())
    }

    /// How many times a host was asked for exactly this path (with query).
    pub fn count(&self, host: &str, path: &str) -> usize {
        self.requests.iter().filter(|r| r.host == host && r.path == path).count()
    }

    /// Distinct methods used across all hosts, sorted; the crawler may only use GET and HEAD.
    pub fn methods(&self) -> BTreeSet<String> {
        self.requests.iter().map(|r| r.method.clone()).collect()
    }

    /// True if any request carried this header (name case-insensitive), e.g. `cookie`, `referer`.
    pub fn any_header(&self, name: &str) -> bool {
        self.requests.iter().any(|r| r.header(name).is_some())
    }

    /// Largest number of requests to a host being served at the same moment.
    pub fn max_in_flight(&self, host: &str) -> usize {
        max_in_flight_of(self.requests.iter().filter(|r| r.host == host))
    }

    /// Largest number of matching requests served at the same moment, across hosts: e.g. all hosts
    /// behind one IP address, to check the per-IP cap.
    pub fn max_in_flight_where(&self, predicate: impl Fn(&LoggedRequest) -> bool) -> usize {
        max_in_flight_of(self.requests.iter().filter(|r| predicate(r)))
    }

    /// Gaps between consecutive request starts to a host, in arrival order.
    pub fn gaps(&self, host: &str) -> Vec<Duration> {
        gaps_of(self.requests.iter().filter(|r| r.host == host))
    }

    /// The smallest gap between consecutive request starts to a host; `None` with fewer than two requests.
    pub fn min_gap(&self, host: &str) -> Option<Duration> {
        self.gaps(host).into_iter().min()
    }

    /// A readable listing of the whole log, for assertion messages: one request per line with start
    /// and end in milliseconds relative to the first request.
    pub fn dump(&self) -> String {
        let Some(origin) = self.requests.first().map(|r| r.start) else {
            return "(no requests)\n".to_owned();
        };
        let mut out = String::new();
        for r in &self.requests {
            let start = ms_since(origin, r.start);
            let end = r.end.map_or_else(|| "open".to_owned(), |e| format!("{:.1}", ms_since(origin, e)));
            let status = r.status.map_or_else(|| "---".to_owned(), |s| s.to_string());
            // Who sent it: a worker names itself at the end of its user agent ("...; w2)").
            let by =
                r.header("user-agent").and_then(|ua| ua.rsplit_once("; ")).map_or("", |(_, w)| w.trim_end_matches(')'));
            let _ = writeln!(out, "{start:>9.1} .. {end:>9} ms  {status} {} {} {}  {by}", r.method, r.host, r.path);
        }
        out
    }

    /// The log as JSON Lines (host, method, path, user_agent, start_ms, end_ms, status), times in
    /// milliseconds since `origin` (normally [`crate::testsite::TestServer::started_at`]); for
    /// benchmark tooling. `user_agent` is null for a request without one.
    pub fn to_json_lines(&self, origin: Instant) -> String {
        let mut out = String::new();
        for r in &self.requests {
            let line = JsonLine {
                host: &r.host,
                method: &r.method,
                path: &r.path,
                user_agent: r.header("user-agent"),
                start_ms: ms_since(origin, r.start),
                end_ms: r.end.map(|e| ms_since(origin, e)),
                status: r.status,
            };
            // Serialising plain strings and numbers cannot fail.
            if let Ok(json) = serde_json::to_string(&line) {
                out.push_str(&json);
                out.push('\n');
            }
        }
        out
    }
}

#[derive(Serialize)]
struct JsonLine<'a> {
    host: &'a str,
    method: &'a str,
    path: &'a str,
    user_agent: Option<&'a str>,
    start_ms: f64,
    end_ms: Option<f64>,
    status: Option<u16>,
}

fn ms_since(origin: Instant, t: Instant) -> f64 {
    t.saturating_duration_since(origin).as_secs_f64() * 1000.0
}

/// Largest number of overlapping `[start, end]` intervals. An unfinished request counts as in flight
/// forever; a request that ends at the very instant another starts does not overlap it.
pub fn max_in_flight_of<'a>(requests: impl IntoIterator<Item = &'a LoggedRequest>) -> usize {
    // (time, +1 start / -1 end); ends sort before starts at the same instant.
    let mut events: Vec<(Instant, i8)> = Vec::new();
    for r in requests {
        events.push((r.start, 1));
        if let Some(end) = r.end {
            events.push((end.max(r.start), -1));
        }
    }
    events.sort();
    let (mut current, mut max) = (0usize, 0usize);
    for (_, delta) in events {
        if delta > 0 {
            current += 1;
            max = max.max(current);
        } else {
            current = current.saturating_sub(1);
        }
    }
    max
}

/// Gaps between consecutive request starts, sorted by start.
pub fn gaps_of<'a>(requests: impl IntoIterator<Item = &'a LoggedRequest>) -> Vec<Duration> {
    let mut starts: Vec<Instant> = requests.into_iter().map(|r| r.start).collect();
    starts.sort();
    starts.windows(2).map(|w| w[1].saturating_duration_since(w[0])).collect()
}

/// The live log the server writes into. Shared by the handler and response bodies.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    entries: Mutex<Vec<LoggedRequest>>,
}

impl Recorder {
    fn entries(&self) -> std::sync::MutexGuard<'_, Vec<LoggedRequest>> {
        // A panic elsewhere must not hide the log from the test that wants to print it.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Logs an arriving request and returns the guard that completes its entry.
    pub(crate) fn begin(
        self: &Arc<Self>,
        start: Instant,
        host: &str,
        method: &str,
        path: &str,
        headers: &HeaderMap,
    ) -> Completion {
        let headers = headers
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect();
        let mut entries = self.entries();
        let index = entries.len();
        entries.push(LoggedRequest {
            host: host.to_owned(),
            method: method.to_owned(),
            path: path.to_owned(),
            headers,
            start,
            end: None,
            status: None,
        });
        Completion { recorder: Arc::clone(self), index }
    }

    /// A copy of the log as it is now, in arrival order.
    pub(crate) fn snapshot(&self) -> RequestLog {
        RequestLog::from(self.entries().clone())
    }
}

/// Completes one log entry: records the status when the response head exists, and the end time
/// when dropped. It travels with the response body, so "dropped" means the body was sent, failed,
/// or the client went away.
#[derive(Debug)]
pub(crate) struct Completion {
    recorder: Arc<Recorder>,
    index: usize,
}

impl Completion {
    pub(crate) fn set_status(&self, status: u16) {
        if let Some(entry) = self.recorder.entries().get_mut(self.index) {
            entry.status = Some(status);
        }
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        let now = Instant::now();
        if let Some(entry) = self.recorder.entries().get_mut(self.index) {
            entry.end.get_or_insert(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(host: &str, origin: Instant, start_ms: u64, end_ms: Option<u64>) -> LoggedRequest {
        LoggedRequest {
            host: host.to_owned(),
            method: "GET".to_owned(),
            path: format!("/{start_ms}"),
            headers: vec![("user-agent".to_owned(), "ShoalBot/0".to_owned())],
            start: origin + Duration::from_millis(start_ms),
            end: end_ms.map(|e| origin + Duration::from_millis(e)),
            status: Some(200),
        }
    }

    #[test]
    fn in_flight_counts_overlaps_and_touching_intervals_do_not_overlap() {
        let o = Instant::now();
        // (start_ms, end_ms) intervals, expected maximum in flight.
        type Case = (&'static [(u64, Option<u64>)], usize);
        let cases: &[Case] = &[
            (&[], 0),
            (&[(0, Some(10))], 1),
            (&[(0, Some(10)), (10, Some(20))], 1),
            (&[(0, Some(10)), (5, Some(20))], 2),
            (&[(0, Some(100)), (10, Some(20)), (30, Some(40)), (35, Some(50))], 3),
            (&[(0, None), (50, Some(60))], 2),
        ];
        for (intervals, want) in cases {
            let log = RequestLog::from(intervals.iter().map(|&(s, e)| req("a.test", o, s, e)).collect::<Vec<_>>());
            assert_eq!(log.max_in_flight("a.test"), *want, "{intervals:?}\n{}", log.dump());
        }
    }

    #[test]
    fn gaps_and_per_host_filters() {
        let o = Instant::now();
        let log = RequestLog::from(vec![
            req("a.test", o, 0, Some(5)),
            req("b.test", o, 1, Some(5)),
            req("a.test", o, 300, Some(305)),
            req("a.test", o, 900, Some(905)),
        ]);
        assert_eq!(log.gaps("a.test"), vec![Duration::from_millis(300), Duration::from_millis(600)]);
        assert_eq!(log.min_gap("a.test"), Some(Duration::from_millis(300)));
        assert_eq!(log.min_gap("b.test"), None);
        assert_eq!(log.paths("a.test"), vec!["/0", "/300", "/900"]);
        assert_eq!(log.first_path("b.test").as_deref(), Some("/1"));
        assert_eq!(log.count("a.test", "/300"), 1);
        assert_eq!(log.hosts(), vec!["a.test", "b.test"]);
        assert_eq!(log.max_in_flight_where(|_| true), 2);
        assert!(log.any_header("User-Agent"));
        assert!(!log.any_header("cookie"));
        assert!(log.dump().contains("GET b.test /1"), "{}", log.dump());
        let json = log.to_json_lines(o);
        assert_eq!(json.lines().count(), 4);
        assert!(
            json.starts_with(
                r#"{"host":"a.test","method":"GET","path":"/0","user_agent":"ShoalBot/0","start_ms":0.0,"end_ms":5.0,"status":200}"#
            ),
            "{json}"
        );
    }
}
