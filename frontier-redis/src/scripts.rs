//! The Lua code that makes each multi-key frontier step atomic, as one Redis Functions library.
//!
//! The library is one loaded unit: the generated prelude ([`crate::keys::lua_prelude`]: key
//! builders and the rules' constants), the shared functions of `lua/` in the order of `SHARED`
//! (`common.lua`, `pace.lua`, `lanes.lua`, `offer.lua`, `quarantine.lua`, `lease.lua`,
//! `latency.lua`: split by concern, each under the 800-line gate), then each step's body
//! (`lua/claim.lua`, …) wrapped in a function and registered with `redis.register_function`. Why a
//! library and not `EVALSHA`: an `EVALSHA` runs its whole script from the top on every call, so
//! each call re-created the prelude's and the shared files' ~45 closures before doing any work;
//! that, with the garbage it leaves, was a large share of the Redis CPU every request cost
//! (docs/redis.md). A library runs its top level once, at `FUNCTION LOAD`; a call only runs its
//! step's body.
//!
//! The bodies keep reading `KEYS` and `ARGV`: each registered function sets those two (and `P`,
//! the key prefix in `KEYS[1]`) as upvalues before running its body. Redis runs one function at a
//! time, so they cannot be seen half-set.
//!
//! The library's name and its functions' names carry a hash of its source, so workers of two
//! versions sharing one Redis each call their own code. A call that finds its function missing
//! (Redis restarted without persistence, `FUNCTION FLUSH`) loads the library and runs again, as
//! `EVALSHA` falls back to `EVAL`: nothing needs loading up front. Needs Redis 7.0 or newer.

use crate::keys::lua_prelude;
use crate::params::{self, Params};
use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, RedisError, RedisResult, ToRedisArgs};
use std::sync::Arc;

/// The shared functions, in load order (a Lua local is visible only below its definition, so each
/// file uses only what the files before it define): basics, the pace, lanes, offering tasks, the
/// quarantine, leases, the latency guard.
const SHARED: &[(&str, &str)] = &[
    ("common", include_str!("lua/common.lua")),
    ("pace", include_str!("lua/pace.lua")),
    ("lanes", include_str!("lua/lanes.lua")),
    ("offer", include_str!("lua/offer.lua")),
    ("quarantine", include_str!("lua/quarantine.lua")),
    ("lease", include_str!("lua/lease.lua")),
    ("latency", include_str!("lua/latency.lua")),
];

/// The steps, each a body file of `lua/`, in registration order.
const STEPS: &[(&str, &str)] = &[
    ("claim", include_str!("lua/claim.lua")),
    ("complete", include_str!("lua/complete.lua")),
    ("reap", include_str!("lua/reap.lua")),
    ("seed", include_str!("lua/seed.lua")),
    ("cancel", include_str!("lua/cancel.lua")),
    ("forget", include_str!("lua/forget.lua")),
    ("renew", include_str!("lua/renew.lua")),
    ("claim_browser", include_str!("lua/claim_browser.lua")),
    ("queue_browser", include_str!("lua/queue_browser.lua")),
    ("depart", include_str!("lua/depart.lua")),
    ("fence", include_str!("lua/fence.lua")),
];

/// The Lua files' text, the shared ones and the steps' bodies (without the generated prelude).
#[cfg(test)]
pub(crate) fn lua_files() -> impl Iterator<Item = &'static str> {
    lua_sources().map(|(_, text)| text)
}

/// [`lua_files`] with their names (`claim` for `lua/claim.lua`).
#[cfg(test)]
pub(crate) fn lua_sources() -> impl Iterator<Item = (&'static str, &'static str)> {
    SHARED.iter().chain(STEPS).copied()
}

/// The library's source and name, shared by every [`Function`] of it.
#[derive(Debug)]
struct Library {
    /// `shoal_<hash of the code>`.
    name: String,
    /// What `FUNCTION LOAD` gets, starting with its `#!lua name=` line.
    source: String,
}

/// What every step's body runs after, in the library's order: the `KEYS` and `ARGV` upvalues, the
/// generated prelude ([`lua_prelude`]) and the shared functions of `lua/`. Public so that the
/// differential test (`tests/it/differential.rs`) loads the very code the library does, with test
/// entry points of its own after it, and holds the Lua mirrors of the pace, latency and budget
/// rules to the Rust ones.
#[must_use]
pub fn shared_code() -> String {
    let mut code = String::from("local KEYS, ARGV\n");
    code.push_str(&lua_prelude());
    code.push('\n');
    for (_, file) in SHARED {
        code.push_str(file);
        code.push('\n');
    }
    code
}

impl Library {
    fn build() -> Library {
        let mut code = shared_code();
        for (step, body) in STEPS {
            code.push_str(&format!("local function {step}_body()\n{body}\nend\n"));
        }
        // A completion and the claim of the worker's next task in one call (one round trip, one
        // FCALL's fixed cost, instead of two): complete's arguments, then the worker and the
        // lease time; the claim takes complete's time and per-IP cap.
        code.push_str(&complete_claim_body());
        let name = format!("shoal_{:016x}", fnv1a(code.as_bytes()));
        for step in STEPS.iter().map(|(step, _)| *step).chain(["complete_claim"]) {
            code.push_str(&format!(
                "redis.register_function('{name}_{step}', function(keys, args) KEYS = keys; ARGV = args; P = keys[1]; return {step}_body() end)\n"
            ));
        }
        let source = format!("#!lua name={name}\n{code}");
        Library { name, source }
    }

    /// Loads the library (`REPLACE`: two processes loading it at once both succeed).
    async fn load<C: ConnectionLike>(&self, conn: &mut C) -> RedisResult<()> {
        let _: String = redis::cmd("FUNCTION").arg("LOAD").arg("REPLACE").arg(&self.source).query_async(conn).await?;
        Ok(())
    }
}

/// `complete_claim`'s body: `complete`, then `claim` with its arguments taken by name from the
/// completion's ([`params::COMPLETE`]) or from the last of the call
/// ([`params::CLAIM_AFTER_COMPLETE`]).
///
/// # Panics
/// When claim declares an argument neither of those has (every test of the library finds it).
fn complete_claim_body() -> String {
    let claim: Vec<String> = params::CLAIM
        .names
        .iter()
        .map(|n| {
            params::lua_from_end(&params::CLAIM_AFTER_COMPLETE, "args", n)
                .or_else(|| params::COMPLETE.names.contains(n).then(|| format!("args[{}.{n}]", params::COMPLETE.lua)))
                .unwrap_or_else(|| panic!("complete_claim has no argument {n} for claim"))
        })
        .collect();
    format!(
        "local function complete_claim_body()\nlocal args = ARGV\nlocal done = complete_body()\nif done.err then return done end\nARGV = {{{}}}\nreturn {{done, claim_body()}}\nend\n",
        claim.join(", ")
    )
}

/// FNV-1a, 64 bits: a stable name for a version of the library (not a security boundary; the
/// same source always gives the same name, whatever compiled it).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// Whether Redis answered that the function (hence the library) is not loaded.
fn is_missing(e: &RedisError) -> bool {
    e.to_string().contains("Function not found")
}

/// One step of the library, called with `FCALL`.
#[derive(Debug, Clone)]
pub struct Function {
    library: Arc<Library>,
    name: String,
}

impl Function {
    /// A call of this step with the key prefix as its one key; add its arguments with
    /// [`Call::arg`].
    #[must_use]
    pub fn call(&self, prefix: &str) -> Call {
        let mut cmd = redis::cmd("FCALL");
        cmd.arg(&self.name).arg(1).arg(prefix);
        Call { library: self.library.clone(), cmd }
    }
}

/// One `FCALL` being built, then sent with [`Call::invoke_async`] or added to a pipeline.
#[derive(Debug, Clone)]
pub struct Call {
    library: Arc<Library>,
    cmd: Cmd,
}

impl Call {
    /// The arguments `p` declares, set by name in their order (see [`Named`]); [`Named::done`]
    /// gives the call back for the rest.
    pub fn named(&mut self, p: &'static Params) -> Named<'_> {
        Named::new(self, p)
    }

    /// Appends an argument (`ARGV[n]` in the body): what follows a function's declared ones.
    pub fn arg<T: ToRedisArgs>(&mut self, arg: T) -> &mut Call {
        self.cmd.arg(arg);
        self
    }

    /// The command, for a pipeline (whose caller handles a missing library with
    /// [`Call::is_missing`] and [`Call::load`]).
    #[must_use]
    pub fn cmd(&self) -> &Cmd {
        &self.cmd
    }

    /// Runs the call, loading the library first if Redis does not have it.
    pub async fn invoke_async<T: FromRedisValue, C: ConnectionLike>(&self, conn: &mut C) -> RedisResult<T> {
        match self.cmd.query_async(conn).await {
            Err(e) if is_missing(&e) => {
                self.library.load(conn).await?;
                self.cmd.query_async(conn).await
            }
            r => r,
        }
    }

    /// Whether an error says the library is not loaded.
    #[must_use]
    pub fn is_missing(e: &RedisError) -> bool {
        is_missing(e)
    }

    /// Loads the library.
    pub async fn load<C: ConnectionLike>(&self, conn: &mut C) -> RedisResult<()> {
        self.library.load(conn).await
    }
}

/// A call's declared arguments, set by name in their declared order and appended to the call as
/// they come (no buffer, no allocation: a completion sets three per discovered link); the name
/// each value is set under is checked against the declaration, so the order lives in one place.
#[derive(Debug)]
pub struct Named<'c> {
    call: &'c mut Call,
    params: &'static Params,
    /// How many of the declared arguments are set.
    next: usize,
}

impl<'c> Named<'c> {
    fn new(call: &'c mut Call, params: &'static Params) -> Named<'c> {
        Named { call, params, next: 0 }
    }

    /// Sets the next declared argument, which must be `name`, to `value`.
    ///
    /// # Panics
    /// When `name` is not the next argument `params` declares: a mistake in this crate's code,
    /// which every test of the step finds.
    pub fn set<T: ToRedisArgs>(&mut self, name: &str, value: T) -> &mut Named<'c> {
        let expected = self.params.names.get(self.next).copied();
        assert!(
            expected == Some(name),
            "{}.{name} set where the declaration has {}",
            self.params.lua,
            expected.unwrap_or("no more arguments")
        );
        assert!(value.num_of_args() == 1, "{}.{name} is one argument, not {}", self.params.lua, value.num_of_args());
        self.call.arg(value);
        self.next += 1;
        self
    }

    /// Gives the call back for what follows the declared arguments.
    ///
    /// # Panics
    /// When an argument was not set (see [`Named::set`]).
    pub fn done(&mut self) -> &mut Call {
        assert!(
            self.next == self.params.names.len(),
            "{}.{} was not set",
            self.params.lua,
            self.params.names.get(self.next).copied().unwrap_or_default()
        );
        self.call
    }
}

/// Every step of the frontier.
#[derive(Debug)]
pub struct Scripts {
    /// Leases the next ready task.
    pub claim: Function,
    /// Applies a fetch's outcome.
    pub complete: Function,
    /// `complete`, then `claim` for the same worker: [`shoal_shared::frontier::Frontier::complete_and_claim`].
    pub complete_claim: Function,
    /// Reclaims expired leases.
    pub reap: Function,
    /// Creates a site's lanes.
    pub seed: Function,
    /// Cancels an audit.
    pub cancel: Function,
    /// Drops a finished audit's records.
    pub forget: Function,
    /// Moves the deadlines of a worker's leases (its heartbeat).
    pub renew: Function,
    /// Leases the next browser task (workers started with `--browser`).
    pub claim_browser: Function,
    /// Queues a site's browser tasks after its crawl.
    pub queue_browser: Function,
    /// Says when a request that would leave later than its start may leave, and moves the host's
    /// next start a gap past it.
    pub depart: Function,
    /// The failover fence: run on each new connection to a Sentinel-watched master (conn.rs).
    pub fence: Function,
}

impl Scripts {
    /// Builds the library and its steps.
    #[must_use]
    pub fn new() -> Scripts {
        let library = Arc::new(Library::build());
        let f = |step: &str| Function { library: library.clone(), name: format!("{}_{step}", library.name) };
        Scripts {
            claim: f("claim"),
            complete: f("complete"),
            complete_claim: f("complete_claim"),
            reap: f("reap"),
            seed: f("seed"),
            cancel: f("cancel"),
            forget: f("forget"),
            renew: f("renew"),
            claim_browser: f("claim_browser"),
            queue_browser: f("queue_browser"),
            depart: f("depart"),
            fence: f("fence"),
        }
    }
}

impl Default for Scripts {
    fn default() -> Self {
        Scripts::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_claim_hands_claim_its_arguments_by_name() {
        let body = complete_claim_body();
        assert!(
            body.contains(
                "ARGV = {args[A_COMPLETE.now], args[#args - 2], args[#args - 1], args[A_COMPLETE.ip_cap], args[#args], args[#args - 3]}"
            ),
            "{body}"
        );
    }

    #[test]
    fn every_step_is_registered_under_the_versioned_name() {
        let lib = Library::build();
        assert!(lib.source.starts_with(&format!("#!lua name={}\n", lib.name)));
        for (step, _) in STEPS {
            assert!(lib.source.contains(&format!("redis.register_function('{}_{step}',", lib.name)), "{step}");
        }
        assert_eq!(Library::build().name, lib.name, "the name is a function of the source");
    }

    /// A Lua file added to `lua/` (a split of a shared file, a new step) that the library does not
    /// load would be dead code, and the functions it holds missing.
    #[test]
    fn the_library_loads_every_lua_file() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lua");
        let listed: Vec<&str> = SHARED.iter().chain(STEPS).map(|(name, _)| *name).collect();
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).expect("src/lua") {
            let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".lua") else { continue };
            assert!(listed.contains(&stem), "lua/{name} is not in SHARED or STEPS");
            files += 1;
        }
        assert_eq!(files, listed.len(), "every listed file exists once");
    }
}
