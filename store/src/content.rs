//! What a site's content and structured data came to, for the reports: the Schema.org types
//! found and on how many pages, and the duplicate clusters the site analysis reported
//! (`analysis::content`), read back from the findings it wrote (each member's `detail` names its
//! cluster, so grouping by it gives every member, not only the [`RELATED_CAP`](crate::analysis::RELATED_CAP)
//! a finding's `related` holds).

use super::{AuditDb, DbError, int, sql_err, uint};
use shoal_shared::ids::SiteId;

/// One cluster of pages with the same (or nearly the same) main text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentCluster {
    /// `content_duplicate` or `content_near_duplicate`.
    pub code: String,
    /// The findings' shared detail: the cluster's size and first URL.
    pub detail: String,
    /// Its pages, in URL order.
    pub urls: Vec<String>,
}

/// A site's content summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContentSummary {
    /// (Schema.org type, pages it is found on), most pages first.
    pub types: Vec<(String, u64)>,
    /// Pages with structured data of any type.
    pub pages_with_types: u64,
    /// Thin pages (`content_thin` findings).
    pub thin_pages: u64,
    /// Exact clusters first, then near-duplicate ones, each in detail order.
    pub clusters: Vec<ContentCluster>,
}

impl AuditDb {
    /// The content summary of a site: one pass over its pages' types and one over its duplicate
    /// findings.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn content_summary(&self, site: SiteId) -> Result<ContentSummary, DbError> {
        let (path, op) = (&self.path, "read the content summary");
        let site = int(site.0);
        let types: Vec<(String, i64)> = self
            .conn
            .prepare_cached(
                "SELECT j.value, COUNT(*) FROM pages p, json_each(p.structured_types_json) j
                 WHERE p.site_id = ?1 AND p.structured_types_json <> '[]'
                 GROUP BY j.value ORDER BY COUNT(*) DESC, j.value",
            )
            .and_then(|mut s| s.query_map([site], |r| Ok((r.get(0)?, r.get(1)?))).and_then(Iterator::collect))
            .map_err(sql_err(path, op))?;
        let counts: (i64, i64) = self
            .conn
            .prepare_cached(
                "SELECT (SELECT COUNT(*) FROM pages WHERE site_id = ?1 AND structured_types_json <> '[]'),
                        (SELECT COUNT(*) FROM findings WHERE site_id = ?1 AND code = 'content_thin')",
            )
            .and_then(|mut s| s.query_row([site], |r| Ok((r.get(0)?, r.get(1)?))))
            .map_err(sql_err(path, op))?;
        let mut clusters: Vec<ContentCluster> = Vec::new();
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT code, detail, url FROM findings
                 WHERE site_id = ?1 AND code IN ('content_duplicate', 'content_near_duplicate')
                 ORDER BY code, detail, url",
            )
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query([site]).map_err(sql_err(path, op))?;
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            let (code, detail, url): (String, String, String) = (
                r.get(0).map_err(sql_err(path, op))?,
                r.get(1).map_err(sql_err(path, op))?,
                r.get(2).map_err(sql_err(path, op))?,
            );
            match clusters.last_mut() {
                Some(c) if c.code == code && c.detail == detail => c.urls.push(url),
                _ => clusters.push(ContentCluster { code, detail, urls: vec![url] }),
            }
        }
        Ok(ContentSummary {
            types: types.into_iter().map(|(t, n)| (t, uint(n))).collect(),
            pages_with_types: uint(counts.0),
            thin_pages: uint(counts.1),
            clusters,
        })
    }
}
