//! The shared crate's integration tests, one binary (one link step) for the whole crate.

// Tests read whole answers and files of our own test servers and fixtures (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod ai_crawlers_doc;
mod findings_doc;
mod record_doc;
mod robots_conformance;
mod robots_fuzz;
mod robots_rfc;
mod robots_spec;
