//! Reading the events stream and acknowledging it, and quarantining what cannot be read.
//!
//! Why quarantine: anyone who can write to the deployment's Redis keys can append to the stream,
//! and a bug or a half-written value can too. An entry that does not decode used to fail its whole
//! batch: the batch's real entries stayed pending, unapplied, while newer ones were read, so an
//! audit could end `done` without them; after a restart the coordinator read the bad entry first,
//! forever. Now each entry is read part by part ([`crate::stream::Entry::read`]): what decodes is
//! delivered, what does not is logged (a warning naming the entry), counted
//! ([`Frontier::quarantine`](shoal_shared::frontier::Frontier::quarantine), the coordinator's
//! `shoal_events_quarantined_total`) and, where the entry names its audit, reported on the site as
//! a `results_incomplete` finding delivered with the entry's other events. An entry with nothing
//! left to deliver is acknowledged (and deleted) at once; the others are acknowledged with their
//! batch, as ever. Nothing is read twice and nothing waits behind a bad entry.

use crate::stream::{self, Read};
use crate::{RedisFrontier, decode, store};
use redis::{RedisError, Value};
use shoal_shared::finding::{Code, Finding};
use shoal_shared::frontier::{EventId, FrontierError, SiteInfo};
use shoal_shared::record::Event;
use std::sync::atomic::Ordering;

use crate::keys::EVENTS_GROUP;

/// Characters of a quarantined entry's problems kept in its finding and log line (an rmp error can
/// quote what it read, and what it read may be anything).
const PROBLEMS_MAX: usize = 400;

impl RedisFrontier {
    pub(crate) async fn read_events_now(&self, max: usize) -> Result<Vec<(EventId, Event)>, FrontierError> {
        // After a restart, first re-read what this consumer had read but not acknowledged; once
        // that is empty, read new entries.
        let mut entries = Vec::new();
        if self.pending_first.load(Ordering::Acquire) {
            entries = self.xreadgroup("0", max).await?;
            if entries.is_empty() {
                self.pending_first.store(false, Ordering::Release);
            }
        }
        if entries.is_empty() {
            entries = self.xreadgroup(">", max).await?;
        }
        let mut out = Vec::with_capacity(entries.len());
        let mut nothing = Vec::new();
        for entry in entries {
            let mut read = entry.read();
            if !read.unreadable.is_empty()
                && let Some(note) = self.quarantine_entry(&entry.id, &read).await
            {
                read.events.push(note);
            }
            let id = EventId(entry.id);
            if read.events.is_empty() {
                // Deleted, empty or wholly unreadable: acknowledged now, or it is read forever.
                nothing.push(id);
                continue;
            }
            // One entry holds a completion's events (field `E`) and its latency notes: each is
            // delivered with the entry's id, and acknowledging it acknowledges them all.
            out.extend(read.events.into_iter().map(|e| (id.clone(), e)));
        }
        if !nothing.is_empty() {
            tracing::debug!(entries = nothing.len(), "acknowledging events stream entries with nothing to deliver");
            self.ack_now(&nothing).await?;
        }
        Ok(out)
    }

    /// Logs and counts an entry with unreadable parts; returns the `results_incomplete` finding
    /// for its site when a readable part names one (the site's start URL, else the part's URL).
    async fn quarantine_entry(&self, id: &str, read: &Read) -> Option<Event> {
        self.quarantined_entries.fetch_add(1, Ordering::Relaxed);
        let problems = cap(&read.unreadable.join("; "), PROBLEMS_MAX);
        let named = read
            .events
            .first()
            .map(|e| (e.site(), event_url(e)))
            .or_else(|| read.task.as_ref().map(|t| ((t.audit, t.site), Some(t.url.as_str().to_owned()))));
        let Some(((audit, site), part_url)) = named else {
            tracing::warn!(id, problems, "quarantined an unreadable entry of the events stream (it names no audit)");
            return None;
        };
        tracing::warn!(id, audit = %audit, site = %site, problems, "quarantined an unreadable part of an events stream entry; the rest of it is applied");
        let url = match self.start_url(site).await {
            Some(info) if info.audit == audit => Some(info.start.as_str().to_owned()),
            _ => part_url,
        }?;
        let detail =
            format!("an entry of the events log ({id}) could not be read whole, what it held is missing: {problems}");
        Some(Event::Finding(Finding::new(audit, site, Code::ResultsIncomplete, url, detail)))
    }

    /// The site's info, if Redis holds a readable one (only asked on the quarantine path).
    async fn start_url(&self, site: shoal_shared::ids::SiteId) -> Option<SiteInfo> {
        let mut c = self.conn.clone();
        let blob: Option<Vec<u8>> =
            redis::cmd("HGET").arg(self.keys.site(site)).arg("info").query_async(&mut c).await.ok()?;
        decode("site info", &blob?).ok()
    }

    async fn xreadgroup(&self, id: &str, max: usize) -> Result<Vec<stream::Entry>, FrontierError> {
        let mut c = self.conn.clone();
        let reply: Result<Value, RedisError> = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(EVENTS_GROUP)
            .arg(&self.consumer)
            .arg("COUNT")
            .arg(max.max(1))
            .arg("STREAMS")
            .arg(self.keys.events())
            .arg(id)
            .query_async(&mut c)
            .await;
        let reply = match reply {
            Ok(v) => v,
            Err(e) if e.code() == Some("NOGROUP") => {
                // The stream and its group are gone: Redis lost its data (restarted empty, flushed,
                // an empty replica promoted). Recreate them and the deployment's settings, and tell
                // the engine, which seeds the live audits again from the audit database.
                tracing::error!("Redis lost the frontier's data (no events group); recreating it");
                self.ensure_group().await?;
                self.publish_settings().await?;
                self.pending_first.store(true, Ordering::Release);
                return Err(FrontierError::Lost("the events stream"));
            }
            Err(e) => {
                // Redis may have delivered the entries (moved them to this consumer's pending list,
                // persisted in its AOF) before the connection broke: the reply is lost, the entries
                // are not. Read the pending list first next time, or they are never applied.
                self.pending_first.store(true, Ordering::Release);
                return Err(store("read events")(e));
            }
        };
        Ok(stream::entries(reply))
    }

    pub(crate) async fn ack_now(&self, ids: &[EventId]) -> Result<(), FrontierError> {
        if ids.is_empty() {
            return Ok(());
        }
        let key = self.keys.events();
        let id_strs: Vec<&str> = ids.iter().map(|i| i.0.as_str()).collect();
        let mut c = self.conn.clone();
        redis::pipe()
            .cmd("XACK")
            .arg(&key)
            .arg(EVENTS_GROUP)
            .arg(&id_strs)
            .ignore()
            .cmd("XDEL")
            .arg(&key)
            .arg(&id_strs)
            .ignore()
            .query_async::<()>(&mut c)
            .await
            .map_err(|e| {
                // Committed but not acknowledged: read again (applying is idempotent), so the
                // engine still sees these events, site-done ones included.
                self.pending_first.store(true, Ordering::Release);
                store("acknowledge events")(e)
            })
    }
}

/// The URL an event is about, if it names one.
fn event_url(e: &Event) -> Option<String> {
    match e {
        Event::Page(p) => Some(p.url.clone()),
        Event::Finding(f) => Some(f.url.clone()),
        Event::Browser(b) => Some(b.url.clone()),
        Event::Render(r) => Some(r.url.clone()),
        Event::SiteDone { .. } | Event::CrawlDone { .. } => None,
    }
}

/// `s` cut to at most `max` characters (on a character boundary), with `…` when cut.
fn cap(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn problems_are_cut_on_a_character_boundary() {
        assert_eq!(super::cap("abc", 5), "abc");
        assert_eq!(super::cap("äöüß", 2), "äö…");
    }
}
