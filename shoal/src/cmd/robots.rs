//! `shoal robots`: the robots.txt verdicts of a file, as the crawler reaches them.

use crate::cli::RobotsArgs;
use crate::{Exit, Failure};
use anyhow::Context;
use std::io::Write;

/// Prints a verdict per URL (or the file's sitemaps, or its crawl delay).
///
/// # Errors
/// The file cannot be read (3) or standard output cannot be written (1).
pub fn run(args: &RobotsArgs) -> Result<Exit, Failure> {
    use shoal_shared::robots::{ProductToken, RobotsRules, verdict_line};
    let body = std::fs::read(&args.file)
        .with_context(|| format!("cannot read robots.txt file {}", args.file.display()))
        .map_err(Failure::input)?;
    let token = ProductToken::from_agent(&args.agent);
    let rules = RobotsRules::parse(&body, &token);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = if args.sitemaps {
        rules.sitemaps().iter().try_for_each(|s| writeln!(out, "{s}"))
    } else if args.crawl_delay {
        match rules.crawl_delay() {
            Some(d) => writeln!(out, "{}", d.as_secs_f64()),
            None => writeln!(out, "none"),
        }
    } else {
        args.urls.iter().try_for_each(|u| writeln!(out, "{}", verdict_line(&rules.check_str(u), u)))
    };
    result.and_then(|()| out.flush()).context("writing to standard output")?;
    Ok(Exit::Ok)
}
