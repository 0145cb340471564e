//! Shoal's end-to-end tests against real servers on loopback, one binary (one link step).

mod audit_findings;
mod audit_process;
mod caps;
mod common;
mod dashboard;
mod deep_html;
mod distributed;
mod external_links;
mod finding_codes;
mod finding_support;
mod finding_tls;
mod fleet_guard;
mod metrics;
mod politeness;
mod procs;
mod testsite;
