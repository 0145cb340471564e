//! One module per command that is more than a call into a lower crate.

pub mod audit;
pub mod coordinator;
pub mod report;
pub mod robots;
pub mod worker;
