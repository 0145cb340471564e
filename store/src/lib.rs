//! The audit database: one SQLite file holding audits, sites, pages, links and findings.
//!
//! SPEC §6 keeps everything an audit learns on the machine that runs it, in one file a user can copy,
//! back up or delete. [`AuditDb`] is its only writer: `shoal audit` and the coordinator service
//! aggregate worker [`Event`]s into it, and the reports read it back row by row.
//!
//! Choices, and why:
//! - **WAL mode, `busy_timeout`.** A report or `shoal status` can read while the writer commits,
//!   and a second process waits instead of failing at once. Foreign keys are declared but not
//!   checked by the writer (see [`AuditDb::open`]): the write paths insert parents first.
//! - **One transaction per [`AuditDb::apply`] batch, idempotent writes.** Events can be delivered
//!   twice (a worker retries, the coordinator replays after a crash); a page is an upsert keyed by
//!   `(site_id, url)` and a finding is `INSERT OR IGNORE` on `(site_id, code, url, detail)`, so a
//!   replay changes nothing.
//! - **Site-level analysis on [`Event::SiteDone`]** (broken links, redirect chains and loops,
//!   duplicate titles and descriptions) needs every page of the site, so it runs in the database, in
//!   the same transaction that marks the site done. See [`analysis`] for the rules.
//! - **Migrations are a list** ([`schema::MIGRATIONS`]); `PRAGMA user_version` is how many have run,
//!   and `PRAGMA application_id` marks the file as Shoal's, so pointing `--db` at some other SQLite
//!   file fails instead of adding tables to it.
//!
//! Times are [`UnixMs`] numbers; unsigned values are stored as SQLite integers (saturating at
//! `i64::MAX`, which no real size or time reaches).

pub mod ai_crawlers;
pub mod analysis;
mod apply;
mod browser;
pub mod compare;
mod content;
pub mod cursor;
mod hreflang;
pub mod issues;
pub mod options;
mod read;
pub mod render;
pub mod retention;
mod schedule;
pub mod schema;
pub mod tokens;
pub mod url_changes;

/// How SQLite runs `sql` on `db`: the `detail` column of EXPLAIN QUERY PLAN, one line per step
/// (every parameter bound to 1), for the tests that a statement searches an index.
#[cfg(test)]
pub(crate) fn query_plan(db: &AuditDb, sql: &str) -> Vec<String> {
    let mut stmt = db.conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).expect("explain");
    let params = rusqlite::params_from_iter(std::iter::repeat_n(1_i64, stmt.parameter_count()));
    let rows = stmt.query_map(params, |r| r.get::<_, String>(3)).expect("a plan");
    rows.map(|r| r.expect("a step")).collect()
}

pub use content::{ContentCluster, ContentSummary};
pub use issues::IssueCount;
pub use options::{OPTIONS_VERSION, OptionsError, StoredOptions};
pub use read::{FINAL_URL_MAX_HOPS, FindingRow, LinkRow, PageRow, SeverityCounts, SiteStats, StatusClasses};
pub use retention::{Prunable, Removed, Retention, Space, Verdict};
pub use schedule::{NewSchedule, ScheduleRow, ScheduledRun};
pub use tokens::{AddTokenError, Secret, TokenRow};

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::Event;
use shoal_shared::time::UnixMs;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a statement waits for another connection's lock before failing with "database is
/// locked". Long enough for a report reading while the writer commits a large batch.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Prepared statements kept per connection: the write path, the site analysis and the report reads.
const STATEMENT_CACHE: usize = 64;

/// Why the audit database could not do what was asked. Every variant names the file, because the
/// user chose it (`--db`) and is the one who can fix permissions, disk space or a wrong path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbError {
    /// The file could not be opened or created (missing directory, permissions, not a database).
    #[error("cannot open audit database {}: {source}", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The path is a directory, not a file.
    #[error("cannot open audit database {}: it is a directory; give a file name such as {}", path.display(), path.join("shoal.db").display())]
    IsDirectory {
        /// The path given.
        path: PathBuf,
    },
    /// The file exists but can only be read.
    #[error("cannot open audit database {}: the file is read-only (check its permissions and those of its directory)", path.display())]
    ReadOnly {
        /// The database file.
        path: PathBuf,
    },
    /// The file is an SQLite database of some other program.
    #[error("{} is an SQLite database, but not a Shoal audit database; choose another --db file", path.display())]
    NotAnAuditDb {
        /// The database file.
        path: PathBuf,
    },
    /// The file was written by a newer Shoal whose schema this version does not know.
    #[error("audit database {} has schema version {found}; this shoal understands up to {supported}, upgrade shoal", path.display())]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// The file's `user_version`.
        found: i64,
        /// The newest version this build can migrate to.
        supported: i64,
    },
    /// A statement failed (disk full, locked too long, I/O error, a constraint).
    #[error("audit database {}: {op} failed: {source}", path.display())]
    Sql {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// Another process held the database's lock for longer than this connection waits
    /// ([`BUSY_TIMEOUT`] unless [`AuditDb::wait_for_locks`] changed it: a coordinator
    /// or `shoal audit` writing to it, or a long read while a `VACUUM` waited); nothing was changed.
    #[error(
        "audit database {}: {op}: the database stayed busy for {waited:?} (another process, such as a running coordinator, is using it); nothing was changed, try again",
        path.display()
    )]
    Busy {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// How long it waited for the lock.
        waited: Duration,
    },
    /// `options_json` given to [`AuditDb::create_audit`] is not JSON.
    #[error("audit database {}: the audit options are not valid JSON: {source}", path.display())]
    InvalidOptions {
        /// The database file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A stored value could not be read back (edited by hand, or a bug).
    #[error("audit database {}: corrupt value in {what}: {detail}", path.display())]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// Table and column.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// An audit's stored options ([`StoredOptions`]) cannot be read (edited by hand, or written
    /// by a newer Shoal).
    #[error("audit database {}: the options of audit {audit} cannot be read: {source}", path.display())]
    UnreadableOptions {
        /// The database file.
        path: PathBuf,
        /// The audit.
        audit: AuditId,
        /// Why.
        source: OptionsError,
    },
    /// No audit with this id.
    #[error("audit database {}: there is no audit {audit}", path.display())]
    UnknownAudit {
        /// The database file.
        path: PathBuf,
        /// The id asked for.
        audit: AuditId,
    },
    /// An event names a site the database does not have.
    #[error("audit database {}: there is no site {site}", path.display())]
    UnknownSite {
        /// The database file.
        path: PathBuf,
        /// The id in the event.
        site: SiteId,
    },
    /// An event names a site together with an audit the site does not belong to.
    #[error("audit database {}: site {site} belongs to audit {actual}, not {claimed}", path.display())]
    SiteAuditMismatch {
        /// The database file.
        path: PathBuf,
        /// The site.
        site: SiteId,
        /// The audit the event claimed.
        claimed: AuditId,
        /// The audit the site belongs to.
        actual: AuditId,
    },
}

/// Maps an SQLite error to [`DbError::Sql`] naming the file and the operation.
pub(crate) fn sql_err<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(rusqlite::Error) -> DbError + 'a {
    move |source| DbError::Sql { path: path.to_owned(), op, source }
}

/// JSON text for list columns. Serialising strings and string pairs cannot fail; the fallback
/// only keeps the column valid JSON.
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| String::from("[]"))
}

/// [`DbError::Corrupt`] for a stored spelling this build does not know (an enum's column edited
/// by hand, or written by a newer Shoal): names the row and the value, since a silent default
/// would misreport the row.
pub(crate) fn unknown_value(path: &Path, what: &'static str, row: impl std::fmt::Display, value: &str) -> DbError {
    DbError::Corrupt { path: path.to_owned(), what, detail: format!("{row}: unknown value {value:?}") }
}

/// Stores an unsigned number as an SQLite integer, saturating (no size or time comes near it).
pub(crate) fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Reads back a number stored by [`int`].
pub(crate) fn uint(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// Stores a 64-bit hash as an SQLite integer: the same bits, read as signed (a hash is compared,
/// never counted, so no saturation).
pub(crate) fn bits(v: u64) -> i64 {
    i64::from_ne_bytes(v.to_ne_bytes())
}

/// Reads back a hash stored by [`bits`].
pub(crate) fn unbits(v: i64) -> u64 {
    u64::from_ne_bytes(v.to_ne_bytes())
}

// The statuses live in `shared` so the API's views and the client hold the same enums the
// database writes; re-exported here, where they are stored.
/// The registrable domain of a site's start URL, as `sites.domain` holds it: the one the
/// frontier's DNS check of the site is about (`shoal_shared::domain::registrable_domain` of the
/// start host), so the sites that share a domain's findings are those that shared its check.
fn start_domain(start_url: &str) -> Option<String> {
    let url = shoal_shared::url::NormalizedUrl::parse(start_url).ok()?;
    url.as_url().host_str().and_then(shoal_shared::domain::registrable_domain)
}

pub use shoal_shared::status::{AuditStatus, SiteStatus};

/// One audit with its totals, for listings (`shoal status`, `shoal report` without an id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSummary {
    /// The audit.
    pub id: AuditId,
    /// When it was created.
    pub created_at: UnixMs,
    /// When it finished, if it did.
    pub finished_at: Option<UnixMs>,
    /// Where it stands.
    pub status: AuditStatus,
    /// The options it was started with, as given to [`AuditDb::create_audit`].
    pub options_json: String,
    /// Number of sites.
    pub sites: u64,
    /// Sites done.
    pub sites_done: u64,
    /// Fetched URLs of kind `page`, over all sites.
    pub pages: u64,
    /// Fetched URLs of any kind (pages, resources, robots.txt, sitemaps, probes), over all sites.
    pub urls: u64,
    /// Findings, over all sites.
    pub findings: u64,
    /// Why it failed (only for [`AuditStatus::Failed`]).
    pub reason: Option<String>,
}

/// One site with its running totals, for progress and reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteSummary {
    /// The site.
    pub id: SiteId,
    /// Its audit.
    pub audit: AuditId,
    /// The start URL as given to [`AuditDb::add_site`].
    pub start_url: String,
    /// Where it stands.
    pub status: SiteStatus,
    /// Fetched URLs of kind `page` (what the page budget counts).
    pub pages: u64,
    /// Fetched URLs of any kind.
    pub urls: u64,
    /// Findings.
    pub findings: u64,
    /// When its `SiteDone` event was first applied.
    pub done_at: Option<UnixMs>,
}

/// The audit database. Single writer: open one per process; readers in other processes are fine.
#[derive(Debug)]
pub struct AuditDb {
    conn: Connection,
    path: PathBuf,
    /// The content thresholds of audits whose sites ended lately ([`analysis::content_limits`]):
    /// read once per audit, not once per site (an audit's options hold every start URL).
    content_limits: analysis::LimitsCache,
    /// How long a statement waits for another connection's lock ([`BUSY_TIMEOUT`] by default).
    wait: Duration,
}

impl AuditDb {
    /// Opens the database file, creating it and running any pending migrations.
    ///
    /// # Errors
    /// [`DbError::IsDirectory`], [`DbError::Open`] (missing directory, permissions, not a database),
    /// [`DbError::ReadOnly`], [`DbError::NotAnAuditDb`], [`DbError::TooNew`], or [`DbError::Sql`] if
    /// a migration fails, [`DbError::Busy`] if another process holds the write lock for longer
    /// than [`BUSY_TIMEOUT`]; each names the path.
    pub fn open(path: &Path) -> Result<AuditDb, DbError> {
        AuditDb::open_waiting(path, BUSY_TIMEOUT)
    }

    /// [`AuditDb::open`], waiting at most `wait` for another connection's lock, then and later
    /// ([`AuditDb::wait_for_locks`]).
    ///
    /// # Errors
    /// As [`AuditDb::open`].
    pub fn open_waiting(path: &Path, wait: Duration) -> Result<AuditDb, DbError> {
        if path.is_dir() {
            return Err(DbError::IsDirectory { path: path.to_owned() });
        }
        let open_err = |source| DbError::Open { path: path.to_owned(), source };
        // No SQLITE_OPEN_URI: a file literally named `file:...` is a file, not a URI with options.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(open_err)?;
        conn.busy_timeout(wait).map_err(open_err)?;
        if conn.is_readonly(rusqlite::MAIN_DB).map_err(open_err)? {
            return Err(DbError::ReadOnly { path: path.to_owned() });
        }
        // The first statement that reads the file: "file is not a database" surfaces here.
        let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0)).map_err(open_err)?;
        // A new file gives the space of pruned audits back a step at a time (`retention`). Only
        // on a new one (only a VACUUM switches an older file), and before the switch to WAL,
        // which writes the first page: on a file already in the mode, setting it again writes
        // the header, so every open would wait for another process's write lock.
        if pages == 0 {
            conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL;").map_err(open_err)?;
        }
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(open_err)?;
        if !mode.eq_ignore_ascii_case("wal") && path != Path::new(":memory:") {
            tracing::warn!(path = %path.display(), mode, "audit database could not switch to WAL mode; readers may wait for the writer");
        }
        // The schema declares its foreign keys, but this connection does not check them: every
        // write inserts the parent first (a page's site is looked up once per batch, with a typed
        // error, and a page's links are written right after the page), so each check would pass,
        // and each cost a lookup of the parent: one per link, in the pages' primary key. The one
        // place that deletes audits, sites and pages (`retention`) deletes every child table's
        // rows itself, so no cascade is needed. Not toggled per batch: changing the setting
        // expires every prepared statement.
        conn.execute_batch("PRAGMA foreign_keys = OFF;").map_err(open_err)?;

        // Every statement of the write path and the site analysis stays prepared (rusqlite keeps
        // 16 by default, fewer than a batch and an analysis use, so they were parsed again and
        // again: a third of the CPU of a 40,000-site audit).
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // Plans that do not depend on the values bound (the query planner stability guarantee).
        // The bundled SQLite is built with STAT4, under which a statement whose plan could depend
        // on a bound value is prepared again after every new binding: the site analysis's cached
        // queries were parsed anew on each use (SQLite's allocations on a 200-site farm audit fell
        // from 240,000 to 44,000 calls with this, and the analysis from 9 % to 6 % of the CPU).
        // Shoal never runs ANALYZE, so there are no statistics for a value to be weighed against.
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map_err(open_err)?;
        let mut db = AuditDb { conn, path: path.to_owned(), content_limits: analysis::LimitsCache::default(), wait };
        db.migrate()?;
        Ok(db)
    }

    /// Commits wait for the disk only at checkpoints (`PRAGMA synchronous = NORMAL` in WAL mode):
    /// a commit survives a crash of the process, not of the machine. For `shoal audit`, where a
    /// machine crash ends the audit anyway and it is run again; it saves a sync per batch. The
    /// coordinator keeps the default, because it acknowledges events to Redis after each commit.
    ///
    /// # Errors
    /// [`DbError::Sql`] if the setting cannot be changed.
    pub fn sync_at_checkpoints_only(&self) -> Result<(), DbError> {
        self.conn.execute_batch("PRAGMA synchronous = NORMAL;").map_err(sql_err(&self.path, "set synchronous"))
    }

    /// The file this database lives in (for messages).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs every migration the file has not seen, each in its own transaction. The version is
    /// re-read inside the write lock, so two processes opening a new file at once do not both run
    /// a migration.
    fn migrate(&mut self) -> Result<(), DbError> {
        let path = &self.path;
        let supported = i64::try_from(schema::MIGRATIONS.len()).unwrap_or(i64::MAX);
        loop {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(retention::busy_or_sql(path, "lock the database to check its schema"))
                .map_err(retention::waited(self.wait))?;
            let app_id: i64 = tx
                .query_row("PRAGMA application_id", [], |r| r.get(0))
                .map_err(sql_err(path, "read application_id"))?;
            let version: i64 =
                tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(sql_err(path, "read user_version"))?;
            if app_id != schema::APPLICATION_ID {
                let tables: i64 = tx
                    .query_row("SELECT COUNT(*) FROM sqlite_schema", [], |r| r.get(0))
                    .map_err(sql_err(path, "inspect the schema"))?;
                if app_id != 0 || version != 0 || tables != 0 {
                    return Err(DbError::NotAnAuditDb { path: path.clone() });
                }
            }
            if version > supported {
                return Err(DbError::TooNew { path: path.clone(), found: version, supported });
            }
            let Some(sql) = usize::try_from(version).ok().and_then(|v| schema::MIGRATIONS.get(v)) else {
                return tx.commit().map_err(sql_err(path, "finish migration"));
            };
            tx.execute_batch(sql).map_err(sql_err(path, "migrate the schema"))?;
            tx.execute_batch(&format!(
                "PRAGMA user_version = {}; PRAGMA application_id = {};",
                version + 1,
                schema::APPLICATION_ID
            ))
            .map_err(sql_err(path, "record the schema version"))?;
            tx.commit().map_err(sql_err(path, "commit migration"))?;
            tracing::info!(path = %path.display(), version = version + 1, "audit database migrated");
        }
    }

    /// Starts an audit in state `running`. `options_json` records what the user asked for (limits,
    /// pace, user agent) so a report can say how the audit was run; it must be valid JSON.
    ///
    /// # Errors
    /// [`DbError::InvalidOptions`] if `options_json` does not parse, [`DbError::Sql`] on a write failure.
    pub fn create_audit(&mut self, options_json: &str, now: UnixMs) -> Result<AuditId, DbError> {
        let path = &self.path;
        serde_json::from_str::<serde::de::IgnoredAny>(options_json)
            .map_err(|source| DbError::InvalidOptions { path: path.clone(), source })?;
        self.conn
            .execute(
                "INSERT INTO audits (created_at_ms, status, options_json) VALUES (?1, 'running', ?2)",
                rusqlite::params![int(now.0), options_json],
            )
            .map_err(sql_err(path, "create an audit"))?;
        Ok(AuditId(uint(self.conn.last_insert_rowid())))
    }

    /// Adds a site to an audit. Site ids are never reused, not even after deletion, so an id is
    /// unique across every audit the file has held (the frontier keys its work by site id).
    ///
    /// # Errors
    /// [`DbError::UnknownAudit`], or [`DbError::Sql`] on a write failure.
    pub fn add_site(&mut self, audit: AuditId, start_url: &str) -> Result<SiteId, DbError> {
        self.require_audit(audit)?;
        self.conn
            .execute(
                "INSERT INTO sites (audit_id, start_url, domain) VALUES (?1, ?2, ?3)",
                rusqlite::params![int(audit.0), start_url, start_domain(start_url)],
            )
            .map_err(sql_err(&self.path, "add a site"))?;
        Ok(SiteId(uint(self.conn.last_insert_rowid())))
    }

    /// Adds many sites to an audit in one transaction (one commit, not one per site: a 100,000-site
    /// submit would otherwise wait for 100,000 syncs). Returns their ids in the order given.
    ///
    /// # Errors
    /// [`DbError::UnknownAudit`], or [`DbError::Sql`] on a write failure (then none is added).
    pub fn add_sites<S: AsRef<str>>(&mut self, audit: AuditId, start_urls: &[S]) -> Result<Vec<SiteId>, DbError> {
        self.require_audit(audit)?;
        let path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql_err(path, "begin adding sites"))?;
        let mut ids = Vec::with_capacity(start_urls.len());
        {
            let mut insert = tx
                .prepare_cached("INSERT INTO sites (audit_id, start_url, domain) VALUES (?1, ?2, ?3)")
                .map_err(sql_err(path, "prepare adding a site"))?;
            for url in start_urls {
                let url = url.as_ref();
                insert
                    .execute(rusqlite::params![int(audit.0), url, start_domain(url)])
                    .map_err(sql_err(path, "add a site"))?;
                ids.push(SiteId(uint(tx.last_insert_rowid())));
            }
        }
        tx.commit().map_err(sql_err(path, "commit added sites"))?;
        Ok(ids)
    }

    /// Applies a batch of worker events in one transaction: all of them or none.
    ///
    /// Idempotent: a page is upserted by `(site, url)` (its links replaced), a finding is ignored if
    /// the same `(site, code, url, detail)` exists, and `SiteDone` re-runs the site-level
    /// [`analysis`], which replaces its own earlier findings. Applying a batch twice leaves the same
    /// rows as applying it once.
    ///
    /// # Errors
    /// [`DbError::UnknownSite`] / [`DbError::SiteAuditMismatch`] for an event about a site this
    /// database does not hold (a bug upstream: the whole batch is rolled back), [`DbError::Sql`] on
    /// a write failure.
    pub fn apply(&mut self, events: &[Event]) -> Result<(), DbError> {
        self.apply_at(events, UnixMs::from(std::time::SystemTime::now()))
    }

    /// [`apply`](AuditDb::apply) with the time recorded as a site's `done_at` given by the caller.
    ///
    /// # Errors
    /// As [`apply`](AuditDb::apply).
    pub fn apply_at(&mut self, events: &[Event], now: UnixMs) -> Result<(), DbError> {
        if events.is_empty() {
            return Ok(());
        }
        let AuditDb { conn, path, content_limits, .. } = self;
        let tx =
            conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql_err(path, "begin a batch"))?;
        apply::Batch::new(&tx, path, content_limits).run(events, now)?;
        tx.commit().map_err(sql_err(path, "commit a batch"))
    }

    /// Records how an audit ended. `Running` reopens it (clears `finished_at`).
    ///
    /// # Errors
    /// [`DbError::UnknownAudit`], or [`DbError::Sql`] on a write failure.
    pub fn finish_audit(&mut self, audit: AuditId, status: AuditStatus, now: UnixMs) -> Result<(), DbError> {
        let finished = (status != AuditStatus::Running).then_some(int(now.0));
        let changed = self
            .conn
            .execute(
                "UPDATE audits SET status = ?2, finished_at_ms = ?3 WHERE id = ?1",
                rusqlite::params![int(audit.0), status.as_str(), finished],
            )
            .map_err(sql_err(&self.path, "finish an audit"))?;
        if changed == 0 {
            return Err(DbError::UnknownAudit { path: self.path.clone(), audit });
        }
        Ok(())
    }

    /// Ends a running audit [`AuditStatus::Failed`] with `reason` (an audit that already ended is
    /// left as it is).
    ///
    /// # Errors
    /// [`DbError::UnknownAudit`], or [`DbError::Sql`] on a write failure.
    pub fn fail_audit(&mut self, audit: AuditId, reason: &str, now: UnixMs) -> Result<(), DbError> {
        self.require_audit(audit)?;
        self.conn
            .execute(
                "UPDATE audits SET status = 'failed', reason = ?2, finished_at_ms = ?3
                 WHERE id = ?1 AND status = 'running'",
                rusqlite::params![int(audit.0), reason, int(now.0)],
            )
            .map_err(sql_err(&self.path, "fail an audit"))?;
        Ok(())
    }

    /// Every audit, oldest first, with totals.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure.
    pub fn audits(&self) -> Result<Vec<AuditSummary>, DbError> {
        read::audits(&self.conn, &self.path, None)
    }

    /// One audit with totals, or `None` if there is no such audit.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure.
    pub fn audit(&self, audit: AuditId) -> Result<Option<AuditSummary>, DbError> {
        Ok(read::audits(&self.conn, &self.path, Some(audit))?.into_iter().next())
    }

    /// The options `audit` was started with, typed (what a resumed audit is crawled with).
    ///
    /// # Errors
    /// [`DbError::UnknownAudit`], [`DbError::UnreadableOptions`] if the stored record does not
    /// read (never the defaults in its place), [`DbError::Sql`] on a read failure.
    pub fn audit_options(&self, audit: AuditId) -> Result<StoredOptions, DbError> {
        let json: Option<String> = self
            .conn
            .query_row("SELECT options_json FROM audits WHERE id = ?1", [int(audit.0)], |r| r.get(0))
            .optional()
            .map_err(sql_err(&self.path, "read an audit's options"))?;
        let json = json.ok_or_else(|| DbError::UnknownAudit { path: self.path.clone(), audit })?;
        StoredOptions::parse(&json).map_err(|source| DbError::UnreadableOptions {
            path: self.path.clone(),
            audit,
            source,
        })
    }

    /// The most recently created audit: what `shoal report` shows when no id is given.
    ///
    /// # Errors
    /// [`DbError::Sql`] on a read failure.
    pub fn latest_audit(&self) -> Result<Option<AuditId>, DbError> {
        let id: Option<i64> = self
            .conn
            .query_row("SELECT MAX(id) FROM audits", [], |r| r.get(0))
            .map_err(sql_err(&self.path, "find the latest audit"))?;
        Ok(id.map(|i| AuditId(uint(i))))
    }

    /// The sites of an audit in id order, with running totals (progress, status, reports).
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure. An unknown audit has no sites.
    pub fn site_counts(&self, audit: AuditId) -> Result<Vec<SiteSummary>, DbError> {
        read::sites(&self.conn, &self.path, audit)
    }

    /// A page of an audit's sites in id order: the first `limit` after `after` (from the start
    /// when `None`). What an audit's status lists, so its cost does not grow with the audit.
    ///
    /// # Errors
    /// [`DbError::Sql`] or [`DbError::Corrupt`] on a read failure.
    pub fn site_page(&self, audit: AuditId, after: Option<SiteId>, limit: usize) -> Result<Vec<SiteSummary>, DbError> {
        read::site_page(&self.conn, &self.path, audit, after, limit)
    }

    fn require_audit(&self, audit: AuditId) -> Result<(), DbError> {
        let found = self
            .conn
            .query_row("SELECT 1 FROM audits WHERE id = ?1", [int(audit.0)], |_| Ok(()))
            .optional()
            .map_err(sql_err(&self.path, "look up an audit"))?;
        match found {
            Some(()) => Ok(()),
            None => Err(DbError::UnknownAudit { path: self.path.clone(), audit }),
        }
    }
}
