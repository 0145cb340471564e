//! The frontier-redis crate's integration tests, one binary (one link step) for the whole crate.

mod batches;
mod browser_workers;
mod conformance;
mod differential;
mod events;
mod lifetimes;
mod quarantine;
mod sentinel;
mod status;
