//! `shoal prune`: removes old audits from the audit database by the store's retention rule
//! ([`shoal_store::retention`], the same rule the coordinator's `--retain-audits` and
//! `--retain-days` apply), then gives the space back.
//!
//! Safe beside a running coordinator: each audit is deleted in one transaction under SQLite's
//! write lock, after the rule is checked again under that lock, so the coordinator's writes wait
//! for it (or it for them, `--wait-s`), and a database that stays busy longer is an error with
//! nothing changed (exit 4), never a half-deleted audit.

use crate::cli::PruneArgs;
use crate::{Exit, Failure};
use shoal_shared::time::UnixMs;
use shoal_store::retention::RECLAIM_STEP;
use shoal_store::{AuditDb, Prunable, Removed, Verdict};
use std::io::Write;
use std::time::Duration;

/// Runs `shoal prune`, printing what it removed (or would remove) to standard output.
///
/// # Errors
/// Bad flags (3), the audit database (4: cannot be opened, stayed busy, a write failed).
pub fn run(args: &PruneArgs) -> Result<Exit, Failure> {
    let mut out = std::io::stdout().lock();
    prune(args, UnixMs::from(std::time::SystemTime::now()), &mut out)
}

/// [`run`] at `now`, writing to `out`.
///
/// # Errors
/// As [`run`].
pub fn prune(args: &PruneArgs, now: UnixMs, out: &mut dyn Write) -> Result<Exit, Failure> {
    let rule = args.retention()?;
    let mut db = AuditDb::open_waiting(&args.db, Duration::from_secs(args.wait_s))?;
    let before = db.space()?;
    let candidates = db.prunable(&rule, now)?;
    let mut removed = 0usize;
    for p in &candidates {
        if args.dry_run {
            writeln!(out, "would remove {}", describe(p))?;
            continue;
        }
        // `None`: the audit changed since it was listed (another process reopened it, or a
        // schedule ran again): the rule, checked again under the lock, keeps it.
        if let Some(r) = db.prune_audit(p.audit, &rule, now)? {
            writeln!(out, "removed {}; {}", describe(p), rows(&r))?;
            removed += 1;
        }
    }
    if args.dry_run {
        writeln!(out, "{} audit(s) would be removed; nothing was changed", candidates.len())?;
        return Ok(Exit::Ok);
    }
    // Give the free pages back: a step at a time on a file in incremental mode, or all at once
    // with --vacuum (which also switches an older file to incremental mode).
    if args.vacuum {
        db.vacuum()?;
    } else {
        while db.reclaim(RECLAIM_STEP)? > 0 {}
        db.checkpoint()?;
    }
    let after = db.space()?;
    writeln!(
        out,
        "{removed} audit(s) removed; database {} -> {} ({} free inside)",
        mib(before.bytes()),
        mib(after.bytes()),
        mib(after.free_bytes())
    )?;
    if !after.incremental && after.free_pages > 0 {
        writeln!(
            out,
            "note: this file was made before Shoal gave free space back by itself: the {} free are reused by later \
             audits; `shoal prune --vacuum` (best with the coordinator stopped) shrinks the file once and switches it \
             to incremental vacuum",
            mib(after.free_bytes())
        )?;
    }
    Ok(Exit::Ok)
}

fn describe(p: &Prunable) -> String {
    let why = match p.why {
        Verdict::TooOld => "ended before the age limit",
        Verdict::Superseded => "every start URL has later audits",
        Verdict::Running | Verdict::ScheduleRun(_) | Verdict::Kept => "kept",
    };
    format!(
        "audit {} ({}, ended {}, {} sites, {} URLs, {} findings: {why})",
        p.audit,
        p.status.as_str(),
        p.ended_at.to_rfc3339(),
        p.sites,
        p.urls,
        p.findings
    )
}

fn rows(r: &Removed) -> String {
    format!(
        "{} pages, {} links, {} findings, {} browser pages, {} hreflang rows deleted",
        r.pages, r.links, r.findings, r.browser_pages, r.hreflang
    )
}

fn mib(bytes: u64) -> String {
    // Two decimals are enough for a size shown to people; the cast cannot lose more.
    #[expect(clippy::cast_precision_loss, reason = "a size shown to people with two decimals")]
    let m = bytes as f64 / (1024.0 * 1024.0);
    format!("{m:.2} MiB")
}
