//! The events not yet read, and how far the crawl may run ahead of the audit database.
//!
//! Every completion publishes its page records and findings as events, which the engine reads in
//! batches and writes to the audit database. On a fast crawl or a slow disk the events not yet
//! read would grow without bound, and with them the process's memory. Past
//! [`MAX_UNREAD_EVENTS`], claims answer `Wait` (completions are always taken): the workers pause
//! for [`BACKLOG_WAIT`] and the writer catches up. The Redis back end keeps its events in Redis'
//! stream instead, not in the process.
//!
//! A read hands the events over instead of copying them: the process holds each event once, and
//! a read costs no deep copy of every page record. Nothing is lost by that: the events live only
//! in this process, which a crash ends with them, and the engine keeps a batch it failed to write
//! and writes it again before it reads more.

use crate::frontier::EventId;
use crate::record::Event;
use std::collections::VecDeque;
use std::time::Duration;

/// Events published and not yet read past which claims wait: one of the engine's batches of
/// 1,000. At the cap a read returns a full batch, which the engine follows with the next read at
/// once, so the crawl waits only while the writer is the slower side. The process then holds at
/// most about two batches of events (one unread, one being written): ~2 KB each for a page with
/// its links and headers.
pub(super) const MAX_UNREAD_EVENTS: usize = 1_000;

/// How long a claim refused for the backlog asks the worker to wait.
pub(super) const BACKLOG_WAIT: Duration = Duration::from_millis(10);

/// The events published and not yet read, oldest first, numbered from 1 in publishing order.
#[derive(Debug, Default)]
pub(super) struct Unread {
    queue: VecDeque<Event>,
    /// The number of the next event published.
    next: u64,
}

impl Unread {
    pub(super) fn publish(&mut self, e: Event) {
        self.queue.push_back(e);
        self.next += 1;
    }

    /// Hands over up to `max` events, oldest first.
    pub(super) fn take(&mut self, max: usize) -> Vec<(EventId, Event)> {
        let n = max.min(self.queue.len());
        let first = self.next + 1 - self.queue.len() as u64;
        self.queue.drain(..n).zip(first..).map(|(e, id)| (EventId(id.to_string()), e)).collect()
    }

    /// Whether more events wait to be read than [`MAX_UNREAD_EVENTS`].
    pub(super) fn backlogged(&self) -> bool {
        self.queue.len() > MAX_UNREAD_EVENTS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{AuditId, SiteId};

    fn done(n: u64) -> Event {
        Event::SiteDone { audit: AuditId(1), site: SiteId(n) }
    }

    #[test]
    fn events_are_handed_over_once_in_order_and_numbered_on() {
        let mut u = Unread::default();
        for i in 1..=5 {
            u.publish(done(i));
        }
        let a = u.take(3);
        assert_eq!(a.iter().map(|(id, _)| id.0.as_str()).collect::<Vec<_>>(), ["1", "2", "3"]);
        assert_eq!(a[0].1, done(1));
        u.publish(done(6));
        let b = u.take(10);
        assert_eq!(b.iter().map(|(id, _)| id.0.as_str()).collect::<Vec<_>>(), ["4", "5", "6"]);
        assert_eq!(b[2].1, done(6));
        assert!(u.take(10).is_empty());
    }

    #[test]
    fn backlogged_past_the_cap_of_unread_events() {
        let mut u = Unread::default();
        for i in 0..=MAX_UNREAD_EVENTS as u64 {
            assert!(!u.backlogged());
            u.publish(done(i));
        }
        assert!(u.backlogged());
        u.take(1);
        assert!(!u.backlogged());
    }
}
