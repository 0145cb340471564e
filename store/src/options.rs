//! What an audit was started with, as the coordinator records it in `audits.options_json` and
//! reads it back when the audit resumes (after a restart, or when the frontier lost its data).
//!
//! Why a typed record with a version: the options decide how a resumed audit is crawled (its
//! limits, its custom rules). Read as loose JSON, a value that did not parse became the defaults,
//! so a resumed audit could crawl with other limits than it was started with and nobody would
//! know. Now an unreadable record is an error with the reason ([`OptionsError`]), and the engine
//! ends the audit `failed` with it.
//!
//! Versions: options written before the version field existed have none and read as version 0
//! (their fields are the same; `custom` and `mode` are missing in the oldest). A record of a
//! newer version than this build knows is refused rather than half read.

use shoal_shared::custom::CustomRules;
use shoal_shared::task::SiteLimits;

/// The version this build writes, and the newest it reads.
pub const OPTIONS_VERSION: u32 = 1;

/// The options an audit was started with.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StoredOptions {
    /// The record's format: 0 (absent) for records written before it existed, else
    /// [`OPTIONS_VERSION`] or older.
    #[serde(default)]
    pub version: u32,
    /// The start URLs, one site each.
    pub starts: Vec<String>,
    /// The per-site limits.
    pub limits: SiteLimits,
    /// The extraction and search rules (none in audits from before they existed).
    #[serde(default)]
    pub custom: CustomRules,
    /// The user agent the crawl sent.
    pub user_agent: String,
    /// The robots.txt product token the crawl obeyed.
    pub robots_token: String,
    /// Which coordinator ran it (`local`, `service`); absent in the oldest records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// Why stored options could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// Not JSON, or JSON without a field the options need, or a field of the wrong shape.
    #[error("the stored options do not parse: {0}")]
    Parse(#[from] serde_json::Error),
    /// Written by a newer Shoal.
    #[error("the stored options are version {found}; this shoal reads up to {OPTIONS_VERSION}, upgrade shoal")]
    TooNew {
        /// The record's version.
        found: u32,
    },
}

impl StoredOptions {
    /// The record as stored, at [`OPTIONS_VERSION`].
    #[must_use]
    pub fn to_json(&self) -> String {
        let current = StoredOptions { version: OPTIONS_VERSION, ..self.clone() };
        crate::to_json(&current)
    }

    /// Reads a stored record.
    ///
    /// # Errors
    /// [`OptionsError::Parse`] if it is not a record of options (any version up to this one),
    /// [`OptionsError::TooNew`] if a newer Shoal wrote it.
    pub fn parse(json: &str) -> Result<StoredOptions, OptionsError> {
        // The version first: a newer record may not parse as this one, and saying "upgrade" is
        // the useful answer then.
        #[derive(serde::Deserialize)]
        struct Version {
            #[serde(default)]
            version: u32,
        }
        let Version { version } = serde_json::from_str(json)?;
        if version > OPTIONS_VERSION {
            return Err(OptionsError::TooNew { found: version });
        }
        Ok(serde_json::from_str(json)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> StoredOptions {
        StoredOptions {
            version: OPTIONS_VERSION,
            starts: vec!["https://a.test/".to_owned()],
            limits: SiteLimits { max_pages: 7, ..SiteLimits::default() },
            custom: CustomRules::default(),
            user_agent: "ShoalBot/1".to_owned(),
            robots_token: "ShoalBot".to_owned(),
            mode: Some("local".to_owned()),
        }
    }

    #[test]
    fn options_round_trip_with_their_version() {
        let o = options();
        let json = StoredOptions { version: 0, ..o.clone() }.to_json();
        assert_eq!(serde_json::from_str::<serde_json::Value>(&json).expect("json")["version"], OPTIONS_VERSION);
        assert_eq!(StoredOptions::parse(&json).expect("reads"), o);
    }

    #[test]
    fn options_written_before_the_version_still_read() {
        // What `Coordinator::start_run` wrote before the version field (serde_json's `json!`, keys
        // sorted), with `custom` and `mode`; and the oldest form, from `shoal audit` before either.
        let limits = serde_json::to_string(&SiteLimits { max_pages: 7, ..SiteLimits::default() }).expect("json");
        let old = format!(
            r#"{{"custom":{{"extract":[],"search":[]}},"limits":{limits},"mode":"local","robots_token":"ShoalBot","starts":["https://a.test/"],"user_agent":"ShoalBot/1"}}"#
        );
        let read = StoredOptions::parse(&old).expect("the old form reads");
        assert_eq!(read, StoredOptions { version: 0, ..options() });
        let oldest = format!(
            r#"{{"starts":["https://a.test/"],"limits":{limits},"user_agent":"ShoalBot/1","robots_token":"ShoalBot"}}"#
        );
        let read = StoredOptions::parse(&oldest).expect("the oldest form reads");
        assert_eq!((read.version, read.limits.max_pages, read.mode), (0, 7, None));
        assert!(read.custom.extract().is_empty());
    }

    #[test]
    fn unreadable_options_are_an_error_not_the_defaults() {
        for bad in
            ["{}", "not json", r#"{"starts":[],"limits":{"max_pages":"many"},"user_agent":"a","robots_token":"b"}"#]
        {
            assert!(matches!(StoredOptions::parse(bad), Err(OptionsError::Parse(_))), "{bad}");
        }
        let newer = StoredOptions { version: 0, ..options() }.to_json().replace(r#""version":1"#, r#""version":2"#);
        assert!(matches!(StoredOptions::parse(&newer), Err(OptionsError::TooNew { found: 2 })), "{newer}");
    }
}
