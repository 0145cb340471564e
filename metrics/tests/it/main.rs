//! The metrics crate's integration tests, one binary (one link step) for the whole crate.

mod dashboard_matches;
