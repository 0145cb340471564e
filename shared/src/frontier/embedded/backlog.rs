//! How far the crawl may run ahead of the audit database.
//!
//! Every completion publishes its page records and findings as events, which the engine reads in
//! batches and writes to the audit database. On a fast crawl or a slow disk the events not yet
//! read would grow without bound, and with them the process's memory. Past
//! [`MAX_UNREAD_EVENTS`], claims answer `Wait` (completions are always taken): the workers pause
//! for [`BACKLOG_WAIT`] and the writer catches up. The Redis back end keeps its events in Redis'
//! stream instead, not in the process.

use super::State;
use std::time::Duration;

/// Events published and not yet read past which claims wait: two of the engine's batches of
/// 1,000 (one being written, one ready).
pub(super) const MAX_UNREAD_EVENTS: u64 = 2_000;

/// How long a claim refused for the backlog asks the worker to wait.
pub(super) const BACKLOG_WAIT: Duration = Duration::from_millis(10);

impl State {
    /// Whether more events wait to be read than [`MAX_UNREAD_EVENTS`].
    pub(super) fn backlogged(&self) -> bool {
        self.next_event.saturating_sub(self.delivered_up_to) > MAX_UNREAD_EVENTS
    }
}
