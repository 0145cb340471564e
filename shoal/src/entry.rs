//! The `shoal` program: parse arguments, set up logging and signals, run.

use crate::cli::LogFormat;
use crate::config::LoadError;
use crate::{Exit, run};
use std::io::{IsTerminal, Write};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

/// Everything `shoal`'s `main` does: load the configuration, set up logging and signals, run the
/// command, and turn its outcome into the documented exit status. In the library so that the test
/// crate can build the very same program as a binary of its own (`shoal-under-test`) without
/// running cargo from inside a test.
pub fn main() -> std::process::ExitCode {
    // Flags over SHOAL_* variables over the --config file over defaults (docs/config.md).
    let cli = match crate::config::load(std::env::args_os()) {
        Ok(loaded) => loaded.cli,
        Err(LoadError::Usage(e)) => e.exit(),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "shoal: error: {e}");
            return std::process::ExitCode::from(Exit::Input as u8);
        }
    };
    init_tracing(cli.log_format);
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    // tokio's own variable, if set, still decides (for a deployment that measured otherwise).
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(async_threads(std::thread::available_parallelism().map_or(1, usize::from)));
    }
    let runtime = match builder.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "shoal: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(Exit::Internal as u8);
        }
    };
    let shutdown = CancellationToken::new();
    let code = runtime.block_on(async {
        // Owned like every task: stopped when the command returns.
        let mut signals = tokio::task::JoinSet::new();
        signals.spawn(watch_signals(shutdown.clone()));
        let code = run(cli, shutdown).await;
        signals.abort_all();
        code
    });
    match code {
        Ok(exit) => std::process::ExitCode::from(exit as u8),
        Err(f) => {
            let _ = writeln!(std::io::stderr(), "shoal: error: {:#}", f.error);
            std::process::ExitCode::from(f.exit as u8)
        }
    }
}

/// Threads that run async tasks: one fewer than the cores, at least one. The remaining core is for
/// the threads that never wait on the network: the audit database's writer (`shoal audit`, the
/// coordinator), large HTML parses, Redis or the test server beside the process. More async
/// threads than that only move tasks between threads: on 2 cores, with one async thread instead
/// of two, `shoal audit` of bench/cpu.py's farm spent 0.75x the CPU and was no slower, and a
/// distributed worker 0.62x, with Redis 0.72x (its commands arrive in fuller batches) and the audit
/// done in 3.0 s instead of 4.1 s.
fn async_threads(cores: usize) -> usize {
    cores.saturating_sub(1).max(1)
}

/// First Ctrl-C or SIGTERM: stop cleanly and keep what was crawled. Second: exit at once.
async fn watch_signals(shutdown: CancellationToken) {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    for round in 0..2 {
        match term.as_mut() {
            Some(t) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = t.recv() => {}
                }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        if round == 0 {
            tracing::warn!(
                "stopping: finishing requests in flight and saving results (press Ctrl-C again to quit at once)"
            );
            shutdown.cancel();
        }
    }
    std::process::exit(i32::from(Exit::Interrupted as u8));
}

fn init_tracing(format: LogFormat) {
    let filter = EnvFilter::try_from_env("SHOAL_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Human => builder.with_ansi(std::io::stderr().is_terminal()).init(),
    }
}

#[cfg(test)]
mod tests {
    use super::async_threads;

    #[test]
    fn one_core_is_left_to_the_threads_that_do_not_await() {
        assert_eq!([0, 1, 2, 3, 8].map(async_threads), [1, 1, 1, 2, 7]);
    }
}
