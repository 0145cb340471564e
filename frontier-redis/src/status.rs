//! The connection that answers progress reads (an audit's status, the gauges), apart from the one
//! that carries the frontier's work.
//!
//! Why: a multiplexed connection answers in order, so on the shared one a status read waited
//! behind whatever was sent before it: a pipeline of 500 seed scripts, a read of 1,000 events,
//! their acknowledgement. During a 100,000-site audit (`bench/cpu.py` part C) that made
//! `GET /v1/audits/{id}` take 100-240 ms, where it takes 2 ms once the audit is over. Redis
//! serves its clients in turns, so a read on its own connection waits at most for the command
//! being run. Opened on first use: workers never read progress and keep one connection.

use crate::store;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use shoal_shared::frontier::FrontierError;
use tokio::sync::OnceCell;

/// The progress readers' connection, opened by the first read.
pub(crate) struct StatusConn {
    client: redis::Client,
    config: ConnectionManagerConfig,
    conn: OnceCell<ConnectionManager>,
}

impl StatusConn {
    pub(crate) fn new(client: redis::Client, config: ConnectionManagerConfig) -> StatusConn {
        StatusConn { client, config, conn: OnceCell::new() }
    }

    /// The connection, opened now if this is the first read.
    pub(crate) async fn get(&self) -> Result<ConnectionManager, FrontierError> {
        let open = || self.client.get_connection_manager_with_config(self.config.clone());
        self.conn.get_or_try_init(open).await.cloned().map_err(store("connect for progress reads"))
    }
}
