//! Chromium's processes: started so that they cannot outlive the worker, measured, and ended.
//!
//! Chromium is started by a small `sh` supervisor that leads a process group of its own; Chromium
//! and every process it forks (zygotes, renderers, GPU and network services) stay in that group.
//! The supervisor waits on a pipe whose only writer is the worker: when the worker writes to it,
//! closes it, or dies in any way (SIGKILL and the OOM killer included, since the kernel closes a
//! dead process's pipes), the supervisor's `read` returns and it kills the whole group. Why a
//! supervisor rather than a parent-death signal: `PR_SET_PDEATHSIG` reaches only Chromium's first
//! process, fires when the *thread* that started it ends (a tokio blocking thread does after 10 s
//! idle), and needs `unsafe` code in a `pre_exec` hook, which this workspace forbids.
//!
//! Each Chromium has a profile folder `shoal-chromium-*` in the temporary folder, with a lock
//! file held while its worker lives. A worker that starts a browser first removes every such
//! folder whose lock nobody holds (its worker died), after killing any process still using it.

use std::fs::File;
use std::io::{ErrorKind, Write as _};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use tracing::{debug, info, warn};

/// The profile folders' name prefix, in the temporary folder.
pub const PROFILE_PREFIX: &str = "shoal-chromium-";
/// The lock file inside a profile folder, held (flock) by the worker that owns it.
const LOCK_FILE: &str = ".shoal-owner";
/// Where the supervisor sends Chromium's standard error, inside the profile folder.
const LOG_FILE: &str = ".chromium-stderr";
/// A profile folder without a lock file is left alone this long after it was made: it may be one
/// being created right now by another worker.
const UNLOCKED_GRACE: Duration = Duration::from_secs(600);
/// Entries of the temporary folder looked at in one sweep.
const MAX_SWEEP_ENTRIES: usize = 100_000;
/// Bytes of Chromium's standard error quoted when it fails to start.
const LOG_TAIL: u64 = 2_000;

/// The supervisor. `$1` is the log file, the rest is Chromium's command line. Chromium runs in
/// the background, in this shell's process group (a non-interactive shell has no job control);
/// `read` returns when the worker writes a line or its end of the pipe closes, and `kill 0`
/// then ends every process of the group, this shell included.
const SUPERVISOR: &str = r#"log=$1
shift
"$@" </dev/null >/dev/null 2>"$log" &
read -r _ignored
kill -KILL 0
"#;

/// One Chromium's processes and profile: dropping it ends them (the supervisor's pipe closes).
#[derive(Debug)]
pub(crate) struct Chromium {
    supervisor: Child,
    /// The supervisor's pipe; `None` once the group was told to end.
    pipe: Option<ChildStdin>,
    pgid: i32,
    profile: Profile,
    /// The group's processes as last listed, and when: the memory guard lists `/proc` again at
    /// most every [`MEMBERS_MAX_AGE`] (listing reads every process's `stat`).
    members: (Vec<i32>, Option<Instant>),
}

/// How long the memory guard uses a list of Chromium's processes before listing them again: a
/// process started since is counted at the next listing.
const MEMBERS_MAX_AGE: Duration = Duration::from_secs(1);

/// Why Chromium could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// Its profile folder or the folder's lock file could not be made.
    #[error("{what}: {source}")]
    Profile {
        /// Which step.
        what: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The supervising shell could not be started.
    #[error("starting /bin/sh to supervise Chromium: {0}")]
    Supervisor(#[source] std::io::Error),
    /// Chromium ended before it opened its DevTools port; `log` is the end of what it wrote.
    #[error("Chromium exited at start: {log}")]
    Exited {
        /// The end of Chromium's output.
        log: String,
    },
    /// Chromium did not open its DevTools port in time.
    #[error("Chromium did not open its DevTools port within {} s: {log}", limit.as_secs())]
    NoDevTools {
        /// How long it had.
        limit: Duration,
        /// The end of Chromium's output.
        log: String,
    },
}

/// A profile folder and the lock that says its worker lives.
#[derive(Debug)]
struct Profile {
    dir: tempfile::TempDir,
    _lock: File,
}

impl Profile {
    fn create() -> Result<Profile, StartError> {
        let step = |what| move |source| StartError::Profile { what, source };
        let dir =
            tempfile::Builder::new().prefix(PROFILE_PREFIX).tempdir().map_err(step("temporary profile folder"))?;
        let lock = File::create(dir.path().join(LOCK_FILE)).map_err(step("profile lock file"))?;
        lock.try_lock()
            .map_err(|e| StartError::Profile { what: "locking the new profile folder", source: e.into() })?;
        Ok(Profile { dir, _lock: lock })
    }
}

impl Chromium {
    /// Starts `chromium` with `args` (and `--user-data-dir`, `--remote-debugging-port=0`) under
    /// the supervisor, and waits up to `limit` for its DevTools address.
    pub(crate) fn start(chromium: &Path, args: &[String], limit: Duration) -> Result<(Chromium, String), StartError> {
        let swept = sweep(&std::env::temp_dir());
        if swept > 0 {
            info!(folders = swept, "removed the profile folders of browsers whose worker had died");
        }
        let profile = Profile::create()?;
        let log = profile.dir.path().join(LOG_FILE);
        let mut supervisor = Command::new("/bin/sh")
            .arg("-c")
            .arg(SUPERVISOR)
            .arg("shoal-chromium-supervisor")
            .arg(&log)
            .arg(chromium)
            .args(args)
            .arg(format!("--user-data-dir={}", profile.dir.path().display()))
            .arg("--remote-debugging-port=0")
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(StartError::Supervisor)?;
        let pipe = supervisor.stdin.take();
        let pgid = i32::try_from(supervisor.id()).unwrap_or(i32::MAX);
        let mut this = Chromium { supervisor, pipe, pgid, profile, members: (Vec::new(), None) };
        match this.devtools_url(limit) {
            Ok(url) => Ok((this, url)),
            Err(e) => {
                this.end();
                Err(e)
            }
        }
    }

    /// Waits for Chromium's `DevToolsActivePort` file: its port and browser path.
    fn devtools_url(&mut self, limit: Duration) -> Result<String, StartError> {
        let file = self.profile.dir.path().join("DevToolsActivePort");
        let deadline = Instant::now() + limit;
        // The supervisor forks Chromium a moment after it starts: the group is only "empty again"
        // once Chromium was in it.
        let mut seen = false;
        loop {
            if let Ok(text) = std::fs::read_to_string(&file)
                && let Some((port, path)) = parse_active_port(&text)
            {
                return Ok(format!("ws://127.0.0.1:{port}{path}"));
            }
            let members = group_members(self.pgid).len();
            seen |= members > 1;
            if (seen && members <= 1) || matches!(self.supervisor.try_wait(), Ok(Some(_))) {
                // Chromium's exit can precede its last write to the log by a moment.
                std::thread::sleep(Duration::from_millis(100));
                return Err(StartError::Exited { log: self.log_tail() });
            }
            if Instant::now() >= deadline {
                return Err(StartError::NoDevTools { limit, log: self.log_tail() });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log_tail(&self) -> String {
        use std::io::{Read as _, Seek as _, SeekFrom};
        let Ok(mut f) = File::open(self.profile.dir.path().join(LOG_FILE)) else { return "no output".to_owned() };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL)));
        let mut tail = String::new();
        #[allow(clippy::disallowed_methods)] // bounded by `take`
        let _ = f.take(LOG_TAIL).read_to_string(&mut tail);
        let tail = tail.trim();
        if tail.is_empty() { "no output".to_owned() } else { tail.to_owned() }
    }

    /// The profile folder (it names every one of this Chromium's processes).
    pub(crate) fn profile_dir(&self) -> &Path {
        self.profile.dir.path()
    }

    /// Memory of all of this Chromium's processes when it is over `limit` bytes: the sum of their
    /// proportional set sizes (shared pages split among the processes sharing them); `None` while
    /// it is not. Cheap while it is not: the sum of their resident sizes (a counter the kernel
    /// keeps) bounds it from above, and only when that is over the limit are the proportional
    /// sizes read (`smaps_rollup` walks a process's page tables, milliseconds of system time for
    /// a large one, five times a second for every process; the 200-page rendered crawl spent 28 s
    /// of system CPU so, bench/render.py).
    pub(crate) fn over(&mut self, limit: u64) -> Option<u64> {
        if self.members.1.is_none_or(|at| at.elapsed() >= MEMBERS_MAX_AGE) {
            self.members = (group_members(self.pgid), Some(Instant::now()));
        }
        let members = &self.members.0;
        if members.iter().map(|&p| rss_bytes(p)).sum::<u64>() <= limit {
            return None;
        }
        let pss: u64 = members.iter().map(|&p| pss_bytes(p)).sum();
        (pss > limit).then_some(pss)
    }

    /// Ends every process of the group now (the supervisor kills it) and reaps the supervisor.
    pub(crate) fn end(&mut self) {
        if let Some(mut pipe) = self.pipe.take() {
            let _ = pipe.write_all(b"end\n");
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if !matches!(self.supervisor.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        warn!(pgid = self.pgid, "Chromium's supervisor did not end within 5 s; killing it");
        let _ = self.supervisor.kill();
        let _ = self.supervisor.wait();
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        // Closing the pipe is enough for the supervisor to end the group; reaping it here keeps
        // no zombie behind (it exits at once).
        self.end();
    }
}

/// `DevToolsActivePort`'s two lines: the port, then the browser target's path.
fn parse_active_port(text: &str) -> Option<(u16, &str)> {
    let mut lines = text.lines();
    let port: u16 = lines.next()?.trim().parse().ok()?;
    let path = lines.next()?.trim();
    (port > 0 && path.starts_with("/devtools/browser/")).then_some((port, path))
}

/// Every process id in `/proc` (bounded by what the kernel lists).
fn pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten().filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok())).collect()
}

/// The process group of `pid`, from `/proc/PID/stat` (the fields after the command's name).
fn pgrp_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(2)?.parse().ok()
}

/// The processes of group `pgid`.
pub(crate) fn group_members(pgid: i32) -> Vec<i32> {
    pids().into_iter().filter(|&p| pgrp_of(p) == Some(pgid)).collect()
}

/// A process's resident set size in bytes (`VmRSS` of `/proc/PID/status`, a counter: no page
/// table is walked), 0 if unreadable. At least its proportional set size.
fn rss_bytes(pid: i32) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return 0 };
    kib_field(&text, "VmRSS:")
}

/// The `kB` value of the line starting with `name` in a `/proc` file, in bytes (0 if absent).
fn kib_field(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A process's proportional set size in bytes (`/proc/PID/smaps_rollup`), 0 if unreadable.
fn pss_bytes(pid: i32) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) else { return 0 };
    kib_field(&text, "Pss:")
}

/// The processes whose command line names `profile` as their `--user-data-dir`.
pub(crate) fn processes_of(profile: &Path) -> Vec<i32> {
    let needle = format!("--user-data-dir={}", profile.display());
    pids()
        .into_iter()
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == needle.as_bytes()))
        })
        .collect()
}

/// Removes the profile folders in `tmp` whose worker died, killing what still runs in them;
/// returns how many were removed.
pub(crate) fn sweep(tmp: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(tmp) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten().take(MAX_SWEEP_ENTRIES) {
        let is_profile = entry.file_name().to_str().is_some_and(|n| n.starts_with(PROFILE_PREFIX));
        if !is_profile || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = entry.path();
        // Held while the sweep removes the folder, so no second sweep races this one.
        let _held = match File::open(dir.join(LOCK_FILE)) {
            Ok(lock) => match lock.try_lock() {
                Ok(()) => lock,
                Err(_) => continue, // its worker lives
            },
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let age = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| SystemTime::now().duration_since(t).ok())
                    .unwrap_or_default();
                if age < UNLOCKED_GRACE {
                    continue;
                }
                match File::open(&dir) {
                    Ok(f) => f,
                    Err(_) => continue,
                }
            }
            Err(_) => continue,
        };
        kill_all(&processes_of(&dir));
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => removed += 1,
            Err(e) => debug!(dir = %dir.display(), error = %e, "could not remove a dead browser's profile"),
        }
    }
    removed
}

/// Kills `pids` with SIGKILL (the `kill` program: this workspace has no `unsafe` for a syscall).
fn kill_all(pids: &[i32]) {
    if pids.is_empty() {
        return;
    }
    warn!(count = pids.len(), "killing processes left by a browser whose worker died");
    let status = Command::new("kill")
        .arg("-KILL")
        .args(pids.iter().map(i32::to_string))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if let Err(e) = status {
        warn!(error = %e, "could not run kill");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resident_size_bounds_the_proportional_one_from_above() {
        // What the memory guard's cheap check stands on: PSS <= RSS, for a real process (this one).
        let me = i32::try_from(std::process::id()).expect("pid");
        let (rss, pss) = (rss_bytes(me), pss_bytes(me));
        assert!(pss > 0 && rss >= pss, "rss {rss}, pss {pss}");
        assert_eq!(kib_field("Name:\tx\nVmRSS:\t  1234 kB\n", "VmRSS:"), 1234 * 1024);
        assert_eq!(kib_field("VmRSS: junk\n", "VmRSS:"), 0);
        assert_eq!(rss_bytes(-1), 0, "no such process");
    }

    #[test]
    fn the_active_port_file_gives_port_and_path() {
        assert_eq!(parse_active_port("35869\n/devtools/browser/5dad\n"), Some((35869, "/devtools/browser/5dad")));
        assert_eq!(parse_active_port("0\n/devtools/browser/x"), None);
        assert_eq!(parse_active_port("35869\n"), None);
        assert_eq!(parse_active_port("x\n/devtools/browser/x"), None);
    }

    #[test]
    fn a_process_group_is_read_from_stat() {
        let me = i32::try_from(std::process::id()).expect("pid");
        let pgrp = pgrp_of(me).expect("own stat");
        assert!(pgrp > 0);
        assert!(group_members(pgrp).contains(&me));
        assert!(pss_bytes(me) > 0, "own proportional set size");
    }

    #[test]
    fn the_sweep_removes_dead_profiles_and_keeps_live_and_young_ones() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dead = tmp.path().join(format!("{PROFILE_PREFIX}dead"));
        std::fs::create_dir(&dead).expect("dead");
        File::create(dead.join(LOCK_FILE)).expect("lock file, nobody holds it");
        let live = tmp.path().join(format!("{PROFILE_PREFIX}live"));
        std::fs::create_dir(&live).expect("live");
        let held = File::create(live.join(LOCK_FILE)).expect("lock file");
        held.try_lock().expect("held by this test");
        let young = tmp.path().join(format!("{PROFILE_PREFIX}young"));
        std::fs::create_dir(&young).expect("young, no lock file yet");
        let other = tmp.path().join("something-else");
        std::fs::create_dir(&other).expect("other");
        assert_eq!(sweep(tmp.path()), 1);
        assert!(!dead.exists() && live.exists() && young.exists() && other.exists());
        drop(held);
        assert_eq!(sweep(tmp.path()), 1, "a profile whose owner let go goes too");
        assert!(!live.exists());
    }
}
