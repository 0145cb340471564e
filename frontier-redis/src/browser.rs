//! The browser tasks of `--browser-pages` on Redis: a queue of their own (`…:bq`) that only
//! `claim_browser.lua` reads, so a worker started without `--browser` never takes one; page loads
//! to a host are serialised (`blease` on the host) and at least
//! [`BROWSER_MIN_GAP`](shoal_shared::frontier::BROWSER_MIN_GAP) apart, through the host's pace.

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
}
