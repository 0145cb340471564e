//! The AI crawler table of a site (issue 37, part 5) and its one site-level rule.
//!
//! Every page the crawler fetched on a host of the site carries the AI crawlers the host's
//! robots.txt blocks from it (`pages.ai_blocked`, judged in the worker by the crawler's own robots
//! code: [`shoal_shared::ai_crawlers`]). Summed per host, they give the table the reports show:
//! per crawler, how many of the sampled pages it may not fetch, whether the start page is one of
//! them, and the verdict ([`AiVerdict`]: allowed, partly blocked, blocked). The sample is every page
//! of kind `page` that got an answer; pages robots.txt keeps from Shoal itself were never fetched
//! and are not in it.
//!
//! **`ai_crawlers_inconsistent`** (notice, raised when the site is done): on a host where the
//! crawlers do not all get the same verdict, one finding on the host's `/robots.txt` naming them by
//! verdict ([`inconsistency`]).

use super::analysis::sink::Sink;
use super::{AuditDb, DbError, int, sql_err};
use rusqlite::Connection;
use shoal_shared::ai_crawlers::{AI_CRAWLERS, AiBlocked, AiCrawler, AiVerdict, inconsistency};
use shoal_shared::finding::Code;
use shoal_shared::ids::SiteId;
use std::collections::BTreeMap;
use std::path::Path;

/// One AI crawler on one host of a site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AiCrawlerRow {
    /// The host (`shop.example:8080`), as robots.txt applies to it.
    pub host: String,
    /// The host's robots.txt (`https://shop.example/robots.txt`).
    pub robots_url: String,
    /// The crawler.
    pub crawler: AiCrawler,
    /// Pages of the host sampled.
    pub pages: u64,
    /// Of them, those robots.txt blocks the crawler from.
    pub blocked: u64,
    /// Whether the start page is blocked; `None` when the start page is not on this host (or was
    /// not fetched).
    pub start_blocked: Option<bool>,
    /// Over the sample.
    pub verdict: AiVerdict,
}

/// What one host's pages add up to.
#[derive(Debug, Default)]
struct HostSum {
    scheme: String,
    is_start: bool,
    pages: u64,
    blocked: Vec<u64>,
    start: Option<AiBlocked>,
}

/// The scheme and the host key (`host[:port]`, [`shoal_shared::url::HostKey`]) of a stored page
/// URL, read off its text: stored URLs are normalized (no user info, the host lower-cased, a default
/// port left out), so the authority is the host key, without parsing every page's URL again.
fn scheme_and_host(url: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let host = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    (!host.is_empty() && !host.contains('@')).then_some((scheme, host))
}

/// The site's table: hosts in order (the start page's host first), crawlers in table order.
pub(crate) fn table(conn: &Connection, path: &Path, site: SiteId) -> Result<Vec<AiCrawlerRow>, DbError> {
    let op = "read the AI crawler verdicts";
    let mut stmt = conn
        .prepare_cached(
            "SELECT p.url, p.ai_blocked, p.url = s.start_url FROM pages p JOIN sites s ON s.id = p.site_id
             WHERE p.site_id = ?1 AND p.kind = 'page' AND p.ai_blocked IS NOT NULL AND p.status IS NOT NULL",
        )
        .map_err(sql_err(path, op))?;
    let mut rows = stmt.query([int(site.0)]).map_err(sql_err(path, op))?;
    let mut hosts: BTreeMap<String, HostSum> = BTreeMap::new();
    while let Some(r) = rows.next().map_err(sql_err(path, op))? {
        let url: String = r.get(0).map_err(sql_err(path, op))?;
        let bits: i64 = r.get(1).map_err(sql_err(path, op))?;
        let start: bool = r.get(2).map_err(sql_err(path, op))?;
        let Some((scheme, host)) = scheme_and_host(&url) else { continue };
        let blocked = AiBlocked::from_bits(u32::try_from(bits).unwrap_or_default());
        if !hosts.contains_key(host) {
            let sum = HostSum { scheme: scheme.to_owned(), blocked: vec![0; AI_CRAWLERS.len()], ..HostSum::default() };
            hosts.insert(host.to_owned(), sum);
        }
        let Some(sum) = hosts.get_mut(host) else { continue };
        sum.pages += 1;
        for (i, n) in sum.blocked.iter_mut().enumerate() {
            *n += u64::from(blocked.is_blocked(i));
        }
        if start {
            sum.is_start = true;
            scheme.clone_into(&mut sum.scheme);
            sum.start = Some(blocked);
        }
    }
    let mut hosts: Vec<(String, HostSum)> = hosts.into_iter().collect();
    hosts.sort_by_key(|(_, sum)| !sum.is_start);
    let mut out = Vec::new();
    for (host, sum) in hosts {
        for (i, crawler) in AI_CRAWLERS.iter().enumerate() {
            let blocked = sum.blocked[i];
            let Some(verdict) = AiVerdict::of(sum.pages, blocked) else { continue };
            out.push(AiCrawlerRow {
                robots_url: format!("{}://{host}/robots.txt", sum.scheme),
                host: host.clone(),
                crawler: *crawler,
                pages: sum.pages,
                blocked,
                start_blocked: sum.start.map(|s| s.is_blocked(i)),
                verdict,
            });
        }
    }
    Ok(out)
}

/// `ai_crawlers_inconsistent` for each host of the site whose crawlers get different verdicts.
pub(crate) fn analyse(sink: &Sink<'_>, site: SiteId) -> Result<(), DbError> {
    let rows = table(sink.conn, sink.path, site)?;
    for host in rows.chunk_by(|a, b| a.host == b.host) {
        let verdicts: Vec<(usize, AiVerdict)> = host
            .iter()
            .filter_map(|r| AI_CRAWLERS.iter().position(|c| c.token == r.crawler.token).map(|i| (i, r.verdict)))
            .collect();
        if let (Some(detail), Some(first)) = (inconsistency(&verdicts), host.first()) {
            sink.emit(Code::AiCrawlersInconsistent, &first.robots_url, &detail, &[])?;
        }
    }
    Ok(())
}

impl AuditDb {
    /// The site's AI crawler table (see the module documentation): per host and crawler, the
    /// sampled pages, those blocked, the start page's verdict and the verdict over the sample.
    /// Empty when no page of the site was fetched with the verdicts recorded.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn ai_crawlers(&self, site: SiteId) -> Result<Vec<AiCrawlerRow>, DbError> {
        table(&self.conn, &self.path, site)
    }
}

#[cfg(test)]
mod tests {
    use super::scheme_and_host;
    use shoal_shared::url::NormalizedUrl;

    /// The host read off a stored URL's text is the host key a parse gives.
    #[test]
    fn the_host_of_a_stored_url_is_its_host_key() {
        for raw in [
            "https://Shop.Example.test/a/b?c=1#x",
            "http://example.test:8080/",
            "https://example.test:443/x",
            "http://[::1]:3000/p",
            "http://127.0.0.1/",
            "https://xn--bcher-kva.example/?q",
        ] {
            let url = NormalizedUrl::parse(raw).expect("a valid URL");
            let (scheme, host) = scheme_and_host(url.as_str()).expect("a host");
            assert_eq!(host, url.host_key().to_string(), "{raw}");
            assert_eq!(scheme, url.as_url().scheme(), "{raw}");
        }
        assert_eq!(scheme_and_host("not a url"), None);
    }
}
