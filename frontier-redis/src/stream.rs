//! Reading the events stream: a completion's events and, when its answer moved a latency guard,
//! the change, from which the `slowed_down` note for the site's report is built here.
//!
//! The completion's step (`lua/complete.lua`) cannot encode a finding, so it writes the change as
//! figures (`g`) beside the lease's task (`t`), in the same stream entry as the completion's
//! events: the note is published in the same atomic step as the change, and costs no round trip.

use super::decode;
use redis::Value;
use shoal_shared::frontier::FrontierError;
use shoal_shared::latency::{GuardChange, GuardMove, guard_note};
use shoal_shared::record::Event;
use shoal_shared::task::Task;
use shoal_shared::time::UnixMs;

/// One entry of the events stream.
#[derive(Debug, Default)]
pub(crate) struct Entry {
    /// The stream id.
    pub id: String,
    /// The payloads of its fields `e` (rmp `Event`), in order.
    pub events: Vec<Vec<u8>>,
    /// Its fields `g`: one latency guard's change each, `moved,level,recent_ms,baseline_ms,at,ip`.
    pub guard: Vec<String>,
    /// Its field `t`: the task whose answer moved the guards.
    pub task: Option<Vec<u8>>,
}

impl Entry {
    /// Whether it carries nothing to deliver.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.guard.is_empty()
    }

    /// The `slowed_down` notes of its guard changes (see the module's doc).
    pub fn guard_notes(&self) -> Result<Vec<Event>, FrontierError> {
        if self.guard.is_empty() {
            return Ok(Vec::new());
        }
        let Some(task) = &self.task else {
            return Err(FrontierError::Corrupt {
                what: "a latency note",
                detail: format!("stream entry {}: a guard change without its task", self.id),
            });
        };
        let task: Task = decode("task", task)?;
        let mut out = Vec::with_capacity(self.guard.len());
        for g in &self.guard {
            let (change, at) = parse_change(g).ok_or_else(|| FrontierError::Corrupt {
                what: "a latency note",
                detail: format!("stream entry {}: a guard change that does not parse: {g:?}", self.id),
            })?;
            out.push(Event::Finding(guard_note(&task, &change, at)));
        }
        Ok(out)
    }
}

/// `moved,level,recent_ms,baseline_ms,at,ip` (ip empty for a host's own guard).
fn parse_change(g: &str) -> Option<(GuardChange, UnixMs)> {
    let mut it = g.split(',');
    let moved = match it.next()? {
        "s" => GuardMove::Slowed,
        "r" => GuardMove::Restored,
        "q" => GuardMove::Quota,
        _ => return None,
    };
    let level = it.next()?.parse().ok()?;
    let recent_ms = it.next()?.parse().ok()?;
    let baseline_ms = it.next()?.parse().ok()?;
    let at = UnixMs(it.next()?.parse().ok()?);
    let server = match it.next()? {
        "" => None,
        ip => Some(ip.parse().ok()?),
    };
    Some((GuardChange { moved, level, recent_ms, baseline_ms, server }, at))
}

/// Flattens an XREADGROUP reply into its entries.
pub(crate) fn entries(reply: Value) -> Vec<Entry> {
    let mut out = Vec::new();
    let streams = match reply {
        Value::Array(s) => s,
        Value::Map(m) => m.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        _ => return out,
    };
    for stream in streams {
        let Value::Array(parts) = stream else {
            continue;
        };
        let Some(Value::Array(entries)) = parts.into_iter().nth(1) else {
            continue;
        };
        for entry in entries {
            let Value::Array(mut kv) = entry else {
                continue;
            };
            if kv.len() < 2 {
                continue;
            }
            let fields = kv.pop();
            let id = kv.pop().and_then(|v| redis::from_redis_value::<String>(v).ok()).unwrap_or_default();
            let mut e = Entry { id, ..Entry::default() };
            if let Some(Value::Array(f)) = fields {
                let mut it = f.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    let Ok(k) = redis::from_redis_value::<String>(k) else { continue };
                    let Ok(v) = redis::from_redis_value::<Vec<u8>>(v) else { continue };
                    match k.as_str() {
                        "e" => e.events.push(v),
                        "g" => e.guard.push(String::from_utf8_lossy(&v).into_owned()),
                        "t" => e.task = Some(v),
                        _ => {}
                    }
                }
            }
            out.push(e);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_parse() {
        let (c, at) = parse_change("s,2,3100,200,1764758520000,203.0.113.5").expect("parses");
        assert_eq!((c.moved, c.level, c.recent_ms, c.baseline_ms), (GuardMove::Slowed, 2, 3_100, 200));
        assert_eq!((c.server, at), (Some([203, 0, 113, 5].into()), UnixMs(1_764_758_520_000)));
        let (c, _) = parse_change("q,0,2000,0,1,").expect("parses");
        assert_eq!((c.moved, c.server), (GuardMove::Quota, None));
        assert_eq!(parse_change("x,0,0,0,0,"), None);
        assert_eq!(parse_change("s,1,2,3"), None, "cut short");
        assert_eq!(parse_change("s,1,2,3,4,not an ip"), None);
    }
}
