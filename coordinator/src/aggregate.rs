//! The database writer's shared pieces: how many events one transaction takes, and how the
//! writer is locked.

use shoal_store::AuditDb;
use std::sync::Mutex;

/// Events written to the database per transaction at most.
pub const EVENT_BATCH: usize = 1_000;

/// Locks the database, carrying on after a panic elsewhere (each write is one transaction, so the
/// file is consistent whatever happened).
pub fn lock(db: &Mutex<AuditDb>) -> std::sync::MutexGuard<'_, AuditDb> {
    db.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
