//! The configuration file: one TOML file under the environment and the flags.
//!
//! Users read docs/config.md; this is how it works and why:
//!
//! - **Keys are the long flags** with `_` for `-` (`--max-pages` is `max_pages`). The key list is
//!   derived from the clap definitions in [`crate::cli`] ([`Catalogue`]), so the file cannot know a
//!   key the flags do not, and a new flag is a new key without touching this module.
//! - **Sections.** A top-level key applies to every command that has the flag. `[crawl]` holds the
//!   crawl settings (the flags of [`CrawlArgs`](crate::cli::CrawlArgs)) that `audit`, `coordinator`, `worker` and
//!   `botpage` share; `[audit]`, `[coordinator]`, … hold a command's own flags. Crawl settings are
//!   refused in a command's section, so `shoal botpage` always reads the values the crawl reads.
//! - **Precedence: defaults < file < environment < flags.** Arguments are parsed once (required
//!   flags relaxed); for every setting that neither the command line nor a `SHOAL_*` variable gave
//!   (clap's value source), the file's value is inserted as `--flag=value` after the subcommand
//!   name, and the arguments are parsed again. File values thus go through the same clap parsers
//!   and the same [`CrawlConfig::try_from`](crate::cli::CrawlConfig) as flags: the file can set nothing a flag could not.
//! - **Raw layer.** The file is read into toml's spanned document tree rather than a serde struct
//!   with `deny_unknown_fields`, whose field list would be a second copy of the flags to keep in
//!   sync. Unknown sections and keys, wrong types and values a flag would refuse are all reported
//!   at once, each as `path:line: what, and what to do`.
//!
//! [`example_toml`] and [`key_table_markdown`] generate `shoal.example.toml` and the key table of
//! docs/config.md from the same catalogue; tests keep both files equal to them.

use crate::cli::Cli;
use clap::parser::ValueSource;
use clap::{ArgMatches, Command, CommandFactory, FromArgMatches};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use toml::de::{DeTable, DeValue};

mod catalogue;
mod check;
mod generate;

pub use catalogue::{Catalogue, Key, ValueKind};
pub use check::check;
pub use generate::{example_toml, key_table_markdown};

/// The commands a configuration file configures; each is also a section name. `robots` and
/// `config` are left out: support tools that take everything from their arguments.
pub const COMMANDS: &[&str] =
    &["audit", "coordinator", "worker", "submit", "status", "report", "prune", "botpage", "mcp"];
/// The section of the crawl settings shared by every command that crawls (and `botpage`).
pub const CRAWL_SECTION: &str = "crawl";
/// The global option naming the file; not a key, since a file cannot name another file.
const CONFIG_ARG: &str = "config";
/// What a secret is shown as.
const REDACTED: &str = "<redacted>";
/// Where users read about the file; named in error hints.
const DOC: &str = "docs/config.md";

/// A value as written in the file.
#[derive(Debug, Clone, PartialEq)]
enum FileValue {
    Bool(bool),
    Integer(i64),
    Text(String),
    Array(Vec<FileValue>),
    /// A TOML type no flag takes (float, date, table), by name.
    Other(&'static str),
}

impl FileValue {
    fn from_de(v: &DeValue<'_>) -> FileValue {
        match v {
            DeValue::Boolean(b) => FileValue::Bool(*b),
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
                .map_or(FileValue::Other("an integer out of range"), FileValue::Integer),
            DeValue::String(s) => FileValue::Text(s.to_string()),
            DeValue::Array(a) => FileValue::Array(a.iter().map(|e| FileValue::from_de(e.get_ref())).collect()),
            DeValue::Float(_) => FileValue::Other("a decimal number"),
            DeValue::Datetime(_) => FileValue::Other("a date"),
            DeValue::Table(_) => FileValue::Other("a table"),
        }
    }

    fn describe(&self) -> String {
        match self {
            FileValue::Bool(b) => format!("the boolean {b}"),
            FileValue::Integer(i) => format!("the number {i}"),
            FileValue::Text(s) => format!("the string {}", toml_string(s)),
            FileValue::Array(_) => "an array".to_owned(),
            FileValue::Other(what) => (*what).to_owned(),
        }
    }
}

/// One value in the file and where it is.
#[derive(Debug, Clone)]
struct Entry {
    line: usize,
    value: FileValue,
}

/// One problem in a file, at a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line.
    pub line: usize,
    /// What is wrong and what to do.
    pub message: String,
}

/// A configuration file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigFileError {
    /// The file cannot be read (missing, unreadable, not UTF-8).
    #[error("cannot read the config file {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// Not TOML.
    #[error("{}:{line}: not valid TOML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// Unknown sections or keys, or values a flag would refuse; all of them.
    #[error("{}", problems.iter().map(|p| format!("{}:{}: {}", path.display(), p.line, p.message)).collect::<Vec<_>>().join("\n"))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Every problem, in file order.
        problems: Vec<Problem>,
    },
}

/// A configuration file, read and checked against the flags.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// Where it was read from.
    pub path: PathBuf,
    top: BTreeMap<String, Entry>,
    sections: BTreeMap<String, BTreeMap<String, Entry>>,
}

impl ConfigFile {
    /// Reads and checks a file: every section and key must exist, every value must be what its
    /// flag accepts (for every command it applies to).
    pub fn load(path: &Path, catalogue: &Catalogue) -> Result<ConfigFile, ConfigFileError> {
        let text =
            std::fs::read_to_string(path).map_err(|error| ConfigFileError::Read { path: path.to_path_buf(), error })?;
        ConfigFile::parse(path, &text, catalogue)
    }

    /// Checks the text of a file read from `path`.
    pub fn parse(path: &Path, text: &str, catalogue: &Catalogue) -> Result<ConfigFile, ConfigFileError> {
        let doc = DeTable::parse(text).map_err(|e| ConfigFileError::Syntax {
            path: path.to_path_buf(),
            line: e.span().map_or(1, |s| line_of(text, s.start)),
            message: e.message().to_owned(),
        })?;
        let mut file = ConfigFile { path: path.to_path_buf(), top: BTreeMap::new(), sections: BTreeMap::new() };
        let mut problems = Vec::new();
        for (k, v) in doc.get_ref() {
            let (name, line) = (k.get_ref().as_ref(), line_of(text, k.span().start));
            match v.get_ref() {
                DeValue::Table(table) if name == CRAWL_SECTION || COMMANDS.contains(&name) => {
                    let mut section = BTreeMap::new();
                    for (k, v) in table {
                        let (key, line) = (k.get_ref().as_ref(), line_of(text, k.span().start));
                        let value = FileValue::from_de(v.get_ref());
                        match check_section_key(catalogue, name, key, &value) {
                            Ok(()) => {
                                section.insert(key.to_owned(), Entry { line, value });
                            }
                            Err(message) => problems.push(Problem { line, message }),
                        }
                    }
                    file.sections.insert(name.to_owned(), section);
                }
                DeValue::Table(_) if catalogue.global(name).is_none() && catalogue.commands_with(name).is_empty() => {
                    let sections: Vec<String> =
                        [CRAWL_SECTION].iter().chain(COMMANDS).map(|s| format!("[{s}]")).collect();
                    let hint = suggest(name, [CRAWL_SECTION].into_iter().chain(COMMANDS.iter().copied()))
                        .map(|s| format!("did you mean [{s}]? "))
                        .unwrap_or_default();
                    problems.push(Problem {
                        line,
                        message: format!("unknown section [{name}]: {hint}sections are {}", sections.join(", ")),
                    });
                }
                v => {
                    let value = FileValue::from_de(v);
                    match check_top_key(catalogue, name, &value) {
                        Ok(()) => {
                            file.top.insert(name.to_owned(), Entry { line, value });
                        }
                        Err(message) => problems.push(Problem { line, message }),
                    }
                }
            }
        }
        if problems.is_empty() {
            Ok(file)
        } else {
            problems.sort_by_key(|p| p.line);
            Err(ConfigFileError::Invalid { path: path.to_path_buf(), problems })
        }
    }

    /// The file's value for one key of one command, most specific first: the command's section,
    /// then `[crawl]` (crawl keys only), then the top level. Returns the entry and its scope.
    fn value_for(&self, catalogue: &Catalogue, command: &str, key: &str) -> Option<(&Entry, &'static str)> {
        let in_section = |s: &str| self.sections.get(s).and_then(|t| t.get(key));
        let section = COMMANDS.iter().find(|c| **c == command).copied();
        section
            .and_then(|s| in_section(s).map(|e| (e, s)))
            .or_else(|| {
                catalogue
                    .is_crawl_key_of(command, key)
                    .then(|| in_section(CRAWL_SECTION).map(|e| (e, CRAWL_SECTION)))?
            })
            .or_else(|| self.top.get(key).map(|e| (e, "")))
    }
}

/// `Err` is the problem's message: it becomes a [`Problem`] with its line, and nothing else
/// reads it (so a string, not an error type).
fn check_top_key(catalogue: &Catalogue, key: &str, value: &FileValue) -> Result<(), String> {
    let mut keys: Vec<&Key> = catalogue.global(key).into_iter().collect();
    keys.extend(catalogue.commands_with(key).into_iter().filter_map(|c| catalogue.own(c, key)));
    if keys.is_empty() {
        return Err(unknown_key(catalogue, key, catalogue.all_names()));
    }
    keys.into_iter().try_for_each(|k| k.flag_values(value).map(drop).map_err(|e| format!("`{key}`: {e}")))
}

/// `Err` is the problem's message, as for [`check_top_key`].
fn check_section_key(catalogue: &Catalogue, section: &str, key: &str, value: &FileValue) -> Result<(), String> {
    if matches!(value, FileValue::Other("a table")) {
        return Err(format!("[{section}] `{key}`: sections do not nest; keys are the long flags of one command"));
    }
    let found = if section == CRAWL_SECTION {
        catalogue.crawl.iter().find(|k| k.key == key).or_else(|| catalogue.global(key))
    } else if catalogue.is_crawl_key_of(section, key) {
        return Err(format!(
            "`{key}` is a crawl setting: put it in [crawl] or at the top level, where every crawling command \
             and `shoal botpage` read it (so the site-owner page says what the crawl does)"
        ));
    } else {
        catalogue.of(section, key)
    };
    let Some(k) = found else {
        let elsewhere = catalogue.commands_with(key);
        return Err(if elsewhere.is_empty() {
            let names = catalogue
                .crawl
                .iter()
                .filter(|_| section == CRAWL_SECTION)
                .chain(catalogue.command(section))
                .chain(&catalogue.globals)
                .map(|k| k.key.as_str())
                .collect();
            unknown_key(catalogue, key, names)
        } else {
            let places: Vec<String> = elsewhere.iter().map(|c| format!("[{c}]")).collect();
            format!(
                "`{key}` is not a setting of [{section}]: it belongs in {} (or at the top level for all of them)",
                places.join(", ")
            )
        });
    };
    k.flag_values(value).map(drop).map_err(|e| format!("[{section}] `{key}`: {e}"))
}

fn unknown_key(catalogue: &Catalogue, key: &str, candidates: BTreeSet<&str>) -> String {
    let underscored = key.replace('-', "_");
    let hint = if key == CONFIG_ARG {
        "a config file cannot name another one (give --config or SHOAL_CONFIG)".to_owned()
    } else if underscored != key && catalogue.all_names().contains(underscored.as_str()) {
        format!("write `{underscored}` (keys use '_' where flags use '-')")
    } else if let Some(s) = suggest(key, candidates) {
        format!("did you mean `{s}`?")
    } else {
        format!("keys are the long flag names with '_' for '-', listed in {DOC}")
    };
    format!("unknown key `{key}`: {hint}")
}

/// The closest name within a small edit distance.
fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).clamp(1, 3);
    candidates.into_iter().map(|c| (edit_distance(name, c), c)).filter(|(d, _)| *d <= limit).min().map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// The first line of a clap error, without its `error: ` prefix.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_owned()
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The built-in default.
    Default,
    /// The configuration file.
    File {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The section (`crawl`, `audit`, …), empty for the top level.
        section: &'static str,
    },
    /// An environment variable.
    Env(String),
    /// A command-line flag.
    Flag,
    /// Nothing gave a value and there is no default.
    Unset,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File { path, line, section: "" } => write!(f, "file {}:{line}", path.display()),
            Source::File { path, line, section } => write!(f, "file {}:{line} [{section}]", path.display()),
            Source::Env(var) => write!(f, "env {var}"),
            Source::Flag => f.write_str("flag"),
            Source::Unset => f.write_str("not set"),
        }
    }
}

/// One effective setting of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The key (`max_pages`).
    pub key: String,
    /// The flag (`--max-pages`).
    pub flag: String,
    /// The value in TOML syntax, secrets redacted; `None` when unset.
    pub value: Option<String>,
    /// Where it came from.
    pub source: Source,
}

/// A command line with the configuration file applied.
#[derive(Debug)]
pub struct Loaded {
    /// The parsed command line, as if every file value had been given as a flag.
    pub cli: Cli,
    /// The subcommand's name.
    pub command: String,
    /// The configuration file used, if any.
    pub file: Option<PathBuf>,
    /// Every setting of the command (globals first), with its value and source.
    pub settings: Vec<Setting>,
}

/// Why a command line cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Bad arguments, or `--help`/`--version`: clap's own error, shown and exited by clap (2).
    #[error(transparent)]
    Usage(#[from] clap::Error),
    /// The configuration file is missing or wrong (exit 3).
    #[error(transparent)]
    File(#[from] ConfigFileError),
}

/// The first parse, with the file's values worked out.
#[derive(Debug)]
struct Resolution {
    first: ArgMatches,
    command: String,
    file: Option<PathBuf>,
    args: Vec<OsString>,
    from_file: BTreeMap<String, Source>,
}

/// Parses a command line (program name first) with the configuration file of `--config` or
/// `SHOAL_CONFIG` applied under the environment and the flags. `main` calls this instead of
/// `Cli::parse`; tests call it with their own arguments.
pub fn load<I, T>(args: I) -> Result<Loaded, LoadError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let catalogue = Catalogue::new();
    let resolution = resolve(args.into_iter().map(Into::into).collect(), &catalogue)?;
    finish(resolution, &catalogue)
}

/// Every parse error is the strict command's, so usage lines show required flags as required.
fn resolve(args: Vec<OsString>, catalogue: &Catalogue) -> Result<Resolution, LoadError> {
    let first = match relaxed(Cli::command()).try_get_matches_from(&args) {
        Ok(m) => m,
        Err(lenient) => return Err(Cli::command().try_get_matches_from(&args).err().unwrap_or(lenient).into()),
    };
    let command = first.subcommand_name().unwrap_or_default().to_owned();
    let file = first.get_one::<PathBuf>(CONFIG_ARG).cloned();
    let mut resolution = Resolution { first, command, file, args, from_file: BTreeMap::new() };
    let (Some(path), true) = (resolution.file.clone(), COMMANDS.contains(&resolution.command.as_str())) else {
        return Ok(resolution);
    };
    let file = ConfigFile::load(&path, catalogue)?;
    let name = resolution.command.clone();
    let mut extra: Vec<OsString> = Vec::new();
    for key in catalogue.globals.iter().chain(catalogue.command(&name)) {
        let matches = if key.global { Some(&resolution.first) } else { resolution.first.subcommand_matches(&name) };
        let given = matches.and_then(|m| m.value_source(key.id()));
        if matches!(given, Some(ValueSource::CommandLine | ValueSource::EnvVariable)) {
            continue;
        }
        let Some((entry, section)) = file.value_for(catalogue, &name, &key.key) else { continue };
        let values = key.flag_values(&entry.value).map_err(|message| ConfigFileError::Invalid {
            path: path.clone(),
            problems: vec![Problem { line: entry.line, message: format!("`{}`: {message}", key.key) }],
        })?;
        for v in values {
            match key.kind {
                ValueKind::Switch if v == "true" => extra.push(format!("--{}", key.long).into()),
                ValueKind::Switch => {}
                _ => extra.push(format!("--{}={v}", key.long).into()),
            }
        }
        resolution
            .from_file
            .insert(key.id().to_owned(), Source::File { path: path.clone(), line: entry.line, section });
    }
    let at = subcommand_index(&resolution.args, &name)
        .map_or_else(|| resolution.args.iter().position(|a| a == "--").unwrap_or(resolution.args.len()), |i| i + 1);
    resolution.args.splice(at..at, extra);
    Ok(resolution)
}

fn finish(resolution: Resolution, catalogue: &Catalogue) -> Result<Loaded, LoadError> {
    let matches = Cli::command().try_get_matches_from(&resolution.args)?;
    let cli = Cli::from_arg_matches(&matches)?;
    let name = resolution.command;
    let keys: &[Key] = if COMMANDS.contains(&name.as_str()) { catalogue.command(&name) } else { &[] };
    let settings = catalogue
        .globals
        .iter()
        .chain(keys)
        .map(|key| {
            let (first, last) = if key.global {
                (Some(&resolution.first), Some(&matches))
            } else {
                (resolution.first.subcommand_matches(&name), matches.subcommand_matches(&name))
            };
            let source = resolution.from_file.get(key.id()).cloned().unwrap_or_else(|| {
                match first.and_then(|m| m.value_source(key.id())) {
                    Some(ValueSource::CommandLine) => Source::Flag,
                    Some(ValueSource::EnvVariable) => Source::Env(key.env.clone().unwrap_or_default()),
                    Some(ValueSource::DefaultValue) => Source::Default,
                    _ => Source::Unset,
                }
            });
            let raw: Option<Vec<String>> = last
                .and_then(|m| m.get_raw(key.id()))
                .map(|vals| vals.map(|v| v.to_string_lossy().into_owned()).collect());
            let value = raw.filter(|r| !r.is_empty() || key.list).map(|r| key.display(&r));
            let source = if value.is_none() { Source::Unset } else { source };
            Setting { key: key.key.clone(), flag: format!("--{}", key.long), value, source }
        })
        .collect();
    Ok(Loaded { cli, command: name, file: resolution.file, settings })
}

/// The command with no flag required, for the first parse: a required flag may come from the file.
fn relaxed(cmd: Command) -> Command {
    cmd.mut_args(|a| a.required(false)).mut_subcommands(relaxed)
}

/// Where the subcommand name is: after the program name and any top-level options.
fn subcommand_index(args: &[OsString], name: &str) -> Option<usize> {
    let root = Cli::command();
    let mut i = 1;
    while let Some(arg) = args.get(i) {
        let a = arg.to_str()?;
        if a == "--" {
            return None;
        }
        if let Some(long) = a.strip_prefix("--") {
            let takes_value = !long.contains('=')
                && root.get_arguments().any(|x| x.get_long() == Some(long) && x.get_action().takes_values());
            i += if takes_value { 2 } else { 1 };
        } else if a.starts_with('-') && a.len() > 1 {
            i += 1; // top-level short options (-h, -V) take no value
        } else {
            return (a == name).then_some(i);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_close_names_only() {
        assert_eq!(suggest("max_page", ["max_pages", "max_depth"]), Some("max_pages"));
        assert_eq!(suggest("colour", ["max_pages"]), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn passwords_and_quotes_are_shown_safely() {
        assert_eq!(shoal_frontier_redis::redact("redis://:hunter2@r:6379/0"), "redis://:***@r:6379/0");
        assert_eq!(toml_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000A\"");
    }

    #[test]
    fn subcommand_found_after_top_level_options() {
        let args: Vec<OsString> =
            ["shoal", "--config", "audit", "--log-format=json", "audit", "x"].iter().map(OsString::from).collect();
        assert_eq!(subcommand_index(&args, "audit"), Some(4));
    }
}
