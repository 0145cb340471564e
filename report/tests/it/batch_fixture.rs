//! A batch of customer sites audited twice, for the overview, per-site, CI export and gate tests
//! (shared with `shoal/tests/it/report_cli.rs`, which includes this file by path).
//!
//! Audit 1 and audit 2 hold the same five start URLs:
//! - `alpha`: a broken link on 2 of 10 pages, HSTS missing; in audit 2 a new server error too.
//! - `alpha`, `beta` and `gamma` miss HSTS.
//! - `beta`: titles missing on 150 of 200 pages (a group larger than one page of URLs), hostile
//!   text in a detail and in its `Server` header.
//! - `gamma`: WordPress (its probe was sent), xmlrpc exposed; links to the failing CDN script.
//! - `delta`: WordPress, xmlrpc exposed, links to the failing CDN script; nothing else.
//! - `down`: nothing answered (not scored).
//!
//! `alpha` and `beta` answer with the same `Server` header, `gamma` and `delta` with a hostile one;
//! `gamma` and `delta` share the failing `https://cdn.widgets.test/embed.js`.

#![allow(dead_code)]

use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, FetchFailure, PageRecord, UrlKind};
use shoal_shared::task::ProbeKind;
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, AuditStatus};
use std::path::Path;

pub(crate) const T0: u64 = 1_714_564_800_000;
pub(crate) const CDN: &str = "https://cdn.widgets.test/embed.js";
pub(crate) const SERVER: &str = "Apache/2.4.29 (Ubuntu)";
pub(crate) const EVIL_DETAIL: &str = "<img src=x onerror=alert(9)>\u{1}";
pub(crate) const EVIL_SERVER: &str = "nginx\"><script>alert(8)</script>";
pub(crate) const NAMES: [&str; 5] = ["alpha", "beta", "gamma", "delta", "down"];

pub(crate) fn start(name: &str) -> String {
    format!("https://{name}.test/")
}

fn page(ids: (AuditId, SiteId), url: String, status: Option<u16>, server: Option<&str>) -> Event {
    let is_start = url.ends_with(".test/");
    Event::Page(Box::new(PageRecord {
        audit: ids.0,
        site: ids.1,
        url,
        kind: UrlKind::Page,
        status,
        error: status.is_none().then_some(FetchFailure::Connect),
        depth: u16::from(!is_start),
        found_via: if is_start { Discovery::Start } else { Discovery::Link },
        content_type: Some("text/html".to_owned()),
        bytes: 1000,
        response_ms: 50,
        fetched_at: UnixMs(T0),
        headers: server.map(|s| vec![("server".to_owned(), s.to_owned())]).unwrap_or_default(),
        ..PageRecord::default()
    }))
}

fn finding(ids: (AuditId, SiteId), code: Code, url: String, detail: &str) -> Event {
    Event::Finding(Finding::new(ids.0, ids.1, code, url, detail))
}

fn wordpress(ids: (AuditId, SiteId), name: &str) -> Vec<Event> {
    let url = format!("{}xmlrpc.php", start(name));
    vec![
        Event::Page(Box::new(PageRecord {
            audit: ids.0,
            site: ids.1,
            url: url.clone(),
            kind: UrlKind::Probe(ProbeKind::WpXmlrpc),
            status: Some(405),
            found_via: Discovery::Standard,
            fetched_at: UnixMs(T0),
            ..PageRecord::default()
        })),
        finding(ids, Code::WpXmlrpcExposed, url, "405"),
    ]
}

/// One audit of the five sites; `second` adds alpha's new server error.
fn audit(db: &mut AuditDb, second: bool) -> (AuditId, Vec<SiteId>) {
    let at = if second { T0 + 86_400_000 } else { T0 };
    let audit = db.create_audit("{}", UnixMs(at)).expect("audit");
    let urls: Vec<String> = NAMES.iter().map(|n| start(n)).collect();
    let sites = db.add_sites(audit, &urls).expect("sites");
    let id = |i: usize| (audit, sites[i]);
    let mut events = Vec::new();
    // alpha
    let a = id(0);
    events.push(page(a, start("alpha"), Some(200), Some(SERVER)));
    for i in 1..10 {
        let broken = i <= 2;
        events.push(page(a, format!("https://alpha.test/p{i}"), Some(if broken { 404 } else { 200 }), None));
        if broken {
            let mut f =
                Finding::new(audit, sites[0], Code::BrokenInternalLink, format!("https://alpha.test/p{i}"), "404");
            f.related = vec![start("alpha")];
            events.push(Event::Finding(f));
        }
    }
    events.push(finding(a, Code::HstsMissing, start("alpha"), ""));
    if second {
        events.push(page(a, "https://alpha.test/cart".to_owned(), Some(503), None));
        events.push(finding(a, Code::ServerError, "https://alpha.test/cart".to_owned(), "503"));
    }
    // beta
    let b = id(1);
    events.push(page(b, start("beta"), Some(200), Some(SERVER)));
    events.push(finding(b, Code::HstsMissing, start("beta"), ""));
    for i in 1..200 {
        let url = format!("https://beta.test/item/{i:03}");
        events.push(page(b, url.clone(), Some(200), None));
        if i <= 150 {
            events.push(finding(b, Code::TitleMissing, url, if i == 1 { EVIL_DETAIL } else { "" }));
        }
    }
    // gamma
    let g = id(2);
    events.push(page(g, start("gamma"), Some(200), Some(EVIL_SERVER)));
    events.push(finding(g, Code::HstsMissing, start("gamma"), ""));
    events.extend(wordpress(g, "gamma"));
    events.push(finding(g, Code::BrokenExternalLink, CDN.to_owned(), "404"));
    // delta
    let d = id(3);
    events.push(page(d, start("delta"), Some(200), Some(EVIL_SERVER)));
    events.extend(wordpress(d, "delta"));
    events.push(finding(d, Code::BrokenExternalLink, CDN.to_owned(), "404"));
    // down
    let n = id(4);
    events.push(page(n, start("down"), None, None));
    events.push(finding(n, Code::StartUnreachable, start("down"), "connect"));
    for (i, _) in NAMES.iter().enumerate() {
        events.push(Event::SiteDone { audit, site: sites[i] });
    }
    db.apply_at(&events, UnixMs(at + 60_000)).expect("apply");
    db.finish_audit(audit, AuditStatus::Done, UnixMs(at + 120_000)).expect("finish");
    (audit, sites)
}

/// The database with both audits.
pub(crate) struct Batch {
    pub(crate) db: AuditDb,
    pub(crate) first: AuditId,
    pub(crate) second: AuditId,
    /// The second audit's sites, in [`NAMES`] order.
    pub(crate) sites: Vec<SiteId>,
}

pub(crate) fn batch(dir: &Path) -> Batch {
    let mut db = AuditDb::open(&dir.join("batch.db")).expect("open");
    let (first, _) = audit(&mut db, false);
    let (second, sites) = audit(&mut db, true);
    Batch { db, first, second, sites }
}
