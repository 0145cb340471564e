//! The audit database's integration tests, one binary for the crate.

mod db_store;
mod issue37;
mod issues;
mod schedules;
