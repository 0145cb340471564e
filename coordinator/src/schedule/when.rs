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

/// The shortest interval (`every 1s`: back to back; runs still never overlap).
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// The longest interval.
pub const MAX_INTERVAL: Duration = Duration::from_secs(366 * 24 * 3600);
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
            return parse_interval(spec, rest).map(When::Every);
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

    /// When the first run of a schedule added at `now` is due: at once for an interval, at the
    /// next matching time for a cron pattern.
    #[must_use]
    pub fn first_run(&self, now: UnixMs) -> UnixMs {
        match self {
            When::Every(_) => now,
            When::Cron { .. } => self.next_after(now).unwrap_or(UnixMs(u64::MAX)),
        }
    }

    /// When the next run is due after a run that started at `started` ended at `now`: the next
    /// matching time after `now` (cron), or `started` plus the interval, or `now` if that has
    /// passed.
    #[must_use]
    pub fn after_end(&self, started: UnixMs, now: UnixMs) -> UnixMs {
        match self {
            When::Every(d) => started.plus(*d).max(now),
            When::Cron { .. } => self.next_after(now).unwrap_or(UnixMs(u64::MAX)),
        }
    }
}

fn parse_interval(spec: &str, rest: &str) -> Result<Duration, WhenError> {
    let bad = || WhenError::Interval { text: spec.to_owned() };
    if !rest.starts_with(char::is_whitespace) {
        return Err(bad());
    }
    let rest = rest.trim();
    let split = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = rest.split_at(split);
    let n: u64 = number.parse().map_err(|_| bad())?;
    let unit_secs: u64 = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(bad()),
    };
    if n == 0 {
        return Err(WhenError::ZeroInterval { text: spec.to_owned() });
    }
    let secs = n.checked_mul(unit_secs).filter(|s| *s <= MAX_INTERVAL.as_secs());
    let d = secs.map(Duration::from_secs).ok_or_else(|| WhenError::LongInterval { text: spec.to_owned() })?;
    Ok(d.max(MIN_INTERVAL))
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
/// the next run is then computed from `now`, never from the missed slot.
#[must_use]
pub fn step(when: &When, next_run: UnixMs, last: LastRun, now: UnixMs) -> Step {
    let after_now = || when.next_after(now).unwrap_or(UnixMs(u64::MAX));
    match last {
        LastRun::Ended { started } => Step::Settle { next_run: when.after_end(started, now) },
        LastRun::Running if next_run <= now => Step::Skip { next_run: after_now() },
        LastRun::Settled if next_run <= now => Step::Start { next_run: after_now() },
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
        let Step::Start { next_run } = step(&w, due, LastRun::Settled, back) else { panic!("one run is due") };
        assert_eq!(next_run, at("UTC", 2025, 2, 3, 6, 0), "the next Monday after now, not a missed one");
        // While that run runs, nothing else starts, and then nothing is due until next Monday.
        assert_eq!(step(&w, next_run, LastRun::Running, back.plus(Duration::from_secs(60))), Step::Wait);
        let settled = step(&w, next_run, LastRun::Ended { started: back }, back.plus(Duration::from_secs(600)));
        assert_eq!(settled, Step::Settle { next_run: at("UTC", 2025, 2, 3, 6, 0) });
        assert_eq!(step(&w, next_run, LastRun::Settled, back.plus(Duration::from_secs(601))), Step::Wait);

        // An interval too: many missed intervals, one run.
        let w = cron("every 1h", "UTC");
        let Step::Start { next_run } = step(&w, UnixMs(0), LastRun::Settled, UnixMs(100 * HOUR)) else {
            panic!("one run is due")
        };
        assert_eq!(next_run, UnixMs(101 * HOUR));
    }

    #[test]
    fn a_slot_that_comes_while_the_run_still_runs_is_skipped() {
        let w = cron("every 1m", "UTC");
        let start = UnixMs(1_000_000);
        let Step::Start { next_run } = step(&w, start, LastRun::Settled, start) else { panic!("due") };
        assert_eq!(next_run, start.plus(Duration::from_secs(60)));
        // The run takes 90 s: at its next slot it still runs, so that slot is skipped, never
        // started beside it.
        let at_slot = next_run;
        let skipped = step(&w, next_run, LastRun::Running, at_slot);
        assert_eq!(skipped, Step::Skip { next_run: at_slot.plus(Duration::from_secs(60)) });
        // It ends at 90 s: previous start + 1 m has passed, so the next run is due now.
        let end = start.plus(Duration::from_secs(90));
        assert_eq!(step(&w, next_run, LastRun::Ended { started: start }, end), Step::Settle { next_run: end });
        // A short run: the next one keeps the interval from the previous start.
        let end = start.plus(Duration::from_secs(20));
        let settle = step(&w, next_run, LastRun::Ended { started: start }, end);
        assert_eq!(settle, Step::Settle { next_run: start.plus(Duration::from_secs(60)) });

        // Cron: a run that outlasts its next slot skips it, and the next run is the slot after now.
        let w = cron("*/5 * * * *", "UTC");
        let t = at("UTC", 2025, 5, 1, 10, 0);
        let slot = at("UTC", 2025, 5, 1, 10, 5);
        assert_eq!(step(&w, slot, LastRun::Running, slot), Step::Skip { next_run: at("UTC", 2025, 5, 1, 10, 10) });
        let end = at("UTC", 2025, 5, 1, 10, 12);
        assert_eq!(
            step(&w, at("UTC", 2025, 5, 1, 10, 10), LastRun::Ended { started: t }, end),
            Step::Settle { next_run: at("UTC", 2025, 5, 1, 10, 15) }
        );
    }

    #[test]
    fn nothing_is_due_before_its_time() {
        let w = cron("0 6 * * *", "UTC");
        let due = at("UTC", 2025, 5, 1, 6, 0);
        assert_eq!(step(&w, due, LastRun::Settled, UnixMs(due.0 - 1)), Step::Wait);
        assert!(matches!(step(&w, due, LastRun::Settled, due), Step::Start { .. }));
        assert_eq!(w.first_run(UnixMs(due.0 - 1)), due);
    }
}
