//! Moving results from the frontier's events into the audit database: the one place events are
//! applied, for `shoal audit` and for the coordinator service alike.

use crate::db::AuditDb;
use anyhow::Context;
use shoal_shared::frontier::Frontier;
use shoal_shared::record::Event;
use std::sync::{Arc, Mutex};

/// Events written to the database per transaction at most.
pub const EVENT_BATCH: usize = 1_000;

/// Locks the database, carrying on after a panic elsewhere (each write is one transaction, so the
/// file is consistent whatever happened).
pub fn lock(db: &Mutex<AuditDb>) -> std::sync::MutexGuard<'_, AuditDb> {
    db.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Reads one batch of events, commits it to the database, then acknowledges it. An event is
/// acknowledged only after its commit, so a crash in between replays it (applying is idempotent).
/// Returns the events applied.
pub async fn aggregate_batch<F: Frontier>(frontier: &F, db: &Arc<Mutex<AuditDb>>) -> anyhow::Result<Vec<Event>> {
    let batch = frontier.read_events(EVENT_BATCH).await?;
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    let (ids, events): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
    let dbc = Arc::clone(db);
    let events = tokio::task::spawn_blocking(move || lock(&dbc).apply(&events).map(|()| events))
        .await
        .context("database writer")??;
    frontier.ack_events(&ids).await?;
    let m = shoal_metrics::metrics();
    for e in &events {
        match e {
            Event::Page(_) => {
                m.pages_stored.inc();
            }
            Event::Finding(f) => {
                m.findings.get_or_create(&shoal_metrics::SeverityLabels { severity: f.severity().as_str() }).inc();
            }
            Event::SiteDone { .. } => {
                m.sites_done.inc();
            }
        }
    }
    Ok(events)
}
