//! `shoal token add|list|remove`: API tokens with scopes in the audit database
//! ([`shoal_store::tokens`]). The coordinator looks tokens up per request, so a token made here
//! works at once and a removed one is refused from the coordinator's next request on.

use crate::cli::{TokenAddArgs, TokenCommand, TokenListArgs, TokenRemoveArgs};
use crate::{Exit, Failure};
use anyhow::anyhow;
use shoal_coordinator::tokens::token_view;
use shoal_shared::ids::TokenId;
use shoal_shared::time::UnixMs;
use shoal_shared::token::{Scope, check_name};
use shoal_store::{AddTokenError, AuditDb};
use std::io::Write;

/// Runs `shoal token ...`, printing to standard output.
///
/// # Errors
/// Bad scope, host or name (3); the audit database (4); no such token to remove (3).
pub fn run(cmd: &TokenCommand) -> Result<Exit, Failure> {
    let mut out = std::io::stdout().lock();
    let now = UnixMs::from(std::time::SystemTime::now());
    match cmd {
        TokenCommand::Add(a) => add(a, now, &mut out),
        TokenCommand::List(a) => list(a, &mut out),
        TokenCommand::Remove(a) => remove(a, &mut out),
    }
}

/// `shoal token add`: prints the id, scope and secret. The secret is shown here only.
///
/// # Errors
/// As [`run`].
pub fn add(args: &TokenAddArgs, now: UnixMs, out: &mut dyn Write) -> Result<Exit, Failure> {
    let scope = Scope::parse(args.scope.as_str(), &args.hosts).map_err(Failure::input)?;
    let name = args.name.trim();
    check_name(name).map_err(Failure::input)?;
    let mut db = AuditDb::open(&args.db)?;
    let (row, secret) = db.add_token(name, &scope, now).map_err(|e| match e {
        AddTokenError::Db(db) => Failure::database(db),
        AddTokenError::Full => Failure::input(e),
        other => Failure::internal(other),
    })?;
    let hosts = describe_hosts(&row.scope);
    writeln!(out, "token {} ({}{hosts}) made; its secret, shown only now:", row.id, row.scope.name())?;
    writeln!(out, "{}", secret.expose())?;
    Ok(Exit::Ok)
}

/// `shoal token list`.
///
/// # Errors
/// As [`run`].
pub fn list(args: &TokenListArgs, out: &mut dyn Write) -> Result<Exit, Failure> {
    let db = AuditDb::open(&args.db)?;
    let rows = db.tokens()?;
    if args.json {
        let views: Vec<_> = rows.iter().map(token_view).collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&views)?)?;
        return Ok(Exit::Ok);
    }
    writeln!(out, "{:>6}  {:<7} {:<24} {:<30} name", "id", "scope", "created (UTC)", "hosts")?;
    for r in &rows {
        let hosts: Vec<String> = r.scope.hosts().iter().map(ToString::to_string).collect();
        let hosts = if hosts.is_empty() { "-".to_owned() } else { hosts.join(",") };
        writeln!(
            out,
            "{:>6}  {:<7} {:<24} {:<30} {}",
            r.id.0,
            r.scope.name(),
            r.created_at.to_rfc3339(),
            hosts,
            r.name
        )?;
    }
    Ok(Exit::Ok)
}

/// `shoal token remove`.
///
/// # Errors
/// As [`run`].
pub fn remove(args: &TokenRemoveArgs, out: &mut dyn Write) -> Result<Exit, Failure> {
    let mut db = AuditDb::open(&args.db)?;
    if !db.remove_token(TokenId(args.id))? {
        return Err(Failure::input(anyhow!("there is no token {} in {}", args.id, args.db.display())));
    }
    writeln!(out, "token {} removed", args.id)?;
    Ok(Exit::Ok)
}

fn describe_hosts(scope: &Scope) -> String {
    let hosts: Vec<String> = scope.hosts().iter().map(ToString::to_string).collect();
    if hosts.is_empty() { String::new() } else { format!(" for {}", hosts.join(", ")) }
}
