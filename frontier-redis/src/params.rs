//! The arguments of each Redis function, declared once: the Rust side builds a call's argument
//! list by name ([`crate::scripts::Named`], through [`crate::scripts::Call::named`]), and the Lua prelude
//! ([`crate::keys::lua_prelude`]) gets, per function, a table of the same names to their
//! positions (`local A_CLAIM = {now = 1, worker = 2, ...}`), so a body reads `ARGV[A_CLAIM.now]`
//! and neither side writes a position by hand. Reordering, adding or renaming an argument is one
//! edit here (plus the code that uses it by name).
//!
//! A function whose arguments go on past its declared ones (tasks in runs, lease ids, a seed's
//! hosts) reads the rest from `A_<NAME>_REST`, the position after the last declared one; how the
//! rest is laid out is its own (see each body's header comment).
//!
//! A table per function rather than a Lua local per argument: the library's top level is one Lua
//! chunk, whose locals (200) and each function's upvalues (60) are limited.

/// One Redis function's leading arguments, in their order.
#[derive(Debug)]
pub struct Params {
    /// The Lua table of their positions (`A_CLAIM`).
    pub lua: &'static str,
    /// Their names, in order (position 1 first); Lua identifiers.
    pub names: &'static [&'static str],
}

/// `claim` and `claim_browser` (claim.lua, claim_browser.lua): `batch` is how many tasks a lease
/// may take ('' is 1); `claim_browser` takes the same call and leaves `batch` unread.
pub const CLAIM: Params = Params { lua: "A_CLAIM", names: &["now", "worker", "ttl", "ip_cap", "batch"] };

/// `complete` (complete.lua), before the discovered tasks, the events and the further tasks.
pub const COMPLETE: Params = Params {
    lua: "A_COMPLETE",
    names: &[
        "now",
        "lease",
        "resolved",
        "resolved_ttl",
        "rate_limited",
        "robots_state",
        "robots_blob",
        "crawl_delay",
        "robots_fetched_at",
        "sitemap_bytes",
        "requeue_blob",
        "requeue_is_robots",
        "requeue_prio",
        "requeue_not_before",
        "discovered_span",
        "n_events",
        "ip_cap",
        "response_ms",
        "quota_gap_ms",
        "hold_until",
    ],
};

/// `complete_claim`: `complete`'s arguments, then these, the last arguments of the call. The
/// claim takes `now` and `ip_cap` from the completion's (see `scripts::Library::build`).
pub const CLAIM_AFTER_COMPLETE: Params = Params { lua: "A_CLAIM_AFTER_COMPLETE", names: &["worker", "ttl", "batch"] };

/// Every declaration that the prelude gets as a table.
pub const ALL: &[&Params] = &[&CLAIM, &COMPLETE];

impl Params {
    /// The position of `name` (1 for the first), as the Lua table has it.
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| *n == name).map(|i| i + 1)
    }
}

/// The tables of [`ALL`] as Lua locals: `local A_X = {a = 1, b = 2}` and `local A_X_REST = 3`.
#[must_use]
pub fn lua_params() -> String {
    let mut s = String::new();
    for p in ALL {
        let fields: Vec<String> = p.names.iter().enumerate().map(|(i, n)| format!("{n} = {}", i + 1)).collect();
        s.push_str(&format!("local {} = {{{}}}\n", p.lua, fields.join(", ")));
        s.push_str(&format!("local {}_REST = {}\n", p.lua, p.names.len() + 1));
    }
    s
}

/// The Lua expression that reads argument `name` of `p` out of the table `args`, when `p`'s
/// arguments are the last of the call (`complete_claim`'s claim arguments).
#[must_use]
pub fn lua_from_end(p: &Params, args: &str, name: &str) -> Option<String> {
    let back = p.names.len() - p.position(name)?;
    Some(if back == 0 { format!("{args}[#{args}]") } else { format!("{args}[#{args} - {back}]") })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `code` names `word` with nothing of an identifier right after it.
    fn names(code: &str, word: &str) -> bool {
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        code.match_indices(word).any(|(i, _)| !code[..i].ends_with(ident) && !code[i + word.len()..].starts_with(ident))
    }

    fn lua_code() -> String {
        crate::scripts::lua_files().collect()
    }

    /// A declared argument no Lua code reads is one the Rust side sends for nothing, or one the
    /// Lua reads by another way (a number) that this declaration no longer describes.
    #[test]
    fn every_declared_argument_is_read_by_name() {
        let code = lua_code();
        for p in ALL {
            for n in p.names {
                assert!(names(&code, &format!("{}.{n}", p.lua)), "{}.{n} is declared but no Lua code reads it", p.lua);
            }
        }
        // complete_claim's own arguments are read by the generated code that hands them to claim.
        for n in CLAIM_AFTER_COMPLETE.names {
            assert!(CLAIM.names.contains(n), "{n} is passed after a completion but claim reads no {n}");
        }
        assert!(!names("ARGV[A_CLAIM.nowx]", "A_CLAIM.now"));
    }

    /// The positions of the arguments are the declarations', never a number in a Lua file:
    /// `ARGV[3]`, `args[17]`, `base = 21`.
    #[test]
    fn no_lua_file_reads_an_argument_by_a_written_number() {
        const PENDING: &[&str] = &["cancel", "forget", "hold", "offer", "queue_browser", "reap", "renew", "seed"];
        let files = crate::scripts::lua_sources().filter(|(name, _)| !PENDING.contains(name));
        for (file, i, line) in files.flat_map(|(f, text)| text.lines().enumerate().map(move |(i, l)| (f, i, l))) {
            let code = line.split("--").next().unwrap_or_default();
            for table in ["ARGV[", "args["] {
                for (at, _) in code.match_indices(table) {
                    let next = code[at + table.len()..].chars().next();
                    assert!(!next.is_some_and(|c| c.is_ascii_digit()), "lua/{file}.lua:{}: {line}", i + 1);
                }
            }
            for (at, _) in code.match_indices("base = ") {
                let next = code[at + "base = ".len()..].chars().next();
                assert!(!next.is_some_and(|c| c.is_ascii_digit()), "lua/{file}.lua:{}: {line}", i + 1);
            }
        }
    }

    #[test]
    fn the_prelude_tables_are_the_declarations() {
        let lua = lua_params();
        assert!(lua.contains("local A_CLAIM = {now = 1, worker = 2, ttl = 3, ip_cap = 4, batch = 5}\n"), "{lua}");
        assert!(lua.contains("local A_COMPLETE_REST = 21\n"), "{lua}");
        assert_eq!(lua_from_end(&CLAIM_AFTER_COMPLETE, "a", "worker").as_deref(), Some("a[#a - 2]"));
        assert_eq!(lua_from_end(&CLAIM_AFTER_COMPLETE, "a", "batch").as_deref(), Some("a[#a]"));
        assert_eq!(lua_from_end(&CLAIM_AFTER_COMPLETE, "a", "now"), None);
    }
}
