//! The reports' integration tests, one binary for the crate.

// Tests read whole answers and files of our own test servers and fixtures (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod batch_fixture;
/// Headless Chromium, shared with the end-to-end tests (which get it from the shoal-tests library;
/// this crate cannot depend on that one).
#[path = "../../../tests/src/chromium.rs"]
mod chromium;
mod compare_fixture;
mod db_report;
mod domain_section;
mod html_fixture;
mod json_fields;
mod overview;
mod report_compare;
mod report_html;
mod schedule_changes;
