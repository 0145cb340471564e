//! Identifier newtypes, so an audit id is never passed where a site id belongs.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! int_id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

int_id!(
    /// One audit: a batch of sites submitted together. Assigned by the audit database.
    AuditId
);
int_id!(
    /// One site within one audit. Unique across audits (assigned by the audit database), so a
    /// frontier never confuses the same website audited twice.
    SiteId
);
int_id!(
    /// One lease handed out by `claim`. Unique per frontier.
    LeaseId
);
int_id!(
    /// One API token with a scope (`shoal token`). Assigned by the audit database and never
    /// reused, so a removed token's id never names a new one.
    TokenId
);
int_id!(
    /// One recurring audit: a list of start URLs, options and when to run them. Assigned by the
    /// audit database and never reused, so an audit's link to its schedule outlives the schedule.
    ScheduleId
);

/// A worker's name, for leases and logs (host name and process id, or a number in `shoal audit`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WorkerId(pub String);

impl fmt::Display for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
