//! The audit database read back by the end-to-end tests, with rusqlite: after an audit, and while
//! one (in this process or in a `shoal` child process) still writes it. Each test's own queries
//! go through [`query`]; the readers several tests share are here.

use std::path::Path;
use std::time::Duration;

/// How long a read beside a running audit waits for its writer.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens the audit database.
pub fn open(db: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(db).expect("open the audit database")
}

/// Opens the audit database read-only, waiting up to [`BUSY_TIMEOUT`] for a writer: for reading
/// while an audit writes it. An error while it does not exist yet.
pub fn open_read_only(db: &Path) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

/// Every row `sql` selects with `params`, each made into a `T` by `row`.
pub fn query<T>(
    db: &Path,
    sql: &str,
    params: impl rusqlite::Params,
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Vec<T> {
    let conn = open(db);
    let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("prepare {sql}: {e}"));
    stmt.query_map(params, row)
        .unwrap_or_else(|e| panic!("query {sql}: {e}"))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("read the rows of {sql}: {e}"))
}

/// The first column of every row `sql` selects, as text.
pub fn strings(db: &Path, sql: &str) -> Vec<String> {
    query(db, sql, [], |r| r.get(0))
}

/// Page rows stored so far, of `kind` (`None`: of every kind), read while an audit writes them; 0
/// while the database cannot be read (not created yet, or busy).
pub fn pages_so_far(db: &Path, kind: Option<&str>) -> i64 {
    open_read_only(db)
        .and_then(|c| match kind {
            Some(kind) => c.query_row("SELECT count(*) FROM pages WHERE kind = ?1", [kind], |r| r.get(0)),
            None => c.query_row("SELECT count(*) FROM pages", [], |r| r.get(0)),
        })
        .unwrap_or(0)
}

/// The findings of every audit in the database: (code, url, detail), by code, url and detail.
pub fn findings(db: &Path) -> Vec<(String, String, String)> {
    query(db, "SELECT code, url, detail FROM findings ORDER BY code, url, detail", [], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
}

/// The codes of [`findings`], in its order.
pub fn codes(db: &Path) -> Vec<String> {
    findings(db).into_iter().map(|f| f.0).collect()
}

/// The pages recorded: (url, kind, status, error), by url.
pub fn pages(db: &Path) -> Vec<(String, String, Option<i64>, Option<String>)> {
    query(db, "SELECT url, kind, status, error FROM pages ORDER BY url", [], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })
}
