//! `shoal completions` and `shoal man`: the clap definitions of [`crate::cli`] written out for
//! shells (clap_complete) and for `man` (clap_mangen). Generated at run time rather than at build
//! time so a packaged binary carries its own, always for exactly its own flags.

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::{Exit, Failure};
use anyhow::Context as _;
use clap::CommandFactory;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The program's name in completions and pages (what the user types).
const BIN: &str = "shoal";

/// Writes the completion script for one shell to `out`.
///
/// # Errors
/// `out` cannot be written (1).
pub fn completions(args: &CompletionsArgs, out: &mut dyn Write) -> Result<Exit, Failure> {
    // Why into memory first: clap_complete panics when its writer fails, and standard output
    // fails as soon as a reader such as `head` has had enough. The script is some 100 KB.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), BIN, &mut script);
    print(out, &script)
}

/// Writes `bytes` to `out`. A reader that stopped reading (`| head`) is not a failure of ours.
fn print(out: &mut dyn Write, bytes: &[u8]) -> Result<Exit, Failure> {
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(Exit::Ok),
    }
}

/// Writes shoal(1) to `out`, or with `--dir` one page per command into that directory and each
/// page's path to `out`.
///
/// # Errors
/// The directory cannot be created or a page written there (3: the user chose it), or `out`
/// cannot be written (1).
pub fn man(args: &ManArgs, out: &mut dyn Write) -> Result<Exit, Failure> {
    let cmd = command();
    let mut text = Vec::new();
    match &args.dir {
        None => clap_mangen::Man::new(cmd).render(&mut text)?,
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create the man page directory {}", dir.display()))
                .map_err(Failure::input)?;
            let mut written = Vec::new();
            write_pages(cmd, dir, &mut written)
                .with_context(|| format!("cannot write man pages into {}", dir.display()))
                .map_err(Failure::input)?;
            for path in written {
                writeln!(text, "{}", path.display())?;
            }
        }
    }
    print(out, &text)
}

/// The command as the pages describe it. Why `disable_help_subcommand` and `build`: `shoal help`
/// is clap's, not ours, and would get a page of its own; building names each subcommand
/// `shoal-audit`, ..., which its page's title and file name take (clap_mangen's `generate_to`
/// does the same).
fn command() -> clap::Command {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// The page of `cmd` and of each of its visible subcommands, depth first, parents first; the
/// paths written are pushed to `written`. Why not `clap_mangen::generate_to`: it does not say
/// which files it wrote, and the user should see them.
fn write_pages(cmd: clap::Command, dir: &Path, written: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let subcommands: Vec<clap::Command> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned().collect();
    written.push(clap_mangen::Man::new(cmd).generate_to(dir)?);
    for sub in subcommands {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}
