//! Shoal's worker: fetch, extract, check, and the claim/fetch/complete loop.
//!
//! Stateless: everything it knows about a crawl comes from the frontier and goes back to it, so any
//! number of workers can run and any of them can be killed at any moment.

pub mod browser;
pub mod charset;
pub mod checks;
pub mod config;
pub mod crawl;
pub mod css;
pub mod custom;
pub mod dns;
pub mod extract;
#[cfg(feature = "fault-injection")]
pub mod fault;
pub mod fetch;
pub mod guard;
pub mod hreflang;
pub mod legal;
pub mod llms_txt;
pub mod parse;
pub mod run;
pub mod sitemap;
pub mod smtp;
pub mod tls;

/// A bounded, expiring cache read on every request: moka with a seeded foldhash instead of its
/// default SipHash (hashing host names and site ids was about a fifth of the caches' cost in a
/// worker's profile).
pub(crate) type Cache<K, V> = moka::sync::Cache<K, V, foldhash::fast::RandomState>;
