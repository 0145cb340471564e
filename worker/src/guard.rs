//! The private-address guard: which IP addresses this worker may connect to.
//!
//! Every address a worker connects to passes its own guard at connect time, whatever its source:
//! DNS, a `--resolve` override, an address the frontier pinned for the host (which another worker,
//! perhaps one started with `--allow-private`, may have chosen, or anyone who can write to Redis),
//! or a redirect hop. The guard sits in [`crate::fetch`]'s resolver (reqwest asks it for every
//! new connection), before IP-literal requests (reqwest never asks the resolver about those), and
//! before the TLS probe's handshake. What is public is decided in
//! [`shoal_shared::address`]; this module adds the worker's own setting.

use std::net::IpAddr;

pub use shoal_shared::address::{NonPublic, is_public};

/// One worker's address policy: public addresses only, unless it was started with
/// `--allow-private` (tests, intranets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guard {
    allow_private: bool,
}

impl Guard {
    /// The guard of a worker started with (`true`) or without `--allow-private`.
    #[must_use]
    pub fn new(allow_private: bool) -> Guard {
        Guard { allow_private }
    }

    /// Whether this worker allows non-public addresses.
    #[must_use]
    pub fn allows_private(&self) -> bool {
        self.allow_private
    }

    /// `Ok` if this worker may connect to `ip`; else why not.
    pub fn check(&self, ip: IpAddr) -> Result<(), NonPublic> {
        if self.allow_private { Ok(()) } else { shoal_shared::address::check(ip) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_private_lets_everything_through_and_the_default_does_not() {
        let loopback: IpAddr = "127.0.55.1".parse().expect("parses");
        let nat64: IpAddr = "64:ff9b::7f00:1".parse().expect("parses");
        let public: IpAddr = "93.184.216.34".parse().expect("parses");
        let strict = Guard::new(false);
        let open = Guard::new(true);
        for ip in [loopback, nat64] {
            assert!(strict.check(ip).is_err(), "{ip}");
            assert!(open.check(ip).is_ok(), "{ip}");
        }
        assert!(strict.check(public).is_ok());
        assert!(!strict.allows_private() && open.allows_private());
    }
}
