//! The commented default file (`shoal.example.toml`) and the key tables of docs/config.md, both
//! generated from the flag definitions so that they cannot drift from them.

use super::{COMMANDS, CRAWL_SECTION, Catalogue, Key, ValueKind, toml_string};

/// The flag's value in the example file: its default, or a commented placeholder.
fn example_value(catalogue: &Catalogue, key: &Key) -> (bool, String) {
    let placeholder = |k: &Key| match k.kind {
        ValueKind::Switch => "true".to_owned(),
        ValueKind::Integer => catalogue
            .crawl
            .iter()
            .find(|c| c.key == k.key)
            .and_then(|c| c.default.first())
            .cloned()
            .unwrap_or_else(|| "1".to_owned()),
        ValueKind::Text => toml_string(k.possible.first().map_or(&k.value_name(), |p| p)),
    };
    if key.default.is_empty() {
        let v = placeholder(key);
        (false, if key.list { format!("[{v}]") } else { v })
    } else {
        (true, key.display(&key.default))
    }
}

/// A key's one-line comment: its help, its choices, its environment variable.
fn comment(key: &Key) -> String {
    let env = key.env.as_deref().map(|e| format!(" [env: {e}]")).unwrap_or_default();
    format!("{}{}{env}", key.help, key.one_of())
}

/// The commented default configuration file (`shoal.example.toml`): every key of every command,
/// with its built-in default (keys without one commented out) and its help line.
#[must_use]
pub fn example_toml() -> String {
    let c = Catalogue::new();
    let mut out = String::from(
        "# Shoal configuration file: every key with its built-in default (docs/config.md).\n\
         #\n\
         # Keys are the long command-line flags with '_' for '-' (--max-pages is max_pages).\n\
         # Precedence: built-in default < this file < SHOAL_* environment variable < command-line flag.\n\
         # A key at the top level applies to every command that has the flag. [crawl] holds the crawl\n\
         # settings shared by audit, coordinator, worker and botpage (only there or at the top level, so\n\
         # the site-owner page says what the crawl does); [audit], [coordinator], ... hold each\n\
         # command's own settings. Keys without a default are commented out.\n\
         #\n\
         # Use:   shoal --config shoal.toml audit https://example.com/   (or SHOAL_CONFIG=shoal.toml)\n\
         # Check: shoal config check shoal.toml --for coordinator\n\
         #\n\
         # Generated from the flag definitions; a test keeps this file in sync with them.\n",
    );
    let mut section = |name: &str, keys: &mut dyn Iterator<Item = &Key>| {
        out.push_str(&format!("\n[{name}]\n"));
        for key in keys {
            let (set, value) = example_value(&c, key);
            out.push_str(&format!("# {}\n{}{} = {value}\n", comment(key), if set { "" } else { "# " }, key.key));
        }
    };
    let mut top = String::new();
    for key in &c.globals {
        let (_, value) = example_value(&c, key);
        top.push_str(&format!("\n# {}\n{} = {value}\n", comment(key), key.key));
    }
    section(CRAWL_SECTION, &mut c.crawl.iter());
    for name in COMMANDS {
        section(name, &mut c.command(name).iter().filter(|k| !c.is_crawl_key_of(name, &k.key)));
    }
    // Top-level keys must come before the first section header.
    let at = out.find("\n[").unwrap_or(out.len());
    out.insert_str(at, &top);
    out
}

/// The key tables of docs/config.md: one per section, every key with its flag, environment
/// variable, default and meaning.
#[must_use]
pub fn key_table_markdown() -> String {
    let c = Catalogue::new();
    let mut out = String::new();
    let mut table = |title: &str, keys: &mut dyn Iterator<Item = &Key>| {
        out.push_str(&format!(
            "\n#### {title}\n\n| key | flag | environment | default | meaning |\n|---|---|---|---|---|\n"
        ));
        for k in keys {
            let default = if k.default.is_empty() { String::new() } else { format!("`{}`", k.display(&k.default)) };
            let env = k.env.as_deref().map(|e| format!("`{e}`")).unwrap_or_default();
            let help = format!("{}{}", k.help, k.one_of()).replace('|', "\\|");
            out.push_str(&format!("| `{}` | `--{}` | {env} | {default} | {help} |\n", k.key, k.long));
        }
    };
    table("Top level (every command)", &mut c.globals.iter());
    table("[crawl]: audit, coordinator, worker, botpage", &mut c.crawl.iter());
    for name in COMMANDS {
        table(&format!("[{name}]"), &mut c.command(name).iter().filter(|k| !c.is_crawl_key_of(name, &k.key)));
    }
    out
}
