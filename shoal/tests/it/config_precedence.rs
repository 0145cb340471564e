//! Configuration precedence: built-in defaults < config file < SHOAL_* environment < flags.
//!
//! The file and flag layers are checked in-process with `config::load`; the environment layer
//! runs the `shoal` binary as a child with its own environment (the test process's own SHOAL_*
//! variables removed), so no test mutates the process environment.

use crate::support::{shoal_with, stdout};
use shoal::cli::{Command, LogFormat};
use shoal::config::{self, Loaded, Source};
use std::path::{Path, PathBuf};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the test config file");
    path
}

fn load(args: &[&str]) -> Loaded {
    match config::load(args.iter().copied()) {
        Ok(l) => l,
        Err(e) => panic!("{args:?} should load: {e}"),
    }
}

fn source<'a>(loaded: &'a Loaded, key: &str) -> &'a Source {
    &loaded.settings.iter().find(|s| s.key == key).expect("every key has a setting").source
}

/// The line `config check` prints for `key`.
fn check_line(out: &str, key: &str) -> String {
    out.lines()
        .find(|l| l.starts_with(&format!("{key} = ")))
        .unwrap_or_else(|| panic!("no {key} in:\n{out}"))
        .to_owned()
}

const FILE: &str = "max_pages = 200\n\n[crawl]\ngap_ms = 500\nuser_agent = \"FileBot/1.0 (+https://file.example/)\"\n";

#[test]
fn the_file_overrides_defaults() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write(dir.path(), "shoal.toml", FILE);
    let f = f.to_str().expect("utf-8 path");
    let loaded = load(&["shoal", "--config", f, "audit", "https://a.test/"]);
    let Command::Audit(a) = &loaded.cli.command else { panic!("audit expected") };
    assert_eq!(a.urls, ["https://a.test/"], "positionals stay where they were");
    assert_eq!((a.crawl.max_pages, a.crawl.gap_ms), (200, 500));
    assert_eq!(a.crawl.user_agent, "FileBot/1.0 (+https://file.example/)");
    assert_eq!(a.crawl.max_depth, 5, "keys the file does not name keep their defaults");
    assert!(matches!(source(&loaded, "max_pages"), Source::File { line: 1, section: "", .. }));
    assert!(matches!(source(&loaded, "gap_ms"), Source::File { line: 4, section: "crawl", .. }));
    assert_eq!(source(&loaded, "max_depth"), &Source::Default);
}

#[test]
fn flags_override_the_file_wherever_they_are_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write(dir.path(), "shoal.toml", FILE);
    let f = f.to_str().expect("utf-8 path");
    let loaded = load(&[
        "shoal",
        "--config",
        f,
        "audit",
        "https://a.test/",
        "--max-pages",
        "7",
        "--gap-ms=900",
        "--user-agent",
        "FlagBot/2",
        "https://b.test/",
    ]);
    let Command::Audit(a) = &loaded.cli.command else { panic!("audit expected") };
    assert_eq!((a.crawl.max_pages, a.crawl.gap_ms, a.crawl.user_agent.as_str()), (7, 900, "FlagBot/2"));
    assert_eq!(a.urls, ["https://a.test/", "https://b.test/"]);
    for key in ["max_pages", "gap_ms", "user_agent"] {
        assert_eq!(source(&loaded, key), &Source::Flag, "{key}");
    }
}

#[test]
fn a_required_flag_and_a_global_flag_can_come_from_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write(dir.path(), "shoal.toml", "log_format = \"json\"\n[coordinator]\ntoken = \"from-file\"\n");
    let f = f.to_str().expect("utf-8 path");
    let loaded = load(&["shoal", "--config", f, "coordinator"]);
    let Command::Coordinator(c) = &loaded.cli.command else { panic!("coordinator expected") };
    assert_eq!(c.token, "from-file");
    assert_eq!(loaded.cli.log_format, LogFormat::Json);
    let token = loaded.settings.iter().find(|s| s.key == "token").expect("token setting");
    assert_eq!(token.value.as_deref(), Some("\"<redacted>\""), "the token is never shown");
    // A global flag after the subcommand still beats the file.
    let loaded = load(&["shoal", "--config", f, "coordinator", "--log-format", "human"]);
    assert_eq!(loaded.cli.log_format, LogFormat::Human);
}

#[test]
fn booleans_and_lists_from_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write(
        dir.path(),
        "s.toml",
        "[crawl]\nallow_private = true\nno_external = false\nresolve = [\"a.test=127.0.0.1\", \"b.test=::1\"]\n",
    );
    let f = f.to_str().expect("utf-8 path");
    let loaded = load(&["shoal", "--config", f, "worker"]);
    let Command::Worker(w) = &loaded.cli.command else { panic!("worker expected") };
    assert!(w.crawl.allow_private && !w.crawl.no_external);
    assert_eq!(w.crawl.resolve, ["a.test=127.0.0.1", "b.test=::1"]);
    let config = w.crawl.validate().expect("valid settings");
    assert_eq!(config.worker.fetch.resolve.len(), 2);
}

#[test]
fn environment_beats_the_file_and_flags_beat_the_environment() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write(dir.path(), "shoal.toml", FILE);
    let f = f.to_str().expect("utf-8 path");
    let env = [("SHOAL_MAX_PAGES", "300"), ("SHOAL_GAP_MS", "700"), ("SHOAL_USER_AGENT", "EnvBot/3")];

    let out = shoal_with(&["config", "check", f, "--for", "audit"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    assert!(check_line(&text, "max_pages").contains("= 200") && check_line(&text, "max_pages").contains("# file"));

    let out = shoal_with(&["config", "check", f, "--for", "audit"], &env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    for (key, value, var) in [("max_pages", "300", "SHOAL_MAX_PAGES"), ("gap_ms", "700", "SHOAL_GAP_MS")] {
        let line = check_line(&text, key);
        assert!(line.starts_with(&format!("{key} = {value} ")) && line.ends_with(&format!("# env {var}")), "{line}");
    }
    assert!(check_line(&text, "user_agent").starts_with("user_agent = \"EnvBot/3\""));

    let flags =
        ["config", "check", f, "--for", "audit", "--", "--max-pages", "9", "--gap-ms", "0", "--user-agent", "FlagBot"];
    let text = stdout(&shoal_with(&flags, &env));
    assert!(
        check_line(&text, "max_pages").starts_with("max_pages = 9 ")
            && check_line(&text, "max_pages").ends_with("# flag")
    );
    assert!(check_line(&text, "gap_ms").starts_with("gap_ms = 0 "));
    assert!(check_line(&text, "user_agent").starts_with("user_agent = \"FlagBot\""));
}

/// The same precedence in a command that acts on it: the site-owner page.
#[test]
fn the_page_follows_the_same_precedence() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write(dir.path(), "shoal.toml", FILE);
    let page = |args: &[&str], env: &[(&str, &str)]| {
        let out_dir = tempfile::tempdir().expect("temp dir");
        let out_path = out_dir.path().to_str().expect("utf-8 path").to_owned();
        let mut all = vec!["botpage", "--out", out_path.as_str()];
        all.extend_from_slice(args);
        let out = shoal_with(&all, env);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::read_to_string(out_dir.path().join("shoalbot.md")).expect("page written")
    };
    let conf = [("SHOAL_CONFIG", f.to_str().expect("utf-8 path"))];
    let md = page(&[], &conf);
    assert!(md.contains("at least **500 ms**") && md.contains("at most 200 pages") && md.contains("FileBot/1.0"));
    let md = page(&[], &[conf[0], ("SHOAL_GAP_MS", "700"), ("SHOAL_MAX_PAGES", "300")]);
    assert!(md.contains("at least **700 ms**") && md.contains("at most 300 pages"));
    let md = page(
        &["--gap-ms", "1200", "--max-pages", "40"],
        &[conf[0], ("SHOAL_GAP_MS", "700"), ("SHOAL_MAX_PAGES", "300")],
    );
    assert!(md.contains("at least **1.2 s**") && md.contains("at most 40 pages"));
}

#[test]
fn the_schedule_minimum_is_a_coordinator_setting_of_the_operator() {
    use shoal_coordinator::schedule::when::DEFAULT_MIN_INTERVAL;
    use std::time::Duration;
    let coordinator = |loaded: &Loaded| match &loaded.cli.command {
        Command::Coordinator(c) => c.schedule_min_interval,
        _ => panic!("coordinator expected"),
    };
    let loaded = load(&["shoal", "coordinator", "--token", "0123456789abcdef"]);
    assert_eq!(coordinator(&loaded), DEFAULT_MIN_INTERVAL, "an hour unless the operator says otherwise");
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write(dir.path(), "shoal.toml", "[coordinator]\nschedule_min_interval = \"10m\"\n");
    let f = f.to_str().expect("utf-8 path");
    let loaded = load(&["shoal", "--config", f, "coordinator", "--token", "0123456789abcdef"]);
    assert_eq!(coordinator(&loaded), Duration::from_secs(600));
    assert!(matches!(source(&loaded, "schedule_min_interval"), Source::File { section: "coordinator", .. }));
    let loaded = load(&["shoal", "coordinator", "--token", "0123456789abcdef", "--schedule-min-interval", "1s"]);
    assert_eq!(coordinator(&loaded), Duration::from_secs(1));
    // Only the coordinator has it: not a crawl setting, not the CLI client's.
    for (text, section) in [
        ("[crawl]\nschedule_min_interval = \"1s\"\n", "crawl"),
        ("[submit]\nschedule_min_interval = \"1s\"\n", "submit"),
        ("[coordinator]\nschedule_min_interval = \"0s\"\n", "coordinator"),
    ] {
        let f = write(dir.path(), "bad.toml", text);
        let e = config::load([
            "shoal",
            "--config",
            f.to_str().expect("utf-8"),
            "coordinator",
            "--token",
            "0123456789abcdef",
        ])
        .err()
        .unwrap_or_else(|| panic!("[{section}] schedule_min_interval should be refused"));
        assert!(e.to_string().contains("schedule_min_interval"), "{section}: {e}");
    }
}

#[test]
fn no_flag_key_or_variable_turns_fault_injection_on() {
    // The switch is a field of the crawler's settings only code can set (worker/src/fault.rs).
    let catalogue = config::Catalogue::new();
    let mut keys: Vec<&config::Key> = catalogue.globals().iter().chain(catalogue.crawl()).collect();
    for command in config::COMMANDS {
        keys.extend(catalogue.command(command));
    }
    for k in keys {
        let names = format!("{} {} {:?}", k.key, k.long, k.env).to_lowercase();
        assert!(!names.contains("fault") && !names.contains("inject"), "{names}");
    }
    for args in [
        vec!["shoal", "audit", "https://a.test/"],
        vec!["shoal", "worker"],
        vec!["shoal", "coordinator", "--token", "0123456789abcdef"],
    ] {
        let loaded = load(&args);
        let crawl = match &loaded.cli.command {
            Command::Audit(a) => &a.crawl,
            Command::Worker(w) => &w.crawl,
            Command::Coordinator(c) => &c.crawl,
            _ => panic!("a crawling command"),
        };
        let config = shoal::cli::CrawlConfig::try_from(crawl).expect("valid");
        assert!(!config.worker.crawl.inject_faults, "{args:?}");
    }
}

/// Issue 37: the scope rules are list keys of the crawl settings; a file's array is one rule per
/// item (a pattern may hold commas), and they reach the typed limits compiled.
#[test]
fn scope_rules_come_from_the_file_as_lists() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = write(
        dir.path(),
        "shoal.toml",
        "[crawl]\nexclude = [\"/cart\", \"/p/[0-9]{1,3},x\"]\ninclude = [\"/shop/\"]\nstrip_query = [\"utm_*\", \"sid\"]\n",
    );
    let f = f.to_str().expect("utf-8 path");
    let loaded = load(&["shoal", "--config", f, "audit", "https://a.test/"]);
    let Command::Audit(a) = &loaded.cli.command else { panic!("audit expected") };
    let config = a.crawl.validate().expect("valid rules");
    assert_eq!(config.engine.defaults.limits.scope.exclude(), ["/cart", "/p/[0-9]{1,3},x"]);
    assert_eq!(config.engine.defaults.limits.scope.include(), ["/shop/"]);
    assert_eq!(config.engine.defaults.limits.scope.strip_query(), ["utm_*", "sid"]);
    assert!(matches!(source(&loaded, "exclude"), Source::File { section: "crawl", .. }));
}
