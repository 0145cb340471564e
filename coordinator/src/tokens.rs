//! API tokens with scopes (issue 40), as the server uses them: looked up per request, managed
//! through the API, and a site token's view of the audits (only its hosts' sites).
//!
//! Why per request and no cache: a lookup is one read of a unique index on the engine's read
//! connection (WAL: it never waits for the writer), microseconds beside any request's own work,
//! and a token removed by `shoal token remove` or the API is refused from the next request on,
//! with no window to reason about. Only bearer values shaped like a token's secret are looked up
//! (`shoal_store::tokens::Secret::parse`), so a stream of garbage costs no read.

use crate::engine::{Coordinator, EngineError, view};
use shoal_shared::frontier::Frontier;
use shoal_shared::ids::{AuditId, SiteId, TokenId};
use shoal_shared::time::UnixMs;
use shoal_shared::token::{HostList, NewToken, Scope, TokenRequest, TokenView, check_name};
use shoal_shared::wire::{AuditView, SitePage};
use shoal_store::{AddTokenError, AuditSummary, SiteStatus, SiteSummary, TokenRow};
use std::collections::{BTreeMap, HashSet};

/// A token as the API lists it.
#[must_use]
pub fn token_view(row: &TokenRow) -> TokenView {
    TokenView {
        id: row.id.0,
        name: row.name.clone(),
        scope: row.scope.name().to_owned(),
        hosts: row.scope.hosts().iter().map(ToString::to_string).collect(),
        created_at_ms: row.created_at.0,
    }
}

/// The token whose secret `given` is, if any.
///
/// # Errors
/// The database failed.
pub async fn authenticate<F: Frontier>(
    engine: &Coordinator<F>,
    given: String,
) -> Result<Option<TokenRow>, EngineError> {
    engine.read(move |db| db.token_by_secret(&given)).await
}

/// Makes a token from an API request; the answer holds its secret, shown this once.
///
/// # Errors
/// [`EngineError::BadRequest`] for a bad scope, host or name; store failures.
pub async fn add<F: Frontier>(
    engine: &Coordinator<F>,
    req: TokenRequest,
    now: UnixMs,
) -> Result<NewToken, EngineError> {
    let bad = |e: &dyn std::fmt::Display| EngineError::BadRequest(e.to_string());
    let scope = Scope::parse(&req.scope, &req.hosts).map_err(|e| bad(&e))?;
    let name = req.name.trim().to_owned();
    check_name(&name).map_err(|e| bad(&e))?;
    let added = engine
        .write(move |db| match db.add_token(&name, &scope, now) {
            Ok(made) => Ok(Ok(made)),
            Err(AddTokenError::Db(e)) => Err(e),
            Err(other) => Ok(Err(other)),
        })
        .await?;
    let (row, secret) = added.map_err(|e| match e {
        AddTokenError::Full => bad(&e),
        other => EngineError::BadRequest(format!("cannot make a token: {other}")),
    })?;
    tracing::info!(token = %row.id, scope = row.scope.name(), "API token added");
    Ok(NewToken { token: token_view(&row), secret: secret.expose().to_owned() })
}

/// Every token (never a secret).
///
/// # Errors
/// The database failed.
pub async fn list<F: Frontier>(engine: &Coordinator<F>) -> Result<Vec<TokenView>, EngineError> {
    engine.read(|db| Ok(db.tokens()?.iter().map(token_view).collect())).await
}

/// Removes a token; `false` if there was none.
///
/// # Errors
/// The database failed.
pub async fn remove<F: Frontier>(engine: &Coordinator<F>, id: TokenId) -> Result<bool, EngineError> {
    let removed = engine.write(move |db| db.remove_token(id)).await?;
    if removed {
        tracing::info!(token = %id, "API token removed");
    }
    Ok(removed)
}

/// An audit's view narrowed to `sites` (some of its own): its totals are theirs.
fn narrowed(a: &AuditSummary, sites: &[SiteSummary]) -> AuditView {
    let mut v = view(a);
    v.sites_total = sites.len() as u64;
    v.sites_done = sites.iter().filter(|s| s.status == SiteStatus::Done).count() as u64;
    v.pages = sites.iter().map(|s| s.pages).sum();
    v.findings = sites.iter().map(|s| s.findings).sum();
    v
}

/// The audits that hold a site of `hosts`, oldest first, each with the totals of those sites
/// alone: what `GET /v1/audits` answers a site token.
///
/// # Errors
/// The database failed.
pub async fn list_for_hosts<F: Frontier>(
    engine: &Coordinator<F>,
    hosts: HostList,
) -> Result<Vec<AuditView>, EngineError> {
    engine
        .read(move |db| {
            let mut by_audit: BTreeMap<AuditId, Vec<SiteSummary>> = BTreeMap::new();
            for s in db.sites_of_hosts(&hosts, None)? {
                by_audit.entry(s.audit).or_default().push(s);
            }
            let mut out = Vec::with_capacity(by_audit.len());
            for (audit, sites) in &by_audit {
                if let Some(a) = db.audit(*audit)? {
                    out.push(narrowed(&a, sites));
                }
            }
            Ok(out)
        })
        .await
}

/// One audit as a site token sees it: only the sites of `hosts`, paged like any status, totals
/// over them. An audit without one of them is [`EngineError::NotFound`], as if it did not exist.
///
/// # Errors
/// [`EngineError::NotFound`]; the database or frontier failed.
pub async fn status_for_hosts<F: Frontier>(
    engine: &Coordinator<F>,
    audit: AuditId,
    hosts: HostList,
    page: SitePage,
) -> Result<AuditView, EngineError> {
    let (a, sites) = engine
        .read(move |db| {
            let sites = db.sites_of_hosts(&hosts, Some(audit))?;
            let a = if sites.is_empty() { None } else { db.audit(audit)? };
            Ok((a, sites))
        })
        .await?;
    let a = a.ok_or(EngineError::NotFound(audit))?;
    let mut v = narrowed(&a, &sites);
    let ids: HashSet<SiteId> = sites.iter().map(|s| s.id).collect();
    v.sites_waiting = engine.waiting_among(audit, &ids);
    let after = page.after.unwrap_or(0);
    let mut shown: Vec<SiteSummary> = sites.into_iter().filter(|s| s.id.0 > after).collect();
    if shown.len() > page.limit() {
        shown.truncate(page.limit());
        v.sites_next_after = shown.last().map(|s| s.id.0);
    }
    v.sites = engine.site_views(&shown).await?;
    Ok(v)
}

/// Whether `site` of `audit` is one `hosts` cover (a site token's per-site reports).
///
/// # Errors
/// The database failed.
pub async fn covers_site<F: Frontier>(
    engine: &Coordinator<F>,
    audit: AuditId,
    site: SiteId,
    hosts: HostList,
) -> Result<bool, EngineError> {
    engine.read(move |db| Ok(db.site(site)?.is_some_and(|s| s.audit == audit && hosts.covers(&s.start_url)))).await
}
