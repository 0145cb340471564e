//! The flags of `shoal completions` and `shoal man`: the command line described for shells and
//! for `man`, generated from the clap definitions of this module's parent so they cannot drift from
//! `--help`.

use clap::Args;
use std::path::PathBuf;

/// `shoal completions SHELL`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to write the completion script for (to standard output).
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `shoal man [--dir DIR]`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write one page per command into DIR (shoal.1, shoal-audit.1, shoal-schedule-add.1, ...;
    /// created if missing) and print their paths, instead of writing shoal(1) to standard output.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}
