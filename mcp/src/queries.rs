//! What each tool reads, synchronously, from the audit database (or, for robots.txt and finding
//! codes, from the rules compiled in). Inputs are the tools' parameter types, answers JSON values.
//!
//! Caps: lists are paged by `offset`/`limit`, and every `limit` has a default and a maximum, so one
//! answer stays a few thousand tokens however large the audit (an audit can hold 100,000 pages).

use rmcp::schemars;
use serde::Deserialize;
use serde_json::{Value, json};
use shoal_report::issues::{self, SiteHealth};
use shoal_report::{guidance, pair_sites, rfc3339};
use shoal_shared::finding::Code;
use shoal_shared::ids::AuditId;
use shoal_shared::robots::{ProductToken, RobotsRules, Verdict};
use shoal_store::compare::{Change, changes_with, count_with};
use shoal_store::cursor::Reader;
use shoal_store::{AuditDb, AuditSummary, DbError, FindingRow, SiteSummary};

/// Audits in one answer of `list_audits`, by default and at most.
pub const AUDITS_PAGE: (u32, u32) = (20, 100);
/// Issues in one answer of `site_health` for a site, and sites for an audit.
pub const ISSUES_PAGE: (u32, u32) = (25, 100);
/// URLs in one answer of `issue_urls`.
pub const URLS_PAGE: (u32, u32) = (50, 200);
/// Site pairs in one answer of `compare_audits`, and findings listed per pair and kind.
pub const PAIRS_PAGE: (u32, u32) = (10, 50);
/// New and fixed findings listed per site pair, by default and at most.
pub const CHANGES_PER_SITE: (u32, u32) = (10, 50);
/// Related URLs shown per finding (a duplicate-title finding can name hundreds of pages).
pub const RELATED_SHOWN: usize = 5;
/// The largest robots.txt accepted: twice what a crawler parses (500 KiB, RFC 9309 §2.5), so a
/// real file over the limit is still judged as crawlers judge it, while a paste of a whole site is
/// refused.
pub const ROBOTS_MAX_BYTES: usize = 1024 * 1024;
/// Codes suggested when an unknown one is asked for.
const SUGGESTIONS: usize = 8;

/// Why a tool gave no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The input is wrong; the message says how and what is accepted.
    #[error("{0}")]
    Input(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<shoal_report::ReportError> for ToolError {
    fn from(e: shoal_report::ReportError) -> ToolError {
        match e {
            shoal_report::ReportError::UnknownAudit { audit } => ToolError::Input(format!("there is no audit {audit}")),
            shoal_report::ReportError::Db(e) => ToolError::Db(e),
            other => ToolError::Input(other.to_string()),
        }
    }
}

fn bad(msg: impl Into<String>) -> ToolError {
    ToolError::Input(msg.into())
}

/// A page size: the default when not given, refused above the maximum or at 0.
fn page_size(limit: Option<u32>, (default, max): (u32, u32), what: &str) -> Result<usize, ToolError> {
    match limit {
        None => Ok(default as usize),
        Some(0) => Err(bad(format!("{what}: limit must be at least 1"))),
        Some(n) if n > max => Err(bad(format!("{what}: limit {n} is over the maximum of {max}"))),
        Some(n) => Ok(n as usize),
    }
}

/// `offset` and `limit`, and where the next page starts.
fn paging(offset: Option<u64>, total: usize, shown: usize) -> Value {
    let offset = offset.unwrap_or(0);
    let next = offset + shown as u64;
    json!({ "offset": offset, "total": total, "next_offset": if next < total as u64 { Some(next) } else { None } })
}

fn audit_json(a: &AuditSummary) -> Value {
    json!({
        "id": a.id.0,
        "status": a.status.as_str(),
        "created_at": rfc3339(a.created_at),
        "finished_at": a.finished_at.map(rfc3339),
        "sites": a.sites,
        "sites_done": a.sites_done,
        "pages": a.pages,
        "findings": a.findings,
        "reason": a.reason,
    })
}

/// `list_audits`: newest first.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListAudits {
    /// How many audits to skip (newest first). Default 0.
    pub offset: Option<u64>,
    /// How many to return: default 20, at most 100.
    pub limit: Option<u32>,
}

/// The audits of the database, newest first, one page.
///
/// # Errors
/// A bad `limit`, or a read failure.
pub fn list_audits(db: &AuditDb, p: &ListAudits) -> Result<Value, ToolError> {
    let limit = page_size(p.limit, AUDITS_PAGE, "list_audits")?;
    let mut all = db.audits()?;
    all.sort_by_key(|a| std::cmp::Reverse(a.id));
    let skip = usize::try_from(p.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let page: Vec<Value> = all.iter().skip(skip).take(limit).map(audit_json).collect();
    Ok(json!({ "audits": page, "page": paging(p.offset, all.len(), page.len()) }))
}

/// The audit asked for, or the latest; an unknown id is the caller's error.
fn audit_of(db: &AuditDb, audit: Option<u64>) -> Result<AuditId, ToolError> {
    let id = match audit {
        Some(a) => AuditId(a),
        None => db.latest_audit()?.ok_or_else(|| bad("the database holds no audit yet"))?,
    };
    if db.audit(id)?.is_none() {
        let known: Vec<String> = db.audits()?.iter().rev().take(5).map(|a| a.id.0.to_string()).collect();
        return Err(bad(format!("there is no audit {id}; the latest are: {}", or_none(&known))));
    }
    Ok(id)
}

fn or_none(list: &[String]) -> String {
    if list.is_empty() { "none".to_owned() } else { list.join(", ") }
}

/// The site of `audit` that `wanted` names, as `shoal report --site` reads it
/// ([`shoal_report::find_site`]: its id, or a start URL as stored or as a user types it).
fn find_site(db: &AuditDb, audit: AuditId, wanted: &str) -> Result<SiteSummary, ToolError> {
    if wanted.trim().is_empty() {
        return Err(bad("site is empty: give a start URL or a site id"));
    }
    match shoal_report::find_site(db, audit, wanted) {
        Ok(s) => Ok(s),
        Err(shoal_report::FindSiteError::Db(e)) => Err(ToolError::Db(e)),
        Err(e) => Err(bad(e.to_string())),
    }
}

fn site_json(s: &SiteSummary) -> Value {
    json!({ "id": s.id.0, "start_url": s.start_url, "status": s.status.as_str(), "pages": s.pages, "findings": s.findings })
}

fn health_json(h: &SiteHealth) -> Value {
    json!({
        "site": site_json(&h.site),
        "score": h.score.map(|s| s.get()),
        "errors": h.counts.errors,
        "warnings": h.counts.warnings,
        "notices": h.counts.notices,
        "issue_codes": h.groups.len(),
    })
}

/// `site_health`: one site's score and its issues ranked, or the audit's sites with their scores.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SiteHealthParams {
    /// The audit id (from list_audits). Default: the latest audit.
    pub audit: Option<u64>,
    /// The site: its start URL (as given to the audit) or its site id. Without it, the audit's
    /// sites are listed with their scores, lowest score first.
    pub site: Option<String>,
    /// Issues (or sites) to skip. Default 0.
    pub offset: Option<u64>,
    /// Issues (or sites) to return: default 25, at most 100.
    pub limit: Option<u32>,
}

/// A site's health score (0 to 100, `shoal-health/1`), its findings by severity and its issue
/// groups ranked by impact (the points each takes off the score: severity, then how many URLs);
/// without a site, the audit's sites, worst score first.
///
/// # Errors
/// An unknown audit or site, a bad `limit`, or a read failure.
pub fn site_health(db: &AuditDb, p: &SiteHealthParams) -> Result<Value, ToolError> {
    let limit = page_size(p.limit, ISSUES_PAGE, "site_health")?;
    let audit = audit_of(db, p.audit)?;
    let skip = usize::try_from(p.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let Some(wanted) = &p.site else {
        let all = issues::audit_health(db, audit)?;
        let ranked = issues::by_score(&all);
        let page: Vec<Value> = ranked.iter().skip(skip).take(limit).map(|h| health_json(h)).collect();
        return Ok(json!({ "audit": audit.0, "sites": page, "page": paging(p.offset, ranked.len(), page.len()) }));
    };
    let site = find_site(db, audit, wanted)?;
    let earlier = issues::baselines(db, audit)?.remove(&site.id);
    let health = issues::site_health(db, site, earlier.as_ref())?;
    let groups: Vec<Value> = health
        .groups
        .iter()
        .skip(skip)
        .take(limit)
        .map(|g| {
            json!({
                "code": g.code,
                "severity": g.severity.as_str(),
                "family": g.family,
                "urls": g.urls,
                "findings": g.findings,
                "impact": (g.impact * 10.0).round() / 10.0,
                "message": g.message(),
            })
        })
        .collect();
    let mut out = health_json(&health);
    out["audit"] = json!(audit.0);
    out["answered_pages"] = json!(health.answered);
    out["trend"] = json!(health.trend());
    out["issues"] = Value::Array(groups);
    out["page"] = paging(p.offset, health.groups.len(), out["issues"].as_array().map_or(0, Vec::len));
    Ok(out)
}

fn finding_json(f: &FindingRow) -> Value {
    json!({
        "code": f.code,
        "severity": f.severity.as_str(),
        "url": f.url,
        "detail": f.detail,
        "related": f.related.iter().take(RELATED_SHOWN).collect::<Vec<_>>(),
        "related_total": f.related.len(),
    })
}

/// `issue_urls`: the findings of one code on one site, in URL order.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueUrls {
    /// The audit id. Default: the latest audit.
    pub audit: Option<u64>,
    /// The site: its start URL or its site id.
    pub site: String,
    /// The finding code (as site_health lists it, e.g. `broken_internal_link`).
    pub code: String,
    /// Findings to skip. Default 0.
    pub offset: Option<u64>,
    /// Findings to return: default 50, at most 200.
    pub limit: Option<u32>,
}

/// One page of the findings of `code` on a site: URL, detail and a few related URLs each.
///
/// # Errors
/// An unknown audit, site or code on that site, a bad `limit`, or a read failure.
pub fn issue_urls(db: &AuditDb, p: &IssueUrls) -> Result<Value, ToolError> {
    let limit = page_size(p.limit, URLS_PAGE, "issue_urls")?;
    let audit = audit_of(db, p.audit)?;
    let site = find_site(db, audit, &p.site)?;
    let code = p.code.trim();
    let counts = db.site_issue_counts(site.id)?;
    let Some(count) = counts.iter().find(|c| c.code == code) else {
        let codes: Vec<String> = counts.iter().map(|c| c.code.clone()).collect();
        return Err(bad(format!(
            "site {} has no finding of code {code:?} in audit {audit}; its codes: {}",
            site.start_url,
            or_none(&codes)
        )));
    };
    let offset = p.offset.unwrap_or(0);
    let mut rows = Vec::new();
    db.for_each_issue_finding(site.id, code, offset, limit as u64, |f| -> Result<(), DbError> {
        rows.push(finding_json(&f));
        Ok(())
    })?;
    let total = usize::try_from(count.findings).unwrap_or(usize::MAX);
    let page = paging(Some(offset), total, rows.len());
    Ok(json!({
        "audit": audit.0,
        "site": site_json(&site),
        "code": code,
        "severity": count.severity.as_str(),
        "distinct_urls": count.urls,
        "findings": rows,
        "page": page,
    }))
}

/// `compare_audits`: what changed between two audits of the same sites.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareAudits {
    /// The earlier audit id.
    pub old: u64,
    /// The later audit id.
    pub new: u64,
    /// Only this start URL (or the new audit's site id); without it, every site both audits have.
    pub site: Option<String>,
    /// Site pairs to skip. Default 0.
    pub offset: Option<u64>,
    /// Site pairs to return: default 10, at most 50.
    pub limit: Option<u32>,
    /// New and fixed findings listed per site: default 10, at most 50 (the counts are always
    /// complete).
    pub findings_per_site: Option<u32>,
}

/// Sites matched by start URL, findings by their identity (code, URL, key), as
/// `shoal report --compare` does: per site the counts of new, fixed and remaining findings and the
/// first new and fixed ones.
///
/// # Errors
/// An unknown audit or site, the same audit twice, a bad limit, or a read failure.
pub fn compare_audits(db: &AuditDb, p: &CompareAudits) -> Result<Value, ToolError> {
    let limit = page_size(p.limit, PAIRS_PAGE, "compare_audits")?;
    let per_site = page_size(p.findings_per_site, CHANGES_PER_SITE, "compare_audits findings_per_site")?;
    if p.old == p.new {
        return Err(bad(format!("old and new are both audit {}: give two different audits", p.old)));
    }
    let (old, new) = (audit_of(db, Some(p.old))?, audit_of(db, Some(p.new))?);
    let pairs = pair_sites(db, old, new)?;
    let mut both = pairs.both;
    if let Some(wanted) = &p.site {
        let site = find_site(db, new, wanted)?;
        both.retain(|(_, n)| n.id == site.id);
        if both.is_empty() {
            return Err(bad(format!("audit {old} has no site {} to compare with", site.start_url)));
        }
    }
    let reader = Reader::open(db)?;
    let skip = usize::try_from(p.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let mut sites = Vec::new();
    for (o, n) in both.iter().skip(skip).take(limit) {
        sites.push(pair_json(&reader, o, n, per_site)?);
    }
    let page = paging(p.offset, both.len(), sites.len());
    let refs = |list: &[SiteSummary]| -> Vec<Value> { list.iter().take(limit).map(site_json).collect() };
    Ok(json!({
        "old": old.0,
        "new": new.0,
        "matched_sites": both.len(),
        "added_sites": refs(&pairs.added),
        "added_sites_total": pairs.added.len(),
        "removed_sites": refs(&pairs.removed),
        "removed_sites_total": pairs.removed.len(),
        "sites": sites,
        "page": page,
    }))
}

/// One site pair: its counts, and the first `per_site` new and fixed findings.
fn pair_json(reader: &Reader, o: &SiteSummary, n: &SiteSummary, per_site: usize) -> Result<Value, ToolError> {
    let counts = count_with(reader, o.id, n.id)?;
    let (mut new, mut fixed) = (Vec::new(), Vec::new());
    changes_with(reader, o.id, n.id, |change, f| -> Result<(), DbError> {
        let list = match change {
            Change::New => &mut new,
            Change::Fixed => &mut fixed,
            Change::Remaining => return Ok(()),
        };
        if list.len() < per_site {
            list.push(finding_json(&f));
        }
        Ok(())
    })?;
    Ok(json!({
        "start_url": n.start_url,
        "old_site": o.id.0,
        "new_site": n.id.0,
        "new_count": counts.new,
        "fixed_count": counts.fixed,
        "remaining_count": counts.remaining,
        "new": new,
        "fixed": fixed,
    }))
}

/// `explain_finding`: what a code means, why it matters, how to fix it.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainFinding {
    /// The finding code, e.g. `missing_hsts` or `broken_internal_link`.
    pub code: String,
}

/// The code's severity, family and message from `shared/src/finding.rs`, and why and how to fix
/// it from `docs/findings.md` (the text the reports show; a test keeps the two equal).
///
/// # Errors
/// A code this build does not know, with the known codes that look like it.
pub fn explain_finding(p: &ExplainFinding) -> Result<Value, ToolError> {
    let wanted = p.code.trim().to_ascii_lowercase();
    let Some(code) = Code::parse(&wanted) else {
        let near: Vec<String> = Code::ALL
            .iter()
            .map(Code::as_str)
            .filter(|c| !wanted.is_empty() && (c.contains(wanted.as_str()) || wanted.contains(c)))
            .take(SUGGESTIONS)
            .map(str::to_owned)
            .collect();
        return Err(bad(format!(
            "unknown finding code {:?}; codes like it: {} (there are {} codes, see docs/findings.md)",
            p.code,
            or_none(&near),
            Code::ALL.len()
        )));
    };
    let text = guidance::code_text(code.as_str());
    Ok(json!({
        "code": code.as_str(),
        "severity": code.severity().as_str(),
        "family": code.family(),
        "what": code.message(),
        "why": guidance::why(code.family()).map(guidance::plain),
        "fix": text.map(|t| guidance::plain(t.fix)),
    }))
}

/// `robots_verdict`: may this agent fetch this URL, by this robots.txt.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RobotsVerdict {
    /// The robots.txt file's text (at most 1 MiB; crawlers read the first 500 KiB).
    pub robots_txt: String,
    /// The URL to check (absolute, http or https).
    pub url: String,
    /// The crawler: a product token (`Googlebot`) or a whole User-Agent string. Default ShoalBot.
    pub agent: Option<String>,
}

/// The verdict Shoal's crawler reaches (RFC 9309, as `shoal robots` prints it), with the rule that
/// decided, the group's crawl delay and the file's sitemaps.
///
/// # Errors
/// A file over the cap, a URL that is not absolute http(s), an agent with no product token.
pub fn robots_verdict(p: &RobotsVerdict) -> Result<Value, ToolError> {
    if p.robots_txt.len() > ROBOTS_MAX_BYTES {
        return Err(bad(format!(
            "robots_txt is {} bytes, over the {ROBOTS_MAX_BYTES}-byte cap (crawlers read the first 500 KiB)",
            p.robots_txt.len()
        )));
    }
    let url = url_of(&p.url)?;
    let agent = p.agent.as_deref().unwrap_or("ShoalBot");
    let token = ProductToken::from_agent(agent);
    if token.as_str().is_empty() {
        return Err(bad(format!(
            "agent {agent:?} has no product token (letters, '_' and '-', like ShoalBot or Googlebot)"
        )));
    }
    let rules = RobotsRules::parse(p.robots_txt.as_bytes(), &token);
    let (allowed, rule) = match rules.check(&url) {
        Verdict::Allowed => (true, None),
        Verdict::Disallowed { rule } => (false, Some(rule)),
    };
    let sitemaps = rules.sitemaps();
    Ok(json!({
        "url": url.as_str(),
        "agent_token": token.as_str(),
        "allowed": allowed,
        "rule": rule,
        "group": rules.group(),
        "crawl_delay_seconds": rules.crawl_delay().map(|d| d.as_secs_f64()),
        "sitemaps": sitemaps.iter().take(RELATED_SHOWN).collect::<Vec<_>>(),
        "sitemaps_total": sitemaps.len(),
    }))
}

fn url_of(raw: &str) -> Result<url::Url, ToolError> {
    let url = url::Url::parse(raw.trim()).map_err(|e| bad(format!("url {raw:?} is not an absolute URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(format!("url {raw:?}: robots.txt applies to http and https URLs, not {}", url.scheme())));
    }
    Ok(url)
}
