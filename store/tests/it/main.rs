//! The audit database's integration tests, one binary for the crate.

mod content;
mod db_store;
mod domain_wide;
mod hreflang;
mod issue37;
mod issues;
mod render;
mod schedules;
mod tokens;
mod typed_reads;
