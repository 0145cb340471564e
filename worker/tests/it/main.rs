//! The worker crate's integration tests, one binary (one link step) for the whole crate.

// Tests read whole answers and files of our own test servers and fixtures (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod extract_bounded;
mod extract_cases;
mod extract_charset;
mod extract_fixtures;
mod extract_proptest;
mod sitemap_parse;
mod tls_probe;
