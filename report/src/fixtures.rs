//! Fixtures of the report tests: audit databases built from events as the coordinator stores them
//! (two audits of a shop to compare, one audit with every section of the HTML report, a batch of
//! five customer sites audited twice) and the list of a JSON page's fields. Shared by this crate's
//! own tests and by the binary's (`shoal/tests/it/report_cli.rs`) and the end-to-end tests, which
//! check the same cases through `shoal report` and a real audit. Only built with the `fixtures`
//! feature, which only dev-dependencies turn on.

pub mod batch;
pub mod compare;
pub mod html;
pub mod json_fields;
