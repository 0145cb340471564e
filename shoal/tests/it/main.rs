//! The `shoal` binary's integration tests: its commands, configuration and inputs, run as the real
//! program. One binary (one link step) for the whole crate.

// Tests read whole answers and files of our own test servers and fixtures (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod botpage;
mod cli;
mod config_errors;
mod config_example;
mod config_precedence;
mod exit_codes;
mod input_caps;
mod manual;
mod prune;
mod report_cli;
mod support;
