//! Each site's "Rendered crawl" section (issue 38, `--render`): the decision taken for the site
//! ([`AuditDb::render_summary`]), the time and requests rendering took, and each page queued for
//! rendering ([`AuditDb::rendered_pages`]). A module and a template file of their own
//! (`templates/report/render.html`).

use super::ReportError;
use super::base::render;
use askama::Template;
use shoal_shared::render::RenderDecision;
use shoal_store::render::RenderedRow;
use shoal_store::{AuditDb, SiteSummary};
use std::io::Write;

/// One page as shown.
#[derive(Debug)]
struct PageRow {
    url: String,
    state: &'static str,
    ms: u32,
    requests: u32,
    title: String,
    links: usize,
    words: u32,
    note: String,
}

#[derive(Template, Debug)]
#[template(path = "report/render.html", block = "render_section")]
struct RenderSection {
    site: u64,
    decision: &'static str,
    reason: String,
    rendered: u32,
    failed: u32,
    not_rendered: u32,
    seconds: String,
    requests: u64,
    rendered_links: u32,
    pages: Vec<PageRow>,
}

fn row(r: RenderedRow) -> PageRow {
    let (state, note) = match (&r.error, r.queued) {
        (_, true) => ("not rendered", "its task never completed".to_owned()),
        (Some(e), false) => ("failed", e.clone()),
        (None, false) if !r.robots_blocked.is_empty() => {
            ("rendered", format!("{} request(s) held back by robots.txt", r.robots_blocked.len()))
        }
        (None, false) => ("rendered", String::new()),
    };
    let facts = r.rendered.as_ref();
    PageRow {
        state,
        ms: r.render_ms.unwrap_or(0),
        requests: r.requests.unwrap_or(0),
        title: facts.and_then(|f| f.title.clone()).unwrap_or_default(),
        links: facts.map_or(0, |f| f.links.len()),
        words: facts.map_or(0, |f| f.words),
        note,
        url: r.url,
    }
}

/// The decision's name and reason as shown.
fn decision(d: &RenderDecision) -> (&'static str, String) {
    match d {
        RenderDecision::Always => ("Every page rendered (--render always)", String::new()),
        RenderDecision::Rendered { reason } => ("Rendered: its scripts add links or content", reason.clone()),
        RenderDecision::Raw { reason } => {
            ("Not rendered further: its scripts add nothing the crawl needs", reason.clone())
        }
        RenderDecision::NotRendered { reason } => ("Not rendered", reason.clone()),
    }
}

/// Writes the section of `site`; nothing when the site was not rendered (`--render never`).
pub(super) fn write_render_section<W: Write>(w: &mut W, db: &AuditDb, site: &SiteSummary) -> Result<(), ReportError> {
    let summary = db.render_summary(site.id)?;
    let Some(d) = summary.decision.as_ref() else { return Ok(()) };
    let (decision, reason) = decision(d);
    let pages: Vec<PageRow> = db.rendered_pages(site.id)?.into_iter().map(row).collect();
    let not_rendered = u32::try_from(pages.iter().filter(|p| p.state == "not rendered").count()).unwrap_or(u32::MAX);
    render(
        w,
        &RenderSection {
            site: site.id.0,
            decision,
            reason,
            rendered: summary.rendered,
            failed: summary.failed,
            not_rendered,
            seconds: format!("{:.1}", summary.render_ms as f64 / 1000.0),
            requests: summary.requests,
            rendered_links: summary.rendered_links,
            pages,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crawled_text_is_escaped_and_every_state_is_shown() {
        let evil = "<script>alert(1)</script>";
        let rows = vec![
            RenderedRow {
                url: format!("https://a.test/{evil}"),
                queued: false,
                final_url: None,
                status: Some(200),
                error: None,
                rendered: Some(shoal_shared::browser::Rendered {
                    title: Some(evil.into()),
                    words: 7,
                    ..Default::default()
                }),
                render_ms: Some(1234),
                requests: Some(3),
                robots_blocked: vec!["https://a.test/x (Disallow: /x)".into()],
            },
            RenderedRow {
                url: "https://a.test/slow".into(),
                queued: false,
                final_url: None,
                status: None,
                error: Some("the page was not rendered within 20 s".into()),
                rendered: None,
                render_ms: Some(20_000),
                requests: Some(1),
                robots_blocked: vec![],
            },
        ];
        let (decision, reason) = decision(&RenderDecision::Rendered { reason: "start page: 4 more".into() });
        let section = RenderSection {
            site: 1,
            decision,
            reason,
            rendered: 1,
            failed: 1,
            not_rendered: 0,
            seconds: "21.2".into(),
            requests: 4,
            rendered_links: 4,
            pages: rows.into_iter().map(row).collect(),
        };
        let html = section.render().expect("renders");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("1 request(s) held back by robots.txt"), "{html}");
        assert!(html.contains("not rendered within 20 s") && html.contains("start page: 4 more"), "{html}");
    }
}
