//! What Shoal's tests run against, with no Shoal crate under it (a leaf), so every crate's tests
//! can use it as a dev-dependency instead of including files by path: an in-process, many-host
//! test web server that logs every request ([`testsite`]), the request log that politeness
//! assertions read ([`log`]), a private redis-server ([`redis`]), a DNS server and mail servers for
//! the domain checks ([`dnsserver`], [`smtpserver`]), headless Chromium ([`chromium`]), a server
//! stuck on TLS 1.0's answer ([`tls10`]) and the robots.txt conformance corpus ([`robots_corpus`]).
//!
//! The servers need a Tokio runtime and HTTP crates; they are the default feature `servers`. The
//! core crate's tests (which must stay free of I/O crates) take only the corpus and the
//! standard-library helpers, with `default-features = false`.

#[cfg(feature = "servers")]
pub mod dnsserver;
#[cfg(feature = "servers")]
pub mod log;
#[cfg(feature = "servers")]
pub mod smtpserver;
#[cfg(feature = "servers")]
pub mod testsite;

pub mod chromium;
pub mod redis;
pub mod robots_corpus;
pub mod sentinel;
pub mod tls10;
