//! The pace, latency and budget rules in Rust (`shoal_shared::pace`, `::latency`,
//! `::frontier::budget`) and their Lua mirrors in the Redis back end (`src/lua/`) run on the same
//! random cases and must agree on every output (issue 39). Nothing else ties the two: a change to
//! one side only (a constant, a branch) fails here.
//!
//! The Lua side is the library's own code, [`shoal_frontier_redis::scripts::shared_code`] (the
//! generated prelude and the shared Lua files, as `FUNCTION LOAD` gets them), loaded into a private
//! redis-server as a test library with the entry points of `differential.lua` after it: each calls
//! one production function with a case's inputs and returns its outputs.
//!
//! The cases come from proptest, seeded: `SHOAL_DIFF_SEED` when set, else the clock. A failure
//! names the seed and the smallest case proptest shrank it to; `SHOAL_DIFF_SEED=<seed> cargo test
//! -p shoal-frontier-redis --test it differential` runs the same cases again. `SHOAL_DIFF_CASES`
//! sets the number of cases per rule for a longer run.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use shoal_shared::frontier::budget::{BudgetCounts, over_budget};
use shoal_shared::latency::{GuardChange, GuardMove, LatencyGuard, ServerSignals, guarded, host_tag, ip_cap, ip_gap};
use shoal_shared::pace::{HostPace, IpPace, LaneDemand, Observed, PaceLimits};
use shoal_shared::task::{ProbeKind, SiteLimits, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_tests::redis::RedisServer;
use std::cell::RefCell;
use std::fmt::Debug;
use std::time::Duration;

/// Cases per rule by default (five rules: 10,000 cases in all, about a second).
const CASES: u32 = 2_000;
const ENTRIES: &str = include_str!("differential.lua");
const PREFIX: &str = "shoal:v1:{difftest}";
/// The hosts at the server IP of the IP guard's cases.
const HOSTS: [&str; 3] = ["a.test", "b.test", "c.test"];

/// The seed of this run's cases.
fn seed() -> u64 {
    std::env::var("SHOAL_DIFF_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        t.as_secs() ^ u64::from(t.subsec_nanos())
    })
}

/// A private redis-server with the test library loaded: the library's shared code, then the entry
/// points.
fn start() -> (RedisServer, RefCell<redis::Connection>) {
    let server = RedisServer::start().expect("redis-server starts");
    let mut conn = redis::Client::open(server.url()).expect("url").get_connection().expect("connects");
    let source = format!("#!lua name=shoal_difftest\n{}\n{ENTRIES}", shoal_frontier_redis::scripts::shared_code());
    let _: String = redis::cmd("FUNCTION").arg("LOAD").arg(&source).query(&mut conn).expect("the test library loads");
    (server, RefCell::new(conn))
}

fn fcall<T: redis::FromRedisValue>(conn: &RefCell<redis::Connection>, name: &str, args: &[String]) -> T {
    redis::cmd("FCALL").arg(name).arg(1).arg(PREFIX).arg(args).query(&mut *conn.borrow_mut()).expect(name)
}

/// Runs `test` on [`CASES`] cases of `strategy`; a disagreement fails with the seed and the case.
fn check<S: Strategy>(rule: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: Debug,
{
    let seed = seed();
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let cases = std::env::var("SHOAL_DIFF_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(CASES);
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    if let Err(e) = runner.run(&strategy, test) {
        panic!(
            "{rule}: Rust and Lua disagree (seed {seed}; replay: SHOAL_DIFF_SEED={seed} cargo test -p \
             shoal-frontier-redis --test it differential): {e}"
        );
    }
}

/// Response times in phases (a steady time with some spread, for a few answers each), so guards
/// get a baseline, then slow down and recover, as they do against real servers.
fn samples(phases: std::ops::Range<usize>) -> impl Strategy<Value = Vec<u32>> {
    let phase = (
        prop_oneof![4 => 0u32..300, 4 => 300u32..2_000, 2 => 2_000u32..10_000, 1 => 10_000u32..1_000_000],
        1usize..14,
        0u32..5,
    )
        .prop_flat_map(|(center, n, spread)| {
            let d = center / 10 * spread;
            prop::collection::vec(center.saturating_sub(d)..=center + d, n)
        });
    prop::collection::vec(phase, phases).prop_map(|p| p.concat())
}

/// Our requests in flight when an answer came: mostly a few (the slow start's steps), sometimes
/// many, and the extremes (0 never comes from a frontier; a count past u16 stops).
fn loads() -> impl Strategy<Value = Vec<u32>> {
    let load = prop_oneof![8 => 1u32..=4, 3 => 1u32..=20, 1 => Just(0u32), 1 => Just(u32::MAX)];
    prop::collection::vec(load, 1..64)
}

/// A host's baseline before an answer, as its IP's guard is told it (0: none yet).
fn host_bases() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(prop_oneof![Just(0u32), 1u32..300, 300u32..3_000], 1..64)
}

/// A guard after `history`, its answers taken at `loads` in turn (always a state the rule can
/// reach).
fn guard_after(history: &[u32], loads: &[u32]) -> LatencyGuard {
    let mut g = LatencyGuard::default();
    for (i, s) in history.iter().enumerate() {
        g.observe(*s, loads[i % loads.len()]);
    }
    g
}

/// A guard's fields as the Lua side stores them (`lb`, `lr`, `ll`, `lsc`, `lcm`, `lo`, `lc`; a 0
/// left out).
fn guard_fields(g: &LatencyGuard) -> Vec<String> {
    let n = |v: u32| if v == 0 { String::new() } else { v.to_string() };
    let recent: Vec<String> = g.recent[..usize::from(g.len)].iter().map(u32::to_string).collect();
    vec![
        n(g.baseline_ms),
        recent.join(","),
        n(g.level.into()),
        n(g.since_change.into()),
        n(g.calm.into()),
        n(g.open.into()),
        n(g.ceiling.into()),
    ]
}

/// Stored fields read back, a missing one as the 0 it means.
fn zeroed(fields: &[String]) -> Vec<String> {
    fields.iter().map(|f| if f.is_empty() { "0".to_owned() } else { f.clone() }).collect()
}

fn change_text(c: &GuardChange) -> Vec<String> {
    let moved = match c.moved {
        GuardMove::Slowed => "s",
        GuardMove::Restored => "r",
        GuardMove::Quota => "q",
    };
    vec![moved.to_owned(), c.level.to_string(), c.recent_ms.to_string(), c.baseline_ms.to_string()]
}

fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}

#[test]
fn guarded_limits_agree() {
    let (_server, conn) = start();
    let gap = prop_oneof![Just(0u64), 0u64..1_000, 0u64..120_000];
    check("guarded", (0u32..40, gap, 0u8..6, 1u16..64), |(maxe, gap, level, ipcap)| {
        let args = [maxe.to_string(), gap.to_string(), level.to_string(), ipcap.to_string()];
        let lua: Vec<String> = fcall(&conn, "difftest_guarded", &args);
        let (m, g) = guarded(maxe, Duration::from_millis(gap), level);
        let rust = vec![m.to_string(), ms(g), ip_cap(ipcap, level).to_string(), ms(ip_gap(level))];
        prop_assert_eq!(lua, rust);
        Ok(())
    });
}

#[test]
fn a_claims_cap_agrees() {
    let (_server, conn) = start();
    let open = prop::option::of(prop_oneof![0u16..6, 0u16..=u16::MAX]);
    check("slow_started (the cap a claim meets)", (0u8..6, open, 1u16..64), |(level, open, cap)| {
        let args = [level.to_string(), open.map(|o| o.to_string()).unwrap_or_default(), cap.to_string()];
        let lua: Vec<String> = fcall(&conn, "difftest_ip_cap", &args);
        let p = IpPace {
            guard: LatencyGuard { level, open: open.unwrap_or(0), ..LatencyGuard::default() },
            ..IpPace::default()
        };
        prop_assert_eq!(lua, vec![p.cap(cap, true).to_string(), p.cap(cap, false).to_string()]);
        Ok(())
    });
}

#[test]
fn budget_checks_agree() {
    let (_server, conn) = start();
    let kinds = [
        TaskKind::Robots,
        TaskKind::Page,
        TaskKind::Sitemap { index_depth: 1 },
        TaskKind::Resource { stylesheet: false },
        TaskKind::Resource { stylesheet: true },
        TaskKind::Probe(ProbeKind::LlmsTxt),
        TaskKind::External,
        TaskKind::DomainDns,
        TaskKind::Smtp,
        TaskKind::Rdap,
        TaskKind::Browser,
    ];
    let bytes = || prop_oneof![0u64..100, Just(shoal_shared::task::DEFAULT_MAX_SITEMAP_BYTES), 0u64..1 << 40];
    let limits = (0u32..50, 0u16..8, 0u32..50, 0u32..25, bytes());
    let counts = (0u64..60, 0u64..60, 0u64..30, bytes());
    check("over_budget", (0..kinds.len(), 0u16..10, counts, limits), |(k, depth, c, l)| {
        let kind = kinds[k];
        let counts = BudgetCounts { pages: c.0, resources: c.1, sitemaps: c.2, sitemap_bytes: c.3 };
        let limits = SiteLimits {
            max_pages: l.0,
            max_depth: l.1,
            max_resources: l.2,
            max_sitemaps: l.3,
            max_sitemap_bytes: l.4,
            ..SiteLimits::default()
        };
        let args = [
            shoal_frontier_redis::kind_code(kind).to_owned(),
            depth.to_string(),
            c.0.to_string(),
            c.1.to_string(),
            c.2.to_string(),
            c.3.to_string(),
            l.0.to_string(),
            l.1.to_string(),
            l.2.to_string(),
            l.3.to_string(),
            l.4.to_string(),
        ];
        let lua: String = fcall(&conn, "difftest_budget", &args);
        let rust = match over_budget(kind, depth, &counts, &limits) {
            None => "",
            Some(shoal_shared::finding::Code::DepthLimitReached) => "d",
            Some(shoal_shared::finding::Code::PageLimitReached) => "p",
            Some(shoal_shared::finding::Code::ResourceLimitReached) => "r",
            Some(shoal_shared::finding::Code::SitemapLimitReached) => "s",
            Some(other) => return Err(TestCaseError::fail(format!("no Lua code for {other:?}"))),
        };
        prop_assert_eq!(lua, rust, "{:?}", kind);
        Ok(())
    });
}

#[test]
fn a_hosts_latency_guard_agrees() {
    let (_server, conn) = start();
    let load = prop_oneof![4 => 1u32..=4, 1 => 0u32..=20, 1 => Just(u32::MAX)];
    check(
        "observe (a host's guard)",
        (samples(0..5), loads(), samples(1..3), load),
        |(history, loads, batch, load)| {
            let mut g = guard_after(&history, &loads);
            let mut args = guard_fields(&g);
            args.extend([String::new(), String::new(), load.to_string(), "0".to_owned()]);
            args.extend(batch.iter().map(u32::to_string));
            let (changes, fields): (Vec<Vec<String>>, Vec<String>) = fcall(&conn, "difftest_observe", &args);
            let rust: Vec<Vec<String>> =
                batch.iter().filter_map(|s| g.observe(*s, load)).map(|c| change_text(&c)).collect();
            prop_assert_eq!(changes, rust);
            prop_assert_eq!(zeroed(&fields[..7]), zeroed(&guard_fields(&g)));
            Ok(())
        },
    );
}

#[test]
fn a_server_ips_latency_guard_agrees() {
    let (_server, conn) = start();
    let ip = std::net::IpAddr::from([192, 0, 2, 1]);
    let now = UnixMs(1_700_000_000_000);
    let hosts = prop::collection::vec(0..HOSTS.len(), 64);
    let answer = (0..HOSTS.len(), prop_oneof![3 => 1u32..=8, 1 => 0u32..=20], prop_oneof![Just(0u32), 1u32..3_000]);
    check(
        "observe (a server IP's guard)",
        ((samples(0..5), hosts, loads(), host_bases()), samples(1..3), answer),
        |((history, who, loads, bases), batch, (from, load, host_base_ms))| {
            let mut p = IpPace::default();
            for (i, s) in history.iter().enumerate() {
                let seen = Observed {
                    tag: host_tag(HOSTS[who[i % who.len()]]),
                    response_ms: *s,
                    load: loads[i % loads.len()],
                    host_base_ms: bases[i % bases.len()],
                };
                p.observe(ip, seen, now);
            }
            let name = |tag: u64| HOSTS.iter().find(|h| host_tag(h) == tag).copied().unwrap_or("?");
            let tags =
                |p: &IpPace| p.hosts[..usize::from(p.guard.len)].iter().map(|t| name(*t)).collect::<Vec<_>>().join(",");
            let mut args = guard_fields(&p.guard);
            args.extend([tags(&p), HOSTS[from].to_owned(), load.to_string(), host_base_ms.to_string()]);
            args.extend(batch.iter().map(u32::to_string));
            let (changes, fields): (Vec<Vec<String>>, Vec<String>) = fcall(&conn, "difftest_observe", &args);
            let tag = host_tag(HOSTS[from]);
            let rust: Vec<Vec<String>> = batch
                .iter()
                .filter_map(|s| p.observe(ip, Observed { tag, response_ms: *s, load, host_base_ms }, now))
                .map(|c| change_text(&c))
                .collect();
            prop_assert_eq!(changes, rust);
            let mut expected = zeroed(&guard_fields(&p.guard));
            expected.push(tags(&p));
            let mut got = zeroed(&fields[..7]);
            got.push(fields[7].clone());
            prop_assert_eq!(got, expected);
            Ok(())
        },
    );
}

/// One case of a host's pace: its state, its lanes' demands, and the signals of an answer.
#[derive(Debug, Clone)]
struct PaceCase {
    history: Vec<u32>,
    loads: Vec<u32>,
    load: u32,
    next_offset: i64,
    quota_before: u32,
    slow: bool,
    lanes: Vec<(u32, u64, Option<u32>)>,
    sample: Option<u32>,
    quota: Option<u32>,
    hold_offset: Option<i64>,
}

fn pace_cases() -> impl Strategy<Value = PaceCase> {
    let gap = || prop_oneof![Just(0u64), Just(300u64), 0u64..=2_000, 0u64..=60_000];
    let quota = || prop_oneof![Just(0u32), 0u32..5_000, 0u32..120_000];
    let lane = (1u32..=16, gap(), prop::option::of(0u32..=60_000));
    let sample = prop_oneof![0u32..300, 300u32..3_000, 3_000u32..70_000];
    (
        (samples(0..5), loads(), 0u32..=8),
        -100_000i64..100_000,
        quota(),
        any::<bool>(),
        prop::collection::vec(lane, 0..4),
        prop::option::of(sample),
        prop::option::of(quota()),
        prop::option::of(-10_000i64..200_000),
    )
        .prop_map(
            |((history, loads, load), next_offset, quota_before, slow, lanes, sample, quota, hold_offset)| PaceCase {
                history,
                loads,
                load,
                next_offset,
                quota_before,
                slow,
                lanes,
                sample,
                quota,
                hold_offset,
            },
        )
}

#[test]
fn a_hosts_pace_agrees() {
    let (_server, conn) = start();
    let at = |offset: i64| UnixMs(1_700_000_000_000u64.saturating_add_signed(offset));
    check("recompute and apply_signals (a host's pace)", pace_cases(), |c| {
        let now = at(0);
        let mut h = HostPace::new(PaceLimits::default());
        h.guard = guard_after(&c.history, &c.loads);
        h.quota_gap_ms = c.quota_before;
        h.next_start_at = at(c.next_offset);
        let mut demands = Vec::new();
        for (mif, gap, delay) in &c.lanes {
            let limits =
                PaceLimits::new(*mif, Duration::from_millis(*gap)).map_err(|e| TestCaseError::fail(e.to_string()))?;
            demands.push(LaneDemand { limits, crawl_delay_ms: *delay });
        }
        let text = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let mut args = vec![
            h.next_start_at.0.to_string(),
            if c.quota_before == 0 { String::new() } else { c.quota_before.to_string() },
        ];
        args.extend(guard_fields(&h.guard));
        args.push(if c.slow { "1" } else { "0" }.to_owned());
        args.push(demands.len().to_string());
        for d in &demands {
            args.extend([d.limits.max_in_flight().to_string(), ms(d.gap())]);
        }
        args.extend([
            text(c.sample.map(u64::from)),
            text(c.quota.map(u64::from)),
            text(c.hold_offset.map(|o| at(o).0)),
            now.0.to_string(),
            c.load.to_string(),
        ]);
        let (gape, before, changes, after): (String, Vec<String>, Vec<Vec<String>>, Vec<String>) =
            fcall(&conn, "difftest_pace", &args);
        let used = h.combine(demands, c.slow);
        prop_assert_eq!(!gape.is_empty(), used, "whether a lane uses the host");
        if !used {
            return Ok(());
        }
        let off = HostPace { slow_start: false, ..h.clone() };
        let limits =
            vec![h.max_in_flight().to_string(), ms(h.gap()), h.allowed().to_string(), off.allowed().to_string()];
        prop_assert_eq!(&gape, &limits[1], "recompute's gap");
        prop_assert_eq!(
            before,
            limits,
            "the limits in force (maxe, gape) and a claim's cap with and without the slow start"
        );
        let signals = ServerSignals { response_ms: c.sample, quota_gap_ms: c.quota, hold_until: c.hold_offset.map(at) };
        let change = h.apply_signals(&signals, c.load, now);
        prop_assert_eq!(changes, change.iter().map(change_text).collect::<Vec<_>>(), "the changes");
        let mut expected =
            vec![h.next_start_at.0.to_string(), h.quota_gap_ms.to_string(), h.max_in_flight().to_string(), ms(h.gap())];
        expected.extend(guard_fields(&h.guard));
        prop_assert_eq!(zeroed(&after), zeroed(&expected), "next, qg, maxe, gape and the guard after the signals");
        Ok(())
    });
}
