//! Queries the HTML report and the comparison need beyond [`AuditDb`]'s reading methods: chart
//! aggregates, and findings in URL order and in `(code, url, detail)` order.
//!
//! Why a second connection: the report streams pages in URL order through
//! [`AuditDb::for_each_page`] and must show each URL's findings beside it, and a comparison walks two
//! sites' findings side by side. Both are merge joins over sorted cursors, which need two statements
//! open at once and orderings `AuditDb` does not offer; the aggregates are cheaper as `GROUP BY` than
//! as a pass over every row. This opens the same file read-only (WAL lets it read beside the writer)
//! and reads only long-standing columns of schema v1 (`db/schema.rs`). These queries could move into
//! `db/read.rs` as methods; until then this is the one other place that reads the tables.

use crate::{AuditDb, BUSY_TIMEOUT, DbError, FindingRow, SiteStatus, int, sql_err, uint, unknown_value};
use rusqlite::{Connection, OpenFlags, OptionalExtension, Rows, Statement, params};
use shoal_shared::finding::Code;
use shoal_shared::ids::{AuditId, SiteId};
use std::cmp::Ordering;
use std::path::PathBuf;

/// Upper bounds (exclusive, milliseconds) of the response-time buckets; the last bucket is open.
pub const RESPONSE_BUCKETS_MS: [u64; 7] = [100, 250, 500, 1000, 2000, 5000, 10_000];

/// Depths shown one bar each; deeper pages share the last bar.
pub const DEPTH_BARS: u16 = 15;

/// Aggregates for one site's charts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChartData {
    /// Pages (kind `page`) by depth, `DEPTH_BARS + 1` slots, the last one "deeper".
    pub depth: Vec<u64>,
    /// Pages (kind `page`) that got an answer, by response time bucket
    /// (`RESPONSE_BUCKETS_MS.len() + 1` slots).
    pub response: Vec<u64>,
    /// Findings by family, in [`Code::ALL`] order of first appearance; unknown codes under `other`.
    pub families: Vec<(&'static str, u64)>,
}

/// The site of an earlier audit a site is compared with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Previous {
    /// Its audit.
    pub audit: AuditId,
    /// The site.
    pub site: SiteId,
    /// Whether that crawl finished.
    pub status: SiteStatus,
}

/// A read-only connection to the audit database file.
#[derive(Debug)]
pub struct Reader {
    conn: Connection,
    path: PathBuf,
}

const FINDING_COLUMNS: &str = "code, severity, url, detail, related_json";

/// Findings in the order the comparison merges them: the unique index `(site_id, code, url, detail)`
/// gives this order without sorting.
const BY_KEY: &str = "SELECT code, severity, url, detail, related_json FROM findings WHERE site_id = ?1
     ORDER BY code, url, detail";

impl Reader {
    /// Opens `db`'s file a second time, read-only.
    ///
    /// # Errors
    /// [`DbError::Open`] if the file cannot be opened (an in-memory database has no file to open).
    pub fn open(db: &AuditDb) -> Result<Reader, DbError> {
        let path = db.path().to_owned();
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&path, flags)
            .and_then(|c| c.busy_timeout(BUSY_TIMEOUT).map(|()| c))
            .map_err(|source| DbError::Open { path: path.clone(), source })?;
        Ok(Reader { conn, path })
    }

    /// The connection and its file, for the crate's other read-only queries (`url_changes`).
    pub(crate) fn parts(&self) -> (&Connection, &std::path::Path) {
        (&self.conn, &self.path)
    }

    /// The counts behind one site's depth, response-time and family charts.
    pub fn charts(&self, site: SiteId) -> Result<ChartData, DbError> {
        let path = &self.path;
        let sid = int(site.0);
        let mut data = ChartData {
            depth: vec![0; usize::from(DEPTH_BARS) + 1],
            response: vec![0; RESPONSE_BUCKETS_MS.len() + 1],
            families: Vec::new(),
        };
        let op = "count pages by depth";
        let mut stmt = self
            .conn
            .prepare("SELECT depth, COUNT(*) FROM pages WHERE site_id = ?1 AND kind = 'page' GROUP BY depth")
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query([sid]).map_err(sql_err(path, op))?;
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            let depth = uint(r.get(0).map_err(sql_err(path, op))?);
            let slot = usize::try_from(depth.min(u64::from(DEPTH_BARS))).unwrap_or(usize::from(DEPTH_BARS));
            data.depth[slot] += uint(r.get(1).map_err(sql_err(path, op))?);
        }

        let op = "count pages by response time";
        let mut case = String::from("CASE");
        for (i, bound) in RESPONSE_BUCKETS_MS.iter().enumerate() {
            case.push_str(&format!(" WHEN response_ms < {bound} THEN {i}"));
        }
        case.push_str(&format!(" ELSE {} END", RESPONSE_BUCKETS_MS.len()));
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {case} AS bucket, COUNT(*) FROM pages
                 WHERE site_id = ?1 AND kind = 'page' AND status IS NOT NULL GROUP BY bucket"
            ))
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query([sid]).map_err(sql_err(path, op))?;
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            let bucket = usize::try_from(uint(r.get(0).map_err(sql_err(path, op))?)).unwrap_or(usize::MAX);
            if let Some(slot) = data.response.get_mut(bucket) {
                *slot += uint(r.get(1).map_err(sql_err(path, op))?);
            }
        }

        let op = "count findings by code";
        let mut stmt = self
            .conn
            .prepare("SELECT code, COUNT(*) FROM findings WHERE site_id = ?1 GROUP BY code")
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query([sid]).map_err(sql_err(path, op))?;
        let mut by_family: Vec<(&'static str, u64)> = Vec::new();
        for code in Code::ALL {
            if !by_family.iter().any(|(f, _)| *f == code.family()) {
                by_family.push((code.family(), 0));
            }
        }
        by_family.push(("other", 0));
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            let code: String = r.get(0).map_err(sql_err(path, op))?;
            let n = uint(r.get(1).map_err(sql_err(path, op))?);
            let family = Code::parse(&code).map_or("other", |c| c.family());
            if let Some(slot) = by_family.iter_mut().find(|(f, _)| *f == family) {
                slot.1 += n;
            }
        }
        data.families = by_family.into_iter().filter(|(_, n)| *n > 0).collect();
        Ok(data)
    }

    /// Whether `url` was fetched for `site` (so its details section exists).
    pub fn has_page(&self, site: SiteId, url: &str) -> Result<bool, DbError> {
        self.conn
            .prepare_cached("SELECT 1 FROM pages WHERE site_id = ?1 AND url = ?2")
            .and_then(|mut s| s.query_row(params![int(site.0), url], |_| Ok(())).optional())
            .map(|found| found.is_some())
            .map_err(sql_err(&self.path, "look up a page"))
    }

    /// The site with `start_url` in the latest audit before `audit` that has one, taking the
    /// `nth` such site (0-based) when that audit lists the start URL more than once.
    pub fn previous_site(&self, audit: AuditId, start_url: &str, nth: usize) -> Result<Option<Previous>, DbError> {
        let path = &self.path;
        let op = "find the previous audit of a site";
        let found: Option<(i64, i64, String)> = self
            .conn
            .prepare_cached(
                "SELECT id, audit_id, status FROM sites WHERE start_url = ?1 AND audit_id =
                    (SELECT MAX(audit_id) FROM sites WHERE start_url = ?1 AND audit_id < ?2)
                 ORDER BY id LIMIT 1 OFFSET ?3",
            )
            .and_then(|mut s| {
                s.query_row(params![start_url, int(audit.0), i64::try_from(nth).unwrap_or(i64::MAX)], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()
            })
            .map_err(sql_err(path, op))?;
        found
            .map(|(site, audit, status)| -> Result<Previous, DbError> {
                let site = SiteId(uint(site));
                Ok(Previous {
                    audit: AuditId(uint(audit)),
                    site,
                    status: SiteStatus::parse(&status)
                        .ok_or_else(|| unknown_value(path, "sites.status", format_args!("site {site}"), &status))?,
                })
            })
            .transpose()
    }

    /// A statement listing a site's findings by URL (then severity, code, detail), for
    /// [`FindingCursor`]. Sorted by SQLite (no index has this order), which spills to disk for
    /// large sites rather than holding them in memory.
    pub fn by_url(&self) -> Result<Statement<'_>, DbError> {
        self.conn
            .prepare(&format!(
                "SELECT {FINDING_COLUMNS} FROM findings WHERE site_id = ?1
                 ORDER BY url, CASE severity WHEN 'error' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END, code, detail"
            ))
            .map_err(sql_err(&self.path, "read findings by URL"))
    }

    /// A statement listing a site's findings by `(code, url, detail)`, for [`FindingCursor`].
    pub fn by_key(&self) -> Result<Statement<'_>, DbError> {
        self.conn.prepare(BY_KEY).map_err(sql_err(&self.path, "read findings by key"))
    }

    /// Runs one of the statements above for `site`.
    pub fn cursor<'s>(&self, stmt: &'s mut Statement<'_>, site: SiteId) -> Result<FindingCursor<'s>, DbError> {
        let rows = stmt.query([int(site.0)]).map_err(sql_err(&self.path, "read findings"))?;
        Ok(FindingCursor { rows, path: self.path.clone(), peeked: None, done: false })
    }
}

/// A sorted stream of findings that can be peeked, for merge joins.
pub struct FindingCursor<'s> {
    rows: Rows<'s>,
    path: PathBuf,
    peeked: Option<FindingRow>,
    done: bool,
}

impl std::fmt::Debug for FindingCursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FindingCursor").field("peeked", &self.peeked).field("done", &self.done).finish()
    }
}

impl FindingCursor<'_> {
    fn fetch(&mut self) -> Result<Option<FindingRow>, DbError> {
        if self.done {
            return Ok(None);
        }
        let path = &self.path;
        let op = "read findings";
        let Some(r) = self.rows.next().map_err(sql_err(path, op))? else {
            self.done = true;
            return Ok(None);
        };
        crate::read::finding_from_row(r, path, op).map(Some)
    }

    /// The next finding without consuming it.
    pub fn peek(&mut self) -> Result<Option<&FindingRow>, DbError> {
        if self.peeked.is_none() {
            self.peeked = self.fetch()?;
        }
        Ok(self.peeked.as_ref())
    }

    /// The next finding.
    pub fn next_row(&mut self) -> Result<Option<FindingRow>, DbError> {
        match self.peeked.take() {
            Some(f) => Ok(Some(f)),
            None => self.fetch(),
        }
    }

    /// For a cursor from [`Reader::by_url`]: the findings on `url`, skipping those on smaller URLs
    /// (URLs that were not fetched). Call with URLs in increasing byte order.
    pub fn take_url(&mut self, url: &str) -> Result<Vec<FindingRow>, DbError> {
        let mut out = Vec::new();
        while let Some(next) = self.peek()? {
            match next.url.as_str().cmp(url) {
                Ordering::Less => {
                    self.next_row()?;
                }
                Ordering::Equal => out.extend(self.next_row()?),
                Ordering::Greater => break,
            }
        }
        Ok(out)
    }
}
