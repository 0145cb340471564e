//! The metrics crate's integration tests, one binary (one link step) for the whole crate.

// Tests read whole answers and files of our own test servers and fixtures (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod dashboard_matches;
