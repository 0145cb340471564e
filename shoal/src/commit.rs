//! The commit id `shoal --version` names, as given in `SHOAL_COMMIT` at build time. Shared by
//! `build.rs` (which includes this file by `#[path]`: a build script cannot depend on the crate it
//! builds) and the library, whose unit tests below are what checks it.

/// How many hex digits of the commit are shown: enough to stay unique for the life of the project
/// (`git rev-parse --short=12`).
pub const SHORT: usize = 12;

/// A `SHOAL_COMMIT` that is not a commit id. (Display by hand, not thiserror: the build script
/// compiles this file too, and would need thiserror as a build dependency for one message.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadCommit(pub String);

impl std::fmt::Display for BadCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SHOAL_COMMIT must be a git commit id of {SHORT} to 40 hex digits (git rev-parse HEAD), not {:?}; \
             unset it to build without one",
            self.0
        )
    }
}

impl std::error::Error for BadCommit {}

/// `SHOAL_COMMIT` checked and shortened to [`SHORT`] lower-case hex digits; `None` when empty.
/// Why refuse anything else rather than print it: a binary must not name a commit that does not
/// exist (`main`, `latest`, a 7-digit id that may be ambiguous).
///
/// # Errors
/// [`BadCommit`] when the value is not 12 to 40 hex digits.
pub fn from_env_value(value: &str) -> Result<Option<String>, BadCommit> {
    let value = value.trim().to_ascii_lowercase();
    if value.is_empty() {
        return Ok(None);
    }
    if !(SHORT..=40).contains(&value.len()) || !value.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(BadCommit(value));
    }
    Ok(Some(value[..SHORT].to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_id_is_shortened_to_twelve_lower_case_digits() {
        let full = "0123456789ABCDEF0123456789abcdef01234567";
        assert_eq!(from_env_value(full), Ok(Some("0123456789ab".to_owned())));
        assert_eq!(from_env_value(" 1a2b3c4d5e6f\n"), Ok(Some("1a2b3c4d5e6f".to_owned())));
        assert_eq!(from_env_value(""), Ok(None));
        assert_eq!(from_env_value("  "), Ok(None));
    }

    #[test]
    fn anything_but_twelve_to_forty_hex_digits_is_refused() {
        for bad in ["main", "1a2b3c4", "1a2b3c4d5e6", "1a2b3c4d5e6g", &"a".repeat(41), "v0.1.0-dirty"] {
            let e = from_env_value(bad).expect_err(bad);
            assert!(e.to_string().contains("SHOAL_COMMIT") && e.to_string().contains("12 to 40"), "{e}");
        }
    }
}
