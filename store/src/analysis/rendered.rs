//! Raw against rendered (issue 38): each page the rendered crawl rendered or the browser check
//! opened, its crawl's facts (the `pages` row, read from the HTML the server sent) against the
//! same facts read from the DOM Chromium built once the page's scripts ran
//! (`rendered_pages.rendered_json`, else `browser_pages.rendered_json`; [`Rendered`]). Part of the site analysis (`super`), so it runs when the site is done,
//! after its browser tasks.
//!
//! - **`rendered_title_changed`, `rendered_description_changed`, `rendered_h1_changed`**: the value
//!   differs (or exists in one version only); `detail` gives both (`HTML: "…" · rendered: "…"`).
//! - **`rendered_canonical_mismatch`**: the canonical URLs differ, or one version has none.
//! - **`rendered_noindex_mismatch`**: noindex (meta robots `noindex` or `none`) in one version only.
//! - **`rendered_only_links`**: links to pages in the rendered DOM that the HTML does not link to
//!   (any kind of link from the page's raw row counts); `related` lists them (at most
//!   [`RELATED_CAP`]).
//! - **`rendered_only_content`**: the HTML's main text has fewer than [`THIN_RAW_WORDS`] words and
//!   the rendered one at least [`RENDERED_WORDS`] and 3 times as many.
//!
//! Only pages whose browser check succeeded and whose raw row is an HTML page with status 200 at
//! the same URL are compared (a redirected URL's raw row is the redirect, not the page).

use super::{DbError, RELATED_CAP, Sink, sql_err};
use shoal_shared::browser::Rendered;
use shoal_shared::finding::Code;
use shoal_shared::ids::SiteId;
use shoal_shared::render::{self, RawFacts};

pub use shoal_shared::render::{RENDERED_WORDS, THIN_RAW_WORDS};

/// One page's two versions.
struct Pair {
    url: String,
    rendered: Rendered,
    title: Option<String>,
    description: Option<String>,
    h1: Vec<String>,
    canonical: Option<String>,
    noindex: bool,
    words: Option<u32>,
}

pub(crate) fn analyse(sink: &Sink<'_>) -> Result<(), DbError> {
    let path = sink.path;
    let op = "read rendered pages";
    let mut stmt = sink
        .conn
        .prepare_cached(
            "SELECT x.url, x.rendered_json, p.title, p.meta_description, p.h1_json, p.canonical,
                    p.meta_robots_json, p.word_count
             FROM (SELECT url, rendered_json FROM rendered_pages
                   WHERE site_id = ?1 AND queued = 0 AND error IS NULL AND rendered_json IS NOT NULL
                   UNION ALL
                   SELECT b.url, b.rendered_json FROM browser_pages b
                   WHERE b.site_id = ?1 AND b.error IS NULL AND b.rendered_json IS NOT NULL
                     AND NOT EXISTS (SELECT 1 FROM rendered_pages r WHERE r.site_id = b.site_id AND r.url = b.url
                                     AND r.error IS NULL AND r.rendered_json IS NOT NULL)) x
             JOIN pages p ON p.site_id = ?1 AND p.url = x.url
             WHERE p.kind = 'page' AND p.status = 200
             ORDER BY x.url",
        )
        .map_err(sql_err(path, "prepare rendered pages"))?;
    let pairs = stmt
        .query_map([sink.site], |r| {
            let robots: Vec<String> = parse(r, 6)?;
            Ok(Pair {
                url: r.get(0)?,
                rendered: parse(r, 1)?,
                title: r.get(2)?,
                description: r.get(3)?,
                h1: parse(r, 4)?,
                canonical: r.get(5)?,
                noindex: robots.iter().any(|d| d == "noindex" || d == "none"),
                words: r.get(7)?,
            })
        })
        .map_err(sql_err(path, op))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(sql_err(path, op))?;
    for pair in &pairs {
        compare(sink, pair)?;
    }
    Ok(())
}

/// A JSON column; one that does not parse is an error naming the column.
fn parse<T: serde::de::DeserializeOwned>(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<T> {
    let text: String = r.get(i)?;
    serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e)))
}

fn quoted(v: Option<&str>) -> String {
    v.map_or_else(|| "(none)".to_owned(), |s| format!("\"{}\"", s.chars().take(200).collect::<String>()))
}

fn both(raw: Option<&str>, rendered: Option<&str>) -> String {
    format!("HTML: {} · rendered: {}", quoted(raw), quoted(rendered))
}

fn compare(sink: &Sink<'_>, p: &Pair) -> Result<(), DbError> {
    let r = &p.rendered;
    let url = p.url.as_str();
    if p.title != r.title {
        sink.emit(Code::RenderedTitleChanged, url, &both(p.title.as_deref(), r.title.as_deref()), &[])?;
    }
    if p.description != r.meta_description {
        let detail = both(p.description.as_deref(), r.meta_description.as_deref());
        sink.emit(Code::RenderedDescriptionChanged, url, &detail, &[])?;
    }
    if p.h1 != r.h1 {
        let joined = |h: &[String]| (!h.is_empty()).then(|| h.join(" | "));
        sink.emit(Code::RenderedH1Changed, url, &both(joined(&p.h1).as_deref(), joined(&r.h1).as_deref()), &[])?;
    }
    if p.canonical != r.canonical {
        let detail = both(p.canonical.as_deref(), r.canonical.as_deref());
        sink.emit(Code::RenderedCanonicalMismatch, url, &detail, &[])?;
    }
    if p.noindex != r.noindex() {
        let detail = if p.noindex {
            "noindex in the HTML, not after JavaScript runs"
        } else {
            "noindex only after JavaScript runs, not in the HTML"
        };
        sink.emit(Code::RenderedNoindexMismatch, url, detail, &[])?;
    }
    let raw = crate::render::raw_links(sink.conn, sink.path, SiteId(crate::uint(sink.site)), url)?;
    let raw = RawFacts { url: url.to_owned(), links: raw.into_iter().collect(), words: p.words.unwrap_or(0) };
    let only = render::rendered_only_links(&raw, r);
    if !only.is_empty() {
        let detail = format!(
            "{} link{} to pages only after JavaScript runs",
            only.len(),
            if only.len() == 1 { "" } else { "s" }
        );
        let related: Vec<&str> = only.iter().copied().take(RELATED_CAP).collect();
        sink.emit(Code::RenderedOnlyLinks, url, &detail, &related)?;
    }
    let raw_words = raw.words;
    if render::rendered_only_content(raw_words, r.words) {
        let detail = format!("{raw_words} words of main text in the HTML, {} after JavaScript runs", r.words);
        sink.emit(Code::RenderedOnlyContent, url, &detail, &[])?;
    }
    Ok(())
}
