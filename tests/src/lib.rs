//! Test support for Shoal's end-to-end tests: an in-process, many-host test web server that logs
//! every request ([`testsite`]), and the request log that politeness assertions read ([`log`]).
//!
//! The end-to-end tests themselves live in `tests/tests/`; the `shoal-testsite` binary serves
//! generated sites as a separate process for benchmarks.

pub mod log;
pub mod redis;
pub mod testsite;
