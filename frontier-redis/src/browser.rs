//! The browser tasks of `--browser-pages` on Redis: a queue of their own (`…:bq`) that only
//! `claim_browser.lua` reads, so a worker started without `--browser` never takes one; page loads
//! to a host are serialised (`blease` on the host) and at least
//! [`BROWSER_MIN_GAP`](shoal_shared::frontier::BROWSER_MIN_GAP) apart, through the host's pace.
//!
//! The workers that claim them announce themselves in `…:bworkers`
//! ([`shoal_shared::frontier::workers`]): plain sorted-set commands, each step one `MULTI`.

use super::{RedisFrontier, encode, store};
use crate::params;
use redis::Value;
use shoal_shared::frontier::{Claim, FrontierError, another_round};
use shoal_shared::ids::{SiteId, WorkerId};
use shoal_shared::task::{Task, TaskKind};
use shoal_shared::time::UnixMs;

impl RedisFrontier {
    pub(crate) async fn claim_browser_now(&self, worker: &WorkerId, now: UnixMs) -> Result<Claim, FrontierError> {
        self.claim_with(&self.scripts.claim_browser, "claim_browser", worker, now).await
    }

    pub(crate) async fn queue_browser_now(
        &self,
        site: SiteId,
        tasks: Vec<Task>,
        now: UnixMs,
    ) -> Result<(), FrontierError> {
        let tasks: Vec<&Task> = tasks.iter().filter(|t| t.site == site && t.kind.is_browser()).collect();
        let mut inv = self.scripts.queue_browser.call(self.keys.prefix());
        let round = if another_round(tasks.iter().copied()) { "r" } else { "" };
        inv.named(&params::QUEUE_BROWSER).set("site", site.0).set("n", tasks.len()).set("round", round).done();
        for t in tasks {
            let render = u8::from(t.kind == TaskKind::Render);
            inv.named(&params::BROWSER_TASK)
                .set("host", t.url.host_key().as_str())
                .set("blob", encode(t))
                .set("render", render)
                .done();
        }
        inv.named(&params::TAIL_NOW).set("now", now.0).done();
        let mut c = self.conn.clone();
        let _: Vec<Value> = inv.invoke_async(&mut c).await.map_err(store("queue_browser"))?;
        Ok(())
    }

    pub(crate) async fn announce_browser_worker_now(
        &self,
        worker: &WorkerId,
        now: UnixMs,
    ) -> Result<(), FrontierError> {
        let key = self.keys.browser_workers();
        let until = self.settings.browser_worker_expiry(now);
        // Why the whole key expires too: it then ends with the last worker, whether or not anyone
        // reads it. Every announcement lasts the same time, so the latest one outlives the others.
        let ttl = u64::try_from(self.settings.browser_worker_ttl().as_millis()).unwrap_or(u64::MAX);
        let mut c = self.conn.clone();
        let () = redis::pipe()
            .atomic()
            .zadd(&key, worker.0.as_str(), until.0)
            .ignore()
            .pexpire(&key, i64::try_from(ttl.max(1)).unwrap_or(i64::MAX))
            .ignore()
            .query_async(&mut c)
            .await
            .map_err(store("announce a browser worker"))?;
        Ok(())
    }

    pub(crate) async fn withdraw_browser_worker_now(&self, worker: &WorkerId) -> Result<(), FrontierError> {
        let mut c = self.conn.clone();
        let () = redis::cmd("ZREM")
            .arg(self.keys.browser_workers())
            .arg(worker.0.as_str())
            .query_async(&mut c)
            .await
            .map_err(store("withdraw a browser worker"))?;
        Ok(())
    }

    pub(crate) async fn browser_workers_now(&self, now: UnixMs) -> Result<usize, FrontierError> {
        let key = self.keys.browser_workers();
        let mut c = self.conn.clone();
        // Live: expires after `now`, as in the embedded registry; the rest is dropped here.
        let (live,): (usize,) = redis::pipe()
            .atomic()
            .zrembyscore(&key, "-inf", now.0)
            .ignore()
            .zcard(&key)
            .query_async(&mut c)
            .await
            .map_err(store("count the browser workers"))?;
        Ok(live)
    }
}
