//! Report generation benchmark (issue 4 figures): time and peak memory of the HTML and JSON reports
//! of one audit of 100,000 pages.
//!
//! Builds an audit database of N pages (default 100,000; 10 links each, a finding on every fifth
//! page, titles, descriptions, headers) through `AuditDb::apply`, then writes each report in a child
//! process of its own, so each peak RSS (`VmHWM` from `/proc/self/status`) is that report's alone.
//! Reports go to a byte-counting sink, so disk speed is not measured.
//!
//! ```text
//! cargo run --release -p shoal-report --example report_bench [-- --pages 100000] [--html-out FILE]
//! ```

use shoal_report as report;
use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::AuditId;
use shoal_shared::record::{Discovery, Event, FetchFailure, LinkKind, LinkRecord, PageRecord, UrlKind};
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, AuditStatus};
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const DEFAULT_PAGES: usize = 100_000;
const LINKS_PER_PAGE: usize = 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(format @ ("html" | "json" | "open")) = args.first().map(String::as_str) {
        let db = args.get(1).ok_or("missing database path")?;
        return child(format, Path::new(db));
    }
    let pages = match args.iter().position(|a| a == "--pages") {
        Some(i) => args.get(i + 1).ok_or("--pages needs a number")?.parse()?,
        None => DEFAULT_PAGES,
    };
    let keep = args.iter().position(|a| a == "--html-out").and_then(|i| args.get(i + 1));
    let dir = tempfile::tempdir()?;
    let db_path = dir.path().join("bench.db");
    let (stored, analysed) = build(&db_path, pages)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "built an audit of {pages} pages ({} links): pages stored in {stored:.1} s, site analysis {analysed:.1} s; database {:.0} MB",
        pages * LINKS_PER_PAGE,
        std::fs::metadata(&db_path)?.len() as f64 / 1e6
    )?;
    let exe = std::env::current_exe()?;
    for phase in ["open", "html", "json"] {
        let o = Command::new(&exe).arg(phase).arg(&db_path).output()?;
        if !o.status.success() {
            return Err(format!("{phase} failed: {}", String::from_utf8_lossy(&o.stderr)).into());
        }
        out.write_all(&o.stdout)?;
    }
    if let Some(path) = keep {
        let db = AuditDb::open(&db_path)?;
        let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
        report::write_html(&db, AuditId(1), &mut f)?;
        f.flush()?;
    }
    Ok(())
}

/// Counts bytes and throws them away.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(f64::NAN);
    kb / 1024.0
}

fn child(format: &str, db_path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let db = AuditDb::open(db_path)?;
    let audit = AuditId(1);
    let mut sink = Counter(0);
    let started = Instant::now();
    match format {
        "html" => report::write_html(&db, audit, &mut sink)?,
        "json" => report::write_json(&db, audit, &mut sink)?,
        _ => {}
    }
    let secs = started.elapsed().as_secs_f64();
    let label = match format {
        "open" => "baseline (open the database only)".to_owned(),
        f => format!("{f} report"),
    };
    writeln!(
        std::io::stdout().lock(),
        "{label:<34} {secs:>7.2} s  {:>8.1} MB written  peak RSS {:>6.1} MB",
        sink.0 as f64 / 1e6,
        peak_rss_mb()
    )?;
    Ok(())
}

/// Builds the audit; returns the seconds spent storing pages and in the site-level analysis.
fn build(path: &Path, pages: usize) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let mut db = AuditDb::open(path)?;
    let t0 = 1_714_564_800_000;
    let audit = db.create_audit(r#"{"max_pages":100000}"#, UnixMs(t0))?;
    let site = db.add_site(audit, "https://bench.test/")?;
    let url = |i: usize| format!("https://bench.test/section-{}/page-{i:06}.html", i % 50);
    let mut batch = Vec::with_capacity(2000);
    for i in 0..pages {
        let status = match i % 200 {
            0 => Some(404),
            1 => Some(301),
            2 => None,
            _ => Some(200),
        };
        let record = PageRecord {
            audit,
            site,
            url: url(i),
            kind: if i % 10 == 9 { UrlKind::Resource } else { UrlKind::Page },
            status,
            error: status.is_none().then_some(FetchFailure::Timeout),
            redirect_to: (status == Some(301)).then(|| url(i + 1)),
            depth: u16::try_from(i % 12).unwrap_or(0),
            found_via: Discovery::Link,
            found_from: Some(url(i / 2)),
            content_type: Some("text/html; charset=utf-8".to_owned()),
            bytes: 20_000 + (i as u64 % 7) * 3_000,
            response_ms: 30 + (i as u64 * 37) % 3_000,
            fetched_at: UnixMs(t0 + i as u64),
            title: Some(format!("Product {i} – a title of ordinary length for a shop page")),
            meta_description: Some(format!(
                "Description of product {i}, about one hundred and twenty characters long, as shops write them."
            )),
            h1: vec![format!("Product {i}")],
            canonical: Some(url(i)),
            meta_robots: Vec::new(),
            x_robots_tag: Vec::new(),
            hreflang: Vec::new(),
            hreflang_header: Vec::new(),
            sitemap_hreflang: Vec::new(),
            links: (1..=LINKS_PER_PAGE)
                .map(|k| LinkRecord {
                    url: url((i + k * 7) % pages),
                    kind: if k == LINKS_PER_PAGE { LinkKind::Image } else { LinkKind::Anchor },
                    nofollow: false,
                    internal: true,
                    text: Some(format!("link {k}")),
                })
                .collect(),
            headers: vec![
                ("content-encoding".to_owned(), "gzip".to_owned()),
                ("cache-control".to_owned(), "max-age=600".to_owned()),
            ],
            word_count: Some(300),
            structured_types: vec!["Product".to_owned(), "Offer".to_owned()],
            ..PageRecord::default()
        };
        batch.push(Event::Page(Box::new(record)));
        if i % 5 == 0 {
            batch.push(Event::Finding(Finding::new(audit, site, Code::H1Multiple, url(i), "2 h1")));
        }
        if batch.len() >= 2000 {
            db.apply(&batch)?;
            batch.clear();
        }
    }
    db.apply(&batch)?;
    let stored = started.elapsed().as_secs_f64();
    db.apply(&[Event::SiteDone { audit, site }])?;
    db.finish_audit(audit, AuditStatus::Done, UnixMs(t0 + 3_600_000))?;
    Ok((stored, started.elapsed().as_secs_f64() - stored))
}
