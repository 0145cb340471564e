//! Issue 37's page facts in a real database: the AI crawler table and its notice, extracted values
//! round-tripped, and two sites compared URL by URL.

use shoal_shared::ai_crawlers::{AI_CRAWLERS, AiBlocked, AiVerdict};
use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, PageRecord, UrlKind};
use shoal_shared::time::UnixMs;
use shoal_store::AuditDb;
use shoal_store::cursor::Reader;
use shoal_store::url_changes::{UrlChange, UrlCounts, count_url_changes, url_changes_with};

const BASE: &str = "https://shop.test";

fn bit(token: &str) -> u32 {
    1 << AI_CRAWLERS.iter().position(|c| c.token == token).expect("a documented token")
}

fn page(ids: (AuditId, SiteId), path: &str, status: Option<u16>) -> PageRecord {
    PageRecord {
        audit: ids.0,
        site: ids.1,
        url: format!("{BASE}{path}"),
        kind: UrlKind::Page,
        status,
        found_via: if path == "/" { Discovery::Start } else { Discovery::Link },
        content_type: Some("text/html".to_owned()),
        fetched_at: UnixMs(1_700_000_000_000),
        ..PageRecord::default()
    }
}

/// A database with one audit of one site whose start URL is the shop's.
fn database(dir: &std::path::Path, audits: usize) -> (AuditDb, Vec<(AuditId, SiteId)>) {
    let mut db = AuditDb::open(&dir.join("audit.db")).expect("opens");
    let ids = (0..audits)
        .map(|i| {
            let audit = db.create_audit("{}", UnixMs(1_700_000_000_000 + i as u64)).expect("audit");
            let site = db.add_sites(audit, &[format!("{BASE}/")]).expect("site")[0];
            (audit, site)
        })
        .collect();
    (db, ids)
}

#[test]
fn the_ai_crawler_table_sums_the_pages_and_flags_differences() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, ids) = database(dir.path(), 1);
    let ids = ids[0];
    let everywhere = bit("GPTBot") | bit("CCBot");
    let mut events = Vec::new();
    for (path, blocked) in [("/", everywhere), ("/shop/a", everywhere | bit("ClaudeBot")), ("/b", everywhere)] {
        let mut p = page(ids, path, Some(200));
        p.ai_blocked = Some(AiBlocked::from_bits(blocked));
        events.push(Event::Page(Box::new(p)));
    }
    // Not in the sample: a resource, and a page recorded by a worker that did not judge it.
    let mut resource = page(ids, "/logo.png", Some(200));
    resource.kind = UrlKind::Resource;
    resource.ai_blocked = Some(AiBlocked::from_bits(u32::MAX));
    events.push(Event::Page(Box::new(resource)));
    events.push(Event::Page(Box::new(page(ids, "/old-worker", Some(200)))));
    events.push(Event::SiteDone { audit: ids.0, site: ids.1 });
    db.apply(&events).expect("applies");

    let table = db.ai_crawlers(ids.1).expect("reads");
    assert_eq!(table.len(), AI_CRAWLERS.len(), "one host");
    let row = |token: &str| table.iter().find(|r| r.crawler.token == token).expect("a row");
    let gpt = row("GPTBot");
    assert_eq!((gpt.verdict, gpt.pages, gpt.blocked, gpt.start_blocked), (AiVerdict::Blocked, 3, 3, Some(true)));
    assert_eq!(gpt.host, "shop.test");
    assert_eq!(gpt.robots_url, "https://shop.test/robots.txt");
    let claude = row("ClaudeBot");
    assert_eq!((claude.verdict, claude.blocked, claude.start_blocked), (AiVerdict::PartlyBlocked, 1, Some(false)));
    assert_eq!(row("Amazonbot").verdict, AiVerdict::Allowed);

    let notices: Vec<(String, String, String)> = findings_of(&db, ids.1, Code::AiCrawlersInconsistent);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0].1, "https://shop.test/robots.txt");
    assert!(notices[0].2.starts_with("blocked: GPTBot, CCBot; partly blocked: ClaudeBot; allowed: OAI-SearchBot"));
    // Run again (a replayed SiteDone): the same single notice.
    db.apply(&[Event::SiteDone { audit: ids.0, site: ids.1 }]).expect("applies again");
    assert_eq!(findings_of(&db, ids.1, Code::AiCrawlersInconsistent), notices);
}

#[test]
fn a_site_whose_crawlers_all_agree_gets_no_notice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, ids) = database(dir.path(), 1);
    let ids = ids[0];
    let mut p = page(ids, "/", Some(200));
    p.ai_blocked = Some(AiBlocked::NONE);
    db.apply(&[Event::Page(Box::new(p)), Event::SiteDone { audit: ids.0, site: ids.1 }]).expect("applies");
    assert!(db.ai_crawlers(ids.1).expect("reads").iter().all(|r| r.verdict == AiVerdict::Allowed));
    assert!(findings_of(&db, ids.1, Code::AiCrawlersInconsistent).is_empty());
}

/// The site's findings of `code`, as (code, url, detail).
fn findings_of(db: &AuditDb, site: SiteId, code: Code) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    db.for_each_finding(site, |f| -> Result<(), shoal_store::DbError> {
        if f.code == code.as_str() {
            out.push((f.code, f.url, f.detail));
        }
        Ok(())
    })
    .expect("reads");
    out
}

#[test]
fn two_sites_compare_url_by_url() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, ids) = database(dir.path(), 2);
    let (old, new) = (ids[0], ids[1]);
    let with = |ids, path: &str, title: &str, price: Option<&str>| {
        let mut p = page(ids, path, Some(200));
        p.title = Some(title.to_owned());
        p.extracted = price.map(|v| vec![("price".to_owned(), v.to_owned())]).unwrap_or_default();
        p
    };
    let mut events = vec![
        Event::Page(Box::new(with(old, "/", "Shop", None))),
        Event::Page(Box::new(with(old, "/kettle", "Kettle", Some("19.99")))),
        Event::Page(Box::new(with(old, "/teapot", "Teapot", Some("24.50")))),
        Event::Page(Box::new(with(old, "/about", "About", None))),
        Event::Page(Box::new(with(new, "/", "Shop", None))),
        Event::Page(Box::new(with(new, "/kettle", "Kettle", Some("17.49")))),
        Event::Page(Box::new(with(new, "/cup", "Cup", Some("5.00")))),
        Event::Page(Box::new(with(new, "/about", "About", None))),
        Event::Finding(Finding::new(new.0, new.1, Code::Noindex, format!("{BASE}/about"), "noindex via meta robots")),
    ];
    // The start page's text grew; the kettle's word count is the same in both; the old audit did
    // not record the about page's (as a Shoal before schema 9): not a change of its own.
    let words = |events: &mut Vec<Event>, i: usize, n: u32| {
        let Event::Page(p) = &mut events[i] else { unreachable!() };
        p.word_count = Some(n);
    };
    words(&mut events, 0, 120);
    words(&mut events, 4, 135);
    words(&mut events, 1, 80);
    words(&mut events, 5, 80);
    words(&mut events, 7, 40);
    // Not compared: a resource only in one audit.
    let mut resource = page(new, "/logo.png", Some(404));
    resource.kind = UrlKind::Resource;
    events.push(Event::Page(Box::new(resource)));
    db.apply(&events).expect("applies");

    let reader = Reader::open(&db).expect("reader");
    let mut seen = Vec::new();
    url_changes_with(&reader, old.1, new.1, |c| -> Result<(), shoal_store::DbError> {
        seen.push(c);
        Ok(())
    })
    .expect("compares");
    let summary: Vec<(&str, String)> = seen
        .iter()
        .map(|c| match c {
            UrlChange::Added(p) | UrlChange::Removed(p) => (c.kind(), p.url.clone()),
            UrlChange::Changed { url, changes } => {
                let facts: Vec<String> = changes
                    .iter()
                    .map(|f| format!("{} {:?}->{:?}", f.fact, f.old.as_deref(), f.new.as_deref()))
                    .collect();
                (c.kind(), format!("{url}: {}", facts.join(", ")))
            }
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("changed", format!("{BASE}/: word_count Some(\"120\")->Some(\"135\")")),
            ("changed", format!("{BASE}/about: indexability Some(\"indexable\")->Some(\"not indexable: noindex\")")),
            ("added", format!("{BASE}/cup")),
            ("changed", format!("{BASE}/kettle: extracted.price Some(\"19.99\")->Some(\"17.49\")")),
            ("removed", format!("{BASE}/teapot")),
        ],
        "in URL order"
    );
    let UrlChange::Added(cup) = &seen[2] else { panic!("{:?}", seen[2]) };
    assert_eq!(
        (cup.fact("status"), cup.fact("title"), cup.extracted("price")),
        (Some("200"), Some("Cup"), Some("5.00"))
    );
    assert_eq!(
        count_url_changes(&reader, old.1, new.1).expect("counts"),
        UrlCounts { added: 1, removed: 1, changed: 3 }
    );
    assert_eq!(
        count_url_changes(&reader, new.1, new.1).expect("counts"),
        UrlCounts::default(),
        "a site against itself"
    );
}
