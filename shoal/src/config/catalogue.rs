//! The catalogue of configuration keys, derived from the clap definitions: every flag a command
//! takes is a key of its section of the file, with its value kind, so the file can never know a
//! key the command line does not (and the other way round).

use super::{COMMANDS, CRAWL_SECTION};
use super::{CONFIG_ARG, FileValue, REDACTED, clap_message, toml_string};
use crate::cli::{Cli, CrawlArgs};
use clap::{Arg, ArgAction, Args, Command, CommandFactory};
use std::any::TypeId;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;

/// What a key's value must be in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// `true` or `false` (a flag without a value).
    Switch,
    /// A whole number without quotes.
    Integer,
    /// A string in quotes.
    Text,
}

/// One key: a long flag of one command (or a global one).
#[derive(Debug, Clone)]
pub struct Key {
    /// The key in the file (`max_pages`).
    pub key: String,
    /// The flag without dashes (`max-pages`).
    pub long: String,
    /// What the value must be.
    pub kind: ValueKind,
    /// Whether the flag repeats (an array in the file).
    pub list: bool,
    /// The environment variable.
    pub env: Option<String>,
    /// The built-in default, as clap shows it (empty if none).
    pub default: Vec<String>,
    /// The flag's help summary.
    pub help: String,
    /// The values an enumerated flag takes (`json`, `csv`, `html`); empty for free values.
    pub possible: Vec<String>,
    /// Shown as `<redacted>` (the API token).
    pub secret: bool,
    /// Whether it is a global flag (valid in every section).
    pub global: bool,
    /// The flag's definition, for its value parser.
    pub(super) arg: Arg,
}

impl Key {
    pub(super) fn from_arg(arg: &Arg) -> Option<Key> {
        let long = arg.get_long()?;
        let action = arg.get_action();
        if matches!(action, ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version)
            || arg.get_id() == CONFIG_ARG
            // Options that take several values at once (`--compare OLD NEW`) stay on the command line.
            || arg.get_num_args().is_some_and(|n| n.max_values() > 1)
        {
            return None;
        }
        let kind = if matches!(action, ArgAction::SetTrue) {
            ValueKind::Switch
        } else {
            let t = arg.get_value_parser().type_id();
            let integers = [
                TypeId::of::<u8>(),
                TypeId::of::<u16>(),
                TypeId::of::<u32>(),
                TypeId::of::<u64>(),
                TypeId::of::<usize>(),
            ];
            if integers.iter().any(|i| t == *i) { ValueKind::Integer } else { ValueKind::Text }
        };
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        Some(Key {
            key: long.replace('-', "_"),
            long: long.to_owned(),
            kind,
            list: matches!(action, ArgAction::Append),
            env: arg.get_env().map(|e| e.to_string_lossy().into_owned()),
            default: if kind == ValueKind::Switch {
                vec!["false".to_owned()]
            } else {
                arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect()
            },
            help: help.split("\n\n").next().unwrap_or_default().replace('\n', " "),
            possible: if kind == ValueKind::Switch {
                Vec::new()
            } else {
                arg.get_possible_values().iter().map(|p| p.get_name().to_owned()).collect()
            },
            secret: arg.is_hide_env_values_set(),
            global: arg.is_global_set(),
            arg: arg.clone(),
        })
    }

    /// The flag's id in clap's matches.
    pub(super) fn id(&self) -> &str {
        self.arg.get_id().as_str()
    }

    /// Turns a file value into the flag values it stands for, checked by the flag's own parser.
    /// `Err` is a config problem's text (the value's kind or clap's message), as below.
    pub(super) fn flag_values(&self, value: &FileValue) -> Result<Vec<String>, String> {
        let items: Vec<&FileValue> = match value {
            FileValue::Array(items) if self.list => items.iter().collect(),
            FileValue::Array(_) => return Err("expected one value, found an array".to_owned()),
            v => vec![v],
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let s = match (self.kind, item) {
                (ValueKind::Switch, FileValue::Bool(b)) => b.to_string(),
                (ValueKind::Switch, other) => {
                    return Err(format!("expected true or false, found {}", other.describe()));
                }
                (ValueKind::Integer, FileValue::Integer(i)) => i.to_string(),
                (ValueKind::Integer, other) => {
                    return Err(format!(
                        "expected a whole number without quotes (like `{} = {}`), found {}",
                        self.key,
                        self.default.first().map_or("1", String::as_str),
                        other.describe()
                    ));
                }
                (ValueKind::Text, FileValue::Text(s)) => s.clone(),
                (ValueKind::Text, other) => {
                    return Err(format!("expected a string in quotes, found {}", other.describe()));
                }
            };
            self.parse_with_flag_parser(&s)?;
            out.push(s);
        }
        Ok(out)
    }

    /// Runs the flag's own value parser on `value`, so a file value is refused exactly when the
    /// flag would refuse it. `Err` is clap's message with the allowed values: a problem's text.
    pub(super) fn parse_with_flag_parser(&self, value: &str) -> Result<(), String> {
        if self.kind == ValueKind::Switch {
            return Ok(());
        }
        // The flag alone (its id, long name, value parser and action), nothing it relates to.
        let probe = Command::new("shoal").arg(self.arg.clone().required(false).global(false));
        let mut flag = OsString::from(format!("--{}=", self.long));
        flag.push(value);
        match probe.try_get_matches_from([OsString::from("shoal"), flag]) {
            Ok(_) => Ok(()),
            Err(e) => Err(format!("{}{}", clap_message(&e), self.one_of())),
        }
    }

    /// ` (one of: json, csv, html)` for an enumerated flag, else nothing.
    pub(super) fn one_of(&self) -> String {
        if self.possible.is_empty() { String::new() } else { format!(" (one of: {})", self.possible.join(", ")) }
    }

    /// The placeholder clap shows for the value (`PATH`, `HOST=IP`).
    pub(super) fn value_name(&self) -> String {
        self.arg
            .get_value_names()
            .and_then(|n| n.first())
            .map_or_else(|| self.long.to_uppercase().replace('-', "_"), ToString::to_string)
    }

    /// How a value of this key is shown: TOML syntax, secrets redacted, URL passwords masked.
    pub(super) fn display(&self, raw: &[String]) -> String {
        let one = |s: &String| match self.kind {
            _ if self.secret => toml_string(REDACTED),
            ValueKind::Switch | ValueKind::Integer => s.clone(),
            ValueKind::Text => toml_string(&shoal_frontier_redis::redact(s)),
        };
        if self.list {
            format!("[{}]", raw.iter().map(one).collect::<Vec<_>>().join(", "))
        } else {
            raw.iter().map(one).collect()
        }
    }
}

/// Every key of every configurable command, derived from [`Cli`].
#[derive(Debug)]
pub struct Catalogue {
    pub(super) globals: Vec<Key>,
    pub(super) commands: BTreeMap<&'static str, Vec<Key>>,
    pub(super) crawl: Vec<Key>,
}

impl Default for Catalogue {
    fn default() -> Self {
        Catalogue::new()
    }
}

impl Catalogue {
    /// Reads the keys from the flag definitions.
    #[must_use]
    pub fn new() -> Catalogue {
        let root = Cli::command();
        let globals = root.get_arguments().filter(|a| a.is_global_set()).filter_map(Key::from_arg).collect();
        let commands = COMMANDS
            .iter()
            .map(|&name| {
                let keys = root
                    .find_subcommand(name)
                    .map(|c| c.get_arguments().filter_map(Key::from_arg).collect())
                    .unwrap_or_default();
                (name, keys)
            })
            .collect();
        let crawl =
            CrawlArgs::augment_args(Command::new(CRAWL_SECTION)).get_arguments().filter_map(Key::from_arg).collect();
        Catalogue { globals, commands, crawl }
    }

    /// The global keys (valid at the top level and in every section).
    #[must_use]
    pub fn globals(&self) -> &[Key] {
        &self.globals
    }

    /// The crawl keys, in flag order (the `[crawl]` section).
    #[must_use]
    pub fn crawl(&self) -> &[Key] {
        &self.crawl
    }

    /// One command's own keys in flag order, crawl keys included, globals not.
    #[must_use]
    pub fn command(&self, name: &str) -> &[Key] {
        self.commands.get(name).map_or(&[], Vec::as_slice)
    }

    /// Whether `key` is a crawl setting of `command` (which then must come from `[crawl]`).
    #[must_use]
    pub fn is_crawl_key_of(&self, command: &str, key: &str) -> bool {
        self.crawls(command) && self.crawl.iter().any(|k| k.key == key)
    }

    /// Whether a command takes the crawl settings.
    #[must_use]
    pub fn crawls(&self, command: &str) -> bool {
        let own = self.command(command);
        self.crawl.iter().all(|c| own.iter().any(|k| k.key == c.key))
    }

    pub(super) fn global(&self, key: &str) -> Option<&Key> {
        self.globals.iter().find(|k| k.key == key)
    }

    pub(super) fn own(&self, command: &str, key: &str) -> Option<&Key> {
        self.command(command).iter().find(|k| k.key == key)
    }

    /// A key of `command`, global or its own.
    pub(super) fn of(&self, command: &str, key: &str) -> Option<&Key> {
        self.global(key).or_else(|| self.own(command, key))
    }

    pub(super) fn commands_with(&self, key: &str) -> Vec<&'static str> {
        self.commands.iter().filter(|(_, keys)| keys.iter().any(|k| k.key == key)).map(|(n, _)| *n).collect()
    }

    /// Every key and section name, for "did you mean" hints.
    pub(super) fn all_names(&self) -> BTreeSet<&str> {
        let keys = self.commands.values().flatten().chain(&self.globals).map(|k| k.key.as_str());
        keys.chain(COMMANDS.iter().copied()).chain([CRAWL_SECTION]).collect()
    }
}
