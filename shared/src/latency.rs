//! The latency guard: slow down before a server hurts (issue 17), and find its pace from its
//! fastest answers with a slow start (issue 41).
//!
//! Many small servers never answer 429; they get slower until they fall over. The guard keeps, per
//! host, a *baseline* of its response times (time to the answer's head), the last
//! [`GUARD_WINDOW`] samples and a *slow start*: how many requests it may have in flight. Each
//! answer comes with its *load*: our requests in flight there when it came, itself included. The
//! rule, applied on every sample:
//!
//! - **Baseline: the fastest answers.** The first answer sets it, a faster one lowers it at once
//!   (as congestion control keeps the lowest round-trip time), and a slower one raises it only
//!   slowly: an average in which the sample weighs 1/8 ([`GUARD_BASE_WEIGHT`]) and counts at most
//!   1.25 times the baseline ([`GUARD_BASE_CAP`]), about 3 % per answer, so answers we queued
//!   ourselves cannot lift the bar they are judged by, while a host whose usual time is longer
//!   than its first answers suggested is followed within some dozens of answers. Only pages are
//!   samples (the worker sends none for robots.txt, resources or sitemaps, which a server often
//!   answers from static files far faster than its pages: such a baseline would make every page
//!   look slow).
//! - **A rise** is an answer at least [`GUARD_STEP_RATIO`] (1.5) times the baseline *and*
//!   [`GUARD_MIN_RISE`] (100 ms) above it: relative for fast sites, with a floor that jitter of a
//!   few milliseconds never reaches.
//! - **Slow start.** A new host starts at 1 request in flight ([`LatencyGuard::open`]). An answer
//!   that is not a rise, taken while every allowed slot was in use (load at least `open`), opens
//!   one more: a fast healthy host at `--in-flight 4` is at 4 after its first three answers. A
//!   rise at load 2 or more closes back to load - 1 and sets a *ceiling* at that load, which the
//!   slow start never reaches again while the state lives: a server whose answers grow with our
//!   in-flight count stays at the count where they did not, and its queue shows at the first step,
//!   before the site hurts.
//! - **Slow down** when the recent median (once [`GUARD_MIN_SAMPLES`] were seen) is at least
//!   [`GUARD_RATIO`] (2) times the baseline *and* at least [`GUARD_MIN_RISE`] above it, so a
//!   0.12 s site that turns 0.4 s is slowed: one level more (at most [`GUARD_MAX_LEVEL`]), each
//!   level halving the in-flight limit (never below 1) and doubling the gap (from at least
//!   [`GUARD_FLOOR_GAP`], at most [`crate::pace::MAX_GAP`]). After a change the guard waits
//!   [`GUARD_SETTLE`] samples (answers to requests sent at the new pace) before it slows further.
//! - **Restore** one level when the recent median has been *calm* (below 1.5 times the baseline,
//!   [`GUARD_CALM_RATIO`], or less than [`GUARD_CALM_RISE`] above it) for [`GUARD_RECOVER`]
//!   samples in a row.
//!
//! The same rule runs a second time per **server IP**, on the answers of every host at that
//! address, with the IP's own slow start (the IP's cap starts at 1 and opens the same way, so a
//! shared server's opening burst of every host's robots.txt is one request, then two, ...). An
//! answer counts at the IP as it came only when it is a rise against its own host's baseline (or
//! its host has none yet); otherwise it counts as the IP's baseline ([`ip_sample`]): a slow site
//! beside fast ones at one address is that site's own pace, not the server slowing down. The IP's
//! guard slows down only when the slow answers in its window come from at least two hosts
//! ([`LatencyGuard::observe_gated`]). Each IP level halves the IP's in-flight cap (never below 1)
//! and spaces all requests to the IP [`ip_gap`] apart (none at level 0).
//!
//! The slow start applies only while the guard is on (`--no-latency-guard` sends no samples, and
//! the frontier then starts every host at its full limit: [`crate::frontier::FrontierSettings`]'s
//! `slow_start`).
//!
//! The state is a few numbers per host and per IP. A host's lives with the host's pace state and
//! ends when the host does; an IP's outlives the IP's last request in flight (the next request
//! must meet the same level) and ends [`crate::pace::HOST_LINGER`] after its last answer or
//! slowed start, in both frontier back ends. Pure arithmetic, the time passed in; the Redis back end mirrors it in
//! `frontier-redis/src/lua/latency.lua` (`observe`, `apply_signals`), with the constants here
//! generated into its prelude (`frontier-redis/src/keys.rs`, `lua_prelude`); the shared conformance
//! suite checks both back ends, and frontier-redis's differential test holds the Lua to this code
//! case by case.

use crate::time::UnixMs;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::time::Duration;

/// How many recent samples the median is taken over.
pub const GUARD_WINDOW: usize = 5;
/// Samples needed before the guard's median decides a level (the slow start acts from the first).
pub const GUARD_MIN_SAMPLES: u8 = 3;
/// The recent median must be at least this many times the baseline ...
pub const GUARD_RATIO: u32 = 2;
/// ... and at least this much above it, for the guard to slow down; an answer this much above the
/// baseline (and [`GUARD_STEP_RATIO`] times it) is a rise for the slow start.
pub const GUARD_MIN_RISE: Duration = Duration::from_millis(100);
/// A recent median under 1.5x the baseline, or less than this above it, is calm.
pub const GUARD_CALM_RISE: Duration = Duration::from_millis(50);
/// An answer at least this fraction of the baseline (numerator, denominator: 1.5) and
/// [`GUARD_MIN_RISE`] above it is a rise: the slow start closes (a request queued behind one
/// other on a one-at-a-time server takes twice the baseline, well past it).
pub const GUARD_STEP_RATIO: (u32, u32) = (3, 2);
/// Where the slow start's count stops (it is not a limit: the host's and IP's own caps are).
pub const GUARD_OPEN_MAX: u16 = u16::MAX;
/// The most halvings: 1/8 of the in-flight limit, 8 times the gap.
pub const GUARD_MAX_LEVEL: u8 = 3;
/// Samples after a change before the guard slows down further.
pub const GUARD_SETTLE: u8 = 5;
/// Calm samples in a row before the guard restores one level.
pub const GUARD_RECOVER: u8 = 10;
/// The gap a slowed host's gap is doubled from, when the user's gap is smaller (a gap of 0 would
/// stay 0).
pub const GUARD_FLOOR_GAP: Duration = Duration::from_millis(250);
/// The baseline is an average in which each new sample weighs 1/`GUARD_BASE_WEIGHT` (rounded to
/// the nearest millisecond) ...
pub const GUARD_BASE_WEIGHT: u32 = 8;
/// ... and counts at most this fraction of the baseline (numerator, denominator: 1.25), so the
/// baseline rises at most about 3 % per answer.
pub const GUARD_BASE_CAP: (u32, u32) = (5, 4);
/// A recent median under this fraction of the baseline (numerator, denominator: 1.5), or less
/// than [`GUARD_CALM_RISE`] above it, is calm.
pub const GUARD_CALM_RATIO: (u32, u32) = (3, 2);
/// Where the guard's counters ([`LatencyGuard::since_change`], [`LatencyGuard::calm`]) stop: they
/// are bytes and saturate.
pub const GUARD_COUNT_MAX: u8 = u8::MAX;

/// One host's latency state: a baseline, the recent samples and the guard's level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LatencyGuard {
    /// The baseline response time in milliseconds; 0 until [`GUARD_MIN_SAMPLES`] were seen.
    pub baseline_ms: u32,
    /// The last samples, newest first; `len` of them are set.
    pub recent: [u32; GUARD_WINDOW],
    /// How many of `recent` are set.
    pub len: u8,
    /// Halvings in force (0: the host's own pace).
    pub level: u8,
    /// Samples since the last change of level.
    pub since_change: u8,
    /// Calm samples in a row.
    pub calm: u8,
    /// The slow start: requests allowed in flight (0 and 1 both mean one: a fresh guard).
    #[serde(default)]
    pub open: u16,
    /// The load at which answers rose ([`LatencyGuard::observe`]); the slow start stays below it
    /// (0: none seen).
    #[serde(default)]
    pub ceiling: u16,
}

/// Which way the guard moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GuardMove {
    /// Responses got slow: one level slower.
    Slowed,
    /// Responses recovered: one level back.
    Restored,
    /// The server stated a quota (RateLimit headers) for the first time: its gap is in force.
    /// The change's `recent_ms` is then the quota's gap.
    Quota,
}

/// A change of the guard's level, with the figures that caused it (for the log, the metric and
/// the site's report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardChange {
    /// Which way.
    pub moved: GuardMove,
    /// The level now in force.
    pub level: u8,
    /// The recent median response time, in milliseconds.
    pub recent_ms: u32,
    /// The baseline, in milliseconds.
    pub baseline_ms: u32,
    /// `None` for the host's own guard; the server's address for the guard of every host on it.
    #[serde(default)]
    pub server: Option<IpAddr>,
}

impl GuardChange {
    /// The note for the site's report, e.g. "we slowed down at 10:42 UTC because responses took
    /// 3.1 s instead of 0.2 s (...)".
    #[must_use]
    pub fn describe(&self, at: UnixMs) -> String {
        let hhmm = at.to_rfc3339().get(11..16).unwrap_or("").to_owned();
        let (recent, base) = (secs(self.recent_ms), secs(self.baseline_ms));
        if let Some(ip) = self.server {
            let (cap, gap) = (1u32 << self.level, secs(millis_u32(ip_gap(self.level))));
            return match self.moved {
                GuardMove::Restored => format!(
                    "we sped up again at {hhmm} UTC: responses from the site's server {ip} took {recent} s, \
                     near the usual {base} s (requests in flight to that server divided by {cap}, \
                     at least {gap} s apart)"
                ),
                _ => format!(
                    "we slowed down at {hhmm} UTC because responses from the site's server {ip}, \
                     counting every host we audit there, took {recent} s instead of {base} s \
                     (requests in flight to that server divided by {cap}, at least {gap} s apart)"
                ),
            };
        }
        match self.moved {
            GuardMove::Slowed => format!(
                "we slowed down at {hhmm} UTC because responses took {recent} s instead of {base} s \
                 (in-flight limit divided by {}, gap multiplied by {})",
                1u32 << self.level,
                1u32 << self.level
            ),
            GuardMove::Quota => format!(
                "we slowed down at {hhmm} UTC because the server stated a request quota \
                 (RateLimit headers): one request every {recent} s at most"
            ),
            GuardMove::Restored => format!(
                "we sped up again at {hhmm} UTC: responses took {recent} s, near the usual {base} s \
                 (in-flight limit divided by {}, gap multiplied by {})",
                1u32 << self.level,
                1u32 << self.level
            ),
        }
    }
}

/// Milliseconds as seconds with one decimal (`3100` → `3.1`).
fn secs(ms: u32) -> String {
    let tenths = (u64::from(ms) + 50) / 100;
    format!("{}.{}", tenths / 10, tenths % 10)
}

/// The lower median of `v` (not empty).
fn median(v: &[u32]) -> u32 {
    let mut s = v.to_vec();
    s.sort_unstable();
    s.get((s.len().saturating_sub(1)) / 2).copied().unwrap_or(0)
}

impl LatencyGuard {
    /// The recent median, once there are samples.
    #[must_use]
    pub fn recent_median(&self) -> Option<u32> {
        let n = usize::from(self.len).min(GUARD_WINDOW);
        (n > 0).then(|| median(&self.recent[..n]))
    }

    /// Requests the slow start allows in flight: 1 for a fresh guard.
    #[must_use]
    pub fn allowed(&self) -> u32 {
        u32::from(self.open.max(1))
    }

    /// Records one response time, taken at `load` (our requests in flight there when it came,
    /// itself included), and applies the rule (see the module's doc); the change of level, if any.
    pub fn observe(&mut self, sample_ms: u32, load: u32) -> Option<GuardChange> {
        self.observe_gated(sample_ms, load, |_, _| true)
    }

    /// [`LatencyGuard::observe`], slowing down only if `may_slow(recent samples newest first,
    /// baseline)` agrees as well (a server IP's guard asks that the slow ones come from two hosts).
    pub fn observe_gated(
        &mut self,
        sample_ms: u32,
        load: u32,
        may_slow: impl FnOnce(&[u32], u32) -> bool,
    ) -> Option<GuardChange> {
        self.recent.copy_within(0..GUARD_WINDOW - 1, 1);
        self.recent[0] = sample_ms;
        self.len = self.len.saturating_add(1).min(GUARD_WINDOW as u8);
        self.since_change = self.since_change.saturating_add(1);
        self.baseline_ms = next_baseline(self.baseline_ms, sample_ms);
        self.step(sample_ms, load);
        if self.len < GUARD_MIN_SAMPLES {
            return None;
        }
        let m = self.recent_median()?;
        let base = u64::from(self.baseline_ms);
        let m64 = u64::from(m);
        let rise = m64.saturating_sub(base);
        let trouble = m64 >= base * u64::from(GUARD_RATIO) && rise >= millis(GUARD_MIN_RISE);
        let (calm_num, calm_den) = (u64::from(GUARD_CALM_RATIO.0), u64::from(GUARD_CALM_RATIO.1));
        let calm = m64 * calm_den < base * calm_num || rise < millis(GUARD_CALM_RISE);
        self.calm = if calm { self.calm.saturating_add(1) } else { 0 };
        let n = usize::from(self.len).min(GUARD_WINDOW);
        let moved = if trouble
            && self.level < GUARD_MAX_LEVEL
            && self.since_change >= GUARD_SETTLE
            && may_slow(&self.recent[..n], self.baseline_ms)
        {
            self.level += 1;
            GuardMove::Slowed
        } else if calm && self.level > 0 && self.calm >= GUARD_RECOVER {
            self.level -= 1;
            GuardMove::Restored
        } else {
            return None;
        };
        self.since_change = 0;
        self.calm = 0;
        Some(GuardChange { moved, level: self.level, recent_ms: m, baseline_ms: self.baseline_ms, server: None })
    }

    /// The slow start's step on one answer (see the module's doc).
    fn step(&mut self, sample_ms: u32, load: u32) {
        let load = u16::try_from(load).unwrap_or(u16::MAX);
        let open = self.open.max(1);
        if is_rise(sample_ms, self.baseline_ms) {
            if load >= 2 {
                self.ceiling = if self.ceiling == 0 { load } else { self.ceiling.min(load) };
                self.open = open.min(load - 1);
            }
        } else if load >= open && open < GUARD_OPEN_MAX && (self.ceiling == 0 || open + 1 < self.ceiling) {
            self.open = open + 1;
        }
    }
}

/// The baseline after one more answer (see the module's doc): the first sets it, a faster one
/// lowers it, a slower one raises it by at most about 3 %. At least 1 ms.
fn next_baseline(base: u32, sample_ms: u32) -> u32 {
    if base == 0 || sample_ms <= base {
        return sample_ms.max(1);
    }
    let (b, s) = (u64::from(base), u64::from(sample_ms));
    let (cap_num, cap_den) = (u64::from(GUARD_BASE_CAP.0), u64::from(GUARD_BASE_CAP.1));
    let counted = s.min(b * cap_num / cap_den);
    let w = u64::from(GUARD_BASE_WEIGHT);
    u32::try_from((b * (w - 1) + counted + w / 2) / w).unwrap_or(u32::MAX).max(1)
}

/// Whether one answer is a rise against `baseline_ms` (none without a baseline):
/// [`GUARD_STEP_RATIO`] times it and [`GUARD_MIN_RISE`] above it.
#[must_use]
pub fn is_rise(sample_ms: u32, baseline_ms: u32) -> bool {
    let (s, b) = (u64::from(sample_ms), u64::from(baseline_ms));
    let (num, den) = (u64::from(GUARD_STEP_RATIO.0), u64::from(GUARD_STEP_RATIO.1));
    b > 0 && s * den >= b * num && s.saturating_sub(b) >= millis(GUARD_MIN_RISE)
}

/// What an answer counts as at its server IP's guard: as it came when it is a rise against its own
/// host's baseline `host_base_ms` (taken before this answer; 0 when the host has none yet), else
/// at most the IP's baseline `ip_base_ms` (when it has one): a site slow at rest beside fast ones
/// is its own pace, and neither raises the IP's baseline nor counts as the server slowing down.
#[must_use]
pub fn ip_sample(sample_ms: u32, host_base_ms: u32, ip_base_ms: u32) -> u32 {
    if host_base_ms > 0 && ip_base_ms > 0 && !is_rise(sample_ms, host_base_ms) {
        sample_ms.min(ip_base_ms)
    } else {
        sample_ms
    }
}

fn millis_u32(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX)
}

/// The gap between any two requests to a server IP whose guard is at `level`: none at level 0,
/// then [`GUARD_FLOOR_GAP`] doubled per level (0.5 s, 1 s, 2 s).
#[must_use]
pub fn ip_gap(level: u8) -> Duration {
    guarded(1, Duration::ZERO, level).1
}

/// The in-flight cap of a server IP whose guard is at `level`: `cap` halved per level, at least 1.
#[must_use]
pub fn ip_cap(cap: u16, level: u8) -> u32 {
    guarded(u32::from(cap), Duration::ZERO, level).0
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Whether one answer is slow against `baseline_ms` by the guard's rule ([`GUARD_RATIO`] times
/// and [`GUARD_MIN_RISE`] above it).
#[must_use]
pub fn is_slow(sample_ms: u32, baseline_ms: u32) -> bool {
    let (s, b) = (u64::from(sample_ms), u64::from(baseline_ms));
    s >= b * u64::from(GUARD_RATIO) && s.saturating_sub(b) >= millis(GUARD_MIN_RISE)
}

/// A stable tag of a host name for a server IP's window (FNV-1a, 64 bits): only whether two
/// answers came from the same host matters.
#[must_use]
pub fn host_tag(host: &str) -> u64 {
    host.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Whether the slow answers among `recent` (against `baseline_ms`) came from at least two of
/// the hosts `tags` (aligned with `recent`).
#[must_use]
pub fn slow_on_two_hosts(recent: &[u32], tags: &[u64], baseline_ms: u32) -> bool {
    let mut first = None;
    for (s, t) in recent.iter().zip(tags) {
        if is_slow(*s, baseline_ms) {
            match first {
                None => first = Some(*t),
                Some(f) if f != *t => return true,
                Some(_) => {}
            }
        }
    }
    false
}

/// The in-flight limit and gap with the guard's `level` applied: the limit halved per level (never
/// below 1), the gap doubled per level from at least [`GUARD_FLOOR_GAP`] (never over
/// [`crate::pace::MAX_GAP`] unless it already was).
#[must_use]
pub fn guarded(max_in_flight: u32, gap: Duration, level: u8) -> (u32, Duration) {
    if level == 0 {
        return (max_in_flight, gap);
    }
    let level = u32::from(level.min(GUARD_MAX_LEVEL));
    let mif = (max_in_flight >> level).max(1);
    let doubled = gap.max(GUARD_FLOOR_GAP) * (1u32 << level);
    (mif, doubled.min(crate::pace::MAX_GAP).max(gap))
}

/// What an answer told about its server, beyond its own content, for the frontier to apply to
/// the host's pace in one atomic step with the completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ServerSignals {
    /// The time to the answer's head, in milliseconds: a sample for the latency guard (`None`
    /// without an answer, or with the guard off).
    pub response_ms: Option<u32>,
    /// The gap a quota the server stated asks for (RateLimit headers), in milliseconds: the host's
    /// gap is at least this until an answer says otherwise.
    pub quota_gap_ms: Option<u32>,
    /// Nothing may start on the host before this: a Retry-After of a 429 or 503, or a quota used
    /// up until its reset.
    pub hold_until: Option<UnixMs>,
}

impl ServerSignals {
    /// Whether there is nothing to apply.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == ServerSignals::default()
    }
}

/// The site's note of a guard change: a `slowed_down` finding on the host's root, for the audit
/// whose answer caused it.
#[must_use]
pub fn guard_note(task: &crate::task::Task, change: &GuardChange, at: UnixMs) -> crate::finding::Finding {
    let root = format!("{}://{}/", task.url.as_url().scheme(), task.url.host_key());
    crate::finding::Finding::new(task.audit, task.site, crate::finding::Code::SlowedDown, root, change.describe(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The changes `samples` bring, each taken at `load`.
    fn feed(g: &mut LatencyGuard, samples: &[u32], load: u32) -> Vec<GuardChange> {
        samples.iter().filter_map(|s| g.observe(*s, load)).collect()
    }

    #[test]
    fn the_baseline_is_the_fastest_answer() {
        let mut g = LatencyGuard::default();
        // An opening burst: the first answers were queued behind each other.
        assert_eq!((g.observe(360, 3), g.observe(240, 2), g.observe(120, 1)), (None, None, None));
        assert_eq!(g.baseline_ms, 120, "the fastest, not the median of the first three");
        g.observe(130, 2);
        assert_eq!(g.baseline_ms, 121, "a slower answer under load counts 1/8: (120 * 7 + 130 + 4) / 8");
        g.observe(1_000, 2);
        assert_eq!(g.baseline_ms, 125, "and at most 1.25 times the baseline: (121 * 7 + 151 + 4) / 8");
        g.observe(90, 4);
        assert_eq!(g.baseline_ms, 90, "a faster one: at once");
        g.observe(0, 4);
        assert_eq!(g.baseline_ms, 1, "never 0, which means none");
    }

    /// Issue 41: the guard never reacted to a site of a tenth of a second queued by our own
    /// requests (its rise had to be 500 ms).
    #[test]
    fn a_site_of_a_tenth_of_a_second_that_turns_four_tenths_is_slowed() {
        let mut g = LatencyGuard::default();
        assert_eq!(feed(&mut g, &[120; 5], 4), vec![]);
        assert_eq!(feed(&mut g, &[400, 400], 4), vec![], "the median is still 120 ms");
        // Each 400 ms answer counted 150 ms (1.25 times the baseline) in the average: 120, 124, 128, 132.
        assert_eq!(
            feed(&mut g, &[400], 4),
            vec![GuardChange { moved: GuardMove::Slowed, level: 1, recent_ms: 400, baseline_ms: 132, server: None }]
        );
        assert_eq!(feed(&mut g, &[400; 4], 4), vec![], "settling: the new pace shows first");
        let c = feed(&mut g, &[400], 4);
        assert_eq!(c.iter().map(|c| (c.moved, c.level)).collect::<Vec<_>>(), vec![(GuardMove::Slowed, 2)]);
        feed(&mut g, &[400; 20], 4);
        assert_eq!(g.level, GUARD_MAX_LEVEL, "never past the last level");
        let mut g = LatencyGuard::default();
        feed(&mut g, &[50; 5], 4);
        assert_eq!(feed(&mut g, &[140; 10], 4), vec![], "2.8 times, but less than 100 ms above: jitter");
    }

    /// Found by the end-to-end test of issue 17: a queue growing by one request per answer raised
    /// the baseline as fast as the answers, and the guard never moved.
    #[test]
    fn a_steady_ramp_is_trouble() {
        let mut g = LatencyGuard::default();
        let ramp: Vec<u32> = (0..25).map(|i| 500 + 200 * i).collect();
        let c = feed(&mut g, &ramp, 4);
        assert!(!c.is_empty(), "baseline {} chased the ramp", g.baseline_ms);
        assert!(c[0].recent_ms <= 1_500, "{c:?}");
    }

    #[test]
    fn a_slow_host_at_rest_is_not_slowed() {
        for load in [1, 4] {
            let mut g = LatencyGuard::default();
            assert_eq!(feed(&mut g, &[3_000; 30], load), vec![], "slow but steady: that is its baseline");
        }
        let mut g = LatencyGuard::default();
        assert_eq!(feed(&mut g, &[100, 120, 110, 400, 90, 130, 380, 100], 2), vec![], "noise is not trouble");
    }

    #[test]
    fn restores_step_by_step_after_ten_calm_samples() {
        let mut g = LatencyGuard::default();
        feed(&mut g, &[200; 5], 4);
        feed(&mut g, &[2_000; 10], 4);
        assert_eq!(g.level, 2);
        let c = feed(&mut g, &[250; 12], 4);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].moved, c[0].level, c[0].recent_ms), (GuardMove::Restored, 1, 250));
        let c = feed(&mut g, &[250; 10], 4);
        assert_eq!((c[0].moved, c[0].level), (GuardMove::Restored, 0));
        assert_eq!(feed(&mut g, &[250; 30], 4), vec![]);
    }

    #[test]
    fn a_fresh_guard_allows_one_and_opens_while_answers_stay_near_the_fastest() {
        let mut g = LatencyGuard::default();
        assert_eq!(g.allowed(), 1);
        g.observe(10, 1);
        assert_eq!(g.allowed(), 2);
        g.observe(11, 1);
        assert_eq!(g.allowed(), 2, "one in flight of two allowed: the step was not tried");
        g.observe(12, 2);
        g.observe(10, 3);
        assert_eq!(g.allowed(), 4, "a fast host at --in-flight 4 after its first answers");
        g.observe(70, 4);
        assert_eq!(g.allowed(), 5, "60 ms above a 10 ms baseline is jitter, not a rise (under 100 ms)");
        let mut g = LatencyGuard { open: GUARD_OPEN_MAX, ..LatencyGuard::default() };
        g.observe(10, u32::MAX);
        assert_eq!(g.open, GUARD_OPEN_MAX, "the count stops");
    }

    #[test]
    fn a_rise_at_a_step_closes_it_and_it_stays_below() {
        // One at a time in 0.12 s: the second request waits for the first.
        let mut g = LatencyGuard::default();
        g.observe(120, 1);
        assert_eq!(g.allowed(), 2);
        g.observe(240, 2);
        assert_eq!((g.allowed(), g.ceiling), (1, 2), "queued at 2: back to 1");
        for _ in 0..30 {
            g.observe(120, 1);
        }
        assert_eq!(g.allowed(), 1, "and it stays at the count where answers did not grow");
        // Fine at 2, queued from 3.
        let mut g = LatencyGuard::default();
        for (s, load) in [(100, 1), (110, 2), (260, 3)] {
            g.observe(s, load);
        }
        assert_eq!((g.allowed(), g.ceiling), (2, 3));
        for _ in 0..10 {
            g.observe(100, 2);
        }
        assert_eq!(g.allowed(), 2);
        g.observe(400, 2);
        assert_eq!((g.allowed(), g.ceiling), (1, 2), "a lower ceiling replaces a higher one");
        g.observe(400, 1);
        assert_eq!(g.allowed(), 1, "a rise alone in flight has nowhere lower to go");
        assert!(is_rise(220, 120) && !is_rise(219, 120), "100 ms above");
        assert!(is_rise(300, 200) && !is_rise(299, 200) && !is_rise(5, 0), "1.5 times; none without a baseline");
    }

    #[test]
    fn an_answer_counts_at_its_ip_as_a_rise_against_its_own_host() {
        assert_eq!(ip_sample(300, 300, 5), 5, "a slow site at its own pace: the IP's baseline");
        assert_eq!(ip_sample(700, 300, 5), 700, "a rise against its host: as it came");
        assert_eq!(ip_sample(300, 0, 5), 300, "its host has no baseline yet");
        assert_eq!(ip_sample(300, 300, 0), 300, "the IP has none yet");
        assert_eq!(ip_sample(3, 300, 5), 3, "a faster answer lowers the IP's baseline");
    }

    #[test]
    fn guarded_limits() {
        let ms = Duration::from_millis;
        assert_eq!(guarded(4, ms(300), 0), (4, ms(300)));
        assert_eq!(guarded(4, ms(300), 1), (2, ms(600)));
        assert_eq!(guarded(4, ms(0), 2), (1, ms(1_000)), "from the floor gap");
        assert_eq!(guarded(16, ms(300), 9), (2, ms(2_400)), "capped at the last level");
        assert_eq!(guarded(1, Duration::from_secs(40), 1), (1, Duration::from_secs(60)), "at most 60 s");
        assert_eq!(guarded(1, Duration::from_secs(61), 1), (1, Duration::from_secs(61)), "never lowered");
    }

    #[test]
    fn slow_answers_of_two_hosts() {
        let (a, b) = (host_tag("a.test"), host_tag("b.test"));
        assert_ne!(a, b);
        assert!(slow_on_two_hosts(&[900, 100, 900], &[a, b, b], 200));
        assert!(!slow_on_two_hosts(&[900, 100, 900], &[a, b, a], 200), "one slow host");
        assert!(!slow_on_two_hosts(&[150, 900], &[a, b], 60), "150 ms is twice 60 ms but not 100 ms above it");
        assert!(is_slow(400, 200) && !is_slow(390, 200) && !is_slow(900, 500));
        let mut g = LatencyGuard::default();
        let gate = |r: &[u32], _: u32| r.len() > 100;
        let moved: Vec<_> = [100, 100, 100, 100, 100, 2_000, 2_000, 2_000]
            .iter()
            .filter_map(|s| g.observe_gated(*s, 4, gate))
            .collect();
        assert_eq!((moved, g.level), (vec![], 0), "the gate holds it back");
    }

    #[test]
    fn ip_limits() {
        assert_eq!((ip_cap(8, 0), ip_gap(0)), (8, Duration::ZERO), "level 0: the IP's own cap, no gap");
        assert_eq!((ip_cap(8, 1), ip_gap(1)), (4, Duration::from_millis(500)));
        assert_eq!((ip_cap(8, 3), ip_gap(3)), (1, Duration::from_secs(2)));
        assert_eq!(ip_cap(1, 2), 1, "never below one");
    }

    #[test]
    fn notes_read_well() {
        let c = GuardChange { moved: GuardMove::Slowed, level: 1, recent_ms: 3_140, baseline_ms: 200, server: None };
        // 2026-12-03T10:42:00Z
        let at = UnixMs::parse_rfc3339("2026-12-03T10:42:05Z").expect("valid");
        assert_eq!(
            c.describe(at),
            "we slowed down at 10:42 UTC because responses took 3.1 s instead of 0.2 s \
             (in-flight limit divided by 2, gap multiplied by 2)"
        );
        let r = GuardChange { moved: GuardMove::Restored, level: 0, recent_ms: 210, baseline_ms: 200, server: None };
        assert!(r.describe(at).starts_with("we sped up again at 10:42 UTC: responses took 0.2 s"));
        let q = GuardChange { moved: GuardMove::Quota, level: 0, recent_ms: 6_667, baseline_ms: 0, server: None };
        assert_eq!(
            q.describe(at),
            "we slowed down at 10:42 UTC because the server stated a request quota (RateLimit headers): \
             one request every 6.7 s at most"
        );
        let ip = GuardChange { server: Some([203, 0, 113, 5].into()), level: 2, ..c };
        assert_eq!(
            ip.describe(at),
            "we slowed down at 10:42 UTC because responses from the site's server 203.0.113.5, counting every \
             host we audit there, took 3.1 s instead of 0.2 s (requests in flight to that server divided by 4, \
             at least 1.0 s apart)"
        );
        let back = GuardChange { moved: GuardMove::Restored, level: 0, ..ip };
        assert!(back.describe(at).starts_with("we sped up again at 10:42 UTC: responses from the site's server"));
        assert_eq!(secs(0), "0.0");
        assert_eq!(secs(u32::MAX), "4294967.3");
    }
}
