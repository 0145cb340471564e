//! Every request the checked tab makes, paused before it leaves Chromium (DevTools `Fetch`
//! domain): its target passes the browser's [`Gate`] (the worker's resolver and address guard),
//! then it goes on or fails with `BlockedByClient`, and a refusal is recorded with its full URL.
//! The same events count requests and bytes by type, the hosts the page loaded from, and the
//! third-party hosts that set cookies (tracking, for the consent check).
//!
//! This is the record, not the wall: whatever goes on still reaches the network only through the
//! worker's proxy (`proxy.rs`), which asks the same gate (the resolver remembers the address it
//! chose for a name, so both see one answer) and connects to exactly that address, and which also
//! serves what this tab's interception never sees (other tabs, prefetches, workers). Connections
//! the interception cannot pause (WebSockets, WebTransport, WebRTC, requests of workers and
//! service workers) are also refused before they start: the probe script (`js/probe.js`) replaces
//! their constructors and `navigator.serviceWorker.register` in every frame with ones that throw
//! `SecurityError`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::fetch::{ContinueRequestParams, EventRequestPaused, FailRequestParams};
use chromiumoxide::cdp::browser_protocol::network::{
    ErrorReason, EventLoadingFinished, EventResponseReceivedExtraInfo, ResourceType,
};
use chromiumoxide::listeners::EventStream;
use futures_util::StreamExt;
use shoal_shared::browser::ResourceTally;
use tracing::debug;

use super::proxy::Gate;

/// How many requests of one page are remembered (a page that makes more is still guarded).
const MAX_REQUESTS: usize = 5_000;
/// How many refused URLs are kept for the record.
pub(crate) const MAX_BLOCKED: usize = 50;

/// One request the page made.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) host: String,
    pub(crate) kind: &'static str,
    /// 0 before any interaction, 1 after the consent banner's Reject was clicked.
    pub(crate) phase: u8,
    pub(crate) bytes: u64,
    /// An answer came over the network (its response's extra info arrived, which Chromium sends
    /// only for what it did not take from its cache).
    pub(crate) network: bool,
}

/// What the page's requests showed so far; shared between the interception task and the check.
#[derive(Debug, Default)]
pub(crate) struct Net {
    pub(crate) phase: u8,
    pub(crate) seen: Vec<Seen>,
    by_network_id: HashMap<String, usize>,
    pub(crate) blocked: Vec<String>,
    /// Requests robots.txt kept back, `"URL (rule)"`.
    pub(crate) robots_blocked: Vec<String>,
    /// Hosts that answered with Set-Cookie (or had a cookie refused), by phase.
    pub(crate) cookie_hosts: HashSet<(String, u8)>,
}

pub(crate) type SharedNet = Arc<Mutex<Net>>;

pub(crate) fn lock(net: &SharedNet) -> std::sync::MutexGuard<'_, Net> {
    net.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Net {
    /// Requests and bytes by resource type, in a fixed order, for `phase` 0 (the first load).
    pub(crate) fn tallies(&self) -> Vec<ResourceTally> {
        let mut out: Vec<ResourceTally> = Vec::new();
        for kind in ["document", "script", "stylesheet", "image", "font", "xhr", "other"] {
            let of: Vec<&Seen> = self.seen.iter().filter(|s| s.phase == 0 && s.kind == kind).collect();
            if !of.is_empty() {
                out.push(ResourceTally {
                    kind: kind.to_owned(),
                    requests: u32::try_from(of.len()).unwrap_or(u32::MAX),
                    bytes: of.iter().map(|s| s.bytes).sum(),
                });
            }
        }
        out
    }

    /// Distinct hosts requested in `phase`, sorted.
    pub(crate) fn hosts(&self, phase: u8) -> Vec<String> {
        let mut hosts: Vec<String> = self.seen.iter().filter(|s| s.phase == phase).map(|s| s.host.clone()).collect();
        hosts.sort();
        hosts.dedup();
        hosts
    }
}

/// The resource kinds of the record.
fn kind(t: &ResourceType) -> &'static str {
    match t {
        ResourceType::Document => "document",
        ResourceType::Script => "script",
        ResourceType::Stylesheet => "stylesheet",
        ResourceType::Image => "image",
        ResourceType::Font => "font",
        ResourceType::Xhr | ResourceType::Fetch | ResourceType::EventSource => "xhr",
        _ => "other",
    }
}

/// The listeners, registered before interception is switched on so no paused request is missed.
pub(crate) struct Listeners {
    paused: EventStream<EventRequestPaused>,
    finished: EventStream<EventLoadingFinished>,
    extra: EventStream<EventResponseReceivedExtraInfo>,
}

impl std::fmt::Debug for Listeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Listeners")
    }
}

pub(crate) async fn listen(page: &Page) -> Result<Listeners, String> {
    let e = |e: chromiumoxide::error::CdpError| e.to_string();
    Ok(Listeners {
        paused: page.event_listener::<EventRequestPaused>().await.map_err(e)?,
        finished: page.event_listener::<EventLoadingFinished>().await.map_err(e)?,
        extra: page.event_listener::<EventResponseReceivedExtraInfo>().await.map_err(e)?,
    })
}

enum Event {
    Paused(Arc<EventRequestPaused>),
    Finished(Arc<EventLoadingFinished>),
    Extra(Arc<EventResponseReceivedExtraInfo>),
}

/// Answers every paused request of `page` and records what it saw in `net`, until the page's
/// event streams end (the page closed) or the task is aborted.
pub(crate) async fn run(page: Page, listeners: Listeners, (gate, robots): (Gate, super::RobotsCheck), net: SharedNet) {
    let Listeners { paused, finished, extra } = listeners;
    let events = futures_util::stream::select(
        paused.map(Event::Paused),
        futures_util::stream::select(finished.map(Event::Finished), extra.map(Event::Extra)),
    );
    let mut events = std::pin::pin!(events);
    let mut answers: HashMap<(String, u16), Result<(), String>> = HashMap::new();
    while let Some(event) = events.next().await {
        match event {
            Event::Paused(p) => {
                // robots.txt first: a disallowed request is held back before any address is asked.
                let disallowed = url::Url::parse(&p.request.url).ok().and_then(|u| robots(&u));
                let verdict = match &disallowed {
                    Some(rule) => Err(format!("robots.txt: {rule}")),
                    None => decide(&p.request.url, &gate, &mut answers).await,
                };
                {
                    let mut n = lock(&net);
                    let phase = n.phase;
                    if n.seen.len() < MAX_REQUESTS {
                        let host = url::Url::parse(&p.request.url)
                            .ok()
                            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
                            .unwrap_or_default();
                        if !host.is_empty() && verdict.is_ok() {
                            let idx = n.seen.len();
                            n.seen.push(Seen { host, kind: kind(&p.resource_type), phase, bytes: 0, network: false });
                            if let Some(id) = &p.network_id {
                                n.by_network_id.insert(id.inner().clone(), idx);
                            }
                        }
                    }
                    if let Some(rule) = &disallowed {
                        debug!(url = %p.request.url, rule, "browser request held back by robots.txt");
                        let entry = format!("{} ({rule})", p.request.url);
                        if n.robots_blocked.len() < MAX_BLOCKED && !n.robots_blocked.contains(&entry) {
                            n.robots_blocked.push(entry);
                        }
                    } else if let Err(why) = &verdict {
                        debug!(url = %p.request.url, why = %why, "browser request refused");
                        if n.blocked.len() < MAX_BLOCKED && !n.blocked.contains(&p.request.url) {
                            n.blocked.push(p.request.url.clone());
                        }
                    }
                }
                let answered = match verdict {
                    Ok(()) => page.execute(ContinueRequestParams::new(p.request_id.clone())).await.map(|_| ()),
                    Err(_) => page
                        .execute(FailRequestParams::new(p.request_id.clone(), ErrorReason::BlockedByClient))
                        .await
                        .map(|_| ()),
                };
                if let Err(e) = answered {
                    debug!(error = %e, "paused request could not be answered (page gone?)");
                }
            }
            Event::Finished(f) => {
                let mut n = lock(&net);
                if let Some(&idx) = n.by_network_id.get(f.request_id.inner()) {
                    // Bytes on the wire, headers included: what the visitor downloads.
                    let bytes = if f.encoded_data_length.is_finite() && f.encoded_data_length > 0.0 {
                        f.encoded_data_length as u64
                    } else {
                        0
                    };
                    n.seen[idx].bytes = bytes;
                }
            }
            Event::Extra(x) => {
                {
                    let mut n = lock(&net);
                    if let Some(&idx) = n.by_network_id.get(x.request_id.inner()) {
                        n.seen[idx].network = true;
                    }
                }
                let sets_cookie = !x.blocked_cookies.is_empty()
                    || x.headers
                        .inner()
                        .as_object()
                        .is_some_and(|h| h.keys().any(|k| k.eq_ignore_ascii_case("set-cookie")));
                if sets_cookie {
                    let mut n = lock(&net);
                    if let Some(&idx) = n.by_network_id.get(x.request_id.inner()) {
                        let entry = (n.seen[idx].host.clone(), n.seen[idx].phase);
                        n.cookie_hosts.insert(entry);
                    }
                }
            }
        }
    }
}

/// Whether the request to `url` may go out: `Err` says why not. One verdict per host and port
/// for the page (`answers`).
async fn decide(
    url: &str,
    gate: &Gate,
    answers: &mut HashMap<(String, u16), Result<(), String>>,
) -> Result<(), String> {
    let Ok(parsed) = url::Url::parse(url) else {
        return Err("not a URL".to_owned());
    };
    match parsed.scheme() {
        // No network: the page's own data.
        "data" | "blob" | "about" => return Ok(()),
        "http" | "https" | "ws" | "wss" => {}
        other => return Err(format!("scheme {other} is not allowed")),
    }
    let Some(host) = parsed.host_str() else { return Err("no host".to_owned()) };
    let port = parsed.port_or_known_default().unwrap_or(80);
    let key = (host.to_ascii_lowercase(), port);
    if let Some(known) = answers.get(&key) {
        return known.clone();
    }
    let verdict = gate.admit(host, port).await.map(|_| ());
    answers.insert(key, verdict.clone());
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn decide_checks_literals_the_resolve_map_and_schemes_with_the_workers_resolver() {
        let fetcher = |allow_private| {
            let settings = crate::fetch::FetchSettings {
                allow_private,
                no_dns: true,
                resolve: [
                    ("a.test".to_owned(), "127.0.0.1".parse().expect("ip")),
                    ("pub.test".to_owned(), "93.184.216.34".parse().expect("ip")),
                ]
                .into_iter()
                .collect(),
                ..crate::fetch::FetchSettings::default()
            };
            crate::fetch::Fetcher::new(settings).expect("fetcher")
        };
        let strict = Gate::guarded(fetcher(false), Vec::new());
        let mut answers = HashMap::new();
        for (url, ok) in [
            ("http://169.254.169.254/latest/meta-data/", false),
            ("http://10.0.0.1/", false),
            ("http://[::1]:8080/", false),
            ("http://a.test:1234/x", false),
            ("http://pub.test/x", true),
            ("data:text/plain,hi", true),
            ("file:///etc/passwd", false),
            ("http://93.184.216.34/", true),
            // Not in --resolve, and DNS is off: the system resolver is never asked.
            ("http://localhost:8080/", false),
        ] {
            assert_eq!(decide(url, &strict, &mut answers).await.is_ok(), ok, "{url}");
        }
        let open = Gate::guarded(fetcher(true), vec!["127.0.0.2".parse().expect("ip")]);
        let mut answers = HashMap::new();
        assert!(decide("http://pub.test/x", &Gate::Closed, &mut answers).await.is_err());
        let mut answers = HashMap::new();
        assert!(decide("http://a.test:1/", &open, &mut answers).await.is_ok());
        assert!(decide("http://127.0.0.2:1/", &open, &mut answers).await.is_err());
    }

    #[test]
    fn tallies_count_the_first_load_by_kind() {
        let s = |host: &str, kind, phase, bytes| Seen { host: host.into(), kind, phase, bytes, network: true };
        let net = Net {
            seen: vec![
                s("a.test", "document", 0, 1000),
                s("a.test", "image", 0, 5000),
                s("b.test", "image", 0, 10),
                s("b.test", "script", 1, 77),
            ],
            ..Net::default()
        };
        let t = net.tallies();
        assert_eq!(
            t.iter().map(|t| (t.kind.as_str(), t.requests, t.bytes)).collect::<Vec<_>>(),
            [("document", 1, 1000), ("image", 2, 5010)]
        );
        assert_eq!(net.hosts(0), ["a.test", "b.test"]);
        assert_eq!(net.hosts(1), ["b.test"]);
    }
}
