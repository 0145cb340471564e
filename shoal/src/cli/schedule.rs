//! The flags of `shoal schedule add|list|remove`: recurring audits on a coordinator, through its
//! API ([`crate::schedule`]).

use super::{AuditOptionArgs, ClientArgs};
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `shoal schedule`.
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Add a recurring audit: start URLs, options and when (a cron pattern in a time zone, or an
    /// interval). Prints its id.
    Add(Box<ScheduleAddArgs>),
    /// List the schedules with their last and next run.
    List(ScheduleListArgs),
    /// Remove a schedule (its runs and their reports stay).
    Remove(ScheduleRemoveArgs),
}

/// `shoal schedule add`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("when").required(true).args(["cron", "every"])))]
pub struct ScheduleAddArgs {
    /// Start URLs, one site each.
    #[arg(value_name = "URL")]
    pub urls: Vec<String>,
    /// A file with one start URL per line, read now (same rules and caps as `shoal submit --file`).
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// A name for the schedule.
    #[arg(long)]
    pub name: String,
    /// When, as a cron pattern of five fields (minute hour day-of-month month day-of-week), e.g.
    /// `0 6 * * MON` for Mondays at 06:00 in --time-zone. Two of its times may not be closer than
    /// the coordinator's minimum interval (1h unless its operator set another).
    #[arg(long, value_name = "PATTERN")]
    pub cron: Option<String>,
    /// When, as an interval from the previous run's start: a whole number and s, m, h, d or w
    /// (`7d`, `12h`), at least the coordinator's minimum interval (1h unless its operator set
    /// another). The first run starts at once.
    #[arg(long, value_name = "INTERVAL")]
    pub every: Option<String>,
    /// The IANA time zone of --cron (`Europe/Berlin`).
    #[arg(long, value_name = "ZONE", default_value = "UTC")]
    pub time_zone: String,
    /// Coordinator.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Options of every run.
    #[command(flatten)]
    pub options: AuditOptionArgs,
}

impl ScheduleAddArgs {
    /// The `when` the API takes: the cron pattern, or `every <interval>`.
    #[must_use]
    pub fn when(&self) -> String {
        match (&self.cron, &self.every) {
            (Some(c), _) => c.clone(),
            (None, Some(e)) => format!("every {}", e.trim().trim_start_matches("every").trim()),
            (None, None) => String::new(),
        }
    }
}

/// `shoal schedule list`.
#[derive(Debug, Args)]
pub struct ScheduleListArgs {
    /// Coordinator.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Print the coordinator's JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `shoal schedule remove`.
#[derive(Debug, Args)]
pub struct ScheduleRemoveArgs {
    /// The schedule's id (see `shoal schedule list`).
    pub id: u64,
    /// Coordinator.
    #[command(flatten)]
    pub client: ClientArgs,
}
