//! What writing a crawl into the audit database costs per page, without any crawling: the farm of
//! `bench/cpu.py` (sites x pages, each page with its links and a few headers, every site ended by
//! `SiteDone` and its analysis) applied in batches of 1,000 events, as `shoal audit` does, into a
//! fresh file in a temporary directory. Single-threaded, so wall time is CPU time; prints the
//! fastest and the median of the runs.
//!
//! `cargo run --release -p shoal-store --example apply_cost -- [sites] [pages] [links] [runs]`
//! (defaults 200 50 5 7).

use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, LinkKind, LinkRecord, PageRecord, UrlKind};
use shoal_shared::time::UnixMs;
use shoal_store::AuditDb;
use std::time::{Duration, Instant};

fn arg(i: usize, default: usize) -> usize {
    std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

/// The events of one site, in the order a crawl delivers them, ending with `SiteDone`.
fn site_events(audit: AuditId, site: SiteId, host: &str, pages: usize, links: usize) -> Vec<Event> {
    let url = |n: usize| if n == 0 { format!("http://{host}/") } else { format!("http://{host}/p/{n}") };
    let mut events: Vec<Event> = (0..pages)
        .map(|n| {
            let record = PageRecord {
                audit,
                site,
                url: url(n),
                kind: UrlKind::Page,
                status: Some(200),
                depth: u16::try_from(n.min(9)).unwrap_or(9),
                found_via: if n == 0 { Discovery::Start } else { Discovery::Link },
                found_from: (n > 0).then(|| url((n - 1) / links.max(1))),
                content_type: Some("text/html; charset=utf-8".to_owned()),
                bytes: 2_400,
                response_ms: 3,
                fetched_at: UnixMs(1_700_000_000_000 + n as u64),
                title: Some(format!("Page {n} of {host}")),
                meta_description: Some(format!("What page {n} of {host} is about")),
                h1: vec![format!("Page {n}")],
                headers: vec![
                    ("server".to_owned(), "nginx".to_owned()),
                    ("cache-control".to_owned(), "max-age=60".to_owned()),
                ],
                links: (1..=links)
                    .map(|k| LinkRecord {
                        url: url((n * links + k) % pages),
                        kind: LinkKind::Anchor,
                        nofollow: false,
                        internal: true,
                        text: Some(format!("link {k}")),
                    })
                    .collect(),
                ..PageRecord::default()
            };
            Event::Page(Box::new(record))
        })
        .collect();
    events.push(Event::SiteDone { audit, site });
    events
}

#[expect(clippy::print_stdout, reason = "a measuring tool prints its figures")]
fn main() {
    let (sites, pages, links, runs) = (arg(1, 200), arg(2, 50), arg(3, 5), arg(4, 7).max(1));
    let mut times: Vec<Duration> = Vec::with_capacity(runs);
    for _ in 0..runs {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut db = AuditDb::open(&dir.path().join("audit.db")).expect("open the database");
        db.sync_at_checkpoints_only().expect("synchronous = NORMAL, as shoal audit");
        let audit = db.create_audit("{}", UnixMs(1)).expect("an audit");
        let hosts: Vec<String> = (0..sites).map(|i| format!("site{i}.test")).collect();
        let ids =
            db.add_sites(audit, &hosts.iter().map(|h| format!("http://{h}/")).collect::<Vec<_>>()).expect("sites");
        // Sites crawled side by side, as 64 tasks do: their events interleaved, 1,000 a batch.
        let per_site: Vec<Vec<Event>> =
            ids.iter().zip(&hosts).map(|(id, h)| site_events(audit, *id, h, pages, links)).collect();
        let longest = per_site.iter().map(Vec::len).max().unwrap_or(0);
        let mut all = Vec::with_capacity(per_site.iter().map(Vec::len).sum());
        for i in 0..longest {
            all.extend(per_site.iter().filter_map(|s| s.get(i)).cloned());
        }
        let t0 = Instant::now();
        for batch in all.chunks(1_000) {
            db.apply(batch).expect("apply a batch");
        }
        times.push(t0.elapsed());
    }
    times.sort();
    let per_page = |d: Duration| d.as_secs_f64() * 1e6 / (sites * pages) as f64;
    println!(
        "{sites} sites x {pages} pages, {links} links each, {runs} runs: fastest {:.2} us per page, median {:.2} us",
        per_page(times[0]),
        per_page(times[times.len() / 2])
    );
}
