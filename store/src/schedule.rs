//! Recurring audits in the audit database: the `schedules` table and each audit's link to the
//! schedule that started it (schema version 3, [`crate::schema`]).
//!
//! The store keeps the state; what it means is the coordinator's (`shoal_coordinator::schedule`):
//! this module never parses a cron pattern nor reads the clock, every time is a parameter. What the
//! rows guarantee:
//! - **One run at a time.** [`AuditDb::start_scheduled_audit`] creates the audit, links it and
//!   records it as the schedule's latest run in one transaction, so after a crash at any moment
//!   the schedule either has no new run or knows it (and waits for it to end).
//! - **An end is handled once.** `settled` is cleared when a run starts and set by
//!   [`AuditDb::settle_schedule`] when its end has been handled, so a coordinator that dies in
//!   between handles the end once more at restart, and never twice otherwise.

use crate::{AuditDb, AuditStatus, DbError, SeverityCounts, int, sql_err, to_json, uint, unknown_value};
use rusqlite::{OptionalExtension, Row, TransactionBehavior, params};
use shoal_shared::ids::{AuditId, ScheduleId};
use shoal_shared::time::UnixMs;

/// What a new schedule holds, as checked by the coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSchedule {
    /// A name for people.
    pub name: String,
    /// The start URLs, checked and normalised.
    pub urls: Vec<String>,
    /// The audit options (the API's `AuditOptions`), as JSON.
    pub options_json: String,
    /// When: a cron pattern, or `every <n><unit>`.
    pub spec: String,
    /// The IANA time zone the cron pattern is read in.
    pub time_zone: String,
}

/// One schedule with its latest run, without its start URLs (read those with
/// [`AuditDb::schedule_urls`] when a run starts: a list may hold 100,000).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRow {
    /// The schedule.
    pub id: ScheduleId,
    /// Its name.
    pub name: String,
    /// How many start URLs it has.
    pub sites: u64,
    /// The audit options, as JSON.
    pub options_json: String,
    /// When: a cron pattern, or `every <n><unit>`.
    pub spec: String,
    /// The IANA time zone.
    pub time_zone: String,
    /// When it was added.
    pub created_at: UnixMs,
    /// When the next run is due.
    pub next_run: UnixMs,
    /// The latest run, if any.
    pub last_audit: Option<AuditId>,
    /// When the latest run started.
    pub last_started: Option<UnixMs>,
    /// The latest run's status (`None` without a run, or if that audit is gone).
    pub last_status: Option<AuditStatus>,
    /// Whether the latest run's end has been handled (true without a run).
    pub settled: bool,
}

/// The schedule an audit belongs to, and the run before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledRun {
    /// The schedule (it may have been removed since).
    pub schedule: ScheduleId,
    /// The schedule's name, if it still exists.
    pub name: Option<String>,
    /// The schedule's latest audit before this one, if there is one.
    pub previous: Option<AuditId>,
}

const COLUMNS: &str = "s.id, s.name, s.sites, s.options_json, s.spec, s.time_zone, s.created_at_ms, s.next_run_ms,
     s.last_audit_id, s.last_started_ms, a.status, s.settled";

/// The filter of [`AuditDb::due_schedules`] (`?1` now, `?2` the limit).
const DUE: &str = "WHERE s.next_run_ms <= ?1 ORDER BY s.next_run_ms LIMIT ?2";
/// The filter of [`AuditDb::ended_schedule_runs`] (`?1` the limit). `settled = 0` is the partial
/// index's own condition, which is what lets SQLite use it.
const ENDED: &str = "WHERE s.settled = 0 AND (a.status IS NULL OR a.status <> 'running') ORDER BY s.id LIMIT ?1";
/// [`AuditDb::next_schedule_due`].
const NEXT_DUE: &str = "SELECT MIN(next_run_ms) FROM schedules";

fn row(r: &Row<'_>) -> rusqlite::Result<(ScheduleRow, Option<String>)> {
    let opt_u = |i: usize| r.get::<_, Option<i64>>(i).map(|v| v.map(uint));
    let status: Option<String> = r.get(10)?;
    Ok((
        ScheduleRow {
            id: ScheduleId(uint(r.get(0)?)),
            name: r.get(1)?,
            sites: uint(r.get(2)?),
            options_json: r.get(3)?,
            spec: r.get(4)?,
            time_zone: r.get(5)?,
            created_at: UnixMs(uint(r.get(6)?)),
            next_run: UnixMs(uint(r.get(7)?)),
            last_audit: opt_u(8)?.map(AuditId),
            last_started: opt_u(9)?.map(UnixMs),
            last_status: status.as_deref().and_then(AuditStatus::parse),
            settled: r.get::<_, i64>(11)? != 0,
        },
        status,
    ))
}

impl AuditDb {
    /// Adds a schedule whose first run is due at `next_run`.
    ///
    /// # Errors
    /// [`DbError::InvalidOptions`] if `options_json` is not JSON, [`DbError::Sql`] on a write failure.
    pub fn add_schedule(&mut self, s: &NewSchedule, now: UnixMs, next_run: UnixMs) -> Result<ScheduleId, DbError> {
        let path = &self.path;
        serde_json::from_str::<serde::de::IgnoredAny>(&s.options_json)
            .map_err(|source| DbError::InvalidOptions { path: path.clone(), source })?;
        self.conn
            .execute(
                "INSERT INTO schedules (name, urls_json, sites, options_json, spec, time_zone, created_at_ms, next_run_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    s.name,
                    to_json(&s.urls),
                    int(s.urls.len() as u64),
                    s.options_json,
                    s.spec,
                    s.time_zone,
                    int(now.0),
                    int(next_run.0)
                ],
            )
            .map_err(sql_err(path, "add a schedule"))?;
        Ok(ScheduleId(uint(self.conn.last_insert_rowid())))
    }

    /// Every schedule, oldest first, with its latest run's status.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure.
    pub fn schedules(&self) -> Result<Vec<ScheduleRow>, DbError> {
        self.read_schedules("list schedules", "ORDER BY s.id", [])
    }

    /// One schedule, or `None`.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure.
    pub fn schedule(&self, id: ScheduleId) -> Result<Option<ScheduleRow>, DbError> {
        Ok(self.read_schedules("read a schedule", "WHERE s.id = ?1", [int(id.0)])?.into_iter().next())
    }

    /// How many schedules there are.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn schedule_count(&self) -> Result<u64, DbError> {
        let n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM schedules", [], |r| r.get(0))
            .map_err(sql_err(&self.path, "count schedules"))?;
        Ok(uint(n))
    }

    /// The schedules due by `now` (`next_run_ms` at most `now`), earliest first, at most `limit`.
    /// Read through the `schedules_by_next_run` index: the cost follows how many are due, not how
    /// many there are.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure.
    pub fn due_schedules(&self, now: UnixMs, limit: usize) -> Result<Vec<ScheduleRow>, DbError> {
        self.read_schedules("read the due schedules", DUE, [int(now.0), int(limit as u64)])
    }

    /// The schedules whose latest run is not settled and no longer running (it ended, or its audit
    /// is gone), at most `limit`: the runs whose end the scheduler has to handle. Read through the
    /// partial `schedules_unsettled` index, which holds only schedules with a run under way or
    /// just ended.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure.
    pub fn ended_schedule_runs(&self, limit: usize) -> Result<Vec<ScheduleRow>, DbError> {
        self.read_schedules("read the schedules whose run ended", ENDED, [int(limit as u64)])
    }

    /// When the earliest schedule is due, `None` without schedules: the end of the
    /// `schedules_by_next_run` index.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn next_schedule_due(&self) -> Result<Option<UnixMs>, DbError> {
        let next: Option<i64> = self
            .conn
            .prepare_cached(NEXT_DUE)
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .map_err(sql_err(&self.path, "find the next schedule due"))?;
        Ok(next.map(|n| UnixMs(uint(n))))
    }

    fn read_schedules<P: rusqlite::Params>(
        &self,
        op: &'static str,
        filter: &str,
        params: P,
    ) -> Result<Vec<ScheduleRow>, DbError> {
        let path = &self.path;
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM schedules s LEFT JOIN audits a ON a.id = s.last_audit_id {filter}"
            ))
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query(params).map_err(sql_err(path, op))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            let (schedule, status) = row(r).map_err(sql_err(path, op))?;
            if let (Some(s), None) = (status, schedule.last_status) {
                let audit = schedule.last_audit.map_or_else(String::new, |a| a.to_string());
                return Err(unknown_value(path, "audits.status", format_args!("audit {audit}"), &s));
            }
            out.push(schedule);
        }
        Ok(out)
    }

    /// A schedule's start URLs, or `None` if there is no such schedule.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure, [`DbError::Corrupt`] if the list is not JSON.
    pub fn schedule_urls(&self, id: ScheduleId) -> Result<Option<Vec<String>>, DbError> {
        let path = &self.path;
        let text: Option<String> = self
            .conn
            .query_row("SELECT urls_json FROM schedules WHERE id = ?1", [int(id.0)], |r| r.get(0))
            .optional()
            .map_err(sql_err(path, "read a schedule's start URLs"))?;
        text.map(|t| serde_json::from_str(&t)).transpose().map_err(|e| DbError::Corrupt {
            path: path.clone(),
            what: "schedules.urls_json",
            detail: e.to_string(),
        })
    }

    /// Removes a schedule; its runs stay, with their link. Returns whether it existed.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a write failure.
    pub fn remove_schedule(&mut self, id: ScheduleId) -> Result<bool, DbError> {
        let n = self
            .conn
            .execute("DELETE FROM schedules WHERE id = ?1", [int(id.0)])
            .map_err(sql_err(&self.path, "remove a schedule"))?;
        Ok(n > 0)
    }

    /// Starts a run of `schedule`: in one transaction, creates the audit (state `running`, linked
    /// to the schedule) and records it as the schedule's latest run, started `now`, not settled,
    /// with the next run due at `next_run`. Returns `None` (and writes nothing) if the schedule is
    /// gone.
    ///
    /// # Errors
    /// [`DbError::InvalidOptions`] if `options_json` is not JSON, [`DbError::Sql`] on a write failure.
    pub fn start_scheduled_audit(
        &mut self,
        schedule: ScheduleId,
        options_json: &str,
        now: UnixMs,
        next_run: UnixMs,
    ) -> Result<Option<AuditId>, DbError> {
        let path = &self.path;
        serde_json::from_str::<serde::de::IgnoredAny>(options_json)
            .map_err(|source| DbError::InvalidOptions { path: path.clone(), source })?;
        let op = "start a scheduled audit";
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql_err(path, op))?;
        let exists = tx
            .query_row("SELECT 1 FROM schedules WHERE id = ?1", [int(schedule.0)], |_| Ok(()))
            .optional()
            .map_err(sql_err(path, op))?;
        if exists.is_none() {
            return Ok(None);
        }
        tx.execute(
            "INSERT INTO audits (created_at_ms, status, options_json, schedule_id) VALUES (?1, 'running', ?2, ?3)",
            params![int(now.0), options_json, int(schedule.0)],
        )
        .map_err(sql_err(path, op))?;
        let audit = AuditId(uint(tx.last_insert_rowid()));
        tx.execute(
            "UPDATE schedules SET last_audit_id = ?2, last_started_ms = ?3, next_run_ms = ?4, settled = 0 WHERE id = ?1",
            params![int(schedule.0), int(audit.0), int(now.0), int(next_run.0)],
        )
        .map_err(sql_err(path, op))?;
        tx.commit().map_err(sql_err(path, op))?;
        Ok(Some(audit))
    }

    /// Moves a schedule's next run (a slot skipped because the previous run is still running).
    ///
    /// # Errors
    /// [`DbError::Sql`] on a write failure.
    pub fn set_next_run(&mut self, id: ScheduleId, next_run: UnixMs) -> Result<(), DbError> {
        self.conn
            .execute("UPDATE schedules SET next_run_ms = ?2 WHERE id = ?1", params![int(id.0), int(next_run.0)])
            .map_err(sql_err(&self.path, "move a schedule's next run"))?;
        Ok(())
    }

    /// Marks the end of `audit`, the schedule's latest run, handled, with the next run due at
    /// `next_run`. Returns false (and changes nothing) if the schedule is gone or has a later run.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a write failure.
    pub fn settle_schedule(&mut self, id: ScheduleId, audit: AuditId, next_run: UnixMs) -> Result<bool, DbError> {
        let n = self
            .conn
            .execute(
                "UPDATE schedules SET settled = 1, next_run_ms = ?3 WHERE id = ?1 AND last_audit_id = ?2",
                params![int(id.0), int(audit.0), int(next_run.0)],
            )
            .map_err(sql_err(&self.path, "settle a schedule's run"))?;
        Ok(n > 0)
    }

    /// The schedule `audit` was started by, with its name and the run before `audit`; `None` for
    /// an audit that was submitted (or does not exist).
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn scheduled_run(&self, audit: AuditId) -> Result<Option<ScheduledRun>, DbError> {
        let (path, op) = (&self.path, "find an audit's schedule");
        let found: Option<(Option<i64>, Option<String>, Option<i64>)> = self
            .conn
            .prepare_cached(
                "SELECT a.schedule_id, s.name,
                        (SELECT MAX(p.id) FROM audits p WHERE p.schedule_id = a.schedule_id AND p.id < a.id)
                 FROM audits a LEFT JOIN schedules s ON s.id = a.schedule_id WHERE a.id = ?1",
            )
            .and_then(|mut s| s.query_row([int(audit.0)], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional())
            .map_err(sql_err(path, op))?;
        Ok(found.and_then(|(schedule, name, previous)| {
            Some(ScheduledRun {
                schedule: ScheduleId(uint(schedule?)),
                name,
                previous: previous.map(|p| AuditId(uint(p))),
            })
        }))
    }

    /// An audit's findings by severity, over all its sites (for a run's notification).
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn audit_severities(&self, audit: AuditId) -> Result<SeverityCounts, DbError> {
        let (path, op) = (&self.path, "count an audit's findings by severity");
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT f.severity, COUNT(*) FROM findings f JOIN sites s ON s.id = f.site_id
                 WHERE s.audit_id = ?1 GROUP BY f.severity",
            )
            .map_err(sql_err(path, op))?;
        let mut rows = stmt.query([int(audit.0)]).map_err(sql_err(path, op))?;
        let mut counts = SeverityCounts::default();
        while let Some(r) = rows.next().map_err(sql_err(path, op))? {
            let severity: String = r.get(0).map_err(sql_err(path, op))?;
            let n = uint(r.get(1).map_err(sql_err(path, op))?);
            match severity.as_str() {
                "error" => counts.errors += n,
                "warning" => counts.warnings += n,
                _ => counts.notices += n,
            }
        }
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(i: u64) -> NewSchedule {
        NewSchedule {
            name: format!("s{i}"),
            urls: vec![format!("https://s{i}.example/")],
            options_json: "{}".to_owned(),
            spec: "0 6 * * MON".to_owned(),
            time_zone: "UTC".to_owned(),
        }
    }

    use crate::query_plan as plan;

    #[test]
    fn a_wake_up_reads_the_due_and_ended_schedules_by_index_not_all_of_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut db = AuditDb::open(&dir.path().join("a.db")).expect("open");
        // 10,000 schedules due far ahead, one due now, one whose run ended, one whose run runs.
        db.conn.execute_batch("BEGIN").expect("begin");
        for i in 0..10_000 {
            db.add_schedule(&schedule(i), UnixMs(0), UnixMs(1_000_000 + i)).expect("add");
        }
        db.conn.execute_batch("COMMIT").expect("commit");
        let due = db.add_schedule(&schedule(10_000), UnixMs(0), UnixMs(500)).expect("add");
        let ended = db.add_schedule(&schedule(10_001), UnixMs(0), UnixMs(900_000)).expect("add");
        let audit = db.start_scheduled_audit(ended, "{}", UnixMs(10), UnixMs(900_000)).expect("start").expect("there");
        db.finish_audit(audit, AuditStatus::Done, UnixMs(20)).expect("finish");
        let running = db.add_schedule(&schedule(10_002), UnixMs(0), UnixMs(900_000)).expect("add");
        db.start_scheduled_audit(running, "{}", UnixMs(10), UnixMs(900_000)).expect("start").expect("there");

        let ids = |rows: Vec<ScheduleRow>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(db.due_schedules(UnixMs(1000), 256).expect("due")), vec![due]);
        assert_eq!(ids(db.ended_schedule_runs(256).expect("ended")), vec![ended]);
        assert_eq!(db.next_schedule_due().expect("next"), Some(UnixMs(500)));
        assert_eq!(db.due_schedules(UnixMs(1_000_009), 3).expect("due").len(), 3, "at most the limit");
        assert_eq!(db.schedule_count().expect("count"), 10_003);

        // Structurally: each query searches an index; none scans the table.
        let select = |filter: &str| {
            format!("SELECT {COLUMNS} FROM schedules s LEFT JOIN audits a ON a.id = s.last_audit_id {filter}")
        };
        for (sql, index) in [
            (select(DUE), "schedules_by_next_run"),
            (select(ENDED), "schedules_unsettled"),
            (NEXT_DUE.to_owned(), "schedules_by_next_run"),
        ] {
            let steps = plan(&db, &sql);
            // The join looks each latest run up by its key; every other step searches the index.
            let own: Vec<&String> = steps.iter().filter(|d| !d.starts_with("SEARCH a ")).collect();
            assert!(
                !own.is_empty() && own.iter().all(|d| d.starts_with("SEARCH") && d.contains(&format!("INDEX {index}"))),
                "{sql}\nshould search {index}, not scan: {steps:?}"
            );
        }
    }
}
