//! The Lua scripts that make each multi-key frontier step atomic.
//!
//! Each script is the generated key prelude ([`crate::keys::lua_prelude`]), the shared functions of
//! `lua/common.lua`, then its own body. `redis::Script` sends EVALSHA and falls back to EVAL when
//! the server does not have the script yet (after a restart), so nothing needs loading up front.

use crate::keys::lua_prelude;
use redis::Script;

const COMMON: &str = include_str!("lua/common.lua");

/// The compiled scripts.
#[derive(Debug)]
pub struct Scripts {
    /// Leases the next ready task.
    pub claim: Script,
    /// Applies a fetch's outcome.
    pub complete: Script,
    /// Reclaims expired leases.
    pub reap: Script,
    /// Creates a site's lanes.
    pub seed: Script,
    /// Cancels an audit.
    pub cancel: Script,
    /// Drops a finished audit's records.
    pub forget: Script,
    /// Moves the deadlines of a worker's leases (its heartbeat).
    pub renew: Script,
    /// Leases the next browser task (workers started with `--browser`).
    pub claim_browser: Script,
    /// Queues a site's browser tasks after its crawl.
    pub queue_browser: Script,
}

fn build(body: &str) -> Script {
    Script::new(&format!("{}\n{COMMON}\n{body}", lua_prelude()))
}

impl Scripts {
    /// Builds every script.
    #[must_use]
    pub fn new() -> Scripts {
        Scripts {
            claim: build(include_str!("lua/claim.lua")),
            complete: build(include_str!("lua/complete.lua")),
            reap: build(include_str!("lua/reap.lua")),
            seed: build(include_str!("lua/seed.lua")),
            cancel: build(include_str!("lua/cancel.lua")),
            forget: build(include_str!("lua/forget.lua")),
            renew: build(include_str!("lua/renew.lua")),
            claim_browser: build(include_str!("lua/claim_browser.lua")),
            queue_browser: build(include_str!("lua/queue_browser.lua")),
        }
    }
}

impl Default for Scripts {
    fn default() -> Self {
        Scripts::new()
    }
}
