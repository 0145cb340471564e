//! Retention (issue 40): which ended audits go, deleting them with everything they hold, and
//! giving the space back.
//!
//! One rule, [`AuditDb::verdict`], used by `shoal prune` and by the coordinator after each audit
//! ends (`--retain-audits`, `--retain-days`):
//!
//! 1. a `running` audit stays, whatever its age (it may be resumed);
//! 2. each schedule's last [`SCHEDULE_RUNS_KEPT`] runs stay (by id, running or not), so the
//!    latest run can still be compared with the one before it;
//! 3. an audit that ended longer ago than [`Retention::max_age`] goes;
//! 4. with [`Retention::keep_last`] `N`, an audit goes when every one of its start URLs was
//!    audited by at least `N` later audits that have ended: per start URL, the `N` latest stay
//!    (an audit of 200 sites stays while any of them needs it);
//! 5. everything else stays. No rule given: nothing goes.
//!
//! Why "either rule" rather than "both": each rule is a limit the operator sets on the disk (how
//! many, how old), so an audit past either of them goes.
//!
//! Deleting is one transaction per audit (readers never see half an audit), by the audit's id
//! through the keys of every table that holds its rows: `sites` by `sites_by_audit`, then the
//! rows of its sites in `pages`, `links`, `findings`, `browser_pages` (screenshots),
//! `rendered_pages` and `hreflang` by their primary keys (each begins with `site_id`), `audit_totals` and `audits` by
//! theirs. Judging an audit searches too: its schedule by `audits_schedule_of`, its schedule's
//! later runs by `audits_by_schedule`, later audits of its start URLs by `sites_by_start_url`.
//! Nothing scans a table or an index (a test reads the query plans). Comparisons and URL changes are
//! computed from these rows when asked, so nothing else is stored per audit. The rule is checked
//! again inside the transaction, under the write lock, so an audit another process reopened or a
//! schedule's newest run is never deleted on a stale verdict.
//!
//! Space: a deleted audit's pages go to SQLite's free list, which later writes reuse; the file
//! shrinks only when the free list is given back. New files are created with
//! `auto_vacuum = INCREMENTAL`, so [`AuditDb::reclaim`] (`PRAGMA incremental_vacuum`, a bounded
//! step at a time) truncates the file while a coordinator runs; a file created before (schema
//! version 11 or older) is switched by one full [`AuditDb::vacuum`] (`shoal prune --vacuum`),
//! which rewrites the file and needs it to itself for its length.

use crate::{AuditDb, DbError, int, sql_err, uint};
use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior};
use shoal_shared::ids::{AuditId, ScheduleId};
use shoal_shared::status::AuditStatus;
use shoal_shared::time::UnixMs;
use std::num::NonZeroU32;
use std::path::Path;
use std::time::Duration;

/// The runs of each schedule that stay whatever the rule: a run's report shows what changed
/// since the run before it.
pub const SCHEDULE_RUNS_KEPT: u32 = 2;

/// Free pages given back per [`AuditDb::reclaim`] step at most (16 MiB of 4 KiB pages): one short
/// write transaction, so a coordinator's other writes wait for a step, not for the whole file.
pub const RECLAIM_STEP: u32 = 4096;

/// How many audits to keep and for how long. The default keeps everything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Per start URL, the latest this many ended audits stay (`--keep-last`, `--retain-audits`).
    pub keep_last: Option<NonZeroU32>,
    /// Audits that ended longer ago than this go (`--older-than`, `--retain-days`).
    pub max_age: Option<Duration>,
}

impl Retention {
    /// Whether no rule is set (nothing goes).
    #[must_use]
    pub fn is_off(&self) -> bool {
        self.keep_last.is_none() && self.max_age.is_none()
    }
}

/// What the rule says of one audit, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It is running: never touched.
    Running,
    /// It is one of the last [`SCHEDULE_RUNS_KEPT`] runs of its schedule.
    ScheduleRun(ScheduleId),
    /// No rule removes it.
    Kept,
    /// It ended longer ago than [`Retention::max_age`].
    TooOld,
    /// Every one of its start URLs has [`Retention::keep_last`] later ended audits.
    Superseded,
}

impl Verdict {
    /// Whether the audit goes.
    #[must_use]
    pub fn goes(self) -> bool {
        matches!(self, Verdict::TooOld | Verdict::Superseded)
    }
}

/// An audit the rule removes, with what it holds (for `shoal prune --dry-run` and the logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prunable {
    /// The audit.
    pub audit: AuditId,
    /// How it ended.
    pub status: AuditStatus,
    /// When it was created.
    pub created_at: UnixMs,
    /// When it ended (its creation time if the end was not recorded).
    pub ended_at: UnixMs,
    /// Why it goes.
    pub why: Verdict,
    /// Its sites.
    pub sites: u64,
    /// Its fetched URLs of any kind.
    pub urls: u64,
    /// Its findings.
    pub findings: u64,
}

/// The rows deleting one audit removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Removed {
    /// Sites.
    pub sites: u64,
    /// Pages (every fetched URL).
    pub pages: u64,
    /// Links.
    pub links: u64,
    /// Findings.
    pub findings: u64,
    /// Browser check rows (with their screenshots).
    pub browser_pages: u64,
    /// Rows of `rendered_pages` (the rendered crawl).
    pub rendered_pages: u64,
    /// hreflang alternates.
    pub hreflang: u64,
}

/// How big the file is and how much of it is free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    /// Bytes per page.
    pub page_size: u64,
    /// Pages in the database (committed, the WAL included).
    pub pages: u64,
    /// Pages on the free list: space later writes reuse, given back by [`AuditDb::reclaim`].
    pub free_pages: u64,
    /// Whether the file is in `auto_vacuum = INCREMENTAL` mode (else only [`AuditDb::vacuum`]
    /// shrinks it).
    pub incremental: bool,
}

impl Space {
    /// The database's size in bytes.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.pages.saturating_mul(self.page_size)
    }

    /// Free bytes inside it.
    #[must_use]
    pub fn free_bytes(&self) -> u64 {
        self.free_pages.saturating_mul(self.page_size)
    }
}

/// What the rule reads of an audit: only columns stored before `options_json`, and the
/// schedule's index, so a listing never reads every start URL of every audit.
struct Facts {
    id: AuditId,
    status: AuditStatus,
    created_at: UnixMs,
    ended_at: UnixMs,
}

/// Maps a "database is busy/locked" error to [`DbError::Busy`], anything else to [`DbError::Sql`].
pub(crate) fn busy_or_sql<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(rusqlite::Error) -> DbError + 'a {
    move |source| match source.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            DbError::Busy { path: path.to_owned(), op, waited: Duration::ZERO }
        }
        _ => DbError::Sql { path: path.to_owned(), op, source },
    }
}

/// Fills in how long the connection waited (the SQL helpers do not know it).
pub(crate) fn waited(wait: Duration) -> impl FnOnce(DbError) -> DbError {
    move |e| match e {
        DbError::Busy { path, op, .. } => DbError::Busy { path, op, waited: wait },
        e => e,
    }
}

fn facts(conn: &Connection, path: &Path, audit: AuditId) -> Result<Option<Facts>, DbError> {
    let op = "read an audit for retention";
    let row: Option<(String, i64, Option<i64>)> = conn
        .prepare_cached("SELECT status, created_at_ms, finished_at_ms FROM audits WHERE id = ?1")
        .and_then(|mut s| s.query_row([int(audit.0)], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional())
        .map_err(busy_or_sql(path, op))?;
    let Some((status, created, finished)) = row else { return Ok(None) };
    let status = AuditStatus::parse(&status)
        .ok_or_else(|| crate::unknown_value(path, "audits.status", format_args!("audit {audit}"), &status))?;
    let created_at = UnixMs(uint(created));
    Ok(Some(Facts { id: audit, status, created_at, ended_at: finished.map_or(created_at, |f| UnixMs(uint(f))) }))
}

/// The rule (module documentation) for one audit.
fn verdict(conn: &Connection, path: &Path, f: &Facts, rule: &Retention, now: UnixMs) -> Result<Verdict, DbError> {
    if f.status == AuditStatus::Running {
        return Ok(Verdict::Running);
    }
    let op = "apply the retention rule";
    let id = int(f.id.0);
    // The schedule by the index made for it (`audits_schedule_of`, schema 12), never the row's
    // `schedule_id`, which is stored after the options: reading it reads every start URL.
    let schedule: Option<i64> = conn
        .prepare_cached(
            "SELECT schedule_id FROM audits INDEXED BY audits_schedule_of WHERE schedule_id IS NOT NULL AND id = ?1",
        )
        .and_then(|mut s| s.query_row([id], |r| r.get(0)).optional())
        .map_err(busy_or_sql(path, op))?;
    if let Some(schedule) = schedule {
        let later: i64 = conn
            .prepare_cached("SELECT COUNT(*) FROM (SELECT 1 FROM audits WHERE schedule_id = ?1 AND id > ?2 LIMIT ?3)")
            .and_then(|mut s| s.query_row(rusqlite::params![schedule, id, SCHEDULE_RUNS_KEPT], |r| r.get(0)))
            .map_err(busy_or_sql(path, op))?;
        if later < i64::from(SCHEDULE_RUNS_KEPT) {
            return Ok(Verdict::ScheduleRun(ScheduleId(uint(schedule))));
        }
    }
    if let Some(max_age) = rule.max_age
        && now.0.saturating_sub(f.ended_at.0) > u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX)
    {
        return Ok(Verdict::TooOld);
    }
    if let Some(n) = rule.keep_last {
        // Kept while one of its start URLs has fewer than N later ended audits: per site a search
        // of `sites_by_start_url` that stops at the N-th.
        let needed: bool = conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM sites s WHERE s.audit_id = ?1 AND (
                    SELECT COUNT(*) FROM (
                        SELECT DISTINCT n.audit_id FROM sites n JOIN audits a ON a.id = n.audit_id
                        WHERE n.start_url = s.start_url AND n.audit_id > ?1 AND a.status != 'running'
                        LIMIT ?2)
                 ) < ?2)",
            )
            .and_then(|mut s| s.query_row(rusqlite::params![id, n.get()], |r| r.get(0)))
            .map_err(busy_or_sql(path, op))?;
        if !needed {
            return Ok(Verdict::Superseded);
        }
    }
    Ok(Verdict::Kept)
}

/// The statements that delete one audit, children first (the connection does not cascade).
/// `audit_totals` goes before `sites`, so the totals trigger of each deleted site finds no row
/// to update.
const DELETE: [(&str, &str); 9] = [
    ("links", "DELETE FROM links WHERE site_id IN (SELECT id FROM sites WHERE audit_id = ?1)"),
    ("hreflang", "DELETE FROM hreflang WHERE site_id IN (SELECT id FROM sites WHERE audit_id = ?1)"),
    ("browser_pages", "DELETE FROM browser_pages WHERE site_id IN (SELECT id FROM sites WHERE audit_id = ?1)"),
    ("rendered_pages", "DELETE FROM rendered_pages WHERE site_id IN (SELECT id FROM sites WHERE audit_id = ?1)"),
    ("findings", "DELETE FROM findings WHERE site_id IN (SELECT id FROM sites WHERE audit_id = ?1)"),
    ("pages", "DELETE FROM pages WHERE site_id IN (SELECT id FROM sites WHERE audit_id = ?1)"),
    ("audit_totals", "DELETE FROM audit_totals WHERE audit_id = ?1"),
    ("sites", "DELETE FROM sites WHERE audit_id = ?1"),
    ("audits", "DELETE FROM audits WHERE id = ?1"),
];

impl AuditDb {
    /// How long statements of this connection wait for another connection's lock before failing
    /// with [`DbError::Busy`] ([`crate::BUSY_TIMEOUT`] unless changed).
    ///
    /// # Errors
    /// [`DbError::Sql`] if SQLite refuses the setting.
    pub fn wait_for_locks(&mut self, wait: Duration) -> Result<(), DbError> {
        self.conn.busy_timeout(wait).map_err(sql_err(&self.path, "set the lock wait"))?;
        self.wait = wait;
        Ok(())
    }

    /// What the retention rule says of `audit` now (`None`: no such audit).
    ///
    /// # Errors
    /// [`DbError::Busy`] if another process holds the database too long, [`DbError::Sql`] or
    /// [`DbError::Corrupt`] on a read failure.
    pub fn verdict(&self, audit: AuditId, rule: &Retention, now: UnixMs) -> Result<Option<Verdict>, DbError> {
        let judge = || match facts(&self.conn, &self.path, audit)? {
            Some(f) => verdict(&self.conn, &self.path, &f, rule, now).map(Some),
            None => Ok(None),
        };
        judge().map_err(waited(self.wait))
    }

    /// The audits the rule removes now, oldest first (none when the rule is off).
    ///
    /// # Errors
    /// As [`AuditDb::verdict`].
    pub fn prunable(&self, rule: &Retention, now: UnixMs) -> Result<Vec<Prunable>, DbError> {
        if rule.is_off() {
            return Ok(Vec::new());
        }
        self.list_prunable(rule, now).map_err(waited(self.wait))
    }

    fn list_prunable(&self, rule: &Retention, now: UnixMs) -> Result<Vec<Prunable>, DbError> {
        let (path, op) = (&self.path, "list audits for retention");
        let ids: Vec<i64> = self
            .conn
            .prepare_cached("SELECT id FROM audits WHERE status != 'running' ORDER BY id")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(busy_or_sql(path, op))?;
        let mut out = Vec::new();
        for id in ids {
            let Some(f) = facts(&self.conn, path, AuditId(uint(id)))? else { continue };
            let why = verdict(&self.conn, path, &f, rule, now)?;
            if !why.goes() {
                continue;
            }
            let (sites, urls, findings): (i64, i64, i64) = self
                .conn
                .prepare_cached("SELECT sites, urls, findings FROM audit_totals WHERE audit_id = ?1")
                .and_then(|mut s| s.query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional())
                .map_err(busy_or_sql(path, op))?
                .unwrap_or_default();
            out.push(Prunable {
                audit: f.id,
                status: f.status,
                created_at: f.created_at,
                ended_at: f.ended_at,
                why,
                sites: uint(sites),
                urls: uint(urls),
                findings: uint(findings),
            });
        }
        Ok(out)
    }

    /// Deletes `audit` and every row it holds, in one transaction, if the rule still removes it
    /// (checked again under the write lock). Returns what was removed, or `None` when the audit
    /// stays (or is gone already).
    ///
    /// # Errors
    /// [`DbError::Busy`] when another process held the write lock for longer than this connection
    /// waits (nothing was deleted), [`DbError::Sql`] on a write failure (the transaction is rolled
    /// back).
    pub fn prune_audit(&mut self, audit: AuditId, rule: &Retention, now: UnixMs) -> Result<Option<Removed>, DbError> {
        let wait = self.wait;
        let removed = self.delete_audit(audit, rule, now).map_err(waited(wait))?;
        if removed.is_some() {
            self.content_limits.forget(audit);
        }
        Ok(removed)
    }

    fn delete_audit(&mut self, audit: AuditId, rule: &Retention, now: UnixMs) -> Result<Option<Removed>, DbError> {
        let path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(busy_or_sql(path, "lock the database to prune an audit"))?;
        let Some(f) = facts(&tx, path, audit)? else { return Ok(None) };
        if !verdict(&tx, path, &f, rule, now)?.goes() {
            return Ok(None);
        }
        let mut removed = Removed::default();
        for (table, sql) in DELETE {
            let n = tx
                .prepare_cached(sql)
                .and_then(|mut s| s.execute([int(audit.0)]))
                .map_err(busy_or_sql(path, "delete a pruned audit's rows"))?;
            let n = u64::try_from(n).unwrap_or(u64::MAX);
            match table {
                "links" => removed.links = n,
                "hreflang" => removed.hreflang = n,
                "browser_pages" => removed.browser_pages = n,
                "rendered_pages" => removed.rendered_pages = n,
                "findings" => removed.findings = n,
                "pages" => removed.pages = n,
                "sites" => removed.sites = n,
                _ => {}
            }
        }
        tx.commit().map_err(busy_or_sql(path, "commit a pruned audit"))?;
        Ok(Some(removed))
    }

    /// The file's size and free space.
    ///
    /// # Errors
    /// [`DbError::Busy`], [`DbError::Sql`] on a read failure.
    pub fn space(&self) -> Result<Space, DbError> {
        let get = |pragma: &str| -> Result<i64, DbError> {
            self.conn
                .query_row(&format!("PRAGMA {pragma}"), [], |r| r.get(0))
                .map_err(busy_or_sql(&self.path, "read the file's size"))
                .map_err(waited(self.wait))
        };
        Ok(Space {
            page_size: uint(get("page_size")?),
            pages: uint(get("page_count")?),
            free_pages: uint(get("freelist_count")?),
            incremental: get("auto_vacuum")? == 2,
        })
    }

    /// Gives up to `max_pages` free pages back to the file system (`PRAGMA incremental_vacuum`, one
    /// short transaction); returns how many. Nothing on a file not in incremental mode (see
    /// [`AuditDb::vacuum`]). The file shrinks at the next checkpoint ([`AuditDb::checkpoint`]).
    ///
    /// # Errors
    /// [`DbError::Busy`] if another process holds the write lock too long, [`DbError::Sql`].
    pub fn reclaim(&mut self, max_pages: u32) -> Result<u64, DbError> {
        let before = self.space()?;
        if !before.incremental || before.free_pages == 0 {
            return Ok(0);
        }
        // A pragma that returns no rows: run it to its end.
        self.conn
            .execute_batch(&format!("PRAGMA incremental_vacuum({max_pages})"))
            .map_err(busy_or_sql(&self.path, "give free pages back (incremental_vacuum)"))
            .map_err(waited(self.wait))?;
        Ok(before.free_pages.saturating_sub(self.space()?.free_pages))
    }

    /// Copies the write-ahead log into the file and truncates the log (`PRAGMA
    /// wal_checkpoint(TRUNCATE)`): after a prune the log may be as large as what was deleted.
    /// Returns whether the checkpoint completed (readers still on an older snapshot can keep it
    /// from finishing; a later checkpoint does).
    ///
    /// # Errors
    /// [`DbError::Busy`], [`DbError::Sql`].
    pub fn checkpoint(&mut self) -> Result<bool, DbError> {
        let busy: i64 = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
            .map_err(busy_or_sql(&self.path, "checkpoint the write-ahead log"))
            .map_err(waited(self.wait))?;
        Ok(busy == 0)
    }

    /// Rewrites the whole file without its free pages (`VACUUM`), switching it to
    /// `auto_vacuum = INCREMENTAL` if it was not (files created before schema version 12), then
    /// truncates the write-ahead log. Needs the file to itself while it runs: another process
    /// writing meanwhile waits, and one that holds its lock longer than this connection waits
    /// makes it fail with [`DbError::Busy`] (nothing changed).
    ///
    /// # Errors
    /// [`DbError::Busy`], [`DbError::Sql`].
    pub fn vacuum(&mut self) -> Result<(), DbError> {
        self.conn
            .execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
            .map_err(busy_or_sql(&self.path, "VACUUM the database"))
            .map_err(waited(self.wait))?;
        self.checkpoint().map(drop)
    }
}

#[cfg(test)]
mod tests;
