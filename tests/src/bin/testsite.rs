//! `shoal-testsite`: serves generated test sites as a separate process, for benchmarks.
//!
//! Prints `listening 127.0.0.1:PORT` as the first line of stdout, serves `site0.test` …
//! `site{N-1}.test` until SIGTERM, Ctrl-C or `--max-seconds`, then prints a summary (and writes the
//! request log as JSON Lines with `--log-json`). With `--throttle-host H --throttle-first N` the
//! host `H` answers its first N requests other than robots.txt with 429, then serves normally. With
//! `--single-worker-host H` the host `H` serves one request at a time (`--service-ms` each). With
//! `--domain D` the hosts are `site0.D` … instead, one registrable domain; `--dns` also serves their
//! zone (every host at 127.0.0.1, two name servers, the null MX, SPF, DMARC without reports, CAA) on a UDP and TCP
//! port of 127.0.0.1, printed as a second line `dns 127.0.0.1:PORT`, for `--dns-server`; the
//! summary then counts the questions it was asked (`dns_questions`). With `--crawl-delay-hosts N`
//! the first N hosts (`site0` …) serve a robots.txt of `User-agent: *` and `Crawl-delay:
//! --crawl-delay-s` (the others answer 404 for it, as every host does without the flag). With
//! `--app-shell` every page is the same empty shell and one bundle (`/app.js`, cacheable) writes
//! its heading, text and links: a JavaScript site only a rendered crawl finds (issue 38).

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use clap::Parser;
use shoal_tests::dnsserver::{DnsServer, Zone};
use shoal_tests::log::{RequestLog, gaps_of, max_in_flight_of};
use shoal_tests::testsite::{Route, Site, TestServer};

/// Serve N generated websites on one loopback port.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Number of hosts, named site0.test, site1.test, ...
    #[arg(long, default_value_t = 1)]
    hosts: usize,
    /// Pages per host.
    #[arg(long, default_value_t = 100)]
    pages: usize,
    /// Links from each page to further pages (tree fan-out).
    #[arg(long, default_value_t = 5)]
    links: usize,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Added latency for every response, in milliseconds.
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// Stop after this many seconds even without a signal (safety bound for forgotten processes).
    #[arg(long, default_value_t = 3600)]
    max_seconds: u64,
    /// Write the request log here on shutdown, one JSON object per line (host, method, path,
    /// user_agent, start_ms, end_ms, status; times in ms since the server started, which the
    /// summary's `origin_unix_ms` gives).
    #[arg(long)]
    log_json: Option<PathBuf>,
    /// Rate-limit this host (one of the generated ones): its first --throttle-first requests
    /// other than /robots.txt, whatever their path, answer 429 with Retry-After; later ones are
    /// served normally. For a site that throttles only a crawler's first visit.
    #[arg(long, value_name = "HOST", requires = "throttle_first")]
    throttle_host: Option<String>,
    /// How many requests --throttle-host answers 429.
    #[arg(long, value_name = "N", default_value_t = 0)]
    throttle_first: u32,
    /// The Retry-After value of those 429s (seconds, or an HTTP date).
    #[arg(long, value_name = "VALUE", default_value = "1")]
    throttle_retry_after: String,
    /// Serve this host (one of the generated ones) with one worker and a queue: one request at a
    /// time, each taking --service-ms, so its response times grow with the requests in flight.
    #[arg(long, value_name = "HOST")]
    single_worker_host: Option<String>,
    /// The service time of --single-worker-host and --shared-worker, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    service_ms: u64,
    /// Serve every host with one worker and one queue, as a small shared server does (issue 41:
    /// many small sites at one IP), each request taking --service-ms.
    #[arg(long, conflicts_with = "single_worker_host")]
    shared_worker: bool,
    /// Name the hosts site0.DOMAIN, site1.DOMAIN, ... (one registrable domain, a hosting
    /// provider's customers) instead of site0.test, ...
    #[arg(long, value_name = "DOMAIN", default_value = "test")]
    domain: String,
    /// Also serve the hosts' DNS zone on 127.0.0.1 (needs --domain): see the module documentation.
    #[arg(long)]
    dns: bool,
    /// The first N hosts serve a robots.txt with `Crawl-delay: --crawl-delay-s` for every agent.
    #[arg(long, value_name = "N", default_value_t = 0)]
    crawl_delay_hosts: usize,
    /// The Crawl-delay of --crawl-delay-hosts, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 1)]
    crawl_delay_s: u32,
    /// Serve every host as a JavaScript app: the generated site's pages and links (the same tree)
    /// written by a bundle, the HTML an empty shell.
    #[arg(long)]
    app_shell: bool,
}

/// The shell every page of an `--app-shell` site is.
const SHELL: &str = r#"<!doctype html><html lang="en"><head><title>Loading</title><meta name="viewport" content="width=device-width">
<script src="/app.js" defer></script></head><body><div id="root">Loading</div></body></html>"#;

/// The bundle of an `--app-shell` site of `pages` pages, `links` a page: page `i` (`/` is 0, then
/// `/p/i`) links its children `i*links+1 ..= i*links+links`, as `Site::generated`'s tree.
fn app_js(pages: usize, links: usize) -> String {
    format!(
        r#"const N = {pages}, L = {links};
const path = location.pathname;
const i = path === '/' ? 0 : parseInt(path.slice(3), 10);
let nav = '<a href="/">Home</a>';
for (let k = i * L + 1; k <= i * L + L && k < N; k++) nav += ' <a href="/p/' + k + '">Page ' + k + '</a>';
document.title = 'Page ' + i + ' of the app';
document.getElementById('root').innerHTML = '<h1>Page ' + i + '</h1><nav>' + nav + '</nav><main><p>' +
  'Words of this page, written by the bundle after the shell arrived. '.repeat(20) + '</p></main>';
"#
    )
}

/// A generated site served as a JavaScript app ([`Args::app_shell`]).
fn app_shell(host: &str, pages: usize, links: usize) -> Site {
    let bundle = Route::bytes("text/javascript", app_js(pages, links)).header("cache-control", "public, max-age=3600");
    let mut site = Site::new(host).route("/app.js", bundle);
    for path in Site::generated_paths(pages) {
        site = site.page(&path, SHELL);
    }
    site
}

/// The zone of `domain` with every host of the farm at 127.0.0.1, and the records a well-kept
/// domain without mail publishes, but for DMARC reports.
fn zone(domain: &str, hosts: &[String]) -> Zone {
    let lo = Ipv4Addr::LOCALHOST;
    let mut z = Zone::new(domain).a(domain, lo);
    for ns in ["ns1", "ns2"] {
        let name = format!("{ns}.{domain}");
        z = z.ns(&name).a(&name, lo);
    }
    z = z
        .mx(0, ".")
        .txt(domain, "v=spf1 -all")
        // No rua: one finding of the domain's (`dmarc_reports_missing`) that every site carries.
        .txt(&format!("_dmarc.{domain}"), "v=DMARC1; p=reject")
        .caa(false, "issue", "ca.test")
        .caa(false, "iodef", &format!("mailto:s@{domain}"))
        .dnskey();
    for h in hosts {
        z = z.a(h, lo);
    }
    z
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    run(Args::parse()).await
}

async fn run(args: Args) -> anyhow::Result<()> {
    let delay = Duration::from_millis(args.delay_ms);
    let throttled = args.throttle_host.as_deref().map(str::to_ascii_lowercase);
    if let Some(host) = &throttled {
        anyhow::ensure!(
            (0..args.hosts).any(|i| format!("site{i}.{}", args.domain) == *host),
            "--throttle-host {host} is not one of the {} hosts",
            args.hosts
        );
        anyhow::ensure!(
            axum::http::HeaderValue::from_str(&args.throttle_retry_after).is_ok(),
            "--throttle-retry-after {:?} is not a valid header value",
            args.throttle_retry_after
        );
    }
    let machine = Site::new("machine.invalid").single_worker(Duration::from_millis(args.service_ms));
    anyhow::ensure!(!args.dns || args.domain != "test", "--dns needs --domain (a zone of the farm's own)");
    let hosts: Vec<String> = (0..args.hosts).map(|i| format!("site{i}.{}", args.domain)).collect();
    let robots = format!("User-agent: *\nCrawl-delay: {}\n", args.crawl_delay_s);
    let sites = hosts
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let site = if args.app_shell {
                app_shell(host, args.pages, args.links.max(1))
            } else {
                Site::generated(host, args.pages, args.links)
            };
            let site = site.latency(delay);
            let site = if i < args.crawl_delay_hosts { site.robots_txt(&robots) } else { site };
            let site = if args.single_worker_host.as_deref() == Some(host.as_str()) {
                site.single_worker(Duration::from_millis(args.service_ms))
            } else if args.shared_worker {
                site.on_the_server_of(&machine)
            } else {
                site
            };
            if throttled.as_deref() == Some(host.as_str()) {
                site.too_many_first(Some(&args.throttle_retry_after), args.throttle_first)
            } else {
                site
            }
        })
        .collect();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let server = TestServer::start_on(addr, sites).await.with_context(|| format!("binding {addr}"))?;
    let dns = match args.dns {
        // With the top-level zone (SOA only), names outside the farm get "no such name" like from
        // any live resolver (the worker asks one under `.test` when a question went unanswered).
        true => {
            let tld = args.domain.rsplit('.').next().unwrap_or("test");
            let zones = vec![zone(&args.domain, &hosts), Zone::new(tld)];
            Some(DnsServer::start(zones).await.context("starting the DNS server")?)
        }
        false => None,
    };
    let origin = SystemTime::now().checked_sub(server.started_at().elapsed()).unwrap_or(UNIX_EPOCH);
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening {}", server.addr())?;
    if let Some(dns) = &dns {
        writeln!(stdout, "dns {}", dns.addr())?;
    }
    stdout.flush()?;
    drop(stdout);

    wait_for_stop(Duration::from_secs(args.max_seconds)).await?;
    let started_at = server.started_at();
    let log = server.shutdown().await;

    if let Some(path) = &args.log_json {
        std::fs::write(path, log.to_json_lines(started_at)).with_context(|| format!("writing {}", path.display()))?;
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(summary(&log, origin).as_bytes())?;
    if let Some(dns) = dns {
        writeln!(stdout, "dns_questions {}", dns.questions().len())?;
        dns.shutdown().await;
    }
    stdout.flush()?;
    Ok(())
}

/// Resolves on SIGTERM, Ctrl-C or after `limit`, whichever comes first.
async fn wait_for_stop(limit: Duration) -> anyhow::Result<()> {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing SIGTERM handler")?;
    #[cfg(unix)]
    let terminated = term.recv();
    #[cfg(not(unix))]
    let terminated = std::future::pending::<Option<()>>();
    tokio::select! {
        _ = terminated => {}
        result = tokio::signal::ctrl_c() => result.context("waiting for Ctrl-C")?,
        () = tokio::time::sleep(limit) => {}
    }
    Ok(())
}

/// Key figures of the run, one `key value` pair per line; `origin_unix_ms` is when the server
/// started (the zero of the JSON log's times) in milliseconds since the Unix epoch.
fn summary(log: &RequestLog, origin: SystemTime) -> String {
    let by_host = log.by_host();
    let max_in_flight_per_host = by_host.values().map(|rs| max_in_flight_of(rs.iter().copied())).max().unwrap_or(0);
    let min_gap = by_host.values().flat_map(|rs| gaps_of(rs.iter().copied())).min();
    let unfinished = log.all().iter().filter(|r| r.end.is_none()).count();
    let mut statuses = std::collections::BTreeMap::new();
    for r in log.all() {
        *statuses.entry(r.status.map_or_else(|| "none".to_owned(), |s| s.to_string())).or_insert(0usize) += 1;
    }
    let statuses: Vec<String> = statuses.into_iter().map(|(s, n)| format!("{s}={n}")).collect();
    format!(
        "origin_unix_ms {}\nrequests {}\nhosts_seen {}\nstatuses {}\nunfinished {unfinished}\nmax_in_flight_per_host {max_in_flight_per_host}\n\
         max_in_flight_total {}\nmin_gap_ms {}\n",
        origin.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis()),
        log.len(),
        by_host.len(),
        statuses.join(" "),
        log.max_in_flight_where(|_| true),
        min_gap.map_or_else(|| "none".to_owned(), |g| format!("{:.1}", g.as_secs_f64() * 1000.0)),
    )
}
