//! The reports' integration tests, one binary for the crate.

// Tests read whole answers and files of our own test servers and fixtures (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod db_report;
mod domain_section;
mod overview;
mod report_compare;
mod report_html;
mod schedule_changes;
