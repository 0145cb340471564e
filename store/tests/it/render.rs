//! The rendered crawl's plan and rows (issue 38) against a real SQLite file: `always` takes the
//! HTML pages not rendered yet, shallowest first, within the budget, each once per audit; `auto`
//! renders the start page, then decides from its two versions and records why; a render's links
//! the HTML lacks join the link graph marked rendered, and a second delivery changes nothing.

use shoal_shared::browser::{Rendered, RenderedPage};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, LinkKind, LinkRecord, PageRecord, UrlKind};
use shoal_shared::render::{RenderDecision, RenderMode};
use shoal_shared::time::UnixMs;
use shoal_store::AuditDb;

const BASE: &str = "https://app.test";

fn u(path: &str) -> String {
    format!("{BASE}{path}")
}

fn page(ids: (AuditId, SiteId), path: &str, depth: u16, content_type: &str) -> Event {
    Event::Page(Box::new(PageRecord {
        audit: ids.0,
        site: ids.1,
        url: u(path),
        kind: UrlKind::Page,
        status: Some(200),
        depth,
        found_via: Discovery::Link,
        content_type: Some(content_type.to_owned()),
        word_count: Some(3),
        links: vec![LinkRecord {
            url: u("/about"),
            kind: LinkKind::Anchor,
            nofollow: false,
            internal: true,
            text: None,
        }],
        fetched_at: UnixMs(1_700_000_000_000),
        ..PageRecord::default()
    }))
}

fn rendered(ids: (AuditId, SiteId), path: &str, links: &[&str]) -> Event {
    let link = |p: &&str| LinkRecord { url: u(p), kind: LinkKind::Anchor, nofollow: false, internal: true, text: None };
    Event::Render(Box::new(RenderedPage {
        audit: ids.0,
        site: ids.1,
        url: u(path),
        final_url: u(path),
        status: Some(200),
        rendered: Some(Rendered { links: links.iter().map(|p| u(p)).collect(), words: 200, ..Rendered::default() }),
        render_ms: 900,
        requests: 2,
        links: links.iter().map(link).collect(),
        ..RenderedPage::default()
    }))
}

fn open() -> (tempfile::TempDir, AuditDb, (AuditId, SiteId)) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = AuditDb::open(&dir.path().join("audit.db")).expect("opens");
    let audit = db.create_audit("{}", UnixMs(1)).expect("audit");
    let site = db.add_site(audit, &u("/")).expect("site");
    (dir, db, (audit, site))
}

fn urls(targets: &[shoal_store::render::RenderTarget]) -> Vec<String> {
    targets.iter().map(|t| t.url.replace(BASE, "")).collect()
}

#[test]
fn always_plans_each_html_page_once_shallowest_first_within_the_budget() {
    let (_dir, mut db, ids) = open();
    db.apply(&[
        page(ids, "/", 0, "text/html"),
        page(ids, "/b", 2, "text/html; charset=utf-8"),
        page(ids, "/a", 1, "text/html"),
        page(ids, "/feed", 1, "application/rss+xml"),
        page(ids, "/c", 1, "text/html"),
    ])
    .expect("applies");
    let first = db.plan_render(ids.1, RenderMode::Always, 3).expect("plans");
    assert_eq!(urls(&first), ["/", "/a", "/c"], "depth, then URL; not the feed");
    assert_eq!(first[1].depth, 1);
    assert_eq!(db.render_summary(ids.1).expect("reads").decision, Some(RenderDecision::Always));
    assert!(db.plan_render(ids.1, RenderMode::Always, 3).expect("plans").is_empty(), "the budget is spent");
    assert_eq!(urls(&db.plan_render(ids.1, RenderMode::Always, 10).expect("plans")), ["/b"], "each page once");
    assert!(db.plan_render(ids.1, RenderMode::Never, 10).expect("plans").is_empty());
}

#[test]
fn auto_renders_the_start_page_then_decides_and_says_why() {
    let (_dir, mut db, ids) = open();
    db.apply(&[page(ids, "/", 0, "text/html"), page(ids, "/a", 1, "text/html")]).expect("applies");
    assert_eq!(urls(&db.plan_render(ids.1, RenderMode::Auto, 10).expect("plans")), ["/"], "the start page alone");
    // Its render shows a link the HTML lacks (and the one it has): the site is rendered.
    let render = rendered(ids, "/", &["/about", "/shop"]);
    db.apply(std::slice::from_ref(&render)).expect("applies");
    db.apply(&[render]).expect("a second delivery applies too");
    assert_eq!(urls(&db.plan_render(ids.1, RenderMode::Auto, 10).expect("plans")), ["/a"]);
    let summary = db.render_summary(ids.1).expect("reads");
    let Some(RenderDecision::Rendered { reason }) = &summary.decision else { panic!("{summary:?}") };
    assert!(reason.contains("1 link(s) in the HTML, 1 more after rendering"), "{reason}");
    assert_eq!((summary.queued, summary.rendered, summary.rendered_links), (2, 1, 1), "{summary:?}");
    let links = db.links_from(ids.1, &u("/")).expect("reads");
    let shown: Vec<(String, bool)> = links.iter().map(|l| (l.to_url.replace(BASE, ""), l.rendered)).collect();
    assert_eq!(shown, [("/about".to_owned(), false), ("/shop".to_owned(), true)], "stored once, marked");
}

#[test]
fn auto_leaves_a_site_whose_scripts_add_nothing_and_one_it_could_not_render() {
    let (_dir, mut db, ids) = open();
    db.apply(&[page(ids, "/", 0, "text/html")]).expect("applies");
    db.plan_render(ids.1, RenderMode::Auto, 10).expect("plans");
    let mut same = rendered(ids, "/", &["/about"]);
    if let Event::Render(r) = &mut same {
        r.rendered.as_mut().expect("facts").words = 3;
    }
    db.apply(&[same]).expect("applies");
    assert!(db.plan_render(ids.1, RenderMode::Auto, 10).expect("plans").is_empty());
    let decision = db.render_summary(ids.1).expect("reads").decision;
    assert!(matches!(decision, Some(RenderDecision::Raw { .. })), "{decision:?}");

    let (_dir2, mut db, ids) = open();
    db.apply(&[page(ids, "/", 0, "text/html")]).expect("applies");
    db.plan_render(ids.1, RenderMode::Auto, 10).expect("plans");
    let failed = Event::Render(Box::new(RenderedPage {
        audit: ids.0,
        site: ids.1,
        url: u("/"),
        final_url: u("/"),
        error: Some("the page was not rendered within 20 s".into()),
        ..RenderedPage::default()
    }));
    db.apply(&[failed]).expect("applies");
    assert!(db.plan_render(ids.1, RenderMode::Auto, 10).expect("plans").is_empty());
    // A third site, whose start page's render never came back (its task dropped with its lane):
    // the round is over (the coordinator plans only then), so it is lost, and said so.
    let (_dir3, mut db3, ids3) = open();
    db3.apply(&[page(ids3, "/", 0, "text/html")]).expect("applies");
    db3.plan_render(ids3.1, RenderMode::Auto, 10).expect("plans");
    assert!(db3.plan_render(ids3.1, RenderMode::Auto, 10).expect("plans").is_empty());
    let lost = db3.render_summary(ids3.1).expect("reads").decision;
    assert_eq!(lost, Some(RenderDecision::NotRendered { reason: "the start page's render never completed".into() }));
    let Some(RenderDecision::NotRendered { reason }) = db.render_summary(ids.1).expect("reads").decision else {
        panic!("not rendered")
    };
    assert_eq!(reason, "the start page's render failed: the page was not rendered within 20 s");
}
