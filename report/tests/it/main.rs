//! The reports' integration tests, one binary for the crate.

// Tests read whole answers and files of our own test servers and fixtures (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod batch_fixture;
mod compare_fixture;
mod db_report;
mod html_fixture;
mod json_fields;
mod overview;
mod report_compare;
mod report_html;
mod schedule_changes;
