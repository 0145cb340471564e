//! Shoal's end-to-end tests: the conformance suite every frontier back end passes
//! ([`conformance`]), and the servers the tests run against, from the leaf crate
//! `shoal-test-support` (re-exported here so the tests name them as before).
//!
//! The end-to-end tests themselves live in `tests/tests/`; the `shoal-testsite` binary serves
//! generated sites as a separate process for benchmarks.

pub mod conformance;

pub use shoal_test_support::{chromium, dnsserver, log, redis, sentinel, smtpserver, testsite, tls10};
