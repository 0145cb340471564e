//! Issue 41: Shoal finds a server's pace from its fastest answers and starts every host and server
//! IP at one request in flight, opening up only while answers stay near the fastest. Servers that
//! queue from their first request, audited with `shoal audit --gap-ms 0 --in-flight 4`; asserted
//! from the server's own request log (orderings and counts, with margins; figures are printed,
//! never timed asserts of Shoal's speed).

use crate::common::audit;
use shoal::Exit;
use shoal_tests::log::{LoggedRequest, max_in_flight_of};
use shoal_tests::testsite::{Site, TestServer};
use std::collections::HashSet;
use std::time::Duration;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn say(msg: &str) {
    #[allow(clippy::print_stderr, reason = "the test's figures, for the issue")]
    {
        eprintln!("slow_start: {msg}");
    }
}

fn median(v: &[Duration]) -> Duration {
    let mut s = v.to_vec();
    s.sort();
    s.get(s.len().saturating_sub(1) / 2).copied().unwrap_or_default()
}

/// `reqs` in order of arrival (the server's clock).
fn by_arrival<'a>(reqs: impl IntoIterator<Item = &'a LoggedRequest>) -> Vec<&'a LoggedRequest> {
    let mut v: Vec<&LoggedRequest> = reqs.into_iter().collect();
    v.sort_by_key(|r| r.start);
    v
}

/// How many of `reqs` (in arrival order) were in progress when `reqs[i]` arrived, itself included.
fn in_progress_at(reqs: &[&LoggedRequest], i: usize) -> usize {
    let at = reqs[i].start;
    reqs[..=i].iter().filter(|r| r.end.is_none_or(|e| e > at)).count()
}

/// The positions (in arrival order) of the requests that arrived while another was in progress.
fn crowded(reqs: &[&LoggedRequest]) -> Vec<usize> {
    (0..reqs.len()).filter(|i| in_progress_at(reqs, *i) > 1).collect()
}

const FLAGS: [&str; 4] = ["--gap-ms", "0", "--in-flight", "4"];

/// The server: one worker answering one request at a time in 0.12 s (a small PHP site),
/// 40 pages, audited at 4 in flight with no gap. It saw 0.44 s answers (3.7 times its 0.12 s)
/// before: the guard's baseline was the median of our own opening burst.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_at_a_time_server_is_not_kept_queued() {
    let host = "php.test";
    let server = TestServer::start(vec![Site::generated(host, 40, 3).single_worker(ms(120))]).await.expect("starts");
    let run = audit(&server, &[host], &[server.url(host, "/")], &FLAGS).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    let times: Vec<Duration> = log.for_host(host).iter().filter_map(|r| r.duration()).collect();
    let med = median(&times);
    let pages = crate::common::page_paths(&log, host).len();
    say(&format!(
        "one-at-a-time 0.12 s server: median {med:?} (arrival to end, queue included) over {} requests, {pages} \
         pages, at most {} in flight",
        times.len(),
        log.max_in_flight(host)
    ));
    assert!(pages >= 40, "every page fetched\n{}", log.dump());
    assert!(med <= ms(300), "median {med:?} over 0.30 s\n{}", log.dump());
}

/// A server fast alone (20 ms) and a quarter of a second slower for every other request in
/// progress: its answers grow with our in-flight count from 2, so it stays at 1 after the slow
/// start's first steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_queues_from_two_stays_at_one() {
    let host = "crowd.test";
    let site = Site::generated(host, 30, 3).slower_when_crowded(ms(20), ms(250));
    let server = TestServer::start(vec![site]).await.expect("starts");
    let run = audit(&server, &[host], &[server.url(host, "/")], &FLAGS).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    let reqs = by_arrival(log.for_host(host));
    let late = crowded(&reqs);
    say(&format!(
        "fast alone, slower from 2: {} of {} requests arrived beside another: {late:?}",
        late.len(),
        reqs.len()
    ));
    assert!(reqs.len() >= 30, "every page fetched\n{}", log.dump());
    // The slow start's steps (to 2, perhaps 3 before the first slow answer is back) take a few
    // requests; without it nearly every request of the audit would arrive beside another.
    assert!(late.len() <= 5, "{late:?}\n{}", log.dump());
    assert!(late.iter().all(|i| *i < 15), "after its first steps it stays at one: {late:?}\n{}", log.dump());
}

/// Eight small sites on one server whose one worker serves them all (0.15 s a request): each host
/// would allow 4 in flight and the IP 8, but the IP's slow start holds their sum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_on_a_one_worker_server_are_held_by_the_ips_slow_start() {
    let names: Vec<String> = (1..=8).map(|i| format!("s{i}.test")).collect();
    let first = Site::generated(&names[0], 5, 2).single_worker(ms(150));
    let mut sites: Vec<Site> = names[1..].iter().map(|h| Site::generated(h, 5, 2).on_the_server_of(&first)).collect();
    sites.insert(0, first);
    let server = TestServer::start(sites).await.expect("starts");
    let hosts: Vec<&str> = names.iter().map(String::as_str).collect();
    let starts: Vec<String> = hosts.iter().map(|h| server.url(h, "/")).collect();
    let run = audit(&server, &hosts, &starts, &FLAGS).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    let all = by_arrival(log.all());
    let peak = max_in_flight_of(all.iter().copied());
    let times: Vec<Duration> = all.iter().filter_map(|r| r.duration()).collect();
    let idle = times.iter().min().copied().unwrap_or_default();
    say(&format!(
        "8 hosts on one single-worker server: at most {peak} in flight, median {:?} vs idle {idle:?}, {} of {} \
         requests beside another",
        median(&times),
        crowded(&all).len(),
        all.len()
    ));
    for h in &hosts {
        assert!(crate::common::page_paths(&log, h).len() >= 5, "{h}: every page fetched\n{}", log.dump());
    }
    assert!(peak <= 3, "the IP's slow start holds the sum of its hosts: {peak} in flight\n{}", log.dump());
}

/// A healthy host (0.1 s answers whatever the load) opens to its full `--in-flight` (4) within its
/// first 10 answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_healthy_host_opens_to_its_full_in_flight_within_ten_answers() {
    let host = "fast.test";
    let server = TestServer::start(vec![Site::generated(host, 60, 4).latency(ms(100))]).await.expect("starts");
    let run = audit(&server, &[host], &[server.url(host, "/")], &FLAGS).await;
    assert_eq!(run.exit, Exit::Ok);
    let log = server.shutdown().await;
    let reqs = by_arrival(log.for_host(host));
    let page: HashSet<String> = Site::generated_paths(60).into_iter().collect();
    let full = (0..reqs.len()).find(|i| in_progress_at(&reqs, *i) >= 4);
    let Some(full) = full else { panic!("never 4 in flight\n{}", log.dump()) };
    let at = reqs[full].start;
    let answered = reqs.iter().filter(|r| page.contains(&r.path) && r.end.is_some_and(|e| e <= at)).count();
    say(&format!("healthy host: 4 in flight from request {} on, after {answered} page answers", full + 1));
    assert!(answered <= 10, "{answered} page answers before 4 in flight\n{}", log.dump());
}
