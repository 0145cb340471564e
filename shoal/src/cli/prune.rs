//! Retention flags (issue 40): `shoal prune` and the coordinator's `--retain-audits` /
//! `--retain-days`, validated into the store's one [`Retention`] rule.

use super::ConfigError;
use clap::{ArgGroup, Args};
use shoal_store::Retention;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

/// Seconds in a day: the unit of `--older-than` and `--retain-days`.
const DAY_S: u64 = 24 * 3600;
/// How long `shoal prune` waits for another process's lock unless told (`--wait-s`).
pub const DEFAULT_PRUNE_WAIT_S: u64 = 10;

/// `shoal prune`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("what").required(true).multiple(true).args(["keep_last", "older_than", "vacuum"])))]
pub struct PruneArgs {
    /// The audit database (SQLite).
    #[arg(long, env = "SHOAL_DB", default_value = "shoal.db")]
    pub db: PathBuf,
    /// Per start URL, keep the N latest audits that have ended; an audit none of whose start URLs
    /// needs it goes, with its pages, links, findings and browser data. Each schedule's last two
    /// runs and running audits always stay.
    #[arg(long, env = "SHOAL_KEEP_LAST", value_name = "N")]
    pub keep_last: Option<u32>,
    /// Remove the audits that ended more than DAYS days ago (each schedule's last two runs and
    /// running audits always stay).
    #[arg(long, env = "SHOAL_OLDER_THAN", value_name = "DAYS")]
    pub older_than: Option<u32>,
    /// List what would be removed; change nothing.
    #[arg(long, env = "SHOAL_DRY_RUN")]
    pub dry_run: bool,
    /// Afterwards rewrite the file with VACUUM: shrinks a file made before Shoal created files in
    /// incremental-vacuum mode, and switches it to that mode. Needs the file to itself while it
    /// runs (stop the coordinator first on a large file).
    #[arg(long, env = "SHOAL_VACUUM")]
    pub vacuum: bool,
    /// Seconds to wait for another process (a coordinator writing) to release the database before
    /// giving up with nothing changed.
    #[arg(long, env = "SHOAL_WAIT_S", value_name = "S", default_value_t = DEFAULT_PRUNE_WAIT_S)]
    pub wait_s: u64,
}

impl PruneArgs {
    /// The rule these flags ask for.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for a count or age of 0.
    pub fn retention(&self) -> Result<Retention, ConfigError> {
        rule(self.keep_last, self.older_than, "--keep-last", "--older-than")
    }
}

/// `shoal coordinator`'s retention, applied after each audit ends.
#[derive(Debug, Args, Clone)]
pub struct RetainArgs {
    /// After each audit ends, keep per start URL the N latest audits that have ended and remove
    /// older ones with everything they hold (each schedule's last two runs stay). Off if omitted.
    #[arg(long, env = "SHOAL_RETAIN_AUDITS", value_name = "N")]
    pub retain_audits: Option<u32>,
    /// After each audit ends, remove the audits that ended more than D days ago (each schedule's
    /// last two runs stay). Off if omitted.
    #[arg(long, env = "SHOAL_RETAIN_DAYS", value_name = "D")]
    pub retain_days: Option<u32>,
}

impl RetainArgs {
    /// The rule these flags ask for (off when neither is given).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for a count or age of 0.
    pub fn retention(&self) -> Result<Retention, ConfigError> {
        rule(self.retain_audits, self.retain_days, "--retain-audits", "--retain-days")
    }
}

fn rule(keep: Option<u32>, days: Option<u32>, keep_flag: &str, days_flag: &str) -> Result<Retention, ConfigError> {
    let keep_last = match keep {
        None => None,
        Some(n) => Some(NonZeroU32::new(n).ok_or_else(|| {
            ConfigError::Invalid(format!("{keep_flag} must be at least 1 (it keeps that many audits per start URL)"))
        })?),
    };
    let max_age = match days {
        None => None,
        Some(0) => {
            return Err(ConfigError::Invalid(format!("{days_flag} must be at least 1 (days since an audit ended)")));
        }
        Some(d) => Some(Duration::from_secs(u64::from(d) * DAY_S)),
    };
    Ok(Retention { keep_last, max_age })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_days_become_the_rule_and_zero_is_refused_by_name() {
        let r = rule(Some(2), Some(30), "--k", "--d").expect("valid");
        assert_eq!(r.keep_last.map(NonZeroU32::get), Some(2));
        assert_eq!(r.max_age, Some(Duration::from_secs(30 * 24 * 3600)));
        assert!(rule(None, None, "--k", "--d").expect("valid").is_off());
        let e = rule(Some(0), None, "--retain-audits", "--d").expect_err("zero").to_string();
        assert!(e.contains("--retain-audits must be at least 1"), "{e}");
        let e = rule(None, Some(0), "--k", "--older-than").expect_err("zero").to_string();
        assert!(e.contains("--older-than must be at least 1"), "{e}");
    }
}
