//! The URL-by-URL part of a comparison (issue 37, part 8): the pages added, removed and changed
//! between two audits of a site ([`shoal_store::url_changes`]), under the findings that changed.
//! Shown wherever two sites are compared (the comparison page, a site's "Changes" section). Each
//! list is streamed and shows at most [`MAX_URL_ROWS`] URLs; the JSON comparison has them all.

use super::ReportError;
use super::base::{href, render};
use askama::Template;
use shoal_shared::ids::SiteId;
use shoal_store::cursor::Reader;
use shoal_store::url_changes::{UrlChange, UrlCounts, count_url_changes, url_changes_with};
use std::io::Write;

/// URLs shown per list at most: a re-structured site can add or remove thousands of pages.
pub const MAX_URL_ROWS: u64 = 500;

#[derive(Template, Debug)]
#[template(path = "report/url_changes.html", block = "url_changes_start")]
struct UrlChangesStart {
    site: u64,
    added: u64,
    removed: u64,
    changed: u64,
}

#[derive(Template, Debug)]
#[template(path = "report/url_changes.html", block = "url_list_start")]
struct UrlListStart<'a> {
    title: &'a str,
    count: u64,
    shown: u64,
    open: bool,
    changes: bool,
    table_id: String,
}

#[derive(Template, Debug)]
#[template(path = "report/url_changes.html", block = "url_page_row")]
struct UrlPageRow<'a> {
    url: &'a str,
    href: Option<&'a str>,
    status: &'a str,
    title: &'a str,
    indexability: &'a str,
}

#[derive(Template, Debug)]
#[template(path = "report/url_changes.html", block = "url_change_row")]
struct UrlChangeRow<'a> {
    url: &'a str,
    href: Option<&'a str>,
    fact: &'a str,
    old: &'a str,
    new: &'a str,
}

#[derive(Template, Debug)]
#[template(path = "report/url_changes.html", block = "url_list_end")]
struct UrlListEnd {
    count: u64,
}

#[derive(Template, Debug)]
#[template(path = "report/url_changes.html", block = "url_changes_end")]
struct UrlChangesEnd;

/// Writes the added, removed and changed pages of two sites.
pub(crate) fn write_url_changes<W: Write>(
    w: &mut W,
    reader: &Reader,
    old: SiteId,
    new: SiteId,
) -> Result<(), ReportError> {
    let counts: UrlCounts = count_url_changes(reader, old, new)?;
    let UrlCounts { added, removed, changed } = counts;
    render(w, &UrlChangesStart { site: new.0, added, removed, changed })?;
    for (kind, title, count) in
        [("changed", "Changed pages", changed), ("added", "Added pages", added), ("removed", "Removed pages", removed)]
    {
        render(
            w,
            &UrlListStart {
                title,
                count,
                shown: MAX_URL_ROWS,
                open: kind == "changed",
                changes: kind == "changed",
                table_id: format!("urls-{kind}-{new}"),
            },
        )?;
        let mut shown = 0u64;
        url_changes_with(reader, old, new, |change| -> Result<(), ReportError> {
            if change.kind() != kind || shown >= MAX_URL_ROWS {
                return Ok(());
            }
            shown += 1;
            match &change {
                UrlChange::Added(p) | UrlChange::Removed(p) => render(
                    w,
                    &UrlPageRow {
                        url: &p.url,
                        href: href(&p.url),
                        status: p.fact("status").unwrap_or(""),
                        title: p.fact("title").unwrap_or(""),
                        indexability: p.fact("indexability").unwrap_or(""),
                    },
                ),
                UrlChange::Changed { url, changes } => changes.iter().try_for_each(|c| {
                    render(
                        w,
                        &UrlChangeRow {
                            url,
                            href: href(url),
                            fact: &c.fact,
                            old: c.old.as_deref().unwrap_or("(none)"),
                            new: c.new.as_deref().unwrap_or("(none)"),
                        },
                    )
                }),
            }
        })?;
        render(w, &UrlListEnd { count })?;
    }
    render(w, &UrlChangesEnd)
}
