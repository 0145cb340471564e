//! `shoal schedule add|list|remove`: recurring audits on a coordinator, through its API
//! (`/v1/schedules`). What a schedule is and how it runs: `coordinator::schedule`, docs/schedules.md.

use crate::cli::{ConfigError, ScheduleAddArgs, ScheduleCommand, ScheduleListArgs, ScheduleRemoveArgs};
use crate::client::{Client, JsonBody};
use crate::{Exit, Failure};
use anyhow::Context;
use shoal_coordinator::schedule::when::When;
use shoal_shared::time::UnixMs;
use shoal_shared::wire::{ScheduleRequest, ScheduleView};
use std::io::Write;

/// Runs one `shoal schedule` command.
///
/// # Errors
/// Bad input (3): a bad URL, file, pattern, interval or time zone, checked here before anything
/// is sent, or refused by the coordinator; an unreachable coordinator (1).
pub async fn run(cmd: &ScheduleCommand) -> Result<Exit, Failure> {
    match cmd {
        ScheduleCommand::Add(args) => add(args).await,
        ScheduleCommand::List(args) => list(args).await,
        ScheduleCommand::Remove(args) => remove(args).await,
    }
}

async fn add(args: &ScheduleAddArgs) -> Result<Exit, Failure> {
    let when = args.when();
    // The coordinator checks the same again; checking here gives the error without a round trip.
    When::parse(&when, &args.time_zone).map_err(|e| Failure::input(ConfigError::Invalid(e.to_string())))?;
    let urls: Vec<String> =
        crate::cli::start_urls(&args.urls, args.file.as_ref())?.into_iter().map(|u| u.to_string()).collect();
    let client = Client::new(&args.client)?;
    let req = ScheduleRequest {
        name: args.name.clone(),
        urls,
        options: args.options.to_options(),
        when,
        time_zone: Some(args.time_zone.clone()),
    };
    let v = client.call(client.http.post(format!("{}/v1/schedules", client.base)).json_body(&req)?).await?;
    let added: ScheduleView = serde_json::from_value(v).context("unexpected answer from the coordinator")?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", added.id).context("writing to standard output")?;
    Ok(Exit::Ok)
}

fn time(ms: Option<u64>) -> String {
    ms.map_or_else(|| "-".to_owned(), |t| UnixMs(t).to_rfc3339())
}

async fn list(args: &ScheduleListArgs) -> Result<Exit, Failure> {
    let client = Client::new(&args.client)?;
    let v = client.call(client.http.get(format!("{}/v1/schedules", client.base))).await?;
    let all: Vec<ScheduleView> = serde_json::from_value(v).context("unexpected answer from the coordinator")?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?;
        return Ok(Exit::Ok);
    }
    for s in all {
        let last = match (s.last_audit, s.last_status) {
            (Some(a), Some(st)) => format!("audit {a} {st}"),
            (Some(a), None) => format!("audit {a}"),
            (None, _) => "no run yet".to_owned(),
        };
        writeln!(
            out,
            "schedule {:>4}  {:<24} {:<16} {:<16} {:>5} sites  last: {} ({})  next: {}",
            s.id,
            s.name,
            s.when,
            s.time_zone,
            s.sites,
            last,
            time(s.last_started_ms),
            time(s.next_run_ms)
        )?;
    }
    Ok(Exit::Ok)
}

async fn remove(args: &ScheduleRemoveArgs) -> Result<Exit, Failure> {
    let client = Client::new(&args.client)?;
    client.call(client.http.delete(format!("{}/v1/schedules/{}", client.base, args.id))).await?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "removed schedule {}", args.id)?;
    Ok(Exit::Ok)
}
