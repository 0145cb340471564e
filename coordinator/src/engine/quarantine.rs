//! What the coordinator does with what the frontier quarantined (docs/runbook.md, "A bad entry is
//! quarantined"): a site whose state in the frontier could not be read is out of the crawl, and
//! its audit ends `failed` with the reason; an events log entry that names a site the audit
//! database does not hold is skipped, and the rest of its batch is stored.
//!
//! Why an audit fails, and when: a quarantined site never ends, so its audit would stay `running`
//! forever. It fails as soon as nothing else of it is left to wait for (every site still open is
//! quarantined), and at the latest [`QUARANTINE_TIMEOUT`] after this coordinator first saw the
//! quarantine (again after a restart: the records live in the frontier, the sightings in memory,
//! so a coordinator's clock alone decides, whatever the clocks of the workers that recorded them).
//! Meanwhile its other sites go on, so what they crawl is stored; after the timeout the audit is
//! ended (its queues dropped) rather than kept running for hours on a known-broken state.

use super::{Coordinator, lock_open, lock_set};
use crate::engine::EngineError;
use shoal_shared::finding::{Code, Finding};
use shoal_shared::frontier::{EventId, Frontier, QuarantinedSite};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::Event;
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, AuditStatus, DbError};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// How long an audit with a quarantined site may go on with its other sites at most, from when
/// this coordinator first saw the quarantine.
pub const QUARANTINE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Quarantine records read per reaping tick at most (more are read as earlier ones are resolved).
pub const QUARANTINE_READ: usize = 1_000;
/// Characters of a reason kept in an audit's `reason` and a finding's detail.
const REASON_MAX: usize = 600;

/// What [`judge`] decided.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Running audits with quarantined sites: the sites (in the order given), and whether the
    /// audit fails now.
    pub audits: Vec<(AuditId, Vec<SiteId>, bool)>,
    /// Quarantined sites no running audit is waiting for.
    pub stray: Vec<SiteId>,
}

/// Which audits the quarantine of `sites` affects and which of them fail now (see the module
/// documentation): `open` is each running audit's sites not yet done, `seen` when this coordinator
/// first saw each site quarantined.
#[must_use]
pub fn judge(
    open: &HashMap<AuditId, HashSet<SiteId>>,
    sites: &[QuarantinedSite],
    seen: &HashMap<SiteId, UnixMs>,
    now: UnixMs,
    timeout: Duration,
) -> Verdict {
    let mut verdict = Verdict::default();
    let mut by_audit: Vec<(AuditId, Vec<SiteId>)> = Vec::new();
    for q in sites {
        match open.iter().find(|(_, pending)| pending.contains(&q.site)) {
            Some((audit, _)) => match by_audit.iter_mut().find(|(a, _)| a == audit) {
                Some((_, list)) => list.push(q.site),
                None => by_audit.push((*audit, vec![q.site])),
            },
            None => verdict.stray.push(q.site),
        }
    }
    for (audit, list) in by_audit {
        let pending = open.get(&audit).map_or(0, HashSet::len);
        let first = list.iter().filter_map(|s| seen.get(s)).min().copied().unwrap_or(now);
        let out_of_time = now.since(first) >= timeout;
        verdict.audits.push((audit, list.clone(), pending <= list.len() || out_of_time));
    }
    verdict
}

/// Applies a batch, skipping the entries whose events name a site the database does not hold, or
/// hold under another audit: anyone who can write to the events stream can write such an entry,
/// and it failed the whole batch on every try. Returns the result, the ids (all of them: a skipped
/// entry is acknowledged with the rest), the events applied, and the skipped entries with the site
/// they named.
pub(super) fn apply(db: &mut AuditDb, ids: Vec<EventId>, mut events: Vec<Event>) -> Applied {
    let all = ids.clone();
    let mut ids = ids;
    let mut skipped: Vec<(EventId, SiteId)> = Vec::new();
    // Each turn skips at least one entry of the batch, so it ends within as many turns.
    for _ in 0..=all.len() {
        let bad = match db.apply(&events) {
            Err(DbError::UnknownSite { site, .. } | DbError::SiteAuditMismatch { site, .. }) => site,
            r => return (r, all, events, skipped),
        };
        let entries: HashSet<EventId> =
            ids.iter().zip(&events).filter(|(_, e)| e.site().1 == bad).map(|(id, _)| id.clone()).collect();
        if entries.is_empty() {
            break;
        }
        (ids, events) = ids.into_iter().zip(events).filter(|(id, _)| !entries.contains(id)).unzip();
        skipped.extend(entries.into_iter().map(|id| (id, bad)));
    }
    let left = db.apply(&events);
    (left, all, events, skipped)
}

/// What [`apply`] returns.
pub(super) type Applied = (Result<(), DbError>, Vec<EventId>, Vec<Event>, Vec<(EventId, SiteId)>);

impl<F: Frontier> Coordinator<F> {
    /// One look at the frontier's quarantine (each reaping tick): counts what it skipped, reports
    /// newly quarantined sites (a `results_incomplete` finding on the site, a warning, a metric),
    /// fails the audits [`judge`] says fail and drops the records no running audit waits for.
    ///
    /// # Errors
    /// The frontier or the database failed; the next tick tries again.
    pub(crate) async fn check_quarantine(&self) -> Result<(), EngineError> {
        let q = self.frontier.quarantine(QUARANTINE_READ).await?;
        let m = shoal_metrics::metrics();
        m.events_quarantined.inc_by(q.entries);
        let now = UnixMs::from(std::time::SystemTime::now());
        let (verdict, fresh) = {
            let mut seen = lock_seen(&self.quarantine_seen);
            seen.retain(|site, _| q.sites.iter().any(|s| s.site == *site));
            let fresh: Vec<SiteId> = q.sites.iter().filter(|s| !seen.contains_key(&s.site)).map(|s| s.site).collect();
            for site in &fresh {
                seen.insert(*site, now);
            }
            (judge(&lock_open(&self.open), &q.sites, &seen, now, QUARANTINE_TIMEOUT), fresh)
        };
        let reasons: HashMap<SiteId, &str> = q.sites.iter().map(|s| (s.site, s.reason.as_str())).collect();
        for (audit, sites, fails) in verdict.audits {
            let mut described = Vec::new();
            if !fails && !sites.iter().any(|s| fresh.contains(s)) {
                continue;
            }
            for site in &sites {
                let reason = reasons.get(site).copied().unwrap_or_default();
                let start = self.read({
                    let site = *site;
                    move |db| db.site(site)
                });
                let url = start.await?.map(|s| s.start_url).unwrap_or_default();
                if fresh.contains(site) {
                    m.sites_quarantined.inc();
                    tracing::warn!(audit = %audit, site = %site, url, reason, "a site's state in the frontier cannot be read; the site is quarantined");
                    let detail =
                        cap(&format!("its crawl state could not be read and its crawl was given up: {reason}"));
                    let finding = Event::Finding(Finding::new(audit, *site, Code::ResultsIncomplete, &url, detail));
                    self.write(move |db| db.apply(&[finding])).await?;
                }
                described.push(format!("site {site} ({url}): {reason}"));
            }
            if fails {
                let why = cap(&format!("its state in the frontier could not be read: {}", described.join("; ")));
                self.fail(audit, why).await?;
            }
        }
        let mut release = Vec::new();
        for site in verdict.stray {
            let audit = self.read(move |db| db.site(site)).await?.map(|s| s.audit);
            // An ended audit's `forget` drops its quarantined sites with their records.
            if audit.is_none_or(|a| !lock_set(&self.forgetting).contains(&a)) {
                release.push(site);
            }
        }
        if !release.is_empty() {
            tracing::info!(sites = release.len(), "dropping quarantine records no running audit waits for");
            self.frontier.release_quarantine(&release).await?;
        }
        Ok(())
    }

    /// Ends a running audit `failed` with `reason`: its queues are dropped, what was crawled is
    /// kept, and the frontier forgets it (its quarantined sites with it).
    pub(super) async fn fail(&self, audit: AuditId, reason: String) -> Result<(), EngineError> {
        if let Err(e) = self.frontier.cancel(audit).await {
            tracing::warn!(audit = %audit, error = %e, "could not drop a failed audit's queues; forgetting it anyway");
        }
        let why = reason.clone();
        let now = UnixMs::from(std::time::SystemTime::now());
        self.write(move |db| db.fail_audit(audit, &why, now)).await?;
        lock_open(&self.open).remove(&audit);
        self.admission.remove(audit);
        self.changed.notify_waiters();
        shoal_metrics::metrics().audits_failed.inc();
        tracing::error!(audit = %audit, reason, status = AuditStatus::Failed.as_str(), "audit failed");
        self.forget(audit).await;
        Ok(())
    }
}

/// `s` cut to at most [`REASON_MAX`] characters.
fn cap(s: &str) -> String {
    match s.char_indices().nth(REASON_MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

fn lock_seen(m: &std::sync::Mutex<HashMap<SiteId, UnixMs>>) -> std::sync::MutexGuard<'_, HashMap<SiteId, UnixMs>> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(site: u64) -> QuarantinedSite {
        QuarantinedSite { site: SiteId(site), since: UnixMs(1), reason: format!("site {site}: queued = \"x\"") }
    }

    #[test]
    fn an_audit_fails_when_nothing_else_is_left_or_after_the_timeout() {
        let open: HashMap<AuditId, HashSet<SiteId>> = HashMap::from([
            (AuditId(1), HashSet::from([SiteId(10)])),
            (AuditId(2), HashSet::from([SiteId(20), SiteId(21)])),
            (AuditId(3), HashSet::from([SiteId(30)])),
        ]);
        let t0 = UnixMs(1_000_000);
        let timeout = Duration::from_secs(600);
        let seen = HashMap::from([(SiteId(10), t0), (SiteId(20), t0), (SiteId(99), t0)]);
        let v = judge(&open, &[q(10), q(20), q(99)], &seen, t0, timeout);
        // Audit 1 has nothing else left: it fails now. Audit 2 goes on with site 21.
        assert_eq!(v.audits, vec![(AuditId(1), vec![SiteId(10)], true), (AuditId(2), vec![SiteId(20)], false)]);
        assert_eq!(v.stray, vec![SiteId(99)], "no running audit waits for it");
        // Just before the timeout audit 2 still goes on; at it, it fails.
        let v = judge(&open, &[q(20)], &seen, UnixMs(t0.0 + 599_999), timeout);
        assert_eq!(v.audits, vec![(AuditId(2), vec![SiteId(20)], false)]);
        let v = judge(&open, &[q(20)], &seen, UnixMs(t0.0 + 600_000), timeout);
        assert_eq!(v.audits, vec![(AuditId(2), vec![SiteId(20)], true)]);
        // Both its open sites quarantined: it fails at once.
        let v = judge(&open, &[q(21), q(20)], &seen, t0, timeout);
        assert_eq!(v.audits, vec![(AuditId(2), vec![SiteId(21), SiteId(20)], true)]);
        // A site not seen before counts from now.
        let v = judge(&open, &[q(21)], &HashMap::new(), UnixMs(t0.0 + 10_000_000), timeout);
        assert_eq!(v.audits, vec![(AuditId(2), vec![SiteId(21)], false)]);
    }

    #[test]
    fn entries_naming_a_site_the_database_does_not_hold_are_skipped_and_the_rest_applied() {
        let mut db = AuditDb::open(std::path::Path::new(":memory:")).expect("an in-memory database");
        let audit = db.create_audit("{}", UnixMs(1)).expect("audit");
        let other = db.create_audit("{}", UnixMs(1)).expect("audit");
        let site = db.add_site(audit, "http://a.test/").expect("site");
        let theirs = db.add_site(other, "http://b.test/").expect("site");
        let note = |s: SiteId, a: AuditId, detail: &str| {
            Event::Finding(Finding::new(a, s, Code::TitleMissing, "http://a.test/x", detail))
        };
        let id = |i: u32| EventId(format!("{i}-0"));
        // Entry 2 names a site nobody has, entry 3 (two events) one of another audit under this
        // audit's id: each is skipped whole; entries 1 and 4 are stored.
        let ids = vec![id(1), id(2), id(3), id(3), id(4)];
        let events = vec![
            note(site, audit, "one"),
            Event::SiteDone { audit, site: SiteId(999) },
            note(site, audit, "three"),
            note(theirs, audit, "three"),
            note(site, audit, "four"),
        ];
        let (r, acked, applied, skipped) = apply(&mut db, ids.clone(), events);
        r.expect("the rest is stored");
        assert_eq!(acked, ids, "every entry is acknowledged");
        let details: Vec<String> = applied
            .iter()
            .filter_map(|e| match e {
                Event::Finding(f) => Some(f.detail.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(details, ["one", "four"]);
        let mut skipped: Vec<(EventId, SiteId)> = skipped;
        skipped.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(skipped, vec![(id(2), SiteId(999)), (id(3), theirs)]);
        assert_eq!(db.audit(audit).expect("read").expect("exists").findings, 2);
    }

    #[test]
    fn reasons_are_cut_on_a_character_boundary() {
        assert_eq!(cap("short"), "short");
        let long = "ä".repeat(REASON_MAX + 5);
        assert_eq!(cap(&long).chars().count(), REASON_MAX + 1);
    }
}
