//! The arguments of each Redis function, declared once: the Rust side builds a call's argument
//! list by name, in the declared order, each name checked against the declaration as it is set
//! ([`crate::scripts::Named`], through [`crate::scripts::Call::named`]), and the Lua prelude
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

/// One Redis function's leading arguments, in their order, or a group of arguments that comes
/// back in the rest of a call (a run of tasks, a seed's host).
#[derive(Debug)]
pub struct Params {
    /// The Lua table of their positions (`A_CLAIM`).
    pub lua: &'static str,
    /// Their names, in order; Lua identifiers.
    pub names: &'static [&'static str],
    /// The position of the first: 1 for a function's leading arguments (`ARGV[A_CLAIM.now]`), 0
    /// for a group, whose positions are offsets from where it starts (`ARGV[j + A_RUN_HEAD.kind]`).
    pub start: usize,
}

/// A function's leading arguments.
const fn args(lua: &'static str, names: &'static [&'static str]) -> Params {
    Params { lua, names, start: 1 }
}

/// A group of arguments in the rest of a call.
const fn group(lua: &'static str, names: &'static [&'static str]) -> Params {
    Params { lua, names, start: 0 }
}

/// `claim` and `claim_browser` (claim.lua, claim_browser.lua): `ttl` the lease time (ms), `batch`
/// how many tasks a lease may take ('' is 1); `claim_browser` takes the same call and leaves
/// `batch` unread.
/// `slow_start` '1' when hosts and IPs meet the latency guard's slow start, '0' when not
/// ([`shoal_shared::frontier::FrontierSettings::slow_start`]).
pub const CLAIM: Params = args("A_CLAIM", &["now", "worker", "ttl", "ip_cap", "batch", "slow_start"]);

/// `complete` (complete.lua), before the discovered tasks, the events and the further tasks.
pub const COMPLETE: Params = args(
    "A_COMPLETE",
    &[
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
        "give_back",
    ],
);

/// What became of a batch lease's further tasks, after a completion's tasks and events: how many
/// the worker started, their outcomes (a letter each) and response times (joined by ',').
pub const FURTHER: Params = group("A_FURTHER", &["n", "outcomes", "times"]);

/// Each further task the worker queues again, after [`FURTHER`], in their order.
pub const REQUEUE: Params = group("A_REQUEUE", &["blob", "prio", "not_before"]);

/// `complete_claim`: `complete`'s arguments, then these, the last arguments of the call. The
/// claim takes `now` and `ip_cap` from the completion's (see `scripts::complete_claim_body`).
pub const CLAIM_AFTER_COMPLETE: Params = group("A_CLAIM_AFTER_COMPLETE", &["slow_start", "worker", "ttl", "batch"]);

/// The head of a run of tasks (args.rs `TaskRuns`, offer.lua `offer_all`): what its tasks share,
/// `opener` how a task opens its host's lane, `count` how many tasks follow.
pub const RUN_HEAD: Params = group("A_RUN_HEAD", &["host", "kind", "depth", "prio", "not_before", "opener", "count"]);

/// One task of a run: its seen keys (`fp2` may be '') and blob.
pub const RUN_TASK: Params = group("A_RUN_TASK", &["fp", "fp2", "blob"]);

/// `seed` (seed.lua): the site's hash, then `n_hosts` of [`SEED_HOST`], `initial_span` arguments of
/// task runs, and [`SEED_TAIL`].
pub const SEED: Params = args(
    "A_SEED",
    &[
        "site",
        "audit",
        "max_pages",
        "max_depth",
        "max_resources",
        "max_in_flight",
        "gap",
        "info",
        "done_blob",
        "lim_d",
        "lim_p",
        "lim_r",
        "max_sitemaps",
        "max_sitemap_bytes",
        "lim_s",
        "n_hosts",
        "initial_span",
    ],
);

/// One host of a seed: its name and its robots.txt task ('' for none).
pub const SEED_HOST: Params = group("A_SEED_HOST", &["host", "robots"]);

/// The last arguments of a seed: the browser pages asked for, the `CrawlDone` event, and the time
/// (ms, for a quarantine's record).
pub const SEED_TAIL: Params = group("A_SEED_TAIL", &["browser_phase", "crawl_done", "now"]);

/// `queue_browser` (queue_browser.lua): then `n` of [`BROWSER_TASK`], then the time.
pub const QUEUE_BROWSER: Params = args("A_QUEUE_BROWSER", &["site", "n", "round"]);

/// One browser task: its host and blob.
pub const BROWSER_TASK: Params = group("A_BROWSER_TASK", &["host", "blob", "render"]);

/// The time (ms, for a quarantine's record), the last argument of a call with a rest of its own.
pub const TAIL_NOW: Params = group("A_TAIL_NOW", &["now"]);

/// `reap` (reap.lua): at most `max` leases.
pub const REAP: Params = args("A_REAP", &["now", "max", "ip_cap"]);

/// `renew` (renew.lua): then the lease ids.
pub const RENEW: Params = args("A_RENEW", &["now", "ttl", "worker"]);

/// `depart` (depart.lua): a request given `slot` would leave at `at` (ms); `gap` the lease's.
pub const DEPART: Params = args("A_DEPART", &["host", "slot", "at", "gap"]);

/// `fence` (fence.lua): the time, the master's replication id, the lease time (ms).
pub const FENCE: Params = args("A_FENCE", &["now", "replid", "ttl"]);

/// `cancel` (cancel.lua): about `step` sites from the SSCAN `cursor`.
pub const CANCEL: Params = args("A_CANCEL", &["audit", "cursor", "step", "now"]);

/// `forget` (forget.lua): at most `step` sites, hosts or cache keys.
pub const FORGET: Params = args("A_FORGET", &["audit", "step"]);

/// Every declaration that the prelude gets as a table.
pub const ALL: &[&Params] = &[
    &CLAIM,
    &COMPLETE,
    &FURTHER,
    &REQUEUE,
    &RUN_HEAD,
    &RUN_TASK,
    &SEED,
    &SEED_HOST,
    &SEED_TAIL,
    &QUEUE_BROWSER,
    &BROWSER_TASK,
    &TAIL_NOW,
    &REAP,
    &RENEW,
    &DEPART,
    &FENCE,
    &CANCEL,
    &FORGET,
];

impl Params {
    /// The position of `name` (1 for the first), as the Lua table has it.
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| *n == name).map(|i| i + 1)
    }
}

/// The tables of [`ALL`] as Lua locals: `local A_X = {a = 1, b = 2}` and, for a function's leading
/// arguments, `local A_X_REST = 3` (the position after them); for a group, `local A_X_SPAN = 2` (how
/// many arguments it takes).
#[must_use]
pub fn lua_params() -> String {
    let mut s = String::new();
    for p in ALL {
        let fields: Vec<String> = p.names.iter().enumerate().map(|(i, n)| format!("{n} = {}", i + p.start)).collect();
        s.push_str(&format!("local {} = {{{}}}\n", p.lua, fields.join(", ")));
        if p.start == 1 {
            s.push_str(&format!("local {}_REST = {}\n", p.lua, p.names.len() + 1));
        } else {
            s.push_str(&format!("local {}_SPAN = {}\n", p.lua, p.names.len()));
        }
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

    /// The Lua files without their comments (a name in a comment is no read of it).
    fn lua_code() -> String {
        crate::scripts::lua_files()
            .flat_map(str::lines)
            .map(|line| line.split("--").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
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

    /// The positions in a line of Lua (comments left out) that index `ARGV` (or `args`, the
    /// complete_claim wrapper's copy, or `L`, a lease as `release` reads it: keys.rs LEASE_FIELDS)
    /// with a number written in the brackets: `ARGV[3]`, `ARGV[j + 5]`, `args[17]`, `L[13]`.
    fn numbered_reads(line: &str) -> Vec<usize> {
        let code = line.split("--").next().unwrap_or_default();
        let mut found = Vec::new();
        for table in ["ARGV[", "args[", "L["] {
            for (at, _) in code.match_indices(table) {
                if code[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                    continue; // `fL[` is another table
                }
                let inside = &code[at + table.len()..];
                let inside = &inside[..inside.find(']').unwrap_or(inside.len())];
                // A number, not a digit of a name (`fp2`).
                let mut prev = ' ';
                let number = inside.chars().any(|c| {
                    let starts = c.is_ascii_digit() && !(prev.is_ascii_alphanumeric() || prev == '_');
                    prev = c;
                    starts
                });
                if number {
                    found.push(at);
                }
            }
        }
        // An offset kept in a variable instead: `base = 21`.
        for (at, _) in code.match_indices("base = ") {
            if code[at + "base = ".len()..].starts_with(|c: char| c.is_ascii_digit()) {
                found.push(at);
            }
        }
        found
    }

    /// The positions of the arguments are the declarations', never a number in a Lua file.
    #[test]
    fn no_lua_file_reads_an_argument_or_lease_field_by_a_written_number() {
        for (file, text) in crate::scripts::lua_sources() {
            for (i, line) in text.lines().enumerate() {
                assert!(numbered_reads(line).is_empty(), "lua/{file}.lua:{}: {line}", i + 1);
            }
        }
        for bad in ["x = ARGV[3]", "ARGV[j + 5]", "args[17]", "local n, base = 1, 21", "if L[13] then"] {
            assert!(!numbered_reads(bad).is_empty(), "{bad}");
        }
        assert!(numbered_reads("ARGV[j + A_RUN_HEAD.kind] -- not ARGV[5]").is_empty());
        assert!(numbered_reads("ARGV[k + A_RUN_TASK.fp2]").is_empty(), "a digit of a name is no number");
    }

    /// The Lua variables that may be indexed by a written number, per file: arrays whose positions
    /// are no hash field's (a hash read is indexed by its record's names, keys.rs `RECORDS`).
    const ARRAY_POSITIONS: &[(&str, &str, &str)] = &[
        ("cancel", "page", "SSCAN's answer: the next cursor, then the members"),
        ("claim", "held", "an HMGET of the worker's count then the others', whose names are built at run time"),
        ("claim", "r", "ZRANGE WITHSCORES: member, score"),
        ("claim", "d", "ZRANGE WITHSCORES: member, score"),
        ("claim", "c", "ZRANGE WITHSCORES: member, score"),
        ("lanes", "d", "ZRANGE WITHSCORES: member, score"),
        ("pace", "m", "ZRANGE WITHSCORES: member, score"),
        ("pace", "top", "ZRANGE WITHSCORES: member, score"),
        ("complete", "samples", "a list of response times, the completion's own first"),
        ("complete", "texts", "the samples as their arguments' text, in the same order"),
        ("complete", "c", "a guard change as latency.lua's observe makes it: a list of its parts"),
        ("complete", "t", "a further task of the lease, {blob, prio} (lease.lua)"),
        ("complete", "f", "an HSET's argument list being built: name, value, name, value"),
        ("latency", "recent", "a guard's window of samples, newest first"),
        ("latency", "tags", "the samples' hosts, in the window's order"),
        ("latency", "texts", "the window's samples as they are stored, in the window's order"),
        ("latency", "c", "a guard change: a list of its parts, the IP's last"),
        ("latency", "changes", "the list of guard changes"),
        ("lease", "counts", "an HMGET of the expiry counts of the task and its further tasks, by blob"),
        ("quarantine", "lanes", "the list of lanes to quarantine"),
        ("reap", "t", "a further task of the lease, {blob, prio} (lease.lua)"),
    ];

    /// The variables of a line of Lua (comments left out) indexed by a written number, `h[3]`:
    /// `[` right after a name, digits, `]` (a table constructor's `{[1] = x}` is no index).
    fn numbered_indexes(line: &str) -> Vec<&str> {
        let code = line.split("--").next().unwrap_or_default();
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let mut found = Vec::new();
        for (at, _) in code.match_indices('[') {
            let inside = &code[at + 1..];
            let digits = inside.find(|c: char| !c.is_ascii_digit()).unwrap_or(inside.len());
            if digits == 0 || !inside[digits..].starts_with(']') {
                continue;
            }
            let name_at = code[..at].trim_end_matches(ident).len();
            if name_at < at {
                found.push(&code[name_at..at]);
            }
        }
        found
    }

    /// No hash read's answer is indexed by a written number: only the declared arrays are.
    #[test]
    fn no_lua_file_indexes_a_hash_read_by_a_written_number() {
        let mut used = vec![false; ARRAY_POSITIONS.len()];
        for (file, text) in crate::scripts::lua_sources() {
            for (i, line) in text.lines().enumerate() {
                for var in numbered_indexes(line) {
                    let allowed = ARRAY_POSITIONS.iter().position(|(f, v, _)| *f == file && *v == var);
                    assert!(allowed.is_some(), "lua/{file}.lua:{}: {var}[..] by a number: {line}", i + 1);
                    used[allowed.unwrap_or_default()] = true;
                }
            }
        }
        for ((file, var, _), used) in ARRAY_POSITIONS.iter().zip(used) {
            assert!(used, "lua/{file}.lua indexes no {var} by a number: drop it from ARRAY_POSITIONS");
        }
        assert_eq!(numbered_indexes("if h[4] == x then l[12], s[2] = 1 end"), ["h", "l", "s"]);
        assert_eq!(numbered_indexes("local sf = {[1] = a, [F_X.b] = c} -- h[2]"), Vec::<&str>::new());
        assert_eq!(numbered_indexes("x = fp2[k] + g[F_IP_PACE.ll]"), Vec::<&str>::new());
    }

    #[test]
    fn the_prelude_tables_are_the_declarations() {
        let lua = lua_params();
        assert!(
            lua.contains("local A_CLAIM = {now = 1, worker = 2, ttl = 3, ip_cap = 4, batch = 5, slow_start = 6}\n"),
            "{lua}"
        );
        assert!(lua.contains("local A_COMPLETE_REST = 22\n"), "{lua}");
        assert_eq!(lua_from_end(&CLAIM_AFTER_COMPLETE, "a", "worker").as_deref(), Some("a[#a - 2]"));
        assert_eq!(lua_from_end(&CLAIM_AFTER_COMPLETE, "a", "batch").as_deref(), Some("a[#a]"));
        assert_eq!(lua_from_end(&CLAIM_AFTER_COMPLETE, "a", "now"), None);
    }
}
