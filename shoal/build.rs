//! Names the commit `shoal --version` prints (`cli::VERSION`), as `SHOAL_BUILD_COMMIT`:
//!
//! 1. `git rev-parse --short=12 HEAD` of this repository, when the workspace is a git checkout;
//! 2. else the `SHOAL_COMMIT` environment variable, when set (a Docker build: .git is not in the
//!    build context, so deploy/Dockerfile takes the commit as a build argument);
//! 3. else `unknown` (a source tarball).
//!
//! Why git is kept inside the workspace (`GIT_CEILING_DIRECTORIES`): a Shoal source tree unpacked
//! inside some other repository (a vendored copy, a monorepo, a build directory under a home kept
//! in git) must not print that repository's commit as its own.

use std::path::{Path, PathBuf};
use std::process::Command;

// The rule for SHOAL_COMMIT, shared with the library (whose unit tests check it).
#[path = "src/commit.rs"]
mod commit;
use commit::SHORT;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    // The workspace root: this crate's parent directory.
    let root = manifest.parent().map_or_else(|| manifest.clone(), Path::to_path_buf);
    let mut lines = vec!["cargo:rerun-if-env-changed=SHOAL_COMMIT".to_owned()];
    let commit = match git_commit(&root) {
        Some((commit, watched)) => {
            lines.extend(watched.iter().map(|p| format!("cargo:rerun-if-changed={}", p.display())));
            commit
        }
        None => {
            // Without a repository there is no file whose change means a new commit. Why still a
            // rerun-if-changed line: with none at all Cargo reruns this script whenever any file
            // of the crate changes.
            lines.push("cargo:rerun-if-changed=build.rs".to_owned());
            from_env().unwrap_or_else(|| "unknown".to_owned())
        }
    };
    lines.push(format!("cargo:rustc-env=SHOAL_BUILD_COMMIT={commit}"));
    // Cargo reads a build script's standard output (clippy's print_stdout spares build scripts).
    for line in lines {
        println!("{line}");
    }
}

/// `SHOAL_COMMIT`, checked by the rule in `src/commit.rs`; a bad value stops the build with its
/// message.
fn from_env() -> Option<String> {
    let value = std::env::var("SHOAL_COMMIT").ok()?;
    commit::from_env_value(&value).unwrap_or_else(|e| panic!("{e}"))
}

/// The commit of the repository whose top level is `root`, and the files whose change means a
/// new commit: HEAD, the branch it points to (or the directory the branch will be created in,
/// when it is packed), packed-refs; only those that exist, since Cargo reruns the script every
/// time for a path that does not.
fn git_commit(root: &Path) -> Option<(String, Vec<PathBuf>)> {
    let ceiling = root.parent().unwrap_or(root);
    let git = |args: &[&str]| -> Option<String> {
        let out =
            Command::new("git").args(args).current_dir(root).env("GIT_CEILING_DIRECTORIES", ceiling).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        out.status.success().then(|| text.trim().to_owned())
    };
    // The repository must be this workspace itself, not one that merely contains it.
    let top = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?);
    if top.canonicalize().ok()? != root.canonicalize().ok()? {
        return None;
    }
    let commit = git(&["rev-parse", &format!("--short={SHORT}"), "HEAD"])?;
    let path = |p: &str| git(&["rev-parse", "--git-path", p]).map(|p| root.join(p));
    let mut watched = Vec::new();
    watched.extend(path("HEAD"));
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(file) = path(&branch)
    {
        match file.exists() {
            true => watched.push(file),
            false => watched.extend(file.parent().map(Path::to_path_buf)),
        }
    }
    watched.extend(path("packed-refs"));
    watched.retain(|p| p.exists());
    Some((commit, watched))
}
