//! The `shoal` binary run as a child process, the one way every test of this crate runs it: none of
//! the test process's own `SHOAL_*` variables reach it (`SHOAL_DB`, `SHOAL_FORMAT`, `SHOAL_OUT`,
//! `SHOAL_CONFIG`, ...), so a test sees only the environment it sets itself.

use std::process::{Command, Output};

/// The `shoal` binary of this build as a command, with every `SHOAL_*` variable of the test
/// process removed.
pub fn command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shoal"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SHOAL_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// Runs `shoal ARGS` with `env` and no other `SHOAL_*` variable.
pub fn shoal_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    command().envs(env.iter().copied()).args(args).output().expect("run the shoal binary")
}

/// Runs `shoal ARGS` with no `SHOAL_*` variable.
pub fn shoal(args: &[&str]) -> Output {
    shoal_with(args, &[])
}

/// Its standard error, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Its standard output, as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
