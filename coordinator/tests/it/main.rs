//! The coordinator crate's integration tests, one binary (one link step) for the whole crate.

mod botpage;
mod cli;
mod config_errors;
mod config_example;
mod config_precedence;
mod db_report;
mod db_store;
mod input_caps;
mod report_compare;
mod report_html;
