//! Headless Chromium, for the tests that look at a page the way a person does: the HTML report
//! (`report/tests/it/report_html.rs`) and the coordinator's dashboard
//! (`tests/tests/it/dashboard.rs`).
//!
//! In the leaf test-support crate, so the report crate's tests use it as a dev-dependency like
//! the end-to-end tests do.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The headless Chromium binary. Panics, saying how to install it, when there is none: the tests
/// that need it fail, never skip.
pub fn chromium() -> PathBuf {
    for candidate in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(candidate).exists() {
            return PathBuf::from(candidate);
        }
    }
    panic!(
        "headless Chromium is needed for this test and was not found at /usr/bin/chromium: apt-get install chromium"
    );
}

/// Runs headless Chromium `bin` with a fresh profile in the folder `profile` and `args`, killing it
/// after `limit`; returns (success, stdout, stderr). Its standard output and error are kept in
/// `PROFILE.out` and `PROFILE.err`.
pub fn run_chromium(bin: &Path, profile: &Path, args: &[&str], limit: Duration) -> (bool, String, String) {
    let out_path = profile.with_extension("out");
    let err_path = profile.with_extension("err");
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--no-proxy-server",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    (status.is_some_and(|s| s.success()), read(&out_path), read(&err_path))
}
