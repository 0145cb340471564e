//! The answers of the frontier's scripts, read into the frontier's types.

use crate::decode;
use redis::Value;
use shoal_shared::frontier::{Claim, Completed, FrontierError, Lease};
use shoal_shared::ids::{LeaseId, WorkerId};
use shoal_shared::task::Task;
use shoal_shared::time::UnixMs;
use shoal_shared::url::HostKey;
use std::net::IpAddr;

/// A claim script's answer (claim.lua, claim_browser.lua).
pub(crate) fn parse_claim(worker: &WorkerId, r: &[Value]) -> Result<Claim, FrontierError> {
    match first_word(r).as_deref() {
        Some("lease") => {
            let id: u64 = int_at(r, 1);
            let blob = bytes_at(r, 2);
            let host = string_at(r, 3);
            let ip = string_at(r, 4);
            let task: Task = decode("leased task", &blob)?;
            let more = r.get(12..).unwrap_or_default().iter().map(|v| {
                let blob = redis::from_redis_value::<Vec<u8>>(v.clone()).unwrap_or_default();
                decode::<Task>("leased task", &blob)
            });
            let more = more.collect::<Result<Vec<Task>, FrontierError>>()?;
            Ok(Claim::Leased(Box::new(Lease {
                id: LeaseId(id),
                worker: worker.clone(),
                host: HostKey::from_raw(host),
                ip: ip.parse::<IpAddr>().ok(),
                task,
                started_at: UnixMs(int_at(r, 5)),
                deadline: UnixMs(int_at(r, 6)),
                gap_ms: int_at(r, 7),
                resolve: int_at(r, 8) == 1,
                expired: u8::try_from(int_at(r, 9)).unwrap_or(u8::MAX),
                robots_at: UnixMs(int_at(r, 10)),
                more,
            })))
        }
        Some("wait") => Ok(Claim::Wait(UnixMs(int_at(r, 1)))),
        _ => Ok(Claim::Idle),
    }
}

/// The epoch a claim's lease carries (see `epoch` in common.lua), if the answer is a lease.
pub(crate) fn epoch_of(r: &[Value]) -> Option<u64> {
    (first_word(r).as_deref() == Some("lease")).then(|| int_at(r, 11))
}

/// complete.lua's answer: `{'ok', enqueued}` or `{'stale'}`.
pub(crate) fn parse_completed(r: &[Value]) -> Completed {
    match first_word(r).as_deref() {
        Some("ok") => Completed::Applied { enqueued: usize::try_from(int_at(r, 1)).unwrap_or(0) },
        _ => Completed::Stale,
    }
}

pub(crate) fn first_word(r: &[Value]) -> Option<String> {
    r.first().and_then(|v| redis::from_redis_value::<String>(v.clone()).ok())
}

pub(crate) fn int_at(r: &[Value], i: usize) -> u64 {
    r.get(i).and_then(|v| redis::from_redis_value::<i64>(v.clone()).ok()).map_or(0, |n| u64::try_from(n).unwrap_or(0))
}

pub(crate) fn bytes_at(r: &[Value], i: usize) -> Vec<u8> {
    r.get(i).and_then(|v| redis::from_redis_value::<Vec<u8>>(v.clone()).ok()).unwrap_or_default()
}

pub(crate) fn string_at(r: &[Value], i: usize) -> String {
    r.get(i).and_then(|v| redis::from_redis_value::<String>(v.clone()).ok()).unwrap_or_default()
}
