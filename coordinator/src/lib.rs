//! The coordinator role, written once: [`engine::Coordinator`] over any
//! [`Frontier`](shoal_shared::frontier::Frontier).
//!
//! `shoal coordinator` is this engine on the Redis frontier behind the HTTP server
//! (`shoal-server`); `shoal audit` is the same engine on the embedded frontier with in-process
//! workers ([`local`]). No loop, constant or metric of the role exists twice.

pub mod admission;
pub mod aggregate;
mod browser;
pub mod config;
pub mod engine;
pub mod local;
pub mod schedule;
pub mod seed;
pub mod tokens;

pub use config::{AuditSettings, EngineConfig};
pub use engine::{Coordinator, EngineError, Observer, RetentionPass};
