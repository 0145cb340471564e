//! `shoal completions`, `shoal man` and `shoal --version` (issue 42): what a packager installs and
//! what a bug report quotes, checked against the clap definitions they are generated from.

use crate::support::{shoal, stderr, stdout};
use clap::CommandFactory;
use shoal::cli::Cli;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every visible subcommand, by name: `audit`, ..., and nested ones as `schedule add`.
fn subcommands() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, path: &[String], all: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut p = path.to_vec();
            p.push(sub.get_name().to_owned());
            all.push(p.clone());
            walk(sub, &p, all);
        }
    }
    let mut all = Vec::new();
    walk(&Cli::command(), &[], &mut all);
    assert!(all.len() > 15, "the command line has its subcommands: {all:?}");
    all
}

/// Whether a program is installed (then its check runs; the tests install nothing).
fn installed(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success())
}

fn completions(shell: &str) -> String {
    let out = shoal(&["completions", shell]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn bash_completion_parses_and_names_every_subcommand() {
    let script = completions("bash");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("shoal.bash");
    std::fs::write(&file, &script).expect("write");
    let check = Command::new("bash").arg("-n").arg(&file).output().expect("run bash -n");
    assert!(check.status.success(), "bash -n: {}", String::from_utf8_lossy(&check.stderr));
    assert!(script.contains("complete -F _shoal"), "the script registers itself for `shoal`");
    for path in subcommands() {
        // bash's script switches on `PARENT,NAME)`, e.g. `shoal__subcmd__schedule,add)`.
        let case = format!(",{})", path.last().expect("a name"));
        assert!(script.contains(&case), "bash completion lacks `{}`", path.join(" "));
    }
    assert!(script.contains("--max-pages"), "flags are completed too");
    // What a user gets at a prompt: bash's completion function run on partial words.
    let complete = |words: &str| {
        let w: Vec<&str> = words.split(' ').collect();
        let (cword, cur, prev) = (w.len() - 1, w[w.len() - 1], w[w.len() - 2]);
        // bash calls the function with the command, the word being completed and the one before.
        let run = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; _shoal shoal {cur} {prev}; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file.display()
        );
        let out = Command::new("bash").args(["-c", &run]).output().expect("run bash");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(complete("shoal sch"), "schedule\n");
    assert_eq!(complete("shoal schedule a"), "add\n");
    assert!(complete("shoal audit --max-p").contains("--max-pages"), "{}", complete("shoal audit --max-p"));
}

#[test]
fn zsh_and_fish_completions_name_every_subcommand() {
    for shell in ["zsh", "fish"] {
        let script = completions(shell);
        assert!(!script.trim().is_empty(), "{shell}: empty");
        for path in subcommands() {
            let name = path.last().expect("a name");
            assert!(script.contains(name.as_str()), "{shell} completion lacks `{}`", path.join(" "));
        }
        // The shells' own syntax check, where the shell is installed.
        if installed(shell) {
            let dir = tempfile::tempdir().expect("tempdir");
            let file = dir.path().join(format!("shoal.{shell}"));
            std::fs::write(&file, &script).expect("write");
            let check = Command::new(shell).arg("-n").arg(&file).output().expect("run the shell");
            assert!(check.status.success(), "{shell} -n: {}", String::from_utf8_lossy(&check.stderr));
        }
    }
    assert!(completions("zsh").starts_with("#compdef shoal"), "zsh loads it from fpath by this line");
    assert!(completions("fish").contains("complete -c shoal"), "fish completes the `shoal` command");
}

#[test]
fn an_unknown_shell_is_refused_with_the_choices() {
    let out = shoal(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("bash") && stderr(&out).contains("zsh") && stderr(&out).contains("fish"),
        "{}",
        stderr(&out)
    );
}

/// A roff page's lines: the title first (after clap_mangen's definition of the quote string, the
/// `.ie`/`.el` lines), then the sections.
fn check_page(page: &str, title: &str) {
    let first = page.lines().find(|l| !l.starts_with(".ie ") && !l.starts_with(".el ")).unwrap_or_default();
    assert!(first.starts_with(&format!(".TH {title} 1 ")), "{title}: first line `{first}`");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH VERSION"] {
        assert!(page.contains(section), "{title} lacks {section}");
    }
    if installed("groff") {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("page.1");
        std::fs::write(&file, page).expect("write");
        // -ww: every warning; -z: no output, only the parse.
        let out = Command::new("groff").args(["-man", "-Tutf8", "-ww", "-z"]).arg(&file).output().expect("run groff");
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "groff on {title}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn man_page_has_its_sections_and_names_every_subcommand() {
    let out = shoal(&["man"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = stdout(&out);
    check_page(&page, "shoal");
    assert!(page.contains(".SH OPTIONS") && page.contains("\\-\\-log\\-format"), "the global options are listed");
    assert!(page.contains(".SH SUBCOMMANDS"), "the subcommands are listed");
    for path in subcommands().iter().filter(|p| p.len() == 1) {
        // Each is listed as a reference to its own page, shoal-audit(1).
        assert!(page.contains(&format!("shoal\\-{}(1)", path[0])), "shoal(1) lacks `{}`", path[0]);
    }
}

#[test]
fn man_dir_writes_a_page_per_subcommand() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A directory that does not exist yet is created.
    let target = dir.path().join("man1");
    let out = shoal(&["man", "--dir", target.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = |name: &str| std::fs::read_to_string(target.join(format!("{name}.1"))).unwrap_or_default();
    check_page(&page("shoal"), "shoal");
    let mut expected = vec![target.join("shoal.1")];
    for path in subcommands() {
        let name = format!("shoal-{}", path.join("-"));
        let text = page(&name);
        assert!(!text.is_empty(), "no page {name}.1");
        check_page(&text, &name);
        expected.push(target.join(format!("{name}.1")));
    }
    assert!(page("shoal-audit").contains("\\-\\-max\\-pages"), "a command's page lists its options");
    assert!(page("shoal-audit").contains("SHOAL_MAX_PAGES"), "and the variable each reads");
    // It prints what it wrote, and wrote nothing else.
    let mut printed: Vec<PathBuf> = stdout(&out).lines().map(PathBuf::from).collect();
    printed.sort();
    expected.sort();
    assert_eq!(printed, expected);
    assert_eq!(std::fs::read_dir(&target).expect("read").count(), expected.len());
}

#[test]
fn man_dir_that_cannot_be_made_is_an_input_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").expect("write");
    let out = shoal(&["man", "--dir", file.join("man1").to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("a-file"), "{}", stderr(&out));
}

/// `shoal --version` names the commit: 12 hex digits (or `unknown` when built outside git without
/// SHOAL_COMMIT), and in a git checkout of this repository the very commit checked out.
#[test]
fn version_names_the_commit() {
    let out = shoal(&["--version"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let prefix = format!("shoal {} (commit ", env!("CARGO_PKG_VERSION"));
    let commit = text
        .trim_end()
        .strip_prefix(&prefix)
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or_else(|| panic!("`{text}` is not `{prefix}COMMIT)`"));
    let hex12 = commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    assert!(hex12 || commit == "unknown", "commit `{commit}`");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let head = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).current_dir(&root).output();
    let top = Command::new("git").args(["rev-parse", "--show-toplevel"]).current_dir(&root).output();
    if let (Ok(head), Ok(top)) = (head, top)
        && head.status.success()
        && Path::new(String::from_utf8_lossy(&top.stdout).trim()).canonicalize().ok() == root.canonicalize().ok()
    {
        assert_eq!(commit, String::from_utf8_lossy(&head.stdout).trim(), "the commit checked out");
    }
    // Subcommands say the same (`propagate_version`).
    let sub = stdout(&shoal(&["worker", "--version"]));
    assert!(sub.contains(&format!("(commit {commit})")), "{sub}");
}
