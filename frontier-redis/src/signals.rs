//! Applying what an answer told about its server (issue 17): the latency guard's sample, a stated
//! quota's gap, a hold until Retry-After, in one atomic step (`lua/signals.lua`).

use super::{RedisFrontier, first_word, int_at, store};
use redis::Value;
use shoal_shared::frontier::{FrontierError, Lease};
use shoal_shared::latency::{GuardChange, GuardMove, ServerSignals};
use shoal_shared::time::UnixMs;

impl RedisFrontier {
    /// Applies what an answer told about its server to the host's pace (`lua/signals.lua`), before
    /// the completion schedules the lane; the latency guard's change of level, if any.
    pub(crate) async fn signals(
        &self,
        lease: &Lease,
        s: &ServerSignals,
        now: UnixMs,
    ) -> Result<Option<GuardChange>, FrontierError> {
        let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let mut inv = self.scripts.signals.call(self.keys.prefix());
        inv.arg(now.0)
            .arg(lease.host.as_str())
            .arg(opt(s.response_ms.map(u64::from)))
            .arg(opt(s.quota_gap_ms.map(u64::from)))
            .arg(opt(s.hold_until.map(|t| t.0)));
        let mut conn = self.conn.clone();
        let r: Vec<Value> = inv.invoke_async(&mut conn).await.map_err(store("signals"))?;
        let moved = match first_word(&r).as_deref() {
            Some("s") => GuardMove::Slowed,
            Some("r") => GuardMove::Restored,
            Some("q") => GuardMove::Quota,
            _ => return Ok(None),
        };
        let n = |i| u32::try_from(int_at(&r, i)).unwrap_or(0);
        Ok(Some(GuardChange { moved, level: u8::try_from(n(1)).unwrap_or(0), recent_ms: n(2), baseline_ms: n(3) }))
    }
}
