//! The numbers of Shoal's pace, latency and budget rules that the Lua scripts need, declared once
//! in `shoal_shared` and generated into the library's prelude ([`crate::keys::lua_prelude`]) as
//! Lua locals, so the Lua mirrors of the rules name them instead of repeating them: changing slow
//! mode's in-flight cap or a guard threshold is one edit in Rust. Whether the Lua *logic* still
//! agrees with the Rust is the differential test's job (`tests/it/differential.rs`).
//!
//! Durations are whole milliseconds, the unit of every time the scripts handle. A fraction is two
//! integers (numerator, denominator), as the Rust computes it, so both sides round alike.

use shoal_shared::{frontier, latency as l, pace, robots, task};
use std::time::Duration;

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

/// Every generated constant: its Lua name and value.
#[must_use]
pub fn constants() -> Vec<(&'static str, u128)> {
    let w = u128::from(l::GUARD_BASE_WEIGHT);
    vec![
        // Pace (shoal_shared::pace).
        ("SLOW_GAP", ms(pace::SLOW_MODE_GAP)),
        ("SLOW_MAX_IN_FLIGHT", u128::from(pace::SLOW_MODE_MAX_IN_FLIGHT)),
        ("LINGER", ms(pace::HOST_LINGER)),
        ("MIN_ADDRESS_TTL", ms(pace::MIN_ADDRESS_TTL)),
        ("MAX_GAP", ms(pace::MAX_GAP)),
        ("MAX_RETRY_WAIT", ms(pace::MAX_RETRY_WAIT)),
        ("DEFAULT_IN_FLIGHT", u128::from(pace::DEFAULT_MAX_IN_FLIGHT)),
        ("DEFAULT_GAP", ms(pace::DEFAULT_GAP)),
        ("ROBOTS_MAX_AGE", ms(robots::ROBOTS_MAX_AGE)),
        ("FAILOVER_HOLD", ms(frontier::FAILOVER_HOLD)),
        // Budgets (shoal_shared::task): a site hash of an older version without them.
        ("DEFAULT_MAX_SITEMAPS", u128::from(task::DEFAULT_MAX_SITEMAPS)),
        ("DEFAULT_MAX_SITEMAP_BYTES", u128::from(task::DEFAULT_MAX_SITEMAP_BYTES)),
        // The latency guard (shoal_shared::latency).
        ("GUARD_WINDOW", l::GUARD_WINDOW as u128),
        ("GUARD_MIN_SAMPLES", u128::from(l::GUARD_MIN_SAMPLES)),
        ("GUARD_RATIO", u128::from(l::GUARD_RATIO)),
        ("GUARD_MIN_RISE", ms(l::GUARD_MIN_RISE)),
        ("GUARD_CALM_RISE", ms(l::GUARD_CALM_RISE)),
        ("GUARD_CALM_NUM", u128::from(l::GUARD_CALM_RATIO.0)),
        ("GUARD_CALM_DEN", u128::from(l::GUARD_CALM_RATIO.1)),
        ("GUARD_STEP_NUM", u128::from(l::GUARD_STEP_RATIO.0)),
        ("GUARD_STEP_DEN", u128::from(l::GUARD_STEP_RATIO.1)),
        ("GUARD_OPEN_MAX", u128::from(l::GUARD_OPEN_MAX)),
        ("GUARD_MAX_LEVEL", u128::from(l::GUARD_MAX_LEVEL)),
        ("GUARD_SETTLE", u128::from(l::GUARD_SETTLE)),
        ("GUARD_RECOVER", u128::from(l::GUARD_RECOVER)),
        ("GUARD_FLOOR_GAP", ms(l::GUARD_FLOOR_GAP)),
        ("GUARD_COUNT_MAX", u128::from(l::GUARD_COUNT_MAX)),
        ("GUARD_BASE_CAP_NUM", u128::from(l::GUARD_BASE_CAP.0)),
        ("GUARD_BASE_CAP_DEN", u128::from(l::GUARD_BASE_CAP.1)),
        // The baseline's average, (base * (w - 1) + sample + w / 2) / w, with Rust's integer halving.
        ("GUARD_BASE_WEIGHT", w),
        ("GUARD_BASE_KEEP", w - 1),
        ("GUARD_BASE_ROUND", w / 2),
    ]
}

/// The constants as Lua locals, one a line; then `PAGE_LOAD_GAP`, the least time after a page load
/// in the browser by the lease's `browser` field (`'1'` the browser check's,
/// [`frontier::BROWSER_MIN_GAP`]; `'r'` a render's, [`frontier::RENDER_MIN_GAP`]): one table, as a
/// script's main function may hold at most 200 locals.
#[must_use]
pub fn lua_constants() -> String {
    let mut lua: String = constants().iter().map(|(name, v)| format!("local {name} = {v}\n")).collect();
    lua.push_str(&format!(
        "local PAGE_LOAD_GAP = {{['1'] = {}, r = {}}}\n",
        ms(frontier::BROWSER_MIN_GAP),
        ms(frontier::RENDER_MIN_GAP)
    ));
    lua
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `code` names `name` as a whole word.
    fn names(code: &str, name: &str) -> bool {
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        code.match_indices(name).any(|(i, _)| !code[..i].ends_with(word) && !code[i + name.len()..].starts_with(word))
    }

    /// A constant the Lua files never name is a number repeated by hand somewhere (or one left
    /// over).
    #[test]
    fn every_constant_is_named_by_the_lua_code() {
        let code: String = crate::scripts::lua_files().collect();
        for (name, _) in constants() {
            assert!(names(&code, name), "{name} is generated but no Lua file uses it");
        }
        assert!(!names("local GUARD_WINDOWS = 1", "GUARD_WINDOW"));
    }

    #[test]
    fn values_are_pinned() {
        let lua = lua_constants();
        for line in [
            "local SLOW_GAP = 3000\n",
            "local SLOW_MAX_IN_FLIGHT = 1\n",
            "local GUARD_BASE_KEEP = 7\n",
            "local GUARD_BASE_ROUND = 4\n",
            "local DEFAULT_MAX_SITEMAP_BYTES = 52428800\n",
        ] {
            assert!(lua.contains(line), "{line}");
        }
    }
}
