//! The worker crate's integration tests, one binary (one link step) for the whole crate.

mod extract_bounded;
mod extract_cases;
mod extract_charset;
mod extract_fixtures;
mod extract_proptest;
mod sitemap_parse;
mod tls_probe;
