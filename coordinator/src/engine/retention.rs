//! Retention after each audit ends (issue 40): the coordinator's `--retain-audits` and
//! `--retain-days`, by the store's one rule ([`shoal_store::retention`], which `shoal prune`
//! applies too).
//!
//! Why on the database writer, right after an audit ends: the writer is the one connection that
//! writes, so pruning never races the engine's own writes, and the end of an audit is when an
//! older one may have become superfluous. [`Coordinator::end`] wakes a loop of its own (one pass
//! at start too, for a database that grew before the setting), so whoever ended the audit (a
//! cancel request, the aggregator) does not wait for the pass. Each audit is deleted in its own
//! transaction; at shutdown the pass stops between two transactions.
//!
//! The free pages are given back only when no audit is running, [`RECLAIM_STEP`] at a time (so
//! the server's other writes, a submit or a schedule, wait for one step at most). Why not at
//! once: a running audit fills free pages before it grows the file, so shrinking the file under
//! it only to grow it again is work for nothing (giving back one 16,000-page audit took about
//! 25 s of the writer on the 2-core development machine), and when every audit has ended the
//! writer is idle. The end of the last running audit gives back what earlier passes left.
//!
//! A running audit is never touched (the rule), nor an
//! ended one whose leases the frontier still holds (a cancelled audit's fetches in flight): its
//! late results would only be quarantined. A failure is logged and the next end tries again; it
//! never fails the end of the audit.

use super::{Coordinator, EngineError, lock_open, lock_set};
use shoal_shared::frontier::Frontier;
use shoal_shared::ids::AuditId;
use shoal_shared::time::UnixMs;
use shoal_store::retention::RECLAIM_STEP;
use std::collections::HashSet;
use tokio_util::sync::CancellationToken;

/// What one retention pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RetentionPass {
    /// Audits removed.
    pub audits: u64,
    /// Pages (fetched URLs) removed with them.
    pub pages: u64,
    /// Free database pages given back to the file system.
    pub freed_pages: u64,
}

impl<F: Frontier> Coordinator<F> {
    /// A retention pass at start and after each audit's end, until `stop`.
    pub(super) async fn retention_loop(&self, stop: CancellationToken) {
        loop {
            self.retain(&stop).await;
            tokio::select! {
                () = self.retention_wake.notified() => {}
                () = stop.cancelled() => return,
            }
        }
    }

    /// Applies the retention rule; logs instead of failing.
    async fn retain(&self, stop: &CancellationToken) {
        match self.prune_now(UnixMs::from(std::time::SystemTime::now()), stop).await {
            Ok(pass) if pass.audits > 0 => {
                tracing::info!(
                    audits = pass.audits,
                    pages = pass.pages,
                    freed_pages = pass.freed_pages,
                    "old audits removed (retention)"
                );
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "removing old audits failed; trying again when the next audit ends"),
        }
    }

    /// One retention pass at `now`: removes what the rule removes, then, when no audit is
    /// running, gives the free pages back; stops between two transactions at `stop`.
    ///
    /// # Errors
    /// The database failed (what was removed before stays removed).
    pub async fn prune_now(&self, now: UnixMs, stop: &CancellationToken) -> Result<RetentionPass, EngineError> {
        let rule = self.config.retention;
        if rule.is_off() {
            return Ok(RetentionPass::default());
        }
        let candidates = self.write(move |db| db.prunable(&rule, now)).await?;
        let busy: HashSet<AuditId> = {
            let mut busy = lock_set(&self.forgetting).clone();
            busy.extend(lock_open(&self.open).keys().copied());
            busy
        };
        let mut pass = RetentionPass::default();
        for p in candidates.into_iter().filter(|p| !busy.contains(&p.audit)) {
            if stop.is_cancelled() {
                return Ok(pass);
            }
            let audit = p.audit;
            if let Some(r) = self.write(move |db| db.prune_audit(audit, &rule, now)).await? {
                tracing::info!(audit = %audit, why = ?p.why, sites = r.sites, pages = r.pages, findings = r.findings, "audit removed (retention)");
                pass.audits += 1;
                pass.pages += r.pages;
            }
        }
        while lock_open(&self.open).is_empty() && !stop.is_cancelled() {
            let n = self.write(|db| db.reclaim(RECLAIM_STEP)).await?;
            if n == 0 {
                break;
            }
            pass.freed_pages += n;
        }
        if pass.audits > 0 || pass.freed_pages > 0 {
            // The log holds every page the deletes and the steps wrote: copy it in, truncate it.
            self.write(|db| db.checkpoint()).await?;
        }
        Ok(pass)
    }
}
