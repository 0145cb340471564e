//! Test support for Shoal's end-to-end tests: an in-process, many-host test web server that logs
//! every request ([`testsite`]), the request log that politeness assertions read ([`log`]), a
//! private redis-server ([`redis`]), the conformance suite every frontier back end passes
//! ([`conformance`]), a DNS server and mail servers for the domain checks ([`dnsserver`],
//! [`smtpserver`]), headless Chromium ([`chromium`]) and a server stuck on TLS 1.0's answer
//! ([`tls10`]); the last two are also included by path by other crates' tests.
//!
//! The end-to-end tests themselves live in `tests/tests/`; the `shoal-testsite` binary serves
//! generated sites as a separate process for benchmarks.

pub mod chromium;
pub mod conformance;
pub mod dnsserver;
pub mod log;
pub mod redis;
pub mod smtpserver;
pub mod testsite;
pub mod tls10;
