//! Benchmark of the batch overview and the per-site reports (issue 16): the overview page's size,
//! the time to write it and its render time in headless Chromium for a 100,000-page audit, and
//! per-site report sizes against the size of their site.
//!
//! Builds audit databases through the store's own write API (`AuditDb::apply`), with a realistic
//! mix of findings: page-level ones on a share of every site's pages, site-wide ones (certificate,
//! security headers, WordPress) on a share of the sites, a failing external script shared by a
//! few sites, a `Server` header from a small set. Then:
//!
//! 1. two 100,000-page audits, 1,000 sites of 100 pages and 10,000 sites of 10 pages: the overview
//!    written to a file (size, time), opened in headless Chromium three times (the page records
//!    when it was parsed and laid out, `data-layout-ms`; and the wall time of a screenshot, minus
//!    that of an empty page);
//! 2. `--per-site` for the 1,000-site audit: time and file sizes;
//! 3. four sites of 10, 100, 1,000 and 10,000 pages: each site's report size, per fetched URL.
//!
//! ```text
//! cargo run --release -p shoal-report --example overview_bench [-- --quick]
//! ```
//! `--quick` builds a tenth of everything (for a smoke run); `--keep DIR` leaves the databases and
//! pages in DIR (an empty or new folder) to look at. Needs `/usr/bin/chromium`.

#![allow(clippy::print_stdout, reason = "a benchmark prints its figures")]

use shoal_report::{self as report, Branding, HtmlOptions, Links};
use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, PageRecord, UrlKind};
use shoal_shared::task::ProbeKind;
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, AuditStatus};
use shoal_test_support::chromium;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

const T0: u64 = 1_714_564_800_000;
const SERVERS: [&str; 6] =
    ["Apache/2.4.29 (Ubuntu)", "nginx/1.14.0", "nginx", "Apache", "LiteSpeed", "Microsoft-IIS/8.5"];
const CHROMIUM_LIMIT: Duration = Duration::from_secs(120);

/// A cheap deterministic hash of two numbers, for "random" but repeatable data.
fn mix(a: u64, b: u64) -> u64 {
    let mut h = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 31;
    h.wrapping_mul(0x94D0_49BB_1331_11EB) >> 11
}

/// A number per code, to vary which pages get which finding.
fn seed(code: Code) -> u64 {
    code.as_str().bytes().fold(7, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
}

fn chance(a: u64, b: u64, percent: u64) -> bool {
    mix(a, b) % 100 < percent
}

/// One site's events: `pages` pages and the findings of the mix.
fn site_events(audit: AuditId, site: SiteId, n: u64, pages: u64) -> Vec<Event> {
    let host = format!("customer-{n:05}.example");
    let url = |path: &str| format!("https://{host}{path}");
    let mut out = Vec::with_capacity(pages as usize * 2 + 8);
    let finding = |code: Code, u: String, detail: &str| Event::Finding(Finding::new(audit, site, code, u, detail));
    let wordpress = chance(n, 1, 30);
    for p in 0..pages {
        let path = if p == 0 { "/".to_owned() } else { format!("/section-{}/page-{p:05}.html", p % 7) };
        let broken = p > 0 && chance(n * 7919, p, 2);
        let mut record = PageRecord {
            audit,
            site,
            url: url(&path),
            kind: UrlKind::Page,
            status: Some(if broken { 404 } else { 200 }),
            depth: u16::try_from(p.min(6)).unwrap_or(6),
            found_via: if p == 0 { Discovery::Start } else { Discovery::Link },
            found_from: (p > 0).then(|| url("/")),
            content_type: Some("text/html; charset=utf-8".to_owned()),
            bytes: 18_000 + mix(n, p) % 40_000,
            response_ms: 40 + mix(p, n) % 900,
            fetched_at: UnixMs(T0 + p),
            title: Some(format!("Page {p} of {host}")),
            meta_description: Some(format!("About page {p}.")),
            h1: vec![format!("Page {p}")],
            ..PageRecord::default()
        };
        if p == 0 {
            let server = SERVERS[(mix(n, 3) % SERVERS.len() as u64) as usize];
            record.headers = vec![("server".to_owned(), server.to_owned())];
        }
        out.push(Event::Page(Box::new(record)));
        if broken {
            let mut f = Finding::new(audit, site, Code::BrokenInternalLink, url(&path), "404");
            f.related = vec![url("/"), url("/section-1/page-00001.html")];
            out.push(Event::Finding(f));
        }
        for (code, percent, detail) in [
            (Code::DescriptionMissing, 25, ""),
            (Code::TitleTooLong, 40, "72 characters"),
            (Code::ImgMissingAlt, 30, "3 images without alt"),
            (Code::H1Missing, 10, ""),
            (Code::SlowResponse, 3, "1420 ms"),
            (Code::CompressionMissing, 15, "18 KB"),
        ] {
            if chance(n * 31 + seed(code), p, percent) {
                out.push(finding(code, url(&path), detail));
            }
        }
    }
    for (code, percent) in [
        (Code::HstsMissing, 60),
        (Code::CspMissing, 90),
        (Code::ReferrerPolicyMissing, 70),
        (Code::TlsCertificateExpiring, 5),
        (Code::TlsCertificateExpired, 1),
        (Code::SecurityTxtMissing, 85),
    ] {
        if chance(n * 17 + seed(code), 0, percent) {
            out.push(finding(code, url("/"), "site-wide"));
        }
    }
    if wordpress {
        out.push(Event::Page(Box::new(PageRecord {
            audit,
            site,
            url: url("/xmlrpc.php"),
            kind: UrlKind::Probe(ProbeKind::WpXmlrpc),
            status: Some(405),
            found_via: Discovery::Standard,
            fetched_at: UnixMs(T0),
            ..PageRecord::default()
        })));
        out.push(finding(Code::WpXmlrpcExposed, url("/xmlrpc.php"), "405"));
    }
    if chance(n, 5, 3) {
        let mut f =
            Finding::new(audit, site, Code::BrokenExternalLink, "https://cdn.widgets.example/v2/embed.js", "404");
        f.related = vec![url("/")];
        out.push(Event::Finding(f));
    }
    out.push(Event::SiteDone { audit, site });
    out
}

/// Builds an audit of `sites` sites of `pages` pages each in `db`; returns it and the seconds taken.
fn build(db: &mut AuditDb, sites: u64, pages: u64) -> Result<(AuditId, f64), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let audit = db.create_audit(r#"{"max_pages":500}"#, UnixMs(T0))?;
    let urls: Vec<String> = (0..sites).map(|n| format!("https://customer-{n:05}.example/")).collect();
    let ids = db.add_sites(audit, &urls)?;
    let mut batch = Vec::new();
    for (n, site) in ids.into_iter().enumerate() {
        batch.extend(site_events(audit, site, n as u64, pages));
        if batch.len() >= 5_000 {
            db.apply(&batch)?;
            batch.clear();
        }
    }
    db.apply(&batch)?;
    db.finish_audit(audit, AuditStatus::Done, UnixMs(T0 + 3_600_000))?;
    Ok((audit, started.elapsed().as_secs_f64()))
}

/// The value of `data-layout-ms` in a dumped DOM.
fn layout_ms(dom: &str) -> Option<u64> {
    let at = dom.find("data-layout-ms=\"")? + "data-layout-ms=\"".len();
    dom[at..].split('"').next()?.parse().ok()
}

/// Opens `file` in Chromium three times: the page's own layout time (median) and the wall time of
/// a screenshot (median), minus the same for `empty`.
fn chromium_figures(file: &Path, empty: &Path, work: &Path) -> Result<(u64, f64), Box<dyn std::error::Error>> {
    let bin = chromium::chromium();
    let mut layouts = Vec::new();
    let mut walls = Vec::new();
    for i in 0..3 {
        let url = format!("file://{}", file.display());
        let (ok, dom, log) =
            chromium::run_chromium(&bin, &work.join(format!("dom-{i}")), &["--dump-dom", &url], CHROMIUM_LIMIT);
        if !ok {
            return Err(format!("chromium --dump-dom failed: {log}").into());
        }
        layouts.push(layout_ms(&dom).ok_or("no data-layout-ms in the DOM")?);
        let wall = |page: &Path, name: &str| -> Result<f64, Box<dyn std::error::Error>> {
            let shot = work.join(format!("{name}-{i}.png"));
            let started = Instant::now();
            let (ok, _, log) = chromium::run_chromium(
                &bin,
                &work.join(format!("{name}-profile-{i}")),
                &[
                    &format!("--screenshot={}", shot.display()),
                    "--window-size=1280,1600",
                    &format!("file://{}", page.display()),
                ],
                CHROMIUM_LIMIT,
            );
            if !ok {
                return Err(format!("chromium --screenshot failed: {log}").into());
            }
            Ok(started.elapsed().as_secs_f64())
        };
        walls.push(wall(file, "page")? - wall(empty, "empty")?);
    }
    layouts.sort_unstable();
    walls.sort_by(f64::total_cmp);
    Ok((layouts[1], walls[1]))
}

fn overview_scenario(
    dir: &Path,
    sites: u64,
    pages: u64,
    empty: &Path,
    per_site: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let path = dir.join(format!("audit-{sites}x{pages}.db"));
    let mut db = AuditDb::open(&path)?;
    let (audit, built) = build(&mut db, sites, pages)?;
    let findings: u64 = db.audit(audit)?.map_or(0, |a| a.findings);
    println!("\n{sites} sites x {pages} pages = {} pages, {findings} findings (built in {built:.1} s)", sites * pages);
    let file = dir.join(format!("overview-{sites}.html"));
    let started = Instant::now();
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&file)?);
        let branding = Branding::default();
        report::write_overview_html(
            &db,
            audit,
            HtmlOptions { branding: &branding, links: Links::Directory { nested: false } },
            &mut f,
        )?;
        f.flush()?;
    }
    let wrote = started.elapsed().as_secs_f64();
    let size = std::fs::metadata(&file)?.len();
    println!("  overview page: {:.2} MB, written in {wrote:.2} s", size as f64 / 1e6);
    let (layout, wall) = chromium_figures(&file, empty, dir)?;
    println!("  headless Chromium: parsed and laid out {layout} ms after navigation start (median of 3);");
    println!("                     screenshot {wall:.2} s longer than an empty page's (median of 3)");
    if per_site {
        let out = dir.join("per-site");
        let started = Instant::now();
        let files = report::write_per_site(&db, audit, &Branding::default(), &out)?;
        let took = started.elapsed().as_secs_f64();
        let mut sizes: Vec<u64> = std::fs::read_dir(out.join("sites"))?
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "html"))
            .filter_map(|e| e.metadata().ok().map(|m| m.len()))
            .collect();
        sizes.sort_unstable();
        println!(
            "  --per-site: {} site reports and {} issue pages in {took:.1} s; a site's HTML {:.0} KB median ({:.0}..{:.0} KB)",
            files.sites,
            files.issues,
            sizes.get(sizes.len() / 2).copied().unwrap_or(0) as f64 / 1e3,
            sizes.first().copied().unwrap_or(0) as f64 / 1e3,
            sizes.last().copied().unwrap_or(0) as f64 / 1e3
        );
    }
    Ok(())
}

fn site_sizes(dir: &Path, scale: u64) -> Result<(), Box<dyn std::error::Error>> {
    let mut db = AuditDb::open(&dir.join("sizes.db"))?;
    let audit = db.create_audit("{}", UnixMs(T0))?;
    println!("\nper-site report size against the site");
    let sizes: &[u64] = if scale > 1 { &[10, 100, 1_000] } else { &[10, 100, 1_000, 10_000] };
    for (n, pages) in sizes.iter().copied().enumerate() {
        let site = db.add_site(audit, &format!("https://customer-{n:05}.example/"))?;
        for chunk in site_events(audit, site, n as u64, pages).chunks(5_000) {
            db.apply(chunk)?;
        }
        let stats = db.site_stats(site)?;
        let started = Instant::now();
        let mut out = Vec::new();
        let branding = Branding::default();
        report::write_site_html(
            &db,
            site,
            HtmlOptions { branding: &branding, links: Links::Directory { nested: true } },
            &mut out,
        )?;
        let took = started.elapsed().as_secs_f64();
        println!(
            "  {pages:>6} pages, {:>6} findings: {:>8.1} KB, {:>5.2} KB per fetched URL, written in {took:.2} s",
            stats.severities.errors + stats.severities.warnings + stats.severities.notices,
            out.len() as f64 / 1e3,
            out.len() as f64 / 1e3 / stats.urls.max(1) as f64
        );
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    let args: Vec<String> = std::env::args().collect();
    let temp = tempfile::tempdir()?;
    // `--keep DIR`: write the databases and pages there (to look at them) instead of a temporary
    // folder.
    let dir = match args.iter().position(|a| a == "--keep").and_then(|i| args.get(i + 1)) {
        Some(keep) => {
            std::fs::create_dir_all(keep)?;
            std::path::PathBuf::from(keep)
        }
        None => temp.path().to_owned(),
    };
    let empty = dir.join("empty.html");
    std::fs::write(&empty, "<!DOCTYPE html><title>empty</title><p>empty</p>")?;
    println!("overview benchmark{}", if quick { " (quick: a tenth of the size)" } else { "" });
    overview_scenario(&dir, 1_000 / scale, 100, &empty, true)?;
    overview_scenario(&dir, 10_000 / scale, 10, &empty, false)?;
    site_sizes(&dir, scale)?;
    Ok(())
}
