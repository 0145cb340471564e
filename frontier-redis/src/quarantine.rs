//! The quarantine's records (`…:quarantine`, see `lua/quarantine.lua` and docs/runbook.md): the sites
//! a step took out of the crawl because it could not read their state, for the coordinator, which
//! fails their audits; and the count of unreadable events stream entries (`events.rs`).

use crate::keys::QUARANTINE_SEP;
use crate::{RedisFrontier, store};
use redis::aio::ConnectionLike;
use shoal_shared::frontier::{FrontierError, Quarantine, QuarantinedSite};
use shoal_shared::ids::SiteId;
use shoal_shared::time::UnixMs;
use std::sync::atomic::Ordering;

/// HSCAN's page of the records: (site, `ms reason`) as Redis holds them.
type Records = Vec<(Vec<u8>, Vec<u8>)>;

impl RedisFrontier {
    pub(crate) async fn quarantine_now(&self, max: usize) -> Result<Quarantine, FrontierError> {
        let entries = self.quarantined_entries.swap(0, Ordering::Relaxed);
        let key = self.keys.quarantine();
        let mut c = self.conn.clone();
        let r: Result<(String, Records), redis::RedisError> =
            redis::cmd("HSCAN").arg(&key).arg(0).arg("COUNT").arg(max.max(1)).query_async(&mut c).await;
        let fields = match r {
            Ok((_, fields)) => fields,
            Err(e) if e.code() == Some("WRONGTYPE") => {
                // The record of every quarantine, no audit's: one that is no hash is started anew.
                tracing::warn!(key, "the quarantine record is not a hash; dropping it");
                redis::cmd("DEL").arg(&key).query_async::<()>(&mut c).await.map_err(store("reset quarantine"))?;
                Vec::new()
            }
            Err(e) => return Err(store("read quarantine")(e)),
        };
        let mut sites = Vec::with_capacity(fields.len());
        let mut junk = Vec::new();
        for (field, value) in fields.into_iter().take(max) {
            let Some(site) = std::str::from_utf8(&field).ok().and_then(|f| f.parse().ok()).map(SiteId) else {
                junk.push(field);
                continue;
            };
            let value = String::from_utf8_lossy(&value);
            let (since, reason) = match value.split_once(QUARANTINE_SEP) {
                Some((ms, reason)) => (ms.parse().unwrap_or(0), reason.to_owned()),
                None => (0, value.into_owned()),
            };
            sites.push(QuarantinedSite { site, since: UnixMs(since), reason });
        }
        if !junk.is_empty() {
            tracing::warn!(key, fields = junk.len(), "dropping quarantine records that name no site");
            redis::cmd("HDEL")
                .arg(&key)
                .arg(junk)
                .query_async::<()>(&mut c)
                .await
                .map_err(store("clean quarantine"))?;
        }
        sites.sort_by_key(|s| (s.since, s.site));
        Ok(Quarantine { entries, sites })
    }

    pub(crate) async fn release_quarantine_now(&self, sites: &[SiteId]) -> Result<(), FrontierError> {
        if sites.is_empty() {
            return Ok(());
        }
        let mut c = self.conn.clone();
        let ids: Vec<u64> = sites.iter().map(|s| s.0).collect();
        redis::cmd("HDEL")
            .arg(self.keys.quarantine())
            .arg(ids)
            .query_async::<()>(&mut c)
            .await
            .map_err(store("release quarantine"))
    }

    /// Records `site` as quarantined for `reason` (the first report is kept), as a step would: for
    /// a site whose counts a progress read could not read. Best effort: a failure is logged (the
    /// next read finds the site again).
    pub(crate) async fn quarantine_site<C: ConnectionLike>(&self, c: &mut C, site: SiteId, reason: &str) {
        let now = UnixMs::from(std::time::SystemTime::now());
        let value = format!("{}{QUARANTINE_SEP}{reason}", now.0);
        let r: Result<i64, _> =
            redis::cmd("HSETNX").arg(self.keys.quarantine()).arg(site.0).arg(value).query_async(c).await;
        match r {
            Ok(1) => tracing::warn!(site = %site, reason, "quarantined a site whose counts cannot be read"),
            Ok(_) => {}
            Err(e) => tracing::warn!(site = %site, error = %e, "could not record a quarantined site"),
        }
    }
}
