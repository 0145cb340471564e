//! The shared crate's integration tests, one binary (one link step) for the whole crate.

mod findings_doc;
mod frontier_embedded;
mod robots_conformance;
mod robots_fuzz;
mod robots_rfc;
mod robots_spec;
