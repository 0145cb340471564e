//! `shoal config check`: the effective settings of one command, validated like the command does.

use super::{Catalogue, LoadError, Loaded, Source, clap_message, finish, resolve};
use crate::cli::{Cli, Command as Sub, ConfigCheckArgs, ConfigTarget};
use crate::{Exit, Failure};
use clap::{CommandFactory, ValueEnum};
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

/// `shoal config check`: validates the file and the environment for one command, prints every
/// setting with its value and source to `out`; `Exit::Ok` if valid, an input failure (exit 3)
/// with the reason if not.
pub fn check(args: &ConfigCheckArgs, global_file: Option<&Path>, out: &mut dyn Write) -> Result<Exit, Failure> {
    let target = target_name(args.target);
    let file = args.file.as_deref().or(global_file);
    let mut argv: Vec<OsString> = vec!["shoal".into()];
    if let Some(f) = file {
        argv.extend([OsString::from("--config"), f.as_os_str().to_owned()]);
    }
    argv.push(target.clone().into());
    argv.extend(args.flags.iter().map(OsString::from));
    let catalogue = Catalogue::new();
    let resolution = resolve(argv, &catalogue).map_err(invalid)?;
    let missing: Vec<String> = Cli::command()
        .find_subcommand(&target)
        .map(|c| {
            c.get_arguments()
                .filter(|a| a.is_required_set() && !resolution.from_file.contains_key(a.get_id().as_str()))
                .filter(|a| {
                    resolution
                        .first
                        .subcommand_matches(&target)
                        .and_then(|m| m.value_source(a.get_id().as_str()))
                        .is_none()
                })
                .map(|a| {
                    let long = a.get_long().unwrap_or_default();
                    let env = a.get_env().map(|e| format!(", {}", e.to_string_lossy())).unwrap_or_default();
                    format!(
                        "`{}` is required by `shoal {target}` (the file's [{target}] or top level{env}, or --{long})",
                        long.replace('-', "_")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    if !missing.is_empty() {
        return Err(input_failure(missing.join("\n")));
    }
    let loaded = finish(resolution, &catalogue).map_err(invalid)?;
    write_settings(&loaded, out).map_err(|e| Failure { exit: Exit::Internal, error: e.into() })?;
    if let Err(reason) = validate(&loaded.cli) {
        let notes: Vec<String> = loaded
            .settings
            .iter()
            .filter(|s| matches!(s.source, Source::File { .. } | Source::Env(_)) && mentions_flag(&reason, &s.flag))
            .map(|s| {
                format!("\n  note: {} = {} comes from {}", s.key, s.value.as_deref().unwrap_or_default(), s.source)
            })
            .collect();
        return Err(input_failure(format!("invalid setting for `shoal {target}`: {reason}{}", notes.concat())));
    }
    writeln!(out, "# ok: the configuration is valid for `shoal {target}`")
        .map_err(|e| Failure { exit: Exit::Internal, error: e.into() })?;
    Ok(Exit::Ok)
}

/// The command `config check --for` names.
fn target_name(target: ConfigTarget) -> String {
    target.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
}

/// Whether an error message names `flag` (`--in-flight` in `--in-flight/--gap-ms: …`, not
/// `--in-flight` inside `--ip-in-flight`).
fn mentions_flag(message: &str, flag: &str) -> bool {
    message.match_indices(flag).any(|(i, _)| {
        let after = message[i + flag.len()..].chars().next();
        !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

fn invalid(e: LoadError) -> Failure {
    match e {
        LoadError::Usage(e) => input_failure(clap_message(&e)),
        LoadError::File(e) => Failure { exit: Exit::Input, error: e.into() },
    }
}

fn input_failure(message: String) -> Failure {
    Failure { exit: Exit::Input, error: anyhow::Error::msg(message) }
}

/// Validates the typed settings the way the command itself does before it starts. `Err` is the
/// message `shoal config check` prints (the errors of several types meet here, only as text).
fn validate(cli: &Cli) -> Result<(), String> {
    let token = |t: &str| crate::cli::check_token(t).map_err(|e| e.to_string());
    match &cli.command {
        Sub::Audit(a) => a.crawl.validate().map(drop).map_err(|e| e.to_string()),
        Sub::Coordinator(c) => {
            c.crawl.validate().map_err(|e| e.to_string())?;
            c.notify().map_err(|e| e.to_string())?;
            c.retain.retention().map_err(|e| e.to_string())?;
            token(&c.token)
        }
        Sub::Worker(w) => w.crawl.validate().map(drop).map_err(|e| e.to_string()),
        Sub::Mcp(m) => m.crawl.validate().map(drop).map_err(|e| e.to_string()),
        Sub::Botpage(b) => crate::botpage::BotPage::from_args(b).map(drop).map_err(|e| e.to_string()),
        Sub::Submit(s) => token(&s.client.token),
        Sub::Status(s) => token(&s.client.token),
        Sub::Schedule(_) | Sub::Token(_) => Ok(()),
        Sub::Prune(p) => p.retention().map(drop).map_err(|e| e.to_string()),
        Sub::Report(_) | Sub::Robots(_) | Sub::Config(_) | Sub::Completions(_) | Sub::Man(_) => Ok(()),
    }
}

/// Prints the settings as TOML lines with their sources as comments.
fn write_settings(loaded: &Loaded, out: &mut dyn Write) -> std::io::Result<()> {
    let file = loaded.file.as_ref().map_or_else(|| "none".to_owned(), |f| f.display().to_string());
    writeln!(out, "# effective settings of `shoal {}` (config file: {file})", loaded.command)?;
    for s in &loaded.settings {
        match &s.value {
            Some(v) => {
                let line = format!("{} = {v}", s.key);
                writeln!(out, "{line:<48} # {}", s.source)?;
            }
            None => writeln!(out, "# {} (not set)", s.key)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_mentions_respect_word_ends() {
        assert!(mentions_flag("--in-flight/--gap-ms: bad", "--in-flight"));
        assert!(!mentions_flag("--ip-in-flight must be at least 1", "--in-flight"));
        assert!(!mentions_flag("--gap-ms-x", "--gap-ms"));
    }
}
