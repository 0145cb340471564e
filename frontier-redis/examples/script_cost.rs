//! What the frontier's scripts cost Redis per request, without HTTP: a private `redis-server`, a
//! farm of sites (every host on one IP) crawled by one client that keeps `--outstanding` leases
//! open, completing each with the links and the page record a real page would bring. Prints
//! Redis' CPU per request, commands per request and `INFO commandstats`.
//!
//! `cargo run --release -p shoal-frontier-redis --example script_cost -- [sites] [pages] [links] [outstanding] [guard] [chain] [batch]`
//! (defaults 200 50 5 16 1 1 4: the farm of `bench/cpu.py`; `batch` is the lease batch (tasks per
//! lease at most, each further one checked with `further_may_start` as a worker does); with `chain` 1 each completion claims
//! the next lease in the same call, as a worker does (`complete_and_claim`), 0 completes and
//! claims separately; with `guard` 1 every page's completion
//! carries a response time for the latency guards, as a worker's does unless
//! `--no-latency-guard`; a steady 100-106 ms, so no guard ever moves). Loopback only: the server listens on a unix
//! socket in a temporary directory.

use redis::Value;
use shoal_frontier_redis::RedisFrontier;
use shoal_shared::frontier::{Claim, Completion, Frontier, FrontierSettings, Lease, RobotsOutcome};
use shoal_shared::ids::WorkerId;
use shoal_shared::latency::ServerSignals;
use shoal_shared::record::{Event, LinkKind, LinkRecord, PageRecord};
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::time::UnixMs;
use shoal_shared::url::NormalizedUrl;
use shoal_tests::conformance::{resolution, seed};
use shoal_tests::redis::RedisServer;
use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

fn now() -> UnixMs {
    UnixMs::from(std::time::SystemTime::now())
}

fn arg(i: usize, default: u64) -> u64 {
    std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

/// The page's number in its site's tree (`/` is 0, `/p/N` is N).
fn number(l: &Lease) -> u64 {
    l.task.url.as_url().path().strip_prefix("/p/").and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// A page's completion: its links (pages `n*links+1 ..`) offered and its record published.
fn page_completion(l: &Lease, links: u64, pages: u64) -> Completion {
    let host = l.host.as_str().to_owned();
    let n = number(l);
    let targets: Vec<String> =
        (1..=links).map(|k| n * links + k).filter(|t| *t < pages).map(|t| format!("http://{host}/p/{t}")).collect();
    let discovered = targets
        .iter()
        .map(|t| {
            Task::new(
                l.task.audit,
                l.task.site,
                NormalizedUrl::parse(t).expect("url"),
                TaskKind::Page,
                l.task.depth + 1,
                FoundVia::Link { from: l.task.url.clone() },
            )
        })
        .collect();
    let mut rec = PageRecord::for_task(
        l.task.audit,
        l.task.site,
        l.task.url.as_str(),
        l.task.kind,
        l.task.depth,
        &l.task.found_via,
    );
    rec.status = Some(200);
    rec.title = Some(format!("Page {n} of {host}"));
    rec.meta_description =
        Some("A generated page of the benchmark farm, with a description of ordinary length.".into());
    rec.h1 = vec![format!("Page {n}")];
    rec.content_type = Some("text/html; charset=utf-8".into());
    rec.headers = vec![("content-type".into(), "text/html; charset=utf-8".into()), ("server".into(), "bench".into())];
    rec.links = targets
        .iter()
        .map(|t| LinkRecord {
            url: t.clone(),
            kind: LinkKind::Anchor,
            nofollow: false,
            internal: true,
            text: Some("a link".into()),
        })
        .collect();
    let response_ms = (arg(5, 1) == 1).then(|| 100 + u32::try_from(n % 7).unwrap_or(0));
    Completion {
        resolved: resolution(l, Some(IP)),
        discovered,
        events: vec![Event::Page(Box::new(rec))],
        signals: ServerSignals { response_ms, ..ServerSignals::default() },
        ..Completion::default()
    }
}

const IP: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

async fn info(c: &mut shoal_frontier_redis::Conn, section: &str) -> BTreeMap<String, String> {
    let text: String = redis::cmd("INFO").arg(section).query_async(c).await.expect("INFO");
    text.lines().filter_map(|l| l.split_once(':')).map(|(k, v)| (k.to_owned(), v.trim().to_owned())).collect()
}

fn cpu(i: &BTreeMap<String, String>) -> f64 {
    ["used_cpu_sys", "used_cpu_user"].iter().map(|k| i.get(*k).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0)).sum()
}

#[expect(clippy::print_stdout, reason = "a measuring tool prints its figures")]
#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (sites, pages, links, outstanding) = (arg(1, 200), arg(2, 50), arg(3, 5), arg(4, 16));
    let chain = arg(6, 1) == 1;
    let server = RedisServer::start().expect("redis-server starts");
    let batch = u8::try_from(arg(7, 4)).unwrap_or(4);
    let settings = FrontierSettings { max_in_flight_per_ip: 16, lease_batch: batch, ..FrontierSettings::default() };
    let f = RedisFrontier::connect(&server.url(), "cost", settings, "coordinator").await.expect("connects");
    f.publish_settings().await.expect("settings");
    let mut c = f.connection();
    for s in 0..sites {
        let mut sd = seed(1, s + 1, &format!("site{s}.test"), 4, 0, u32::try_from(pages).unwrap_or(u32::MAX));
        sd.limits.max_depth = 50;
        f.seed(sd).await.expect("seed");
    }
    let _: Value = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut c).await.expect("RESETSTAT");
    let before = cpu(&info(&mut c, "cpu").await);
    let started = Instant::now();
    let w = WorkerId("w".into());
    let mut open: VecDeque<Lease> = VecDeque::new();
    let (mut requests, mut events_read) = (0u64, 0u64);
    for _ in 0..10_000_000u64 {
        let mut waited = None;
        while open.len() < usize::try_from(outstanding).unwrap_or(usize::MAX) {
            match f.claim(&w, now()).await.expect("claim") {
                Claim::Leased(l) => open.push_back(*l),
                Claim::Wait(at) => {
                    waited = Some(at);
                    break;
                }
                Claim::Idle => break,
            }
        }
        let Some(l) = open.pop_front() else {
            match waited {
                Some(at) => tokio::time::sleep(at.since(now()).max(Duration::from_millis(1))).await,
                None => break,
            }
            continue;
        };
        let completion = match l.task.kind {
            TaskKind::Robots => Completion {
                resolved: resolution(&l, Some(IP)),
                robots: Some(RobotsOutcome::AllowAll),
                ..Completion::default()
            },
            _ => {
                let mut all = page_completion(&l, links, pages);
                for i in 0..l.more.len() {
                    if !f.further_may_start(&l, now()).await.expect("pace check") {
                        break;
                    }
                    let further = l.follow_up(i, now()).expect("a further task");
                    all.absorb(page_completion(&further, links, pages));
                }
                all
            }
        };
        let tasks = 1 + completion.more.len() as u64;
        if chain {
            let (_, next) = f.complete_and_claim(&l, &completion, &w, now()).await.expect("complete and claim");
            if let Claim::Leased(n) = next {
                open.push_back(*n);
            }
        } else {
            f.complete(&l, completion, now()).await.expect("complete");
        }
        requests += tasks;
        // The coordinator's part: read and acknowledge what was published, in batches.
        if requests % 64 < tasks {
            let batch = f.read_events(1000).await.expect("read events");
            events_read += batch.len() as u64;
            let ids: Vec<_> = batch.into_iter().map(|(id, _)| id).collect();
            f.ack_events(&ids).await.expect("ack");
        }
    }
    loop {
        let batch = f.read_events(1000).await.expect("read events");
        if batch.is_empty() {
            break;
        }
        events_read += batch.len() as u64;
        let ids: Vec<_> = batch.into_iter().map(|(id, _)| id).collect();
        f.ack_events(&ids).await.expect("ack");
    }
    let wall = started.elapsed();
    let used = cpu(&info(&mut c, "cpu").await) - before;
    let stats = info(&mut c, "commandstats").await;
    let per = |x: f64| x / requests.max(1) as f64;
    println!("requests {requests}, events read {events_read}, wall {:.2} s", wall.as_secs_f64());
    println!("redis CPU {used:.2} s = {:.1} us per request", per(used * 1e6));
    let mut rows: Vec<(String, u64, u64)> = stats
        .iter()
        .filter_map(|(k, v)| {
            let name = k.strip_prefix("cmdstat_")?;
            let field = |f: &str| v.split(',').find_map(|p| p.strip_prefix(f)).and_then(|x| x.parse::<u64>().ok());
            Some((name.to_owned(), field("calls=")?, field("usec=")?))
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.2));
    let all: u64 = rows
        .iter()
        .filter(|r| {
            !r.0.starts_with("eval")
                && !r.0.starts_with("fcall")
                && !r.0.starts_with("function")
                && r.0 != "info"
                && r.0 != "config|resetstat"
        })
        .map(|r| r.1)
        .sum();
    println!("commands per request (inside the scripts, and the client's own) {:.1}", per(all as f64));
    let calls: u64 = rows.iter().filter(|r| r.0.starts_with("fcall") || r.0.starts_with("evalsha")).map(|r| r.1).sum();
    println!("script calls (round trips) per request {:.2}", per(calls as f64));
    println!("{:<18} {:>10} {:>10} {:>10}", "command", "calls/req", "usec/call", "usec/req");
    for (name, calls, usec) in rows.iter().take(16) {
        println!(
            "{name:<18} {:>10.2} {:>10.2} {:>10.1}",
            per(*calls as f64),
            *usec as f64 / (*calls).max(1) as f64,
            per(*usec as f64)
        );
    }
}
