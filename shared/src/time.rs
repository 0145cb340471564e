//! Wall-clock instants as plain numbers, passed in by the caller.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Milliseconds since the Unix epoch.
///
/// A plain number rather than `Instant` because it is shared between processes and machines (leases,
/// not-before times, the next allowed start of a host) and stored in Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct UnixMs(pub u64);

impl UnixMs {
    /// The instant `d` after `self`, saturating instead of overflowing.
    #[must_use]
    pub fn plus(self, d: Duration) -> UnixMs {
        UnixMs(self.0.saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)))
    }

    /// How long from `earlier` until `self`; zero if `earlier` is later.
    #[must_use]
    pub fn since(self, earlier: UnixMs) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

/// A wall-clock reading as milliseconds since the epoch (0 before it). This crate never reads the
/// clock; callers do (`UnixMs::from` of the system time) and pass the time in, which is what lets
/// the pace and lease rules be tested to the millisecond.
impl From<std::time::SystemTime> for UnixMs {
    fn from(t: std::time::SystemTime) -> UnixMs {
        let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        UnixMs(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

impl UnixMs {
    /// RFC 3339 UTC with milliseconds (`2026-11-30T00:00:00.000Z`), for reports and findings.
    #[must_use]
    pub fn to_rfc3339(self) -> String {
        format_rfc3339(self)
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)` (RFC 3339), as security.txt's Expires uses.
    #[must_use]
    pub fn parse_rfc3339(s: &str) -> Option<UnixMs> {
        parse_rfc3339(s)
    }
}

/// The last millisecond RFC 3339 can show with a four-digit year (9999-12-31T23:59:59.999Z).
const MAX_RFC3339_MS: u64 = 253_402_300_799_999;

/// Formats a Unix time as RFC 3339 in UTC with milliseconds, e.g. `2024-05-01T12:00:00.250Z`.
///
/// Written here rather than pulling in a date crate: reports need exactly this one format. Times
/// past the year 9999 are clamped to its last millisecond.
#[must_use]
fn format_rfc3339(t: UnixMs) -> String {
    let ms = t.0.min(MAX_RFC3339_MS);
    let (secs, milli) = (ms / 1000, ms % 1000);
    let (days, sod) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z", sod / 3600, sod % 3600 / 60, sod % 60)
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar (Howard
/// Hinnant's `civil_from_days`, for non-negative day counts).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)` to milliseconds since the epoch.
fn parse_rfc3339(s: &str) -> Option<UnixMs> {
    let s = s.trim();
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b'T' || b[10] == b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (n(0..4)?, n(5..7)?, n(8..10)?, n(11..13)?, n(14..16)?, n(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &frac[digits..];
    }
    let offset_min = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (oh, om) = rest.get(1..)?.split_once(':')?;
            sign * (oh.parse::<i64>().ok()? * 60 + om.parse::<i64>().ok()?)
        }
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - offset_min * 60;
    u64::try_from(secs).ok().map(|s| UnixMs(s * 1000))
}

impl std::fmt::Display for UnixMs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}ms", self.0)
    }
}
