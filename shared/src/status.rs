//! Where an audit and its sites stand: written by the audit database, read back by the engine,
//! the API, the dashboard and the reports as the same enums (an unknown stored spelling is a read
//! error, never a silent default).

use crate::spelled::spelled;

/// Where an audit stands. Stored and reported as its [`as_str`](AuditStatus::as_str) spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditStatus {
    /// Sites are being crawled.
    Running,
    /// Every site finished.
    Done,
    /// The user stopped it; what was crawled is kept.
    Cancelled,
    /// The process running it stopped (crash, shutdown deadline) before it finished.
    Interrupted,
    /// It could not go on: its state in the frontier could not be read, or its stored options
    /// could not be (the audit's `reason` says what). What was crawled is kept.
    Failed,
}

spelled!(AuditStatus, "an audit status such as `running` or `done`", {
    Running => "running",
    Done => "done",
    Cancelled => "cancelled",
    Interrupted => "interrupted",
    Failed => "failed",
});

/// Where one site of an audit stands. Stored and reported as its [`as_str`](SiteStatus::as_str)
/// spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SiteStatus {
    /// Still being crawled (or the audit stopped before it finished).
    Running,
    /// The frontier ran out of work for it and the site-level analysis ran.
    Done,
}

spelled!(SiteStatus, "a site status, `running` or `done`", {
    Running => "running",
    Done => "done",
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_keep_their_spellings_in_json_and_an_unknown_one_is_an_error() {
        for s in AuditStatus::ALL {
            assert_eq!(AuditStatus::parse(s.as_str()), Some(*s));
            let json = serde_json::to_string(s).expect("serialises");
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(serde_json::from_str::<AuditStatus>(&json).expect("reads"), *s);
        }
        for s in SiteStatus::ALL {
            assert_eq!(SiteStatus::parse(s.as_str()), Some(*s));
            assert_eq!(serde_json::to_value(s).expect("serialises"), s.as_str());
        }
        let names: Vec<&str> = AuditStatus::ALL.iter().map(AuditStatus::as_str).collect();
        assert_eq!(names, ["running", "done", "cancelled", "interrupted", "failed"]);
        assert_eq!(SiteStatus::Done.to_string(), "done");
        assert!(serde_json::from_str::<AuditStatus>("\"paused\"").is_err());
        assert_eq!(SiteStatus::parse("Running"), None);
    }
}
