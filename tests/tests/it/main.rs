//! Shoal's end-to-end tests against real servers on loopback, one binary (one link step).

// Tests read whole answers and files of our own test servers and fixtures (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod audit_findings;
mod audit_process;
mod browser;
mod browser_attacks;
mod browser_engine;
mod browser_workers;
mod caps;
mod common;
mod compression;
mod content_shop;
mod dashboard;
mod db;
mod dead_hosts;
mod deep_html;
mod distributed;
mod dns_bounds;
mod domain_checks;
mod domain_distributed;
mod domain_world;
mod external_links;
mod faults;
mod finding_codes;
mod finding_support;
mod finding_tls;
mod fleet_guard;
mod frontier_embedded;
mod latency_guard;
mod leases;
mod link_elements;
mod mcp;
mod mcp_http;
mod metrics;
mod openapi;
mod politeness;
mod procs;
mod quarantine;
mod redis_tls;
mod render;
mod rendered;
mod retention;
mod schedule;
mod schedule_wake;
mod shop_audit;
mod shop_extract;
mod slow_start;
mod start_redirect;
mod testsite;
mod tokens;
