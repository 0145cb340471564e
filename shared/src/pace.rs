//! Politeness arithmetic: how many requests may be in flight to a host and when the next may start.
//!
//! Pure code with the time passed in; the frontier back ends only store this state and apply it
//! atomically. Every rule of SPEC §4 that involves a number lives here. The Redis back end's Lua
//! mirror (`recompute` and `apply_signals` in `frontier-redis/src/lua/`) gets the constants from
//! here, generated into its prelude, and a differential test holds it to this code.

use crate::latency::{GuardChange, LatencyGuard, ServerSignals};
use crate::time::UnixMs;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::time::Duration;

/// Default requests in flight to one host.
pub const DEFAULT_MAX_IN_FLIGHT: u8 = 4;
/// The most a user may allow in flight to one host.
pub const MAX_IN_FLIGHT_LIMIT: u8 = 16;
/// Default gap between request starts to one host.
pub const DEFAULT_GAP: Duration = Duration::from_millis(300);
/// The largest gap a user may set; a Crawl-delay above it puts the host off limits.
pub const MAX_GAP: Duration = Duration::from_secs(60);
/// The gap of a host in slow mode (after a 429).
pub const SLOW_MODE_GAP: Duration = Duration::from_secs(3);
/// The in-flight cap of a host in slow mode.
pub const SLOW_MODE_MAX_IN_FLIGHT: u32 = 1;
/// Default requests in flight to one server IP, across all its hosts.
pub const DEFAULT_MAX_IN_FLIGHT_PER_IP: u16 = 8;
/// How often a 429, 5xx-class answer or network failure is retried.
pub const MAX_RETRIES: u8 = 2;
/// First back-off step when the server gave no Retry-After.
pub const BACKOFF_BASE: Duration = Duration::from_millis(500);
/// A retry that would wait longer than this is given up and reported instead.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);
/// A host's address is looked up again at least this often during a long audit, whatever its DNS
/// TTL says (a customer moving servers is followed within the hour) ...
pub const MAX_ADDRESS_TTL: Duration = Duration::from_secs(60 * 60);
/// ... and at most this often, so a TTL of a few seconds does not cost a lookup per request.
pub const MIN_ADDRESS_TTL: Duration = Duration::from_secs(60);
/// How long a host that no live audit uses keeps its pace state past its next allowed start, so
/// an audit that starts right after the last one still waits out the gap; then it is gone.
pub const HOST_LINGER: Duration = Duration::from_secs(60);

/// How long a looked-up address is used: its DNS TTL, clamped to [`MIN_ADDRESS_TTL`] ..=
/// [`MAX_ADDRESS_TTL`].
#[must_use]
pub fn address_ttl(dns_ttl: Duration) -> Duration {
    dns_ttl.clamp(MIN_ADDRESS_TTL, MAX_ADDRESS_TTL)
}

/// A pace setting outside the range users may choose.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PaceError {
    /// `--in-flight` outside 1..=16.
    #[error("in-flight limit {0} is outside 1..={MAX_IN_FLIGHT_LIMIT}")]
    InFlight(u32),
    /// `--gap-ms` over 60 s.
    #[error("gap of {0:?} is over the {MAX_GAP:?} maximum")]
    Gap(Duration),
}

/// The pace a user asked for, validated: 1..=16 in flight, a gap of 0..=60 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaceLimits {
    max_in_flight: u8,
    gap_ms: u32,
}

impl Default for PaceLimits {
    fn default() -> Self {
        PaceLimits { max_in_flight: DEFAULT_MAX_IN_FLIGHT, gap_ms: 300 }
    }
}

impl PaceLimits {
    /// Validates a user's setting.
    pub fn new(max_in_flight: u32, gap: Duration) -> Result<PaceLimits, PaceError> {
        let mif = u8::try_from(max_in_flight)
            .ok()
            .filter(|m| (1..=MAX_IN_FLIGHT_LIMIT).contains(m))
            .ok_or(PaceError::InFlight(max_in_flight))?;
        if gap > MAX_GAP {
            return Err(PaceError::Gap(gap));
        }
        Ok(PaceLimits { max_in_flight: mif, gap_ms: u32::try_from(gap.as_millis()).unwrap_or(u32::MAX) })
    }

    /// Requests allowed in flight.
    #[must_use]
    pub fn max_in_flight(&self) -> u32 {
        u32::from(self.max_in_flight)
    }

    /// Minimum time between request starts.
    #[must_use]
    pub fn gap(&self) -> Duration {
        Duration::from_millis(u64::from(self.gap_ms))
    }

    /// The stricter of two settings: when two audits share a host, it gets one pace, the politer.
    #[must_use]
    pub fn stricter(self, other: PaceLimits) -> PaceLimits {
        PaceLimits { max_in_flight: self.max_in_flight.min(other.max_in_flight), gap_ms: self.gap_ms.max(other.gap_ms) }
    }
}

/// What one live lane (a host of one site of one audit) asks of its host's pace: the user's limits
/// for that audit, and the Crawl-delay the lane's robots.txt set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneDemand {
    /// The audit's limits.
    pub limits: PaceLimits,
    /// Crawl-delay for our group in the lane's robots.txt, in milliseconds (at most [`MAX_GAP`]).
    pub crawl_delay_ms: Option<u32>,
}

impl LaneDemand {
    /// A lane whose robots.txt has not set a Crawl-delay (yet).
    #[must_use]
    pub fn new(limits: PaceLimits) -> LaneDemand {
        LaneDemand { limits, crawl_delay_ms: None }
    }

    /// The gap this lane asks for: its audit's gap, raised by its Crawl-delay.
    #[must_use]
    pub fn gap(&self) -> Duration {
        let cd = Duration::from_millis(u64::from(self.crawl_delay_ms.unwrap_or(0)));
        self.limits.gap().max(cd)
    }
}

/// The pace state of one host, shared by every worker and every audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPace {
    /// The user's limits (the stricter of all audits using the host).
    pub limits: PaceLimits,
    /// Requests currently leased to workers.
    pub in_flight: u32,
    /// No request may start before this.
    pub next_start_at: UnixMs,
    /// After a 429: 1 in flight, at least a 3 s gap, for the rest of the audit.
    pub slow: bool,
    /// The site's Crawl-delay for our group, in milliseconds, if any (at most [`MAX_GAP`]).
    pub crawl_delay_ms: Option<u32>,
    /// The latency guard: its level halves the in-flight cap and doubles the gap
    /// ([`crate::latency`]).
    pub guard: LatencyGuard,
    /// The gap a quota the server stated asks for, in milliseconds (0: none stated).
    pub quota_gap_ms: u32,
    /// Whether the guard's slow start limits the host ([`crate::latency`]): off with the guard.
    #[serde(default)]
    pub slow_start: bool,
}

impl HostPace {
    /// A fresh host: nothing in flight, free to start now.
    #[must_use]
    pub fn new(limits: PaceLimits) -> HostPace {
        HostPace {
            limits,
            in_flight: 0,
            next_start_at: UnixMs(0),
            slow: false,
            crawl_delay_ms: None,
            guard: LatencyGuard::default(),
            quota_gap_ms: 0,
            slow_start: true,
        }
    }

    /// The in-flight cap a claim meets: [`HostPace::max_in_flight`], lowered by the guard's slow
    /// start while it is on.
    #[must_use]
    pub fn allowed(&self) -> u32 {
        let mif = self.max_in_flight();
        if self.slow_start { mif.min(self.guard.allowed()) } else { mif }
    }

    /// The in-flight cap in force: 1 in slow mode, else the user's limit; halved per level of
    /// the latency guard.
    #[must_use]
    pub fn max_in_flight(&self) -> u32 {
        let mif = if self.slow { SLOW_MODE_MAX_IN_FLIGHT } else { self.limits.max_in_flight() };
        crate::latency::guarded(mif, Duration::ZERO, self.guard.level).0
    }

    /// The gap in force: the user's gap, raised by Crawl-delay and by a quota the server stated,
    /// at least 3 s in slow mode; doubled per level of the latency guard.
    #[must_use]
    pub fn gap(&self) -> Duration {
        let mut gap = self.limits.gap();
        if let Some(cd) = self.crawl_delay_ms {
            gap = gap.max(Duration::from_millis(u64::from(cd)));
        }
        gap = gap.max(Duration::from_millis(u64::from(self.quota_gap_ms)));
        if self.slow {
            gap = gap.max(SLOW_MODE_GAP);
        }
        crate::latency::guarded(1, gap, self.guard.level).1
    }

    /// Applies what an answer told about its server ([`ServerSignals`]) at `now`: a sample for the
    /// latency guard (workers send none with the guard off), a quota's gap, a hold (at most
    /// [`MAX_RETRY_WAIT`] ahead). Returns the guard's change of level, if any. A new gap counts
    /// from the host's last start, like any gap.
    /// `load` is the host's requests in flight when the answer came, itself included.
    pub fn apply_signals(&mut self, s: &ServerSignals, load: u32, now: UnixMs) -> Option<GuardChange> {
        let before = self.gap();
        let mut change = s.response_ms.and_then(|ms| self.guard.observe(ms, load));
        if let Some(q) = s.quota_gap_ms {
            if self.quota_gap_ms == 0 && q > 0 && change.is_none() {
                change = Some(GuardChange {
                    moved: crate::latency::GuardMove::Quota,
                    level: self.guard.level,
                    recent_ms: q,
                    baseline_ms: self.guard.baseline_ms,
                    server: None,
                });
            }
            self.quota_gap_ms = q;
        }
        let after = self.gap();
        if after > before {
            // The last start was at most `before` ago: push the next start by the difference.
            self.next_start_at = self.next_start_at.plus(after.saturating_sub(before));
        }
        if let Some(hold) = s.hold_until {
            self.next_start_at = self.next_start_at.max(hold.min(now.plus(MAX_RETRY_WAIT)));
        }
        change
    }

    /// When a request may start: `None` while every slot is taken (a completion frees one),
    /// otherwise the earliest start time (which may be in the past).
    #[must_use]
    pub fn ready_at(&self) -> Option<UnixMs> {
        (self.in_flight < self.allowed()).then_some(self.next_start_at)
    }

    /// Whether a request may start at `now`.
    #[must_use]
    pub fn can_start(&self, now: UnixMs) -> bool {
        self.ready_at().is_some_and(|t| t <= now)
    }

    /// Records a request starting at `now`. Callers check [`HostPace::can_start`] first; the
    /// back ends do both in one atomic step.
    pub fn start(&mut self, now: UnixMs) {
        self.in_flight += 1;
        self.next_start_at = now.plus(self.gap());
    }

    /// Gives back the gap a lease started at `started_at` under `gap` took, when nothing was sent
    /// under it and no start was given since (the host's next start is still the one that lease
    /// set): the next request may then start as if that lease had not been. The requests before
    /// it keep their gap: it was granted no sooner than a gap after them.
    pub fn give_back(&mut self, started_at: UnixMs, gap: Duration) {
        if self.next_start_at == started_at.plus(gap) {
            self.next_start_at = started_at;
        }
    }

    /// How many more requests may be in flight now (lanes parked on a full host wake this many).
    #[must_use]
    pub fn room(&self) -> u32 {
        self.allowed().saturating_sub(self.in_flight)
    }

    /// Records a request finishing (its slot is free again).
    pub fn finish(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// Sets the limits in force from what the live lanes of the host ask (the stricter of them
    /// all: fewest in flight, longest gap) and whether a live audit saw a 429 on it. Lanes and
    /// audits that ended ask nothing: a later audit of the host starts at its own pace. Returns
    /// false (and changes nothing) when no lane uses the host any more.
    pub fn combine(&mut self, demands: impl IntoIterator<Item = LaneDemand>, slow: bool) -> bool {
        let mut it = demands.into_iter();
        let Some(first) = it.next() else {
            return false;
        };
        let (mut limits, mut delay) = (first.limits, first.crawl_delay_ms);
        for d in it {
            limits = limits.stricter(d.limits);
            delay = delay.max(d.crawl_delay_ms);
        }
        self.limits = limits;
        self.crawl_delay_ms = delay;
        self.slow = slow;
        true
    }

    /// A 429 was seen at `now`: slow mode for the rest of the audit, and nothing for one slow gap.
    pub fn enter_slow_mode(&mut self, now: UnixMs) {
        self.slow = true;
        self.next_start_at = self.next_start_at.max(now.plus(self.gap()));
    }

    /// Applies a Crawl-delay from robots.txt, counted from `robots_started_at` (the robots.txt
    /// request itself is the previous start). Returns false when it is over [`MAX_GAP`]: the host
    /// is then off limits, since we never crawl faster than the site asked.
    pub fn set_crawl_delay(&mut self, delay: Duration, robots_started_at: UnixMs) -> bool {
        if delay > MAX_GAP {
            return false;
        }
        self.crawl_delay_ms = Some(u32::try_from(delay.as_millis()).unwrap_or(u32::MAX));
        self.next_start_at = self.next_start_at.max(robots_started_at.plus(self.gap()));
        true
    }
}

/// What to do after a 429, a 502/503/504, a timeout or a connection error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    /// Try again, not before this time.
    RetryAt(UnixMs),
    /// Stop and report the URL.
    GiveUp(GiveUpReason),
}

/// Why a retry was given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GiveUpReason {
    /// [`MAX_RETRIES`] retries were made already.
    RetriesExhausted,
    /// The server asked us to wait longer than [`MAX_RETRY_WAIT`].
    WaitTooLong {
        /// The wait asked for, in milliseconds.
        wait_ms: u64,
    },
}

/// Decides the next retry of a request that has already been retried `retries_done` times.
///
/// `retry_after` is the absolute time from the answer's Retry-After header, if any; without one
/// the wait doubles from 0.5 s.
#[must_use]
pub fn retry_decision(retries_done: u8, retry_after: Option<UnixMs>, now: UnixMs) -> RetryDecision {
    if retries_done >= MAX_RETRIES {
        return RetryDecision::GiveUp(GiveUpReason::RetriesExhausted);
    }
    let wait = match retry_after {
        Some(t) => t.since(now),
        None => BACKOFF_BASE * 2u32.pow(u32::from(retries_done)),
    };
    if wait > MAX_RETRY_WAIT {
        return RetryDecision::GiveUp(GiveUpReason::WaitTooLong {
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
        });
    }
    RetryDecision::RetryAt(now.plus(wait))
}

/// What an answer's status means for retries and pace (SPEC §4), before anything reads the answer.
///
/// The one place that says which statuses are "try again later": every request kind (page,
/// resource, external check, sitemap, probe) asks this. robots.txt retries more statuses (see
/// [`crate::robots::rules_for_status`]) but enters slow mode on the same ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusPace {
    /// The answer is final: interpret it.
    Final,
    /// 502, 503, 504: the server is struggling for now; retry on the [`retry_decision`] schedule.
    Retry,
    /// 429: retry on the same schedule, and the host enters slow mode
    /// ([`HostPace::enter_slow_mode`]) for the rest of the audit.
    SlowDown,
}

/// Classifies an answer's status; see [`StatusPace`].
#[must_use]
pub const fn status_pace(status: u16) -> StatusPace {
    match status {
        429 => StatusPace::SlowDown,
        502..=504 => StatusPace::Retry,
        _ => StatusPace::Final,
    }
}

/// Classifies an answer from its status and whether it carried a Retry-After that parsed: as
/// [`status_pace`], except that a 503 with Retry-After slows the host like a 429. A server that
/// says "unavailable, come back later" is overloaded, not briefly broken, and the site-audit bot
/// we follow reads it the same way.
#[must_use]
pub const fn answer_pace(status: u16, has_retry_after: bool) -> StatusPace {
    match (status, has_retry_after) {
        (503, true) => StatusPace::SlowDown,
        _ => status_pace(status),
    }
}

/// Parses a Retry-After value (delta seconds or an HTTP date) into an absolute time.
///
/// A date in the past means "now". Garbage gives `None`, which callers treat as no header.
#[must_use]
pub fn parse_retry_after(value: &str, now: UnixMs) -> Option<UnixMs> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(now.plus(Duration::from_secs(secs)));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    let ms =
        when.duration_since(std::time::UNIX_EPOCH).ok().map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Some(UnixMs(ms).max(now))
}

/// One answer as a server IP's guard sees it ([`IpPace::observe`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed {
    /// The answering host ([`crate::latency::host_tag`]).
    pub tag: u64,
    /// The answer's response time, in milliseconds.
    pub response_ms: u32,
    /// Our requests in flight to the IP when it came, itself included.
    pub load: u32,
    /// The host's baseline before this answer (0: none yet).
    pub host_base_ms: u32,
}

/// One server IP's pace: its requests in flight against its cap (default 8), and the latency
/// guard of every host at that address ([`crate::latency`]), which lowers the cap and spaces the
/// IP's requests while it is slowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IpPace {
    /// Requests in flight to this IP, across all its hosts and audits.
    pub in_flight: u32,
    /// The latency guard over the answers of all the IP's hosts.
    pub guard: LatencyGuard,
    /// No request to the IP starts before this while its guard is slowed.
    pub next_start_at: UnixMs,
    /// The last answer the guard saw, or the last start while it was slowed: the state ends
    /// [`HOST_LINGER`] after it once nothing is in flight (Redis: a relative expiry set then).
    pub touched_at: UnixMs,
    /// Which host each of the guard's recent samples came from ([`crate::latency::host_tag`]),
    /// newest first: it slows down only for slow answers of two hosts.
    pub hosts: [u64; crate::latency::GUARD_WINDOW],
}

impl IpPace {
    /// The cap in force: `cap` halved per level of the IP's guard, and lowered by its slow start
    /// when `slow_start` is on.
    #[must_use]
    pub fn cap(&self, cap: u16, slow_start: bool) -> u32 {
        let c = crate::latency::ip_cap(cap, self.guard.level);
        if slow_start { c.min(self.guard.allowed()) } else { c }
    }

    /// Whether one more request fits under `cap` (as lowered by the guard).
    #[must_use]
    pub fn has_room(&self, cap: u16, slow_start: bool) -> bool {
        self.in_flight < self.cap(cap, slow_start)
    }

    /// How many more requests fit under `cap` (lanes parked on a full IP wake this many).
    #[must_use]
    pub fn room(&self, cap: u16, slow_start: bool) -> u32 {
        self.cap(cap, slow_start).saturating_sub(self.in_flight)
    }

    /// Records a request to the IP starting at `now`: the next waits the guard's gap.
    pub fn start(&mut self, now: UnixMs) {
        self.in_flight += 1;
        if self.guard.level > 0 {
            self.next_start_at = now.plus(crate::latency::ip_gap(self.guard.level));
            self.touched_at = now;
        }
    }

    /// Records a request to the IP ending (answered, failed or expired).
    pub fn finish(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// Records one answer's response time from the host tagged `host` ([`crate::latency::host_tag`])
    /// at the IP, `load` our requests in flight to the IP when it came (itself included), and
    /// `host_base_ms` its host's baseline before it (0: none yet); the guard's change, if any. The
    /// answer counts as [`crate::latency::ip_sample`] says, and the guard slows down only when the
    /// slow answers among the recent ones came from at least two hosts: one slow site beside fast
    /// ones is its own pace.
    pub fn observe(&mut self, ip: IpAddr, host: Observed, now: UnixMs) -> Option<GuardChange> {
        self.touched_at = now;
        self.hosts.copy_within(0..crate::latency::GUARD_WINDOW - 1, 1);
        self.hosts[0] = host.tag;
        let hosts = self.hosts;
        let sample = crate::latency::ip_sample(host.response_ms, host.host_base_ms, self.guard.baseline_ms);
        self.guard
            .observe_gated(sample, host.load, |recent, base| crate::latency::slow_on_two_hosts(recent, &hosts, base))
            .map(|c| GuardChange { server: Some(ip), ..c })
    }

    /// Whether nothing is in flight and the guard's memory has run out (or never began): the
    /// entry can go.
    #[must_use]
    pub fn is_unused(&self, now: UnixMs) -> bool {
        self.in_flight == 0 && (self.guard.len == 0 || self.touched_at.plus(HOST_LINGER) <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: UnixMs = UnixMs(1_000_000);

    /// A host without the latency guard's slow start: its limits as the user set them.
    fn unpaced(limits: PaceLimits) -> HostPace {
        HostPace { slow_start: false, ..HostPace::new(limits) }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn an_ip_guard_lowers_the_cap_spaces_starts_and_outlives_in_flight_zero() {
        let ip = IpAddr::from([192, 0, 2, 1]);
        let mut p = IpPace::default();
        assert!(p.is_unused(T0), "nothing learnt, nothing in flight");
        let seen = |tag, response_ms| Observed { tag, response_ms, load: 4, host_base_ms: 0 };
        let one = [100, 100, 100, 100, 100, 2_000, 2_000, 2_000].map(|s| p.observe(ip, seen(1, s), T0));
        assert_eq!(one, [None; 8], "slow answers of one host are its own pace");
        let changes: Vec<_> = [2_000, 2_000].iter().filter_map(|s| p.observe(ip, seen(2, *s), T0)).collect();
        assert_eq!(changes.len(), 1);
        assert_eq!((changes[0].level, changes[0].server), (1, Some(ip)));
        assert_eq!((p.cap(8, false), p.room(8, false), p.has_room(8, false)), (4, 4, true));
        // Opened to 6 by the fast answers at load 4, closed to 3 by the first rise at 4.
        assert_eq!((p.guard.allowed(), p.cap(8, true), p.room(8, true)), (3, 3, 3), "and its slow start");
        p.start(T0);
        assert_eq!((p.in_flight, p.next_start_at), (1, T0.plus(ms(500))));
        p.in_flight = 0;
        assert!(!p.is_unused(T0.plus(HOST_LINGER - ms(1))), "kept while its level may matter");
        assert!(p.is_unused(T0.plus(HOST_LINGER)));
    }

    #[test]
    fn limits_are_validated() {
        assert!(PaceLimits::new(0, ms(0)).is_err());
        assert!(PaceLimits::new(17, ms(0)).is_err());
        assert!(PaceLimits::new(16, MAX_GAP).is_ok());
        assert!(PaceLimits::new(1, MAX_GAP + ms(1)).is_err());
        let p = PaceLimits::new(4, ms(300)).expect("valid");
        assert_eq!((p.max_in_flight(), p.gap()), (4, ms(300)));
        assert_eq!(PaceLimits::default(), p);
    }

    #[test]
    fn stricter_of_two_audits() {
        let a = PaceLimits::new(8, ms(100)).expect("valid");
        let b = PaceLimits::new(2, ms(50)).expect("valid");
        let s = a.stricter(b);
        assert_eq!((s.max_in_flight(), s.gap()), (2, ms(100)));
    }

    #[test]
    fn gap_and_in_flight_to_the_millisecond() {
        // The gap alone, without the slow start (see the next tests).
        let mut h = unpaced(PaceLimits::new(2, ms(300)).expect("valid"));
        assert!(h.can_start(T0));
        h.start(T0);
        assert!(!h.can_start(T0.plus(ms(299))), "gap not yet over");
        assert!(h.can_start(T0.plus(ms(300))), "gap over to the millisecond");
        h.start(T0.plus(ms(300)));
        assert_eq!(h.ready_at(), None, "both slots taken");
        assert!(!h.can_start(T0.plus(ms(10_000))));
        h.finish();
        assert_eq!(h.ready_at(), Some(T0.plus(ms(600))));
    }

    #[test]
    fn slow_mode_is_one_in_flight_and_three_seconds() {
        let mut h = HostPace::new(PaceLimits::default());
        h.start(T0);
        h.start(T0.plus(ms(300)));
        h.enter_slow_mode(T0.plus(ms(400)));
        h.finish();
        assert_eq!(h.max_in_flight(), 1);
        assert_eq!(h.gap(), SLOW_MODE_GAP);
        assert_eq!(h.ready_at(), None, "one still in flight, cap is 1");
        h.finish();
        assert_eq!(h.ready_at(), Some(T0.plus(ms(3_400))));
        h.start(T0.plus(ms(3_400)));
        assert_eq!(h.next_start_at, T0.plus(ms(6_400)));
    }

    #[test]
    fn a_lease_that_sent_nothing_gives_its_gap_back_unless_another_started_since() {
        let mut h = unpaced(PaceLimits::default());
        assert!(h.set_crawl_delay(Duration::from_secs(1), T0));
        h.start(T0.plus(ms(1_000)));
        h.finish();
        h.give_back(T0.plus(ms(1_000)), ms(1_000));
        assert_eq!(h.ready_at(), Some(T0.plus(ms(1_000))), "as if that lease had not been");
        h.start(T0.plus(ms(1_200)));
        h.give_back(T0.plus(ms(1_000)), ms(1_000));
        assert_eq!(h.next_start_at, T0.plus(ms(2_200)), "a later start keeps its gap");
    }

    #[test]
    fn crawl_delay_raises_gap_and_over_sixty_seconds_is_refused() {
        // The gap alone, without the slow start (see the next tests).
        let mut h = unpaced(PaceLimits::default());
        h.start(T0);
        assert!(h.set_crawl_delay(Duration::from_millis(1500), T0));
        assert_eq!(h.gap(), ms(1500));
        assert_eq!(h.ready_at(), Some(T0.plus(ms(1500))), "counted from the robots.txt start");
        h.finish();
        assert_eq!(h.ready_at(), Some(T0.plus(ms(1500))));
        assert!(h.set_crawl_delay(ms(100), T0));
        assert_eq!(h.gap(), ms(300), "crawl-delay never lowers the user's gap");
        assert!(!h.set_crawl_delay(Duration::from_secs(61), T0));
    }

    #[test]
    fn combined_pace_is_the_strictest_live_demand_and_ends_with_it() {
        let fast = PaceLimits::new(4, ms(100)).expect("valid");
        let slow = PaceLimits::new(2, ms(300)).expect("valid");
        let mut h = HostPace::new(fast);
        let polite = LaneDemand { limits: fast, crawl_delay_ms: Some(2_000) };
        assert!(h.combine([LaneDemand::new(fast), LaneDemand::new(slow), polite], false));
        assert_eq!((h.max_in_flight(), h.gap()), (2, ms(2_000)), "fewest in flight, longest gap, crawl-delay");
        assert!(h.combine([LaneDemand::new(fast)], true));
        assert_eq!((h.max_in_flight(), h.gap()), (1, SLOW_MODE_GAP), "a live audit saw a 429");
        assert!(h.combine([LaneDemand::new(fast)], false));
        assert_eq!((h.max_in_flight(), h.gap()), (4, ms(100)), "the others ended: the host's own pace again");
        assert!(!h.combine([], false), "no lane: nothing to combine");
        assert_eq!(polite.gap(), ms(2_000));
    }

    #[test]
    fn signals_slow_the_host_hold_it_and_apply_quotas() {
        let mut h = HostPace::new(PaceLimits::default());
        h.start(T0);
        let sample = |ms| ServerSignals { response_ms: Some(ms), ..ServerSignals::default() };
        for _ in 0..5 {
            assert_eq!(h.apply_signals(&sample(100), 4, T0), None);
        }
        let mut changes = Vec::new();
        for _ in 0..3 {
            changes.extend(h.apply_signals(&sample(2_000), 4, T0));
        }
        assert_eq!(changes.len(), 1, "slowed once");
        assert_eq!((h.max_in_flight(), h.gap()), (2, ms(600)), "half in flight, double gap");
        assert_eq!(h.next_start_at, T0.plus(ms(600)), "the doubled gap counts from the last start");
        let quota = ServerSignals { quota_gap_ms: Some(1_000), ..ServerSignals::default() };
        let noted = h.apply_signals(&quota, 4, T0).map(|c| (c.moved, c.recent_ms));
        assert_eq!(noted, Some((crate::latency::GuardMove::Quota, 1_000)), "a quota's first statement is noted");
        assert_eq!(h.apply_signals(&quota, 4, T0), None, "once");
        assert_eq!(h.gap(), ms(2_000), "the quota's gap, doubled by the guard");
        assert_eq!(h.next_start_at, T0.plus(ms(2_000)));
        let hold = ServerSignals { hold_until: Some(T0.plus(ms(5_000))), ..ServerSignals::default() };
        h.apply_signals(&hold, 4, T0);
        assert_eq!(h.ready_at(), Some(T0.plus(ms(5_000))), "held until Retry-After");
        let far = ServerSignals { hold_until: Some(T0.plus(Duration::from_secs(3_600))), ..ServerSignals::default() };
        h.apply_signals(&far, 4, T0);
        assert_eq!(h.next_start_at, T0.plus(MAX_RETRY_WAIT), "held at most a minute");
        h.enter_slow_mode(T0);
        assert_eq!((h.max_in_flight(), h.gap()), (1, ms(6_000)), "slow mode's 3 s, doubled");
    }

    #[test]
    fn a_new_host_starts_at_one_in_flight_unless_the_slow_start_is_off() {
        let mut h = HostPace::new(PaceLimits::new(4, ms(0)).expect("valid"));
        assert_eq!((h.max_in_flight(), h.allowed(), h.room()), (4, 1, 1));
        h.start(T0);
        assert_eq!(h.ready_at(), None, "one in flight: full");
        let sample = ServerSignals { response_ms: Some(20), ..ServerSignals::default() };
        h.apply_signals(&sample, 1, T0);
        h.finish();
        assert_eq!((h.allowed(), h.room()), (2, 2), "opened by an answer near its fastest");
        h.guard.open = 40;
        assert_eq!(h.allowed(), 4, "never past the host's own limit");
        let off = HostPace { slow_start: false, ..HostPace::new(PaceLimits::new(4, ms(0)).expect("valid")) };
        assert_eq!(off.allowed(), 4);
    }

    #[test]
    fn address_ttl_is_clamped_to_a_minute_and_an_hour() {
        assert_eq!(address_ttl(Duration::ZERO), MIN_ADDRESS_TTL);
        assert_eq!(address_ttl(Duration::from_secs(300)), Duration::from_secs(300));
        assert_eq!(address_ttl(Duration::from_secs(86_400)), MAX_ADDRESS_TTL);
    }

    #[test]
    fn retry_schedule() {
        assert_eq!(retry_decision(0, None, T0), RetryDecision::RetryAt(T0.plus(ms(500))));
        assert_eq!(retry_decision(1, None, T0), RetryDecision::RetryAt(T0.plus(ms(1000))));
        assert_eq!(retry_decision(2, None, T0), RetryDecision::GiveUp(GiveUpReason::RetriesExhausted));
        let ra = T0.plus(Duration::from_secs(5));
        assert_eq!(retry_decision(0, Some(ra), T0), RetryDecision::RetryAt(ra));
        let far = T0.plus(Duration::from_secs(61));
        assert_eq!(
            retry_decision(0, Some(far), T0),
            RetryDecision::GiveUp(GiveUpReason::WaitTooLong { wait_ms: 61_000 })
        );
        assert_eq!(
            retry_decision(0, Some(T0.plus(MAX_RETRY_WAIT)), T0),
            RetryDecision::RetryAt(T0.plus(MAX_RETRY_WAIT)),
            "exactly 60 s is still waited for"
        );
    }

    #[test]
    fn a_503_with_retry_after_slows_the_host() {
        assert_eq!(answer_pace(503, true), StatusPace::SlowDown);
        assert_eq!(answer_pace(503, false), StatusPace::Retry);
        assert_eq!(answer_pace(502, true), StatusPace::Retry, "only 503 means come back later");
        assert_eq!(answer_pace(429, false), StatusPace::SlowDown);
        assert_eq!(answer_pace(200, true), StatusPace::Final);
    }

    #[test]
    fn which_statuses_are_retried_and_which_slow_the_host() {
        for (status, pace) in [
            (200, StatusPace::Final),
            (301, StatusPace::Final),
            (404, StatusPace::Final),
            (428, StatusPace::Final),
            (429, StatusPace::SlowDown),
            (430, StatusPace::Final),
            (500, StatusPace::Final),
            (501, StatusPace::Final),
            (502, StatusPace::Retry),
            (503, StatusPace::Retry),
            (504, StatusPace::Retry),
            (505, StatusPace::Final),
            (599, StatusPace::Final),
        ] {
            assert_eq!(status_pace(status), pace, "HTTP {status}");
        }
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(parse_retry_after("2", T0), Some(T0.plus(Duration::from_secs(2))));
        assert_eq!(parse_retry_after(" 0 ", T0), Some(T0));
        let now = UnixMs(784_111_777_000 - 5_000);
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now), Some(UnixMs(784_111_777_000)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", T0.plus(Duration::from_secs(1_000_000_000))),
            Some(T0.plus(Duration::from_secs(1_000_000_000))),
            "past date means now"
        );
        assert_eq!(parse_retry_after("soon", T0), None);
        assert_eq!(parse_retry_after("-1", T0), None);
    }
}
