//! Reading the events stream: a completion's events and, when its answer moved a latency guard,
//! the change, from which the `slowed_down` note for the site's report is built here.
//!
//! The completion's step (`lua/complete.lua`) cannot encode a finding, so it writes the change as
//! figures (`g`) beside the lease's task (`t`), in the same stream entry as the completion's
//! events: the note is published in the same atomic step as the change, and costs no round trip.
//!
//! An entry is read part by part ([`Entry::read`]): what does not decode is named, never fatal
//! (`events.rs` quarantines it).

use super::decode;
use redis::Value;
use shoal_shared::latency::{GuardChange, GuardMove, guard_note};
use shoal_shared::record::Event;
use shoal_shared::task::Task;
use shoal_shared::time::UnixMs;

/// A completion's events as the one argument its step publishes (field `E`): each rmp `Event`
/// behind its length, a 4-byte little-endian count. The script passes one string on to the stream
/// however many pages a batch brought; with a field per event it made a Lua string and two `XADD`
/// arguments of each (docs/redis.md, "Cost per request").
pub(crate) fn pack_events(events: &[Event]) -> Vec<u8> {
    let mut out = Vec::with_capacity(events.len() * 512);
    for e in events {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        // Encoding our own plain data types into a Vec cannot fail (see `encode`).
        let _ = rmp_serde::encode::write_named(&mut out, e);
        let len = u32::try_from(out.len() - at - 4).unwrap_or(u32::MAX);
        out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }
    out
}

/// The events of a field `E` (see [`pack_events`]); `None` when the framing does not add up.
fn unpack_events(mut b: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let (len, rest) = b.split_first_chunk::<4>()?;
        let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
        if len > rest.len() {
            return None;
        }
        let (event, rest) = rest.split_at(len);
        out.push(event.to_vec());
        b = rest;
    }
    Some(out)
}

/// One entry of the events stream.
#[derive(Debug, Default)]
pub(crate) struct Entry {
    /// The stream id.
    pub id: String,
    /// Its events (rmp `Event`), in order: those of its field `E` (a completion's, packed) and of
    /// its fields `e` (one each: a site's end, a limit reached, an earlier version's completions).
    pub events: Vec<Vec<u8>>,
    /// A field `E` whose framing did not add up.
    pub malformed: bool,
    /// Its fields `g`: one latency guard's change each, `moved,level,recent_ms,baseline_ms,at,ip`.
    pub guard: Vec<String>,
    /// Its field `t`: the task whose answer moved the guards.
    pub task: Option<Vec<u8>>,
    /// Fields no version of Shoal writes (ignored: a later version may add some).
    pub unknown: usize,
}

/// What could be read of one entry, part by part.
#[derive(Debug, Default)]
pub(crate) struct Read {
    /// Its events that decode, then the `slowed_down` notes of its guard changes, in order.
    pub events: Vec<Event>,
    /// What could not be read, one line each (empty for a sound entry).
    pub unreadable: Vec<String>,
    /// The task of its guard changes, when that decodes (it names the audit when no event does).
    pub task: Option<Task>,
}

impl Entry {
    /// Reads it part by part: each event that decodes is kept, and each part that does not (an
    /// event, the framing of `E`, a guard change or its task) is named in [`Read::unreadable`], so
    /// one bad part costs that part and not the entry, and never its batch (see `events.rs`).
    pub fn read(&self) -> Read {
        let mut r = Read::default();
        if self.malformed {
            r.unreadable.push("its field E (the lengths of its events do not add up)".to_owned());
        }
        for (i, b) in self.events.iter().enumerate() {
            match decode::<Event>("event", b) {
                Ok(e) => r.events.push(e),
                Err(e) => r.unreadable.push(format!("event {}: {e}", i + 1)),
            }
        }
        if !self.guard.is_empty() {
            match self.task.as_deref().map(|t| decode::<Task>("task", t)) {
                None => r.unreadable.push("a latency note without its task (field t)".to_owned()),
                Some(Err(e)) => r.unreadable.push(format!("the task of its latency notes: {e}")),
                Some(Ok(task)) => {
                    for g in &self.guard {
                        match parse_change(g) {
                            Some((change, at)) => r.events.push(Event::Finding(guard_note(&task, &change, at))),
                            None => r.unreadable.push(format!("a latency note that does not parse: {g:?}")),
                        }
                    }
                    r.task = Some(task);
                }
            }
        }
        if r.events.is_empty() && r.unreadable.is_empty() && self.unknown > 0 {
            r.unreadable.push(format!("no field Shoal writes ({} others)", self.unknown));
        }
        r
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
                    let (Ok(k), Ok(v)) = (redis::from_redis_value::<String>(k), redis::from_redis_value::<Vec<u8>>(v))
                    else {
                        e.unknown += 1;
                        continue;
                    };
                    match k.as_str() {
                        "e" => e.events.push(v),
                        "E" => match unpack_events(&v) {
                            Some(events) => e.events.extend(events),
                            None => e.malformed = true,
                        },
                        "g" => e.guard.push(String::from_utf8_lossy(&v).into_owned()),
                        "t" => e.task = Some(v),
                        _ => e.unknown += 1,
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

    #[test]
    fn packed_events_come_apart_as_they_were_encoded() {
        let events: Vec<Event> = (0..3)
            .map(|i| {
                let t = task(i);
                Event::Finding(guard_note(
                    &t,
                    &GuardChange { moved: GuardMove::Slowed, level: 1, recent_ms: i, baseline_ms: 2, server: None },
                    UnixMs(5),
                ))
            })
            .collect();
        let packed = pack_events(&events);
        let parts = unpack_events(&packed).expect("well framed");
        let want: Vec<Vec<u8>> = events.iter().map(crate::encode).collect();
        assert_eq!(parts, want);
        assert_eq!(unpack_events(&[]), Some(Vec::new()));
        assert!(pack_events(&[]).is_empty());
        // Cut anywhere inside, the framing no longer adds up (or ends on a frame's boundary).
        for cut in 1..packed.len() {
            let got = unpack_events(&packed[..cut]);
            assert!(got.as_ref().is_none_or(|g| g.len() < 3 && g[..] == want[..g.len()]), "cut at {cut}: {got:?}");
        }
        assert_eq!(unpack_events(&[9, 0, 0, 0, 1]), None, "a length past the end");
        assert_eq!(unpack_events(&[1, 0]), None, "half a length");
    }

    /// A task to hang a note on.
    fn task(i: u32) -> Task {
        use shoal_shared::ids::{AuditId, SiteId};
        use shoal_shared::task::{FoundVia, TaskKind};
        use shoal_shared::url::NormalizedUrl;
        let url = NormalizedUrl::parse(&format!("http://a.test/{i}")).expect("url");
        Task::new(AuditId(1), SiteId(1), url, TaskKind::Page, 1, FoundVia::Start)
    }

    #[test]
    fn an_entry_with_packed_events_and_single_ones_keeps_their_order() {
        let e = |b: &[u8]| Value::BulkString(b.to_vec());
        let packed = [&[1u8, 0, 0, 0, 0xa1][..], &[2, 0, 0, 0, 0xa2, 0xa3]].concat();
        let fields = vec![e(b"E"), e(&packed), e(b"e"), e(&[0xa4])];
        let entry = Value::Array(vec![e(b"1-0"), Value::Array(fields)]);
        let reply = Value::Array(vec![Value::Array(vec![e(b"events"), Value::Array(vec![entry])])]);
        let got = entries(reply);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].events, vec![vec![0xa1], vec![0xa2, 0xa3], vec![0xa4]]);
        assert!(!got[0].malformed);
        let bad = Value::Array(vec![e(b"2-0"), Value::Array(vec![e(b"E"), e(&[7, 0, 0, 0, 1])])]);
        let got = entries(Value::Array(vec![Value::Array(vec![e(b"events"), Value::Array(vec![bad])])]));
        assert!(got[0].malformed, "{got:?}");
        assert_eq!(got[0].read().unreadable.len(), 1, "{got:?}");
    }
}
