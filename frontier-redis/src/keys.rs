//! The Redis key schema, version 1: the only place Shoal's Redis keys are built.
//!
//! Every key starts with `shoal:v1:{NS}`, where `NS` names one frontier (one deployment, or one
//! test). The braces are a Redis Cluster hash tag: all keys of a frontier hash to one slot, which is
//! what lets one Lua script touch any of them atomically (claim scans lanes of many hosts and IPs at
//! once). On a cluster this keeps Shoal correct but on one node; see `docs/redis.md`.
//!
//! | key | type | written by | meaning |
//! |---|---|---|---|
//! | `…:ready` | zset | claim, complete, seed, reap | lanes that may have a claimable task, scored by the earliest start (ms) |
//! | `…:lane:{site}\|{host}` | hash | seed, claim, complete | lane state: `host`, `site`, `robots` (`p` pending, `k` known, `c` closed; a lane of DNS checks or a mail server opens `k`, with no robots.txt task), `rt`/`rtnb` the robots.txt task and its not-before, `rtpl` the first robots.txt task (queued again when the rules are a day old), `rat` when the rules were fetched, `pgap` the audit's gap |
//! | `…:lq:{lane}` | zset | complete, claim | ready tasks (rmp blobs), scored by priority·2⁴⁰ + sequence |
//! | `…:ld:{lane}` | zset | complete, reap | delayed tasks (priority digit + blob), scored by not-before (ms) |
//! | `…:lexp:{lane}` | hash | reap, claim, complete | expired leases per queued task (field: the task blob) |
//! | `…:robots:{lane}` | string | complete | the lane's robots.txt outcome (rmp `LaneRobots`) |
//! | `…:host:{host}` | hash | seed, claim, complete, depart | pace: `blease` the one browser lease out on the host (page loads are serialised), `inf` in flight, `maxe`/`gape` the limits in force, `next` next allowed start (ms), `ip`, `ipx` until when the address is used without a fresh lookup, `ipr` the lease looking it up; `qg` the gap a quota the server stated asks for; the latency guard (`apply_signals` in complete): `lb` baseline (the fastest answer, rising slowly), `lr` recent samples, `ll` level, `lsc` samples since its last change, `lcm` calm samples in a row, `lo` the slow start's requests allowed in flight (missing: 1), `lc` its ceiling; expires `HOST_LINGER` after `next` once no lane uses the host |
//! | `…:hmax:{host}`, `…:hgap:{host}` | zset | seed, complete | what each live lane asks: in-flight cap, gap with Crawl-delay (ms) |
//! | `…:hslow:{host}` | set | complete, forget | live audits that saw a 429 from the host (slow mode while any is left) |
//! | `…:hostwait:{host}` | set | claim | lanes parked because the host's slots are full; woken by a completion on the host |
//! | `…:ipf:{ip}` | string (int) | claim, complete, reap | requests in flight to the IP |
//! | `…:ipq:{ip}` | zset | claim, complete | lanes parked because the IP's slots are full, woken by a completion on the IP: scored by the order they were parked in (a number of `seq`), plus 10¹³ when their host had a request in flight (those of idle hosts are woken first, so sites on one server take turns) |
//! | `…:ipwait:{ip}` | set | (earlier versions) | what `ipq` was before; read only to wake lanes an earlier version parked, during a rolling upgrade |
//! | `…:ipg:{ip}` | hash | complete, claim | the latency guard of every host at the IP (fields as the host's: `lb`, `lr`, `ll`, `lsc`, `lcm`, `lo`, `lc`; `lt` the hosts of the recent samples, since it slows down only for slow answers of two hosts) and `next`, no request to the IP before it while the guard is slowed; expires `HOST_LINGER` after the IP's last answer or slowed start (relative `PEXPIRE`: it outlives the IP's last request in flight) |
//! | `…:site:{site}` | hash | seed, complete | `audit`, counters (`queued`, `leased`, `pages`, `res`, `completed`, `smf` sitemaps queued, `smb` sitemap bytes read), limits (`maxp`, `maxd`, `maxr`, `maxsf`, `maxsb`), flags (`done`, `cancelled`, `rep_*`), pre-encoded blobs (`info`, `doneblob`, `lim_d`, `lim_p`, `lim_r`, `lim_s`), and the browser phase's `bp` (1: browser pages or the rendered crawl asked for), `bphase` (`a` crawl over and `cdblob`, the `CrawlDone` event, published; `q` browser tasks queued, the site ends after them; `r` a round of the rendered crawl queued, after which `CrawlDone` is published again) |
//! | `…:sitelanes:{site}` | set | seed | the site's lanes |
//! | `…:auditsites:{audit}` | set | seed | the audit's sites |
//! | `…:ahosts:{audit}` | set | seed, complete | the hosts the audit has lanes on (a fresh address lookup when it joins one; its slow mode ends with it) |
//! | `…:seen:{audit}` | set | seed, complete | 8-byte xxh3 fingerprints of every URL queued in the audit |
//! | `…:lease:{id}` | hash | claim | a lease: task blob, lane, host, ip, robots flag, priority, site, worker, start, deadline, and `x` when the task's leases expired before (its completion clears the count in `lexp`); for a batch `n` further tasks and `mz`, set when they are in `leasem` (always, since [`FRONTIER_SCHEMA`] 2: a batch lease without it is of schema 1, whose `mp` or `m1`.. fields are not read, and the step fails saying so). `release` reads the fields of [`LEASE_FIELDS`] |
//! | `…:leasem:{id}` | zset | claim | a batch lease's further tasks with their queue scores, copied from the lane's queue by `ZRANGESTORE` (no Lua string made of them); deleted with the lease |
//! | `…:leases` | zset | claim, complete, reap | lease ids by deadline (ms) |
//! | `…:wl` | hash | claim, complete, reap | leases each worker holds (field: the worker; deleted at 0) |
//! | `…:hungry` | hash | claim | workers whose last claim found nothing, with its time (ms); a worker's entry goes when it gets a lease, entries 10 s old when read; the hash expires 10 s after its last write. A claim by a worker holding more leases than one that asked in the last 200 ms and found nothing leaves the slot to it |
//! | `…:leaseid`, `…:seq` | string (int) | claim, complete | counters |
//! | `…:epoch` | string (int) | claim | when the namespace's state began (the time of the first claim that found it missing): every lease carries it, and a client's memo of what Redis holds (`sent.rs`) is dropped when it changes (an emptied Redis) |
//! | `…:replid` | string | fence | the replication id (`master_replid`) of the master the namespace's state was last written on, by a process that follows Sentinels: a new master with another id (a promoted replica, a restarted server) raises the fence |
//! | `…:fence` | string (int, with expiry) | fence; read by claim, claim_browser | when the fence was raised (ms): no lease before it plus max(`FAILOVER_HOLD`, the lease time), no host's next start before it plus the host's gap; expires when neither can matter (docs/redis.md, "Failover") |
//! | `…:settings` | string | coordinator | frontier-wide settings (rmp `FrontierSettings`: per-IP cap, lease time), read by workers at start |
//! | `…:cache:{key}` | string (with expiry) | workers | shared results: `x:{url}` an external link check (rmp `PageRecord`), `r:{scheme}://{host}` another site's robots.txt outcome, `a:{audit}:r:{scheme}://{host}` the audit's own copy of a host's robots.txt (and `…#asking`, who fetches it), `a:{audit}:smtp:{host}:{port}` a mail server's conversation (rmp `Conversation`) and `a:{audit}:rdap:{url}` a registry's answer, shared by the audit's sites, `rdap:bootstrap` the IANA RDAP bootstrap file (a day; each with its `…#asking` lock) |
//! | `…:acache:{audit}` | set | workers, `forget` | the audit's own `cache` keys (`a:{audit}:…`), unlinked when the audit is forgotten |
//! | `…:bq` | zset | complete, reap, queue_browser, claim_browser | browser tasks (`--browser-pages`) waiting, by id (oldest first): only `claim_browser` reads it, so a worker without `--browser` never sees them |
//! | `…:btask:{id}` | hash | the same | one waiting browser task: `lane`, `site`, `blob` (rmp `Task`), `nb` not-before (ms), `render` (`1`: a render of the rendered crawl, paced by `PAGE_LOAD_GAP.r`) |
//! | `…:sbq:{site}` | set | the same, `cancel`, `forget` | the site's waiting browser task ids (a cancel drops them) |
//! | `…:bworkers` | zset | workers started with `--browser` (their heartbeat), the coordinator (its reads) | the live browser workers: worker id, scored by when its announcement expires (ms, the worker's clock; `BROWSER_WORKER_TTL_LEASES` lease times after it was made); a read drops the expired ones, a clean shutdown its own, and the key expires that long after the last announcement, so it ends with the workers. The coordinator refuses an audit that needs a browser while none is live |
//! | `…:quarantine` | hash | any step, progress reads, `forget` | sites taken out of the crawl because a step could not read their state (field: the site; value: `ms reason`, the first report kept); the coordinator fails their audits, `forget` drops them (docs/runbook.md, "A bad entry is quarantined") |
//! | `…:events` | stream | complete, seed, reap, cancel | page records, findings and site-done events (field `e`: one rmp `Event`; field `E`: a completion's events, each behind its 4-byte little-endian length, `stream::pack_events`; a completion that moved a latency guard adds `g`, `moved,level,recent_ms,baseline_ms,at,ip`, one per change, and `t`, the lease's task, from which the reader builds the `slowed_down` note); consumer group `coordinator` |
//!
//! Lua scripts get the prefix as `KEYS[1]` and build keys with the functions of [`lua_prelude`],
//! which is generated from [`SCHEMA`] below, so Rust and Lua cannot disagree.

use shoal_shared::ids::{AuditId, LeaseId, SiteId};
use shoal_shared::url::HostKey;

/// Schema version, part of every key.
pub const VERSION: &str = "v1";

/// The frontier schema: the layout of what the keys of [`VERSION`] hold, counted up when a
/// release stops reading a layout an earlier one wrote (a rolling upgrade from such a release is
/// not safe; docs/runbook.md, "Upgrading", says what to do). 2: a batch lease's further tasks are
/// in `leasem` only (the lease's `mz`); schema 1 also kept them in the lease hash (`mp`, or
/// `m1`.. and `q1`..), and a step that meets such a lease fails saying so (`old_schema` in
/// lua/common.lua) instead of reading it.
pub const FRONTIER_SCHEMA: u32 = 2;

/// The consumer group that reads the events stream.
pub const EVENTS_GROUP: &str = "coordinator";

/// How recently a worker must have asked and found nothing for others to leave slots to it (the
/// `hungry` hash): several of a worker's idle polls (50 ms apart), so a worker that stopped asking
/// (busy, gone) is not waited for.
pub const HUNGRY_RECENT: std::time::Duration = std::time::Duration::from_millis(200);

/// When an entry of the `hungry` hash is dropped (and the hash expires after its last write).
pub const HUNGRY_FORGET: std::time::Duration = std::time::Duration::from_secs(10);

/// Every key family: (Lua function name, suffix after the prefix, takes an id).
pub const SCHEMA: &[(&str, &str, bool)] = &[
    ("k_ready", ":ready", false),
    ("k_lane", ":lane:", true),
    ("k_lq", ":lq:", true),
    ("k_ld", ":ld:", true),
    ("k_robots", ":robots:", true),
    ("k_host", ":host:", true),
    ("k_hmax", ":hmax:", true),
    ("k_hgap", ":hgap:", true),
    ("k_hslow", ":hslow:", true),
    ("k_ahosts", ":ahosts:", true),
    ("k_lexp", ":lexp:", true),
    ("k_hostwait", ":hostwait:", true),
    ("k_ipf", ":ipf:", true),
    ("k_ipwait", ":ipwait:", true),
    ("k_ipq", ":ipq:", true),
    ("k_ipg", ":ipg:", true),
    ("k_site", ":site:", true),
    ("k_sitelanes", ":sitelanes:", true),
    ("k_auditsites", ":auditsites:", true),
    ("k_seen", ":seen:", true),
    ("k_lease", ":lease:", true),
    ("k_leasem", ":leasem:", true),
    ("k_leases", ":leases", false),
    ("k_leaseid", ":leaseid", false),
    ("k_epoch", ":epoch", false),
    ("k_replid", ":replid", false),
    ("k_fence", ":fence", false),
    ("k_seq", ":seq", false),
    ("k_events", ":events", false),
    ("k_settings", ":settings", false),
    ("k_cache", ":cache:", true),
    ("k_acache", ":acache:", true),
    ("k_bq", ":bq", false),
    ("k_btask", ":btask:", true),
    ("k_sbq", ":sbq:", true),
    ("k_hungry", ":hungry", false),
    ("k_wl", ":wl", false),
    ("k_quarantine", ":quarantine", false),
];

/// Key families no script touches, built in Rust only: no Lua builder is generated for them (a
/// Lua function has at most 200 locals, and the scripts' prelude is at that limit).
pub const RUST_ONLY: &[(&str, &str, bool)] = &[("k_bworkers", ":bworkers", false)];

/// The fields of each hash that hold numbers: what the steps read as numbers (an unreadable one
/// quarantines the unit that reads it), and what the quarantine's check (`diagnose` in
/// `lua/quarantine.lua`, which gets these as `SITE_NUMBERS` etc.) and the progress reads look at.
pub const SITE_NUMBERS: &[&str] = &[
    "audit",
    "queued",
    "leased",
    "pages",
    "res",
    "completed",
    "done",
    "cancelled",
    "maxp",
    "maxd",
    "maxr",
    "pmax",
    "pgap",
    "maxsf",
    "maxsb",
    "smf",
    "smb",
    "bp",
];
/// See [`SITE_NUMBERS`]: a lane's.
pub const LANE_NUMBERS: &[&str] = &["rtnb", "rat", "pgap"];
/// See [`SITE_NUMBERS`]: a host's pace (`lr`, a list, is read leniently).
pub const HOST_NUMBERS: &[&str] = &["inf", "maxe", "gape", "next", "ipx", "qg", "lb", "ll", "lsc", "lcm", "lo", "lc"];
/// The fields of a lease hash that `release` (lua/lease.lua) reads, which the Lua gets as
/// `LEASE_FIELDS` and reads by name (`L.lane`): the task's blob, its lane, host, IP ('' when not
/// known at the grant), robots flag, priority, site, start, `browser` (`1` a browser check, `r` a
/// render), `x` (its leases expired before), `n` further tasks and the `worker`, and `mz` (its
/// further tasks are in `leasem`). `grant` writes them, with `deadline`.
pub const LEASE_FIELDS: &[&str] =
    &["blob", "lane", "host", "ip", "robots", "prio", "site", "started", "browser", "x", "n", "worker", "mz"];
/// The fields of a latency guard (a host's hash, or an IP's `ipg`) as `observe` (lua/latency.lua)
/// gets them from its callers, then `next` and `gape` (the host's, for `apply_signals`, which reads
/// them with the guard in one `HMGET`): `release` and `apply_signals` read them with
/// `unpack(F_GUARD)` and every reader takes them by name, `f[F_GUARD.ll]`.
pub const GUARD_FIELDS: &[&str] = &["lb", "lr", "ll", "lsc", "lcm", "lo", "lc", "lt", "next", "gape"];
/// The fields of a host's hash that `claim` and `claim_browser` read and hand to `grant`
/// (lua/lease.lua), which takes them by name (`h[F_HOST_GRANT.ip]`).
pub const HOST_GRANT_FIELDS: &[&str] = &["inf", "maxe", "gape", "next", "ip", "ipx", "ipr", "blease", "lo"];
/// See [`SITE_NUMBERS`]: a lease's.
pub const LEASE_NUMBERS: &[&str] = &["prio", "started", "deadline", "n", "x"];

/// The fields of a host's hash that `release` (lua/lease.lua) reads to free the lease's slots.
pub const HOST_RELEASE_FIELDS: &[&str] = &["inf", "maxe", "ipr", "blease", "gape", "next"];
/// The fields of a lane's hash that `claim` (lua/claim.lua) reads of a ready lane.
pub const LANE_CLAIM_FIELDS: &[&str] = &["host", "robots", "site", "rt", "rtnb", "rat", "rtpl"];
/// The fields of a lane's hash that `claim_browser` (lua/claim_browser.lua) reads.
pub const LANE_BROWSER_FIELDS: &[&str] = &["host", "rat", "robots"];
/// The fields of a queued browser task (`btask`) that `claim_browser` reads.
pub const BTASK_FIELDS: &[&str] = &["lane", "site", "blob", "nb", "render"];
/// The fields of a lane's hash that `lane_score` (lua/lanes.lua) reads, or its caller hands it.
pub const LANE_SCORE_FIELDS: &[&str] = &["host", "robots", "rt", "rtnb"];
/// The fields of a lane's hash that `complete` reads once for its requeue and its scheduling.
pub const LANE_STATE_FIELDS: &[&str] = &["robots", "rt", "rtnb"];
/// The fields of a site's hash that `check_done` (lua/lanes.lua) reads, or its caller hands it.
pub const SITE_DONE_FIELDS: &[&str] = &["queued", "leased", "done", "bp", "bphase", "cancelled"];
/// The fields of a site's hash that `offer_all` (lua/offer.lua) reads, or its caller hands it.
pub const OFFER_FIELDS: &[&str] =
    &["cancelled", "done", "maxp", "maxd", "maxr", "pages", "res", "pmax", "pgap", "maxsf", "maxsb", "smf", "smb"];
/// What `complete` reads of its site in one step after [`OFFER_FIELDS`] (so the answer is also
/// `offer_all`'s): its audit, counts and browser phase (not `queued`: it learns that from adding
/// to it).
pub const COMPLETE_SITE_FIELDS: &[&str] = &["audit", "leased", "completed", "bp", "bphase"];
/// The fields of a site's hash that `queue_browser` reads.
pub const SITE_BROWSER_FIELDS: &[&str] = &["done", "cancelled", "bphase"];
/// The fields of a lease that `reap` reads to blame a failed step on its site and lane.
pub const LEASE_BLAME_FIELDS: &[&str] = &["site", "lane"];
/// The fields of a server IP's guard (`ipg`) that `ip_pace` (lua/pace.lua) reads.
pub const IP_PACE_FIELDS: &[&str] = &["ll", "next", "lo"];
/// The fields of a host's hash that `recompute` (lua/pace.lua) reads: quota gap and guard level.
pub const HOST_SIGNAL_FIELDS: &[&str] = &["qg", "ll"];
/// The fields of a host's guard that `apply_signals` (lua/latency.lua) reports on a first quota.
pub const HOST_LEVEL_FIELDS: &[&str] = &["ll", "lb"];

/// Every hash read whose answer Lua indexes, as one table of the prelude, `F_<NAME>`: its array
/// part the `HMGET`'s names (`after`'s then the record's own: `unpack(F_<NAME>)`), its named part
/// their positions in the answer (`h[F_<NAME>.inf]`): (name, after, fields). A record after another is one read that is both, its answer handed
/// to the other's reader as it is.
const RECORDS: &[(&str, &[&str], &[&str])] = &[
    ("GUARD", &[], GUARD_FIELDS),
    ("HOST_GRANT", &[], HOST_GRANT_FIELDS),
    ("HOST_RELEASE", &[], HOST_RELEASE_FIELDS),
    ("LANE_CLAIM", &[], LANE_CLAIM_FIELDS),
    ("LANE_BROWSER", &[], LANE_BROWSER_FIELDS),
    ("BTASK", &[], BTASK_FIELDS),
    ("LANE_SCORE", &[], LANE_SCORE_FIELDS),
    ("LANE_STATE", &[], LANE_STATE_FIELDS),
    ("SITE_DONE", &[], SITE_DONE_FIELDS),
    ("OFFER", &[], OFFER_FIELDS),
    ("COMPLETE_SITE", OFFER_FIELDS, COMPLETE_SITE_FIELDS),
    ("SITE_BROWSER", &[], SITE_BROWSER_FIELDS),
    ("LEASE_BLAME", &[], LEASE_BLAME_FIELDS),
    ("IP_PACE", &[], IP_PACE_FIELDS),
    ("HOST_SIGNAL", &[], HOST_SIGNAL_FIELDS),
    ("HOST_LEVEL", &[], HOST_LEVEL_FIELDS),
];

/// Separates a quarantine record's time from its reason (`…:quarantine` values).
pub const QUARANTINE_SEP: char = ' ';

/// Builds the keys of one frontier namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// The keys of namespace `ns` (letters, digits, `-`, `_`; anything else is replaced by `_` so a
    /// namespace can never break the hash tag).
    #[must_use]
    pub fn new(ns: &str) -> Keys {
        let ns: String =
            ns.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
        Keys { prefix: format!("shoal:{VERSION}:{{{ns}}}") }
    }

    /// `shoal:v1:{ns}`: passed to every script as `KEYS[1]`.
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn key(&self, family: &str, id: Option<&str>) -> String {
        let suffix =
            SCHEMA.iter().chain(RUST_ONLY).find(|(name, _, _)| *name == family).map_or(":unknown", |(_, s, _)| *s);
        match id {
            Some(id) => format!("{}{suffix}{id}", self.prefix),
            None => format!("{}{suffix}", self.prefix),
        }
    }

    /// The lane id of one host of one site.
    #[must_use]
    pub fn lane_id(site: SiteId, host: &HostKey) -> String {
        format!("{site}|{host}")
    }

    /// The events stream.
    #[must_use]
    pub fn events(&self) -> String {
        self.key("k_events", None)
    }

    /// One entry of the shared result cache.
    #[must_use]
    pub fn cache(&self, key: &str) -> String {
        self.key("k_cache", Some(key))
    }

    /// The set of an audit's own result-cache keys (`audit_cache_key`), dropped by `forget`.
    #[must_use]
    pub fn audit_cache(&self, audit: AuditId) -> String {
        self.key("k_acache", Some(&audit.0.to_string()))
    }

    /// The frontier-wide settings.
    #[must_use]
    pub fn settings(&self) -> String {
        self.key("k_settings", None)
    }

    /// A lane's hash.
    #[must_use]
    pub fn lane(&self, site: SiteId, host: &HostKey) -> String {
        self.key("k_lane", Some(&Keys::lane_id(site, host)))
    }

    /// A lane's robots.txt outcome.
    #[must_use]
    pub fn robots(&self, site: SiteId, host: &HostKey) -> String {
        self.key("k_robots", Some(&Keys::lane_id(site, host)))
    }

    /// A site's hash.
    #[must_use]
    pub fn site(&self, site: SiteId) -> String {
        self.key("k_site", Some(&site.to_string()))
    }

    /// An audit's seen set.
    #[must_use]
    pub fn seen(&self, audit: AuditId) -> String {
        self.key("k_seen", Some(&audit.to_string()))
    }

    /// A lease's hash.
    #[must_use]
    pub fn lease(&self, id: LeaseId) -> String {
        self.key("k_lease", Some(&id.to_string()))
    }

    /// A host's pace hash.
    #[must_use]
    pub fn host(&self, host: &HostKey) -> String {
        self.key("k_host", Some(host.as_str()))
    }

    /// The counter lease ids are taken from: how many leases were ever granted in the namespace.
    #[must_use]
    pub fn lease_counter(&self) -> String {
        self.key("k_leaseid", None)
    }

    /// A server IP's latency guard.
    #[must_use]
    pub fn ip_guard(&self, ip: std::net::IpAddr) -> String {
        self.key("k_ipg", Some(&ip.to_string()))
    }

    /// The quarantined sites (see the table above).
    #[must_use]
    pub fn quarantine(&self) -> String {
        self.key("k_quarantine", None)
    }

    /// The live browser workers (see the table above).
    #[must_use]
    pub fn browser_workers(&self) -> String {
        self.key("k_bworkers", None)
    }

    /// The audit's host list.
    #[must_use]
    pub fn audit_hosts(&self, audit: AuditId) -> String {
        self.key("k_ahosts", Some(&audit.to_string()))
    }

    /// The pattern matching every key of the namespace (for cleanup and capacity measurements).
    #[must_use]
    pub fn pattern(&self) -> String {
        format!("{}:*", self.prefix)
    }
}

/// Lua functions building every key of [`SCHEMA`] from the prefix `P` (each registered function
/// sets it from `KEYS[1]`, see [`crate::scripts`]), plus the constants of the pace, latency and
/// budget rules the scripts need, taken from the shared crate ([`crate::rules`]).
#[must_use]
pub fn lua_prelude() -> String {
    let mut s = String::from("local P\n");
    for (name, suffix, takes_id) in SCHEMA {
        if *takes_id {
            s.push_str(&format!("local function {name}(id) return P .. '{suffix}' .. id end\n"));
        } else {
            s.push_str(&format!("local function {name}() return P .. '{suffix}' end\n"));
        }
    }
    let ms = |d: std::time::Duration| d.as_millis();
    s.push_str(&crate::rules::lua_constants());
    s.push_str(&crate::params::lua_params());
    s.push_str(&format!("local FRONTIER_SCHEMA = {FRONTIER_SCHEMA}\n"));
    s.push_str(&format!("local HUNGRY_RECENT = {}\n", ms(HUNGRY_RECENT)));
    s.push_str(&format!("local HUNGRY_FORGET = {}\n", ms(HUNGRY_FORGET)));
    for (name, fields) in [
        ("SITE_NUMBERS", SITE_NUMBERS),
        ("LANE_NUMBERS", LANE_NUMBERS),
        ("HOST_NUMBERS", HOST_NUMBERS),
        ("LEASE_NUMBERS", LEASE_NUMBERS),
        ("LEASE_FIELDS", LEASE_FIELDS),
    ] {
        let list: Vec<String> = fields.iter().map(|f| format!("'{f}'")).collect();
        s.push_str(&format!("local {name} = {{{}}}\n", list.join(", ")));
    }
    // The records, one table each (a Lua function has at most 200 locals): the HMGET's field
    // names in order (`unpack(F_GUARD)`), then its own fields' positions in the answer, by name.
    for (name, after, fields) in RECORDS {
        let list = after.iter().chain(*fields).map(|f| format!("'{f}'"));
        let at = fields.iter().enumerate().map(|(i, f)| format!("{f} = {}", after.len() + i + 1));
        s.push_str(&format!("local F_{name} = {{{}}}\n", list.chain(at).collect::<Vec<_>>().join(", ")));
    }
    s.push_str(&format!("local QUARANTINE_SEP = '{QUARANTINE_SEP}'\n"));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_shapes_are_pinned() {
        let k = Keys::new("prod");
        let host = HostKey::from_raw("a.test:8080");
        assert_eq!(k.prefix(), "shoal:v1:{prod}");
        assert_eq!(k.events(), "shoal:v1:{prod}:events");
        assert_eq!(k.lane(SiteId(7), &host), "shoal:v1:{prod}:lane:7|a.test:8080");
        assert_eq!(k.robots(SiteId(7), &host), "shoal:v1:{prod}:robots:7|a.test:8080");
        assert_eq!(k.site(SiteId(7)), "shoal:v1:{prod}:site:7");
        assert_eq!(k.seen(AuditId(3)), "shoal:v1:{prod}:seen:3");
        assert_eq!(k.lease(LeaseId(9)), "shoal:v1:{prod}:lease:9");
        assert_eq!(k.host(&host), "shoal:v1:{prod}:host:a.test:8080");
        assert_eq!(k.pattern(), "shoal:v1:{prod}:*");
        assert_eq!(k.quarantine(), "shoal:v1:{prod}:quarantine");
        assert_eq!(k.browser_workers(), "shoal:v1:{prod}:bworkers");
        assert_eq!(Keys::new("a{b}c d").prefix(), "shoal:v1:{a_b_c_d}", "a namespace cannot break the hash tag");
    }

    #[test]
    fn every_family_has_a_lua_builder() {
        let lua = lua_prelude();
        for (name, suffix, _) in SCHEMA {
            assert!(lua.contains(&format!("local function {name}(")), "{name}");
            assert!(lua.contains(suffix), "{suffix}");
        }
        for (name, suffix, _) in RUST_ONLY {
            assert!(!lua.contains(name), "{name} is built in Rust only");
            assert!(SCHEMA.iter().all(|(n, s, _)| n != name && s != suffix), "{name} is declared once");
        }
        assert!(lua.contains("local SLOW_GAP = 3000"));
        assert!(lua.contains("local LINGER = 60000"));
        assert!(lua.contains("local ROBOTS_MAX_AGE = 86400000"));
        assert!(lua.contains("local GUARD_MIN_RISE = 100"));
        assert!(lua.contains("local GUARD_FLOOR_GAP = 250"));
        assert!(lua.contains("local HOST_NUMBERS = {'inf', 'maxe', "), "{lua}");
    }

    /// A record's list and position table agree, a record after another numbers its own fields
    /// after the other's, and each is one HMGET's: no field twice.
    #[test]
    fn the_record_tables_are_the_declarations() {
        let lua = lua_prelude();
        let release = "local F_HOST_RELEASE = {'inf', 'maxe', 'ipr', 'blease', 'gape', 'next', \
                       inf = 1, maxe = 2, ipr = 3, blease = 4, gape = 5, next = 6}\n";
        assert!(lua.contains(release), "{lua}");
        assert!(lua.contains("local F_COMPLETE_SITE = {'cancelled', 'done', "), "{lua}");
        assert!(lua.contains("'bphase', audit = 14, leased = 15, "), "{lua}");
        for (name, after, fields) in RECORDS {
            let all: Vec<&str> = after.iter().chain(*fields).copied().collect();
            let unique: std::collections::HashSet<_> = all.iter().collect();
            assert_eq!(unique.len(), all.len(), "{name} names a field twice");
        }
        // check_done is handed a completion's site read: each of its fields is in it (`queued`:
        // the completion's HINCRBY answers it).
        for f in SITE_DONE_FIELDS {
            let read = OFFER_FIELDS.contains(f) || COMPLETE_SITE_FIELDS.contains(f) || *f == "queued";
            assert!(read, "complete reads no {f} of its site for check_done");
        }
    }

    /// A record table Lua names but the prelude lacks is nil: `unpack(F_LEASE)` asks for no field
    /// at all (the registration compiles, the read fails or answers nothing).
    #[test]
    fn every_record_table_the_lua_names_is_declared() {
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        for text in crate::scripts::lua_files() {
            for line in text.lines() {
                let code = line.split("--").next().unwrap_or_default();
                for (at, _) in code.match_indices("F_") {
                    if code[..at].ends_with(ident) {
                        continue;
                    }
                    let rest = &code[at + 2..];
                    let name = &rest[..rest.find(|c: char| !ident(c)).unwrap_or(rest.len())];
                    assert!(RECORDS.iter().any(|(n, _, _)| *n == name), "F_{name} is no record: {line}");
                }
            }
        }
    }

    /// A lease field that `release` reads but no Lua code uses by name (`L.x`), or a field of a
    /// record handed between functions (`F_GUARD.ll`), is read for nothing, or used by another way
    /// (a position) that its list no longer describes.
    #[test]
    fn every_lease_and_record_field_is_used_by_name() {
        // Without comments: a name in a comment is no use of it.
        let code: String = crate::scripts::lua_files()
            .flat_map(str::lines)
            .map(|line| line.split("--").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n");
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        for f in LEASE_FIELDS {
            let name = format!("L.{f}");
            let used = code
                .match_indices(&name)
                .any(|(i, _)| !code[..i].ends_with(ident) && !code[i + name.len()..].starts_with(ident));
            assert!(used, "{name} is read from the lease but never used");
        }
        for (table, _, fields) in RECORDS {
            for f in *fields {
                let name = format!("F_{table}.{f}");
                let used = code
                    .match_indices(&name)
                    .any(|(i, _)| !code[..i].ends_with(ident) && !code[i + name.len()..].starts_with(ident));
                assert!(used, "{name} is read but never used");
            }
        }
    }
}
