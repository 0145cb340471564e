//! When a schedule runs, and what the scheduler does at each tick: pure arithmetic over
//! [`UnixMs`], the time always a parameter, so every rule is tested without waiting.
//!
//! A schedule's `when` is either
//! - a **cron pattern** of five fields (minute, hour, day of month, month, day of week; names such
//!   as `MON` and `JAN`, ranges, steps, `L`, `W` and `#` as [croner] reads them), evaluated in an
//!   IANA time zone: `0 6 * * MON` in `Europe/Berlin` is Monday 06:00 Berlin time, summer or winter.
//!   Across a DST change croner follows the Open Cron Pattern Specification: a time that the
//!   spring-forward gap skips runs at the first instant after the gap, a time that the fall-back
//!   overlap repeats runs once, at its first occurrence; or
//! - an **interval**, `every <n><unit>` with unit `s`, `m` (minutes), `h`, `d` or `w`, counted from
//!   the start of the previous run. Its first run is due when the schedule is added.
//!
//! **The minimum interval.** Each run is a whole audit of every site in the list, so a coordinator
//! refuses a schedule that would run more often than its operator's minimum
//! ([`DEFAULT_MIN_INTERVAL`], 1 hour, unless the coordinator's `schedule_min_interval` setting says
//! otherwise; an API caller cannot change it): an interval below it, or a cron pattern two of whose
//! times are closer than it ([`When::check_min`]). The scheduler applies the same minimum again to
//! what is stored ([`step`]), so a schedule added under a lower minimum (or before there was one)
//! runs no more often than the minimum allows either: an interval counts as the minimum, and a
//! cron pattern's next run is its first time at least the minimum after the slot that started.
//!
//! The rules of [`step`]: a schedule never runs twice at once (a slot that comes while the
//! previous run is still running is skipped); however many slots passed while the coordinator was
//! down, one run starts when it is back; after a run ends the next one is due at the next matching
//! time after now (cron) or at the previous start plus the interval, or now if that has passed.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use shoal_shared::time::UnixMs;
use std::time::Duration;

/// How often a schedule may run at most, unless the coordinator's operator sets another minimum
/// (`schedule_min_interval`): once an hour. Why: each run audits every site of its list, and a
/// schedule `every 1s` had one coordinator audit the same site 17 times in 45 s.
pub const DEFAULT_MIN_INTERVAL: Duration = Duration::from_secs(3600);
/// The lowest minimum an operator can set: the smallest unit of an interval.
pub const LOWEST_MIN_INTERVAL: Duration = Duration::from_secs(1);
/// The longest interval (and the highest minimum).
pub const MAX_INTERVAL: Duration = Duration::from_secs(366 * 24 * 3600);
/// Times of a cron pattern [`When::check_min`] compares at most, over at most a year: enough to
/// meet every gap of a daily or weekly pattern, bounded for a pattern that matches every minute.
pub const CRON_CHECK_TIMES: usize = 1_000;
/// The time zone of a cron pattern when none is given.
pub const DEFAULT_TIME_ZONE: &str = "UTC";

/// Why a `when` or a time zone was refused, in words for the person who wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WhenError {
    /// Not a cron pattern croner accepts.
    #[error(
        "cron pattern {pattern:?}: {reason} (five fields: minute hour day-of-month month day-of-week, e.g. \"0 6 * * MON\")"
    )]
    Cron {
        /// As given.
        pattern: String,
        /// What croner said.
        reason: String,
    },
    /// A cron pattern that matches no time at all (`0 0 30 2 *`).
    #[error("cron pattern {pattern:?} never matches a time")]
    Never {
        /// As given.
        pattern: String,
    },
    /// Not an IANA time zone name.
    #[error("unknown time zone {name:?}: give an IANA name such as \"Europe/Berlin\" or \"UTC\"")]
    TimeZone {
        /// As given.
        name: String,
    },
    /// `every` with a bad number or unit.
    #[error("interval {text:?}: write `every <n><unit>` with a whole number and s, m, h, d or w, e.g. \"every 7d\"")]
    Interval {
        /// As given.
        text: String,
    },
    /// `every 0d`.
    #[error("interval {text:?}: the interval must be more than zero")]
    ZeroInterval {
        /// As given.
        text: String,
    },
    /// Longer than [`MAX_INTERVAL`].
    #[error("interval {text:?}: at most 366 days")]
    LongInterval {
        /// As given.
        text: String,
    },
    /// Would run more often than the coordinator's minimum interval.
    #[error(
        "schedule {spec:?} would run {gap} after the previous run, more often than this coordinator \
         allows: its minimum interval is {min} (the operator's schedule_min_interval setting); \
         choose a longer interval or fewer times"
    )]
    TooOften {
        /// As given.
        spec: String,
        /// The shortest gap between two runs, as [`format_span`] writes it.
        gap: String,
        /// The minimum, as [`format_span`] writes it.
        min: String,
    },
}

/// A parsed `when`.
#[derive(Debug, Clone)]
pub enum When {
    /// A cron pattern in a time zone.
    Cron {
        /// The pattern.
        cron: Box<Cron>,
        /// Where its wall-clock times are read.
        tz: TimeZone,
    },
    /// Every this long, from the previous start.
    Every(Duration),
}

impl When {
    /// Parses `spec` (`every 7d`, or a cron pattern) with the time zone `tz` (IANA name; the cron
    /// pattern's, ignored by intervals). Checks that a cron pattern matches some time.
    ///
    /// # Errors
    /// [`WhenError`] saying what is wrong.
    pub fn parse(spec: &str, tz: &str) -> Result<When, WhenError> {
        let spec = spec.trim();
        let zone = TimeZone::get(tz.trim()).map_err(|_| WhenError::TimeZone { name: tz.to_owned() })?;
        if let Some(rest) = spec.strip_prefix("every") {
            let bad = || WhenError::Interval { text: spec.to_owned() };
            if !rest.starts_with(char::is_whitespace) {
                return Err(bad());
            }
            return match parse_span(rest) {
                Ok(d) => Ok(When::Every(d)),
                Err(SpanError::Bad) => Err(bad()),
                Err(SpanError::Zero) => Err(WhenError::ZeroInterval { text: spec.to_owned() }),
                Err(SpanError::Long) => Err(WhenError::LongInterval { text: spec.to_owned() }),
            };
        }
        let parser = CronParser::builder().seconds(Seconds::Disallowed).year(Year::Disallowed).build();
        let cron =
            parser.parse(spec).map_err(|e| WhenError::Cron { pattern: spec.to_owned(), reason: e.to_string() })?;
        let when = When::Cron { cron: Box::new(cron), tz: zone };
        // A pattern that never matches (30 February) is refused now, not found out at run time.
        when.next_after(UnixMs(0)).ok_or_else(|| WhenError::Never { pattern: spec.to_owned() })?;
        Ok(when)
    }

    /// The first slot strictly after `t`: the next matching time (cron), or `t` plus the interval.
    /// `None` only for a pattern with no time left (past the years croner searches).
    #[must_use]
    pub fn next_after(&self, t: UnixMs) -> Option<UnixMs> {
        match self {
            When::Every(d) => Some(t.plus(*d)),
            When::Cron { cron, tz } => {
                let ms = i64::try_from(t.0).ok()?;
                let zoned = Timestamp::from_millisecond(ms).ok()?.to_zoned(tz.clone());
                let next = cron.find_next_occurrence(&zoned, false).ok()?;
                u64::try_from(next.timestamp().as_millisecond()).ok().map(UnixMs)
            }
        }
    }

    /// Checks that the schedule `spec` (as parsed into `self`) runs no more often than `min`: an
    /// interval at least `min`, a cron pattern none of whose next times after `now` (at most
    /// [`CRON_CHECK_TIMES`] of them, within a year) are closer than `min`. A pattern whose close
    /// times come only later still runs no more often than `min`: [`step`] keeps runs apart.
    ///
    /// # Errors
    /// [`WhenError::TooOften`] with the shortest gap found.
    pub fn check_min(&self, spec: &str, min: Duration, now: UnixMs) -> Result<(), WhenError> {
        let gap = match self {
            When::Every(d) => Some(*d).filter(|d| *d < min),
            When::Cron { .. } => {
                let until = now.plus(MAX_INTERVAL);
                let mut t = self.next_after(now);
                let mut shortest: Option<Duration> = None;
                for _ in 0..CRON_CHECK_TIMES {
                    let Some(prev) = t.filter(|p| *p <= until) else { break };
                    t = self.next_after(prev);
                    let Some(next) = t else { break };
                    let gap = next.since(prev);
                    if gap < min && shortest.is_none_or(|s| gap < s) {
                        shortest = Some(gap);
                    }
                }
                shortest
            }
        };
        match gap {
            None => Ok(()),
            Some(gap) => {
                Err(WhenError::TooOften { spec: spec.trim().to_owned(), gap: format_span(gap), min: format_span(min) })
            }
        }
    }

    /// When the first run of a schedule added at `now` is due: at once for an interval, at the
    /// next matching time for a cron pattern.
    #[must_use]
    pub fn first_run(&self, now: UnixMs) -> UnixMs {
        match self {
            When::Every(_) => now,
            When::Cron { .. } => self.next_after(now).unwrap_or(UnixMs(u64::MAX)),
        }
    }

    /// When the run after one that starts at `now` for its slot `due` is due: `now` plus the
    /// interval (at least `min`), or the pattern's first time after `now` that is at least `min`
    /// after `due`. Counted from the slot, not from `now`, so that a run started a moment after
    /// its slot does not miss the next one (`0 * * * *` with a minimum of 1 h runs every hour).
    #[must_use]
    pub fn after_start(&self, due: UnixMs, now: UnixMs, min: Duration) -> UnixMs {
        match self {
            When::Every(d) => now.plus((*d).max(min)),
            When::Cron { .. } => {
                let floor = UnixMs(due.plus(min).0.saturating_sub(1));
                self.next_after(now.max(floor)).unwrap_or(UnixMs(u64::MAX))
            }
        }
    }

    /// When the next run is due after a run that started at `started` ended at `now`, with
    /// `planned` the next run as recorded when it started (or moved by skipped slots): the next
    /// matching time after `now`, but not before `planned` (cron), or `started` plus the interval
    /// (at least `min`), or `now` if that has passed.
    #[must_use]
    pub fn after_end(&self, started: UnixMs, planned: UnixMs, now: UnixMs, min: Duration) -> UnixMs {
        match self {
            When::Every(d) => started.plus((*d).max(min)).max(now),
            When::Cron { .. } => {
                self.next_after(now.max(UnixMs(planned.0.saturating_sub(1)))).unwrap_or(UnixMs(u64::MAX))
            }
        }
    }
}

/// Why a span (`7d`) was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SpanError {
    /// Not `<n><unit>`.
    Bad,
    /// Zero.
    Zero,
    /// Longer than [`MAX_INTERVAL`].
    Long,
}

/// Reads `<n><unit>` (`7d`, `12 h`), the unit `s`, `m` (minutes), `h`, `d` or `w`.
fn parse_span(text: &str) -> Result<Duration, SpanError> {
    let rest = text.trim();
    let split = rest.find(|c: char| !c.is_ascii_digit()).ok_or(SpanError::Bad)?;
    let (number, unit) = rest.split_at(split);
    let n: u64 = number.parse().map_err(|_| SpanError::Bad)?;
    let unit_secs: u64 = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(SpanError::Bad),
    };
    if n == 0 {
        return Err(SpanError::Zero);
    }
    let secs = n.checked_mul(unit_secs).filter(|s| *s <= MAX_INTERVAL.as_secs());
    secs.map(Duration::from_secs).ok_or(SpanError::Long)
}

/// Why the operator's minimum interval was refused, in words for the operator (it is a flag's and
/// a config key's value, so `clap` and the config check print it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MinIntervalError {
    /// Not `<n><unit>`.
    #[error("{text:?}: write <n><unit> with a whole number and s, m, h, d or w, e.g. \"1h\"")]
    NotASpan {
        /// The value given.
        text: String,
    },
    /// Zero.
    #[error("{text:?}: the minimum interval must be at least 1s")]
    Zero {
        /// The value given.
        text: String,
    },
    /// Longer than [`MAX_INTERVAL`].
    #[error("{text:?}: at most 366 days")]
    TooLong {
        /// The value given.
        text: String,
    },
}

/// Reads the operator's minimum interval (`schedule_min_interval`): `<n><unit>` as in `every`,
/// from [`LOWEST_MIN_INTERVAL`] to [`MAX_INTERVAL`].
///
/// # Errors
/// [`MinIntervalError`] saying what is wrong.
pub fn parse_min_interval(text: &str) -> Result<Duration, MinIntervalError> {
    parse_span(text).map_err(|e| {
        let text = text.to_owned();
        match e {
            SpanError::Bad => MinIntervalError::NotASpan { text },
            SpanError::Zero => MinIntervalError::Zero { text },
            SpanError::Long => MinIntervalError::TooLong { text },
        }
    })
}

/// Writes a span the way `every` reads it, in its largest whole unit (`90m`, `1h`, `7d`); under a
/// second, in milliseconds (`500ms`: only a cron gap across a clock change could be that short).
#[must_use]
pub fn format_span(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let secs = ms / 1000;
    for (unit, len) in [("w", 7 * 86_400), ("d", 86_400), ("h", 3600), ("m", 60)] {
        if secs >= len && secs.is_multiple_of(len) {
            return format!("{}{unit}", secs / len);
        }
    }
    format!("{secs}s")
}

/// Where a schedule's latest run stands, as the scheduler sees it at a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastRun {
    /// No run yet, or the latest run's end has been handled.
    Settled,
    /// The latest run (started at this time) is still running.
    Running,
    /// The latest run, started at this time, has ended and its end is not handled yet.
    Ended {
        /// When it started.
        started: UnixMs,
    },
}

/// What the scheduler does with one schedule at a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing is due.
    Wait,
    /// Start a run now; the next one is due at `next_run`.
    Start {
        /// When the run after it is due.
        next_run: UnixMs,
    },
    /// A slot came while the previous run is still running: skip it (and log it); the next slot
    /// is `next_run`.
    Skip {
        /// The next slot.
        next_run: UnixMs,
    },
    /// The latest run ended: notify, and the next run is due at `next_run`.
    Settle {
        /// When the next run is due.
        next_run: UnixMs,
    },
}

/// The one rule the scheduler follows (see the module doc). `next_run` is when the schedule's
/// next run is due as stored; every missed slot before `now` collapses into one `Start`, because
/// the next run is then computed from `now`, never from the missed slot. `min` is the
/// coordinator's minimum interval: no run is planned sooner than that after the previous one.
#[must_use]
pub fn step(when: &When, next_run: UnixMs, last: LastRun, now: UnixMs, min: Duration) -> Step {
    match last {
        LastRun::Ended { started } => Step::Settle { next_run: when.after_end(started, next_run, now, min) },
        LastRun::Running if next_run <= now => {
            let next = match when {
                When::Every(d) => Some(now.plus((*d).max(min))),
                When::Cron { .. } => when.next_after(now),
            };
            Step::Skip { next_run: next.unwrap_or(UnixMs(u64::MAX)) }
        }
        LastRun::Settled if next_run <= now => Step::Start { next_run: when.after_start(next_run, now, min) },
        LastRun::Running | LastRun::Settled => Step::Wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    /// The instant of a wall-clock time in `tz` (the earlier one if it happens twice).
    fn at(tz: &str, y: i16, mo: i8, d: i8, h: i8, mi: i8) -> UnixMs {
        let zone = TimeZone::get(tz).expect("a known zone");
        let z = zone.to_ambiguous_zoned(date(y, mo, d).at(h, mi, 0, 0)).earlier().expect("a time");
        UnixMs(u64::try_from(z.timestamp().as_millisecond()).expect("after 1970"))
    }

    fn cron(spec: &str, tz: &str) -> When {
        When::parse(spec, tz).expect("a valid schedule")
    }

    const HOUR: u64 = 3_600_000;
    /// The lowest minimum: the rules as they were before there was one.
    const LOW: Duration = LOWEST_MIN_INTERVAL;

    #[test]
    fn weekly_cron_in_berlin_keeps_its_wall_clock_across_both_dst_changes() {
        let w = cron("0 6 * * MON", "Europe/Berlin");
        // Monday 2025-03-24 06:00 CET (UTC+1), then the clocks go forward on Sunday 03-30.
        let before = at("Europe/Berlin", 2025, 3, 24, 6, 0);
        let next = w.next_after(before).expect("a next Monday");
        assert_eq!(next, at("Europe/Berlin", 2025, 3, 31, 6, 0));
        // 7 days minus the hour the clocks skipped.
        assert_eq!(next.0 - before.0, 7 * 24 * HOUR - HOUR);
        // Autumn: Monday 10-20 06:00 CEST, the clocks go back on Sunday 10-26.
        let autumn = at("Europe/Berlin", 2025, 10, 20, 6, 0);
        let next = w.next_after(autumn).expect("a next Monday");
        assert_eq!(next, at("Europe/Berlin", 2025, 10, 27, 6, 0));
        assert_eq!(next.0 - autumn.0, 7 * 24 * HOUR + HOUR);
        assert_eq!(next.0, 1_761_541_200_000, "06:00 CET is 2025-10-27T05:00:00Z");
    }

    #[test]
    fn a_time_the_spring_gap_skips_runs_once_right_after_it() {
        // 02:30 does not exist in Berlin on 2025-03-30 (02:00 jumps to 03:00).
        let w = cron("30 2 * * *", "Europe/Berlin");
        let saturday = at("Europe/Berlin", 2025, 3, 29, 2, 30);
        let sunday = w.next_after(saturday).expect("a run on the gap day");
        assert_eq!(sunday, at("Europe/Berlin", 2025, 3, 30, 3, 0), "the first instant after the gap");
        let monday = w.next_after(sunday).expect("the day after");
        assert_eq!(monday, at("Europe/Berlin", 2025, 3, 31, 2, 30));
    }

    #[test]
    fn a_time_the_autumn_overlap_repeats_runs_once() {
        // 02:30 happens twice in Berlin on 2025-10-26.
        let w = cron("30 2 * * *", "Europe/Berlin");
        let first = w.next_after(at("Europe/Berlin", 2025, 10, 26, 0, 0)).expect("a run");
        assert_eq!(first, at("Europe/Berlin", 2025, 10, 26, 2, 30), "the first 02:30 (CEST)");
        let next = w.next_after(first).expect("the next run");
        assert_eq!(next, at("Europe/Berlin", 2025, 10, 27, 2, 30), "not the second 02:30 an hour later");
    }

    #[test]
    fn the_same_pattern_in_another_zone_is_another_instant() {
        let t = at("UTC", 2025, 1, 6, 0, 0);
        let utc = cron("0 6 * * MON", "UTC").next_after(t).expect("a run");
        let ny = cron("0 6 * * MON", "America/New_York").next_after(t).expect("a run");
        assert_eq!(ny.0 - utc.0, 5 * HOUR);
    }

    #[test]
    fn intervals_parse_and_count_from_the_start() {
        let cases = [
            ("every 7d", 7 * 86_400),
            ("every 1m", 60),
            ("every 12h", 43_200),
            ("every 2s", 2),
            ("every  3w", 1_814_400),
        ];
        for (spec, secs) in cases {
            match cron(spec, "UTC") {
                When::Every(d) => assert_eq!(d, Duration::from_secs(secs), "{spec}"),
                other @ When::Cron { .. } => panic!("{spec}: {other:?}"),
            }
        }
        let w = cron("every 12h", "UTC");
        assert_eq!(w.first_run(UnixMs(1000)), UnixMs(1000), "an interval's first run is due at once");
        assert_eq!(w.next_after(UnixMs(1000)), Some(UnixMs(1000 + 12 * HOUR)));
    }

    #[test]
    fn bad_input_is_refused_with_its_reason() {
        let refused = [
            ("every 0d", "UTC", "more than zero"),
            ("every 7", "UTC", "write `every <n><unit>`"),
            ("every 7y", "UTC", "write `every <n><unit>`"),
            ("every7d", "UTC", "write `every <n><unit>`"),
            ("every 400d", "UTC", "at most 366 days"),
            ("every 99999999999999999999d", "UTC", "write `every"),
            ("0 6 * * MON", "Mars/Olympus", "unknown time zone"),
            ("61 6 * * *", "UTC", "cron pattern"),
            ("0 6 * *", "UTC", "cron pattern"),
            ("0 0 6 * * MON", "UTC", "cron pattern"),
            ("", "UTC", "cron pattern"),
            ("0 0 30 2 *", "UTC", "never matches"),
        ];
        for (spec, tz, want) in refused {
            let e = When::parse(spec, tz).expect_err(spec).to_string();
            assert!(e.contains(want), "{spec} in {tz}: {e}");
        }
    }

    #[test]
    fn missed_slots_while_down_collapse_into_one_run() {
        let w = cron("0 6 * * MON", "UTC");
        // Due on 2025-01-06 06:00; the coordinator comes back three weeks later, on a Wednesday.
        let due = at("UTC", 2025, 1, 6, 6, 0);
        let back = at("UTC", 2025, 1, 29, 12, 0);
        let Step::Start { next_run } = step(&w, due, LastRun::Settled, back, LOW) else { panic!("one run is due") };
        assert_eq!(next_run, at("UTC", 2025, 2, 3, 6, 0), "the next Monday after now, not a missed one");
        // While that run runs, nothing else starts, and then nothing is due until next Monday.
        assert_eq!(step(&w, next_run, LastRun::Running, back.plus(Duration::from_secs(60)), LOW), Step::Wait);
        let settled = step(&w, next_run, LastRun::Ended { started: back }, back.plus(Duration::from_secs(600)), LOW);
        assert_eq!(settled, Step::Settle { next_run: at("UTC", 2025, 2, 3, 6, 0) });
        assert_eq!(step(&w, next_run, LastRun::Settled, back.plus(Duration::from_secs(601)), LOW), Step::Wait);

        // An interval too: many missed intervals, one run.
        let w = cron("every 1h", "UTC");
        let Step::Start { next_run } = step(&w, UnixMs(0), LastRun::Settled, UnixMs(100 * HOUR), LOW) else {
            panic!("one run is due")
        };
        assert_eq!(next_run, UnixMs(101 * HOUR));
    }

    #[test]
    fn a_slot_that_comes_while_the_run_still_runs_is_skipped() {
        let w = cron("every 1m", "UTC");
        let start = UnixMs(1_000_000);
        let Step::Start { next_run } = step(&w, start, LastRun::Settled, start, LOW) else { panic!("due") };
        assert_eq!(next_run, start.plus(Duration::from_secs(60)));
        // The run takes 90 s: at its next slot it still runs, so that slot is skipped, never
        // started beside it.
        let at_slot = next_run;
        let skipped = step(&w, next_run, LastRun::Running, at_slot, LOW);
        assert_eq!(skipped, Step::Skip { next_run: at_slot.plus(Duration::from_secs(60)) });
        // It ends at 90 s: previous start + 1 m has passed, so the next run is due now.
        let end = start.plus(Duration::from_secs(90));
        assert_eq!(step(&w, next_run, LastRun::Ended { started: start }, end, LOW), Step::Settle { next_run: end });
        // A short run: the next one keeps the interval from the previous start.
        let end = start.plus(Duration::from_secs(20));
        let settle = step(&w, next_run, LastRun::Ended { started: start }, end, LOW);
        assert_eq!(settle, Step::Settle { next_run: start.plus(Duration::from_secs(60)) });

        // Cron: a run that outlasts its next slot skips it, and the next run is the slot after now.
        let w = cron("*/5 * * * *", "UTC");
        let t = at("UTC", 2025, 5, 1, 10, 0);
        let slot = at("UTC", 2025, 5, 1, 10, 5);
        assert_eq!(step(&w, slot, LastRun::Running, slot, LOW), Step::Skip { next_run: at("UTC", 2025, 5, 1, 10, 10) });
        let end = at("UTC", 2025, 5, 1, 10, 12);
        assert_eq!(
            step(&w, at("UTC", 2025, 5, 1, 10, 10), LastRun::Ended { started: t }, end, LOW),
            Step::Settle { next_run: at("UTC", 2025, 5, 1, 10, 15) }
        );
    }

    #[test]
    fn nothing_is_due_before_its_time() {
        let w = cron("0 6 * * *", "UTC");
        let due = at("UTC", 2025, 5, 1, 6, 0);
        assert_eq!(step(&w, due, LastRun::Settled, UnixMs(due.0 - 1), LOW), Step::Wait);
        assert!(matches!(step(&w, due, LastRun::Settled, due, LOW), Step::Start { .. }));
        assert_eq!(w.first_run(UnixMs(due.0 - 1)), due);
    }

    #[test]
    fn a_schedule_more_often_than_the_minimum_is_refused_with_its_gap() {
        let now = at("UTC", 2025, 5, 1, 10, 7);
        let refused = [
            ("every 1s", "1s"),
            ("every 59m", "59m"),
            ("* * * * *", "1m"),
            ("*/30 * * * *", "30m"),
            ("0,30 6 * * *", "30m"),
            ("0 6,7 * * MON", "1h"),
        ];
        let hour = DEFAULT_MIN_INTERVAL;
        for (spec, gap) in refused {
            let min = if spec == "0 6,7 * * MON" { Duration::from_secs(2 * 3600) } else { hour };
            let e = cron(spec, "UTC").check_min(spec, min, now).expect_err(spec).to_string();
            assert!(e.contains(&format!("would run {gap} after")), "{spec}: {e}");
            assert!(e.contains("minimum interval is") && e.contains("schedule_min_interval"), "{spec}: {e}");
        }
        for spec in ["every 1h", "every 7d", "0 * * * *", "0 0,23 * * *", "0 6 * * MON", "0 6 1 1 *"] {
            assert_eq!(cron(spec, "UTC").check_min(spec, hour, now), Ok(()), "{spec}");
        }
        // An hourly pattern keeps an hour between its runs across both clock changes in Berlin.
        let hourly = cron("0 * * * *", "Europe/Berlin");
        for day in [at("UTC", 2025, 3, 29, 12, 0), at("UTC", 2025, 10, 25, 12, 0)] {
            assert_eq!(hourly.check_min("0 * * * *", hour, day), Ok(()));
        }
    }

    #[test]
    fn the_operator_can_lower_the_minimum() {
        let now = at("UTC", 2025, 5, 1, 10, 7);
        let minute = parse_min_interval("1m").expect("a minimum");
        assert_eq!(cron("* * * * *", "UTC").check_min("* * * * *", minute, now), Ok(()));
        assert_eq!(cron("every 1m", "UTC").check_min("every 1m", minute, now), Ok(()));
        let e = cron("every 30s", "UTC").check_min("every 30s", minute, now).expect_err("below 1m");
        assert!(e.to_string().contains("minimum interval is 1m"), "{e}");
        let second = parse_min_interval("1s").expect("the lowest");
        assert_eq!(cron("every 1s", "UTC").check_min("every 1s", second, now), Ok(()));
    }

    #[test]
    fn the_minimum_setting_reads_like_an_interval() {
        assert_eq!(parse_min_interval("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_min_interval(" 10m "), Ok(Duration::from_secs(600)));
        assert_eq!(parse_min_interval("2d"), Ok(Duration::from_secs(2 * 86_400)));
        for (bad, want) in [("0s", "at least 1s"), ("1y", "<n><unit>"), ("h", "<n><unit>"), ("400d", "366 days")] {
            let e = parse_min_interval(bad).expect_err(bad).to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
        let spans = [(1, "1s"), (90, "90s"), (3600, "1h"), (5400, "90m"), (86_400, "1d"), (604_800, "1w")];
        for (secs, text) in spans {
            assert_eq!(format_span(Duration::from_secs(secs)), text);
            assert_eq!(parse_min_interval(text), Ok(Duration::from_secs(secs)), "{text} reads back");
        }
        assert_eq!(format_span(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn a_stored_schedule_below_the_minimum_runs_no_more_often_than_it() {
        let min = DEFAULT_MIN_INTERVAL;
        // `every 1s`, stored before there was a minimum: it runs once an hour.
        let w = cron("every 1s", "UTC");
        let start = UnixMs(10 * HOUR);
        assert_eq!(step(&w, start, LastRun::Settled, start, min), Step::Start { next_run: UnixMs(11 * HOUR) });
        let end = start.plus(Duration::from_secs(5));
        assert_eq!(
            step(&w, UnixMs(11 * HOUR), LastRun::Ended { started: start }, end, min),
            Step::Settle { next_run: UnixMs(11 * HOUR) }
        );
        assert_eq!(step(&w, start, LastRun::Running, start, min), Step::Skip { next_run: UnixMs(11 * HOUR) });

        // `*/5 * * * *`: a run at 10:00 is followed by one at 11:00, however soon it ends.
        let w = cron("*/5 * * * *", "UTC");
        let (ten, eleven) = (at("UTC", 2025, 5, 1, 10, 0), at("UTC", 2025, 5, 1, 11, 0));
        let Step::Start { next_run } = step(&w, ten, LastRun::Settled, ten.plus(Duration::from_millis(300)), min)
        else {
            panic!("due")
        };
        assert_eq!(next_run, eleven);
        let end = at("UTC", 2025, 5, 1, 10, 2);
        assert_eq!(step(&w, next_run, LastRun::Ended { started: ten }, end, min), Step::Settle { next_run: eleven });

        // `0 * * * *` with a minimum of 1 h: a run that starts a moment after its slot does not
        // lose the next one.
        let w = cron("0 * * * *", "UTC");
        let late = ten.plus(Duration::from_millis(500));
        assert_eq!(step(&w, ten, LastRun::Settled, late, min), Step::Start { next_run: eleven });
        let end = at("UTC", 2025, 5, 1, 10, 20);
        assert_eq!(step(&w, eleven, LastRun::Ended { started: late }, end, min), Step::Settle { next_run: eleven });
    }
}
