//! Fault injection for the tests of what a worker does when processing a URL goes wrong. Two
//! locks, both needed:
//! - compiled only with the `fault-injection` feature, which only the end-to-end test crate turns
//!   on (as a dev-dependency). That alone is not enough: Cargo unifies features, so a build of the
//!   whole workspace (`cargo build --workspace`, `cargo test`) compiles it into the `shoal` binary
//!   as well;
//! - applied only when the crawler's settings say so
//!   ([`CrawlSettings::inject_faults`](crate::crawl::CrawlSettings::inject_faults)), off by default
//!   and settable by no flag, config key or environment variable. Only the tests that use faults
//!   turn it on, in their own code; any `shoal` binary fetches these paths as ordinary pages
//!   (`tests/tests/it/faults.rs` checks the binary of a workspace build).
//!
//! With both, a lease whose URL path starts with one of these triggers its fault before anything
//! is fetched:
//! - [`PANIC`]: the task panics (the worker must catch it and give the URL up);
//! - [`ABORT`]: the whole process aborts at once, as a worker killed by the OOM killer does;
//! - [`HANG`]: the task never finishes (the worker must drop it and let its lease expire).

/// Path prefix of URLs whose processing panics.
pub const PANIC: &str = "/__shoal_fault/panic";
/// Path prefix of URLs whose processing aborts the process.
pub const ABORT: &str = "/__shoal_fault/abort";
/// Path prefix of URLs whose processing never ends.
pub const HANG: &str = "/__shoal_fault/hang";

/// Applies the fault `url`'s path asks for, if any.
pub async fn inject(url: &shoal_shared::url::NormalizedUrl) {
    let path = url.as_url().path();
    if path.starts_with(PANIC) {
        panic!("injected fault at {url}");
    } else if path.starts_with(ABORT) {
        tracing::error!(url = %url, "injected fault: aborting the process");
        std::process::abort();
    } else if path.starts_with(HANG) {
        tracing::warn!(url = %url, "injected fault: this task never ends");
        std::future::pending::<()>().await;
    }
}
