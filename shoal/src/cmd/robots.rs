//! `shoal robots`: the robots.txt verdicts of a file, as the crawler reaches them.

use crate::cli::RobotsArgs;
use crate::{Exit, Failure};
use anyhow::Context;
use std::io::Write;

/// Prints a verdict per URL (or per URL and AI crawler, or the file's sitemaps, or its crawl
/// delay).
///
/// # Errors
/// The file cannot be read (3) or standard output cannot be written (1).
pub fn run(args: &RobotsArgs) -> Result<Exit, Failure> {
    use shoal_shared::robots::{ProductToken, RobotsRules, Verdict, verdict_line};
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
    } else if args.ai_crawlers {
        // The same verdicts the audit's AI crawler table is made of.
        let ai = shoal_shared::ai_crawlers::AiRules::parse(&body);
        args.urls.iter().try_for_each(|u| {
            let verdicts = ai.verdicts_str(u);
            shoal_shared::ai_crawlers::AI_CRAWLERS.iter().zip(&verdicts).try_for_each(|(c, v)| match v {
                Verdict::Allowed => writeln!(out, "{} {}", c.token, verdict_line(v, u)),
                Verdict::Disallowed { rule } => writeln!(out, "{} {} (rule {rule})", c.token, verdict_line(v, u)),
            })
        })
    } else {
        args.urls.iter().try_for_each(|u| writeln!(out, "{}", verdict_line(&rules.check_str(u), u)))
    };
    result.and_then(|()| out.flush()).context("writing to standard output")?;
    Ok(Exit::Ok)
}
