//! Quotas a server states in its answers, and the pace that stays within them (issue 17).
//!
//! Three spellings are read, case-insensitively:
//!
//! - the IETF draft's structured fields (draft-ietf-httpapi-ratelimit-headers, versions 07 on):
//!   `RateLimit-Policy: "default";q=100;w=60` (a quota of `q` requests per `w` seconds; a list
//!   of policies is read item by item) and `RateLimit: "default";r=3;t=20` (`r` requests left,
//!   the window resets in `t` seconds);
//! - the draft's older fields `RateLimit-Limit: 100` (optionally `100, 100;w=60`),
//!   `RateLimit-Remaining: 3`, `RateLimit-Reset: 20`;
//! - the common `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (a reset
//!   over 10^9 is a Unix time in seconds, as several APIs send it).
//!
//! What Shoal does with them ([`RateLimit::pace`]): a policy of `q` per `w` seconds becomes a gap
//! of `w / q` plus a tenth (so the server's window and ours never disagree by one request); `r`
//! left for `t` seconds becomes a gap of `t / r` plus a tenth (the rest of the quota spread over the
//! rest of the window); none left holds the host until the reset (at most [`MAX_QUOTA_HOLD`]). The host's
//! gap is then the largest of its own and these: never faster than Shoal's own limits. Values
//! that do not parse are ignored, never a panic.

use crate::time::UnixMs;
use std::time::Duration;

/// The longest a used-up quota holds a host; a later answer says again if it needs more.
pub const MAX_QUOTA_HOLD: Duration = Duration::from_secs(60);
/// A reset above this is a Unix time in seconds, not a delta.
const EPOCH_THRESHOLD: u64 = 1_000_000_000;

/// What an answer's rate-limit headers said; every part optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateLimit {
    /// The strictest policy stated: `(quota, window in seconds)`.
    pub policy: Option<(u64, u64)>,
    /// Requests left in the current window (the smallest stated).
    pub remaining: Option<u64>,
    /// Seconds until the current window resets (with `remaining`).
    pub reset_s: Option<u64>,
}

/// The pace a stated quota asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QuotaPace {
    /// The gap between request starts that stays within the quota, in milliseconds.
    pub gap_ms: Option<u32>,
    /// The quota is used up: nothing before this.
    pub hold_until: Option<UnixMs>,
}

impl RateLimit {
    /// Reads the rate-limit headers among `headers` (name, value); `None` when there are none that
    /// parse.
    #[must_use]
    pub fn parse<'a>(headers: impl IntoIterator<Item = (&'a str, &'a str)>, now: UnixMs) -> Option<RateLimit> {
        let mut rl = RateLimit::default();
        let mut limit: Option<(u64, Option<u64>)> = None;
        let mut reset: Option<u64> = None;
        for (name, value) in headers {
            // Compared in place: most answers carry none of these headers, and a lowercased copy
            // of every header name was an allocation per header of every answer.
            let name = name.trim();
            let is = |n: &str| name.eq_ignore_ascii_case(n);
            if is("ratelimit-policy") {
                for item in sf_items(value) {
                    if let (Some(q), Some(w)) = (param(item, "q"), param(item, "w")) {
                        rl.add_policy(q, w);
                    }
                }
            } else if is("ratelimit") {
                for item in sf_items(value) {
                    if let Some(r) = param(item, "r") {
                        rl.add_remaining(r, param(item, "t"));
                    }
                }
            } else if is("ratelimit-limit") || is("x-ratelimit-limit") {
                if let Some(l) = old_limit(value) {
                    limit = Some(limit.map_or(l, |p: (u64, Option<u64>)| if l.0 < p.0 { l } else { p }));
                }
            } else if is("ratelimit-remaining") || is("x-ratelimit-remaining") {
                if let Some(r) = first_int(value) {
                    rl.remaining = Some(rl.remaining.map_or(r, |p| p.min(r)));
                }
            } else if (is("ratelimit-reset") || is("x-ratelimit-reset"))
                && let Some(t) = first_int(value)
            {
                let t = if t > EPOCH_THRESHOLD { t.saturating_sub(now.0 / 1000) } else { t };
                reset = Some(reset.map_or(t, |p| p.max(t)));
            }
        }
        if let Some((q, Some(w))) = limit {
            rl.add_policy(q, w);
        }
        if rl.reset_s.is_none() && rl.remaining.is_some() {
            rl.reset_s = reset;
        }
        (rl != RateLimit::default()).then_some(rl)
    }

    fn add_policy(&mut self, q: u64, w: u64) {
        if w == 0 {
            return;
        }
        // The stricter policy is the one with the longer time per request: w/q larger.
        let stricter = match self.policy {
            None => true,
            Some((pq, pw)) => u128::from(w) * u128::from(pq) > u128::from(pw) * u128::from(q),
        };
        if stricter {
            self.policy = Some((q, w));
        }
    }

    fn add_remaining(&mut self, r: u64, t: Option<u64>) {
        if self.remaining.is_none_or(|p| r < p) {
            self.remaining = Some(r);
            self.reset_s = t;
        }
    }

    /// The pace that stays within what the server stated (see the module's doc).
    #[must_use]
    pub fn pace(&self, now: UnixMs) -> QuotaPace {
        let mut gap: Option<u64> = None;
        if let Some((q, w)) = self.policy {
            let ms = if q == 0 { u64::MAX } else { w.saturating_mul(1000).saturating_mul(11) / q.saturating_mul(10) };
            gap = Some(ms);
        }
        let mut hold = None;
        match (self.remaining, self.reset_s) {
            (Some(0), Some(t)) => {
                let wait = Duration::from_secs(t).min(MAX_QUOTA_HOLD);
                hold = Some(now.plus(wait));
            }
            (Some(0), None) => hold = Some(now.plus(Duration::from_secs(1))),
            (Some(r), Some(t)) => {
                let ms = t.saturating_mul(1000).saturating_mul(11) / r.saturating_mul(10);
                gap = Some(gap.map_or(ms, |g| g.max(ms)));
            }
            _ => {}
        }
        let cap = u64::try_from(crate::pace::MAX_GAP.as_millis()).unwrap_or(u64::MAX);
        QuotaPace { gap_ms: gap.map(|g| u32::try_from(g.min(cap)).unwrap_or(u32::MAX)), hold_until: hold }
    }
}

/// The members of a structured-field list (RFC 8941), split on commas outside quoted strings.
fn sf_items(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in value.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(value[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(value[start..].trim());
    out.retain(|s| !s.is_empty());
    out
}

/// An integer parameter `;key=N` of a list member (after its quoted or token name).
fn param(item: &str, key: &str) -> Option<u64> {
    let params = match item.strip_prefix('"') {
        Some(rest) => {
            // Skip the quoted name, honouring escapes.
            let mut escaped = false;
            let end = rest.char_indices().find(|&(_, c)| {
                let close = c == '"' && !escaped;
                escaped = c == '\\' && !escaped;
                close
            })?;
            &rest[end.0 + 1..]
        }
        None => item,
    };
    params.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        (k.trim() == key).then(|| v.trim().parse::<u64>().ok()).flatten()
    })
}

/// The first integer of an old-style field (`10` or `10, 10;w=60`).
fn first_int(value: &str) -> Option<u64> {
    value.split([',', ';']).next()?.trim().parse().ok()
}

/// An old-style limit: the quota, and its window if a `w=` parameter names one.
fn old_limit(value: &str) -> Option<(u64, Option<u64>)> {
    let q = first_int(value)?;
    let w = value.split([',', ';']).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        (k.trim() == "w").then(|| v.trim().parse::<u64>().ok()).flatten()
    });
    Some((q, w))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: UnixMs = UnixMs(1_700_000_000_000);

    fn parse(h: &[(&str, &str)]) -> Option<RateLimit> {
        RateLimit::parse(h.iter().copied(), T0)
    }

    #[test]
    fn structured_fields() {
        let rl = parse(&[("RateLimit-Policy", "\"default\";q=10;w=60"), ("RateLimit", "\"default\";r=3;t=20")])
            .expect("parsed");
        assert_eq!(rl, RateLimit { policy: Some((10, 60)), remaining: Some(3), reset_s: Some(20) });
        let p = rl.pace(T0);
        assert_eq!(
            p,
            QuotaPace { gap_ms: Some(7_333), hold_until: None },
            "20 s / 3 left beats 60 s / 10 (each + 10%)"
        );
        let rl = parse(&[("ratelimit-policy", "\"burst\";q=100;w=1, \"daily\";q=1000;w=86400")]).expect("parsed");
        assert_eq!(rl.policy, Some((1000, 86_400)), "the stricter policy");
        assert_eq!(rl.pace(T0).gap_ms, Some(60_000), "capped at the largest gap");
        let rl = parse(&[("ratelimit", "\"a\";r=5;t=10, \"b\";r=0;t=30")]).expect("parsed");
        assert_eq!(rl.pace(T0), QuotaPace { gap_ms: None, hold_until: Some(T0.plus(Duration::from_secs(30))) });
        let rl = parse(&[("ratelimit", "\"q,uo\\\"ted\";r=2;t=4")]).expect("commas and escapes in names");
        assert_eq!((rl.remaining, rl.reset_s), (Some(2), Some(4)));
        assert_eq!(rl.pace(T0).gap_ms, Some(2_200));
    }

    #[test]
    fn older_and_x_forms() {
        let rl = parse(&[("X-RateLimit-Limit", "60"), ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "5")])
            .expect("parsed");
        assert_eq!(rl.pace(T0).hold_until, Some(T0.plus(Duration::from_secs(5))));
        let epoch = (T0.0 / 1000 + 7).to_string();
        let rl = parse(&[("x-ratelimit-remaining", "4"), ("x-ratelimit-reset", &epoch)]).expect("parsed");
        assert_eq!((rl.remaining, rl.reset_s), (Some(4), Some(7)), "a Unix time is made a delta");
        assert_eq!(rl.pace(T0).gap_ms, Some(1_925));
        let rl = parse(&[("RateLimit-Limit", "10, 10;w=2"), ("RateLimit-Remaining", "9"), ("RateLimit-Reset", "2")])
            .expect("parsed");
        assert_eq!(rl.policy, Some((10, 2)));
        assert_eq!(rl.pace(T0).gap_ms, Some(244), "2 s / 9 left beats 2 s / 10 (each + 10%)");
        assert_eq!(parse(&[("x-ratelimit-limit", "10")]), None, "a limit without a window says no pace");
        let far = parse(&[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "86400")]).expect("parsed");
        assert_eq!(far.pace(T0).hold_until, Some(T0.plus(MAX_QUOTA_HOLD)), "held at most a minute at a time");
    }

    #[test]
    fn malformed_values_never_panic_and_say_nothing() {
        for v in [
            "",
            ",,,",
            "\"",
            "\"unterminated;q=1;w=1",
            "\"x\";q=-1;w=5",
            "\"x\";q=1;w=0",
            "\"x\";q=abc;w=1",
            "\"x\";q=99999999999999999999999;w=1",
            "x;q;w",
            "é;q=1;w=\u{fffd}",
            ";;;=;=",
        ] {
            let rl = parse(&[("ratelimit-policy", v), ("ratelimit", v), ("x-ratelimit-reset", v)]);
            if let Some(rl) = rl {
                let _ = rl.pace(T0);
                assert_eq!(rl.policy, None, "{v:?}");
            }
        }
        let zero = parse(&[("ratelimit-policy", "\"z\";q=0;w=10")]).expect("parsed");
        assert_eq!(zero.pace(T0).gap_ms, Some(60_000), "a quota of 0 is the slowest pace");
        let huge = RateLimit { policy: Some((1, u64::MAX)), remaining: Some(1), reset_s: Some(u64::MAX) };
        assert_eq!(huge.pace(T0).gap_ms, Some(60_000));
        assert_eq!(parse(&[("content-type", "text/html")]), None);
    }
}
