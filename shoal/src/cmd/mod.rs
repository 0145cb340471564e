//! One module per command that is more than a call into a lower crate.

pub mod audit;
pub mod coordinator;
pub mod manual;
pub mod mcp;
pub mod prune;
pub mod report;
pub mod robots;
pub mod token;
pub mod worker;

/// This process's `/metrics` endpoint (`--metrics-listen`) for `shoal audit` and `shoal worker`:
/// owned by a `JoinSet`, stopped with its own token (a child of the command's), and awaited, so it
/// lives exactly as long as the command.
#[derive(Debug)]
pub struct MetricsEndpoint {
    tasks: tokio::task::JoinSet<std::io::Result<()>>,
    stop: tokio_util::sync::CancellationToken,
}

impl MetricsEndpoint {
    /// Starts serving on `addr`, if one is given.
    pub fn start(addr: Option<std::net::SocketAddr>, stop: tokio_util::sync::CancellationToken) -> MetricsEndpoint {
        let mut tasks = tokio::task::JoinSet::new();
        if let Some(addr) = addr {
            tasks.spawn(shoal_server::api::serve_metrics(addr, stop.clone()));
        }
        MetricsEndpoint { tasks, stop }
    }

    /// Stops it and waits for it, logging how it ended if not cleanly.
    pub async fn stop(mut self) {
        self.stop.cancel();
        while let Some(r) = self.tasks.join_next().await {
            match r {
                Ok(Err(e)) => tracing::error!(error = %e, "metrics endpoint failed"),
                Err(e) => tracing::error!(error = %e, "metrics endpoint task failed"),
                Ok(Ok(())) => {}
            }
        }
    }
}
