//! The size of the audit database after weekly audits, with and without retention (issue 40's
//! figure): W audits (default 10) of S sites (default 200) of P pages (default 80) each, written
//! through the store's API as the coordinator writes them (page records with their links and
//! headers in batches of 1,000, a few findings per page, `SiteDone` per site, which runs the site
//! analysis), a week apart. After each audit ends, the second database applies the coordinator's
//! retention pass (`--retain-audits N`, default 2) exactly as the engine does
//! (`Coordinator::prune_now`: `prunable`, `prune_audit` each, `reclaim` a step at a time,
//! `checkpoint`); the first keeps everything. Prints the files' sizes (database and its
//! write-ahead log together) after each week, and how long each pass took.
//!
//! `cargo run -p shoal-store --example retention_size -- [weeks] [sites] [pages] [keep]`
//! (`bench/retention.sh` runs it).

use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, LinkKind, LinkRecord, PageRecord, UrlKind};
use shoal_shared::time::UnixMs;
use shoal_store::retention::RECLAIM_STEP;
use shoal_store::{AuditDb, AuditStatus, Retention};
use std::num::NonZeroU32;
use std::path::Path;
use std::time::Instant;

const WEEK_MS: u64 = 7 * 24 * 3600 * 1000;
/// Links on each page: the site's navigation and some of its other pages, and a few external.
const LINKS_PER_PAGE: usize = 12;

fn arg(i: usize, default: u64) -> u64 {
    std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

fn mib(bytes: u64) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "a size shown with one decimal")]
    let m = bytes as f64 / (1024.0 * 1024.0);
    m
}

/// The database file and its write-ahead log: what the disk holds.
fn on_disk(path: &Path) -> u64 {
    let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    len(path) + len(&path.with_extension("db-wal"))
}

/// One page of a site, as a worker records it.
fn page(audit: AuditId, site: SiteId, host: &str, i: u64, pages: u64, week: u64) -> PageRecord {
    let url = |j: u64| format!("https://{host}/section-{}/page-{j}.html", j % 7);
    let links = (0..LINKS_PER_PAGE as u64)
        .map(|k| {
            let external = k % 10 == 9;
            LinkRecord {
                url: if external {
                    format!("https://partner-{k}.example/ref?from={host}")
                } else {
                    url((i + k * 3 + 1) % pages)
                },
                kind: if k % 8 == 7 { LinkKind::Image } else { LinkKind::Anchor },
                nofollow: false,
                internal: !external,
                text: Some(format!("Link {k} to more about topic {}", (i + k) % 13)),
            }
        })
        .collect();
    PageRecord {
        audit,
        site,
        url: url(i),
        kind: UrlKind::Page,
        status: Some(200),
        depth: u16::try_from(1 + i % 4).unwrap_or(1),
        found_via: if i == 0 { Discovery::Start } else { Discovery::Link },
        found_from: (i > 0).then(|| url(i / 2)),
        content_type: Some("text/html; charset=utf-8".to_owned()),
        bytes: 24_000 + i * 37,
        response_ms: 80 + i % 50,
        fetched_at: UnixMs(week * WEEK_MS + i * 300),
        title: Some(format!("{host}: page {i} of the section {} | A company that does things", i % 7)),
        meta_description: Some(format!(
            "Everything about topic {} on {host}, explained in a few sentences for search results (week {week}).",
            i % 13
        )),
        h1: vec![format!("Topic {} at {host}", i % 13)],
        canonical: Some(url(i)),
        headers: vec![
            ("content-type".into(), "text/html; charset=utf-8".into()),
            ("cache-control".into(), "max-age=600".into()),
            ("server".into(), "nginx".into()),
            ("strict-transport-security".into(), "max-age=31536000".into()),
        ],
        links,
        word_count: Some(300 + u32::try_from(i % 200).unwrap_or(0)),
        text_hash: Some(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ site.0),
        text_simhash: Some(i.wrapping_mul(0xC2B2_AE3D_27D4_EB4F) ^ site.0),
        ..PageRecord::default()
    }
}

/// Writes one audit as the coordinator would, ended a week after the previous one.
fn audit(db: &mut AuditDb, week: u64, sites: u64, pages: u64) -> AuditId {
    let audit = db.create_audit("{}", UnixMs(week * WEEK_MS)).expect("audit");
    let hosts: Vec<String> = (0..sites).map(|s| format!("customer-{s}.example")).collect();
    let starts: Vec<String> = hosts.iter().map(|h| format!("https://{h}/")).collect();
    let ids = db.add_sites(audit, &starts).expect("sites");
    let mut batch = Vec::with_capacity(1000);
    for (site, host) in ids.iter().zip(&hosts) {
        for i in 0..pages {
            batch.push(Event::Page(Box::new(page(audit, *site, host, i, pages, week))));
            if i % 3 == 0 {
                batch.push(Event::Finding(Finding::new(audit, *site, Code::TitleTooLong, page_url(host, i), "")));
            }
            if batch.len() >= 1000 {
                db.apply_at(&batch, UnixMs(week * WEEK_MS)).expect("batch");
                batch.clear();
            }
        }
        batch.push(Event::SiteDone { audit, site: *site });
    }
    db.apply_at(&batch, UnixMs(week * WEEK_MS)).expect("batch");
    db.finish_audit(audit, AuditStatus::Done, UnixMs(week * WEEK_MS + 3_600_000)).expect("end");
    audit
}

fn page_url(host: &str, i: u64) -> String {
    format!("https://{host}/section-{}/page-{i}.html", i % 7)
}

/// The coordinator's retention pass after an audit ends (`Coordinator::prune_now`).
fn retain(db: &mut AuditDb, rule: &Retention, now: UnixMs) -> (usize, u64, f64) {
    let mut pruned = 0;
    let started = Instant::now();
    for p in db.prunable(rule, now).expect("prunable") {
        if db.prune_audit(p.audit, rule, now).expect("prune").is_some() {
            pruned += 1;
        }
    }
    let deleting = started.elapsed().as_secs_f64();
    let mut freed = 0;
    loop {
        let n = db.reclaim(RECLAIM_STEP).expect("reclaim");
        if n == 0 {
            break;
        }
        freed += n;
    }
    db.checkpoint().expect("checkpoint");
    (pruned, freed, deleting)
}

#[expect(clippy::print_stdout, reason = "a measuring tool prints its figures")]
fn main() {
    let (weeks, sites, pages, keep) = (arg(1, 10), arg(2, 200), arg(3, 80), arg(4, 2));
    let dir = tempfile::tempdir().expect("temp dir");
    let plain_path = dir.path().join("keep-all.db");
    let kept_path = dir.path().join("retain.db");
    let mut plain = AuditDb::open(&plain_path).expect("db");
    let mut kept = AuditDb::open(&kept_path).expect("db");
    let keep_last = NonZeroU32::new(u32::try_from(keep).unwrap_or(2)).expect("--retain-audits is at least 1");
    let rule = Retention { keep_last: Some(keep_last), max_age: None };
    println!(
        "{weeks} weekly audits of {sites} sites x {pages} pages ({LINKS_PER_PAGE} links a page); sizes in MiB (file + WAL)"
    );
    println!("week  keep-everything  retain-audits-{keep}  pruned  deleting-s  pages-given-back  whole-pass-s");
    for week in 1..=weeks {
        audit(&mut plain, week, sites, pages);
        plain.checkpoint().expect("checkpoint");
        audit(&mut kept, week, sites, pages);
        let started = Instant::now();
        let (pruned, freed, deleting) = retain(&mut kept, &rule, UnixMs(week * WEEK_MS + 3_600_001));
        let took = started.elapsed().as_secs_f64();
        println!(
            "{week:>4}  {:>15.1}  {:>16.1}  {pruned:>6}  {deleting:>10.2}  {freed:>16}  {took:>12.2}",
            mib(on_disk(&plain_path)),
            mib(on_disk(&kept_path))
        );
    }
    let left = kept.audits().expect("audits").len();
    println!("audits left with retention: {left}; without: {}", plain.audits().expect("audits").len());
}
