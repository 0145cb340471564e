//! The pure core of Shoal.
//!
//! Everything here is free of I/O: no runtime, no sockets, no clock. The current time is always a
//! parameter ([`time::UnixMs`]), which is what lets the politeness rules be unit-tested to the
//! millisecond and lets the embedded and the Redis frontier share one meaning.

pub mod address;
pub mod ai_crawlers;
pub mod browser;
pub mod content;
pub mod custom;
pub mod domain;
pub mod finding;
pub mod frontier;
pub mod hreflang;
pub mod ids;
pub mod latency;
pub mod link;
pub mod pace;
pub mod ratelimit;
pub mod record;
pub mod render;
pub mod robots;
pub mod scope_rules;
mod spelled;
pub mod starts;
pub mod status;
pub mod task;
pub mod time;
pub mod token;
pub mod url;
pub mod wire;
