//! The JSON report, `shoal.report/v1`, written element by element.

use super::compare::{AuditJson as AuditRefJson, CountsJson, TotalsJson, site_ref, unknown_audit};
use super::{ReportError, rfc3339};
use crate::issues::{IssueGroup, SiteHealth, audit_health, baselines, site_health};
use crate::json_doc::{FindingJson, key, open_document, value};
use crate::score::FORMULA;
use serde::Serialize;
use shoal_shared::ai_crawlers::AI_CRAWLERS;
use shoal_shared::ids::AuditId;
use shoal_shared::ids::SiteId;
use shoal_shared::time::UnixMs;
use shoal_store::ai_crawlers::AiCrawlerRow;
use shoal_store::compare::{self as core, Change};
use shoal_store::cursor::Reader;
use shoal_store::{AuditDb, AuditSummary, LinkRow, PageRow, SiteStats};
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};

/// The `schema` value of every v1 document. Within v1 fields may be added, never removed or renamed.
pub const SCHEMA: &str = "shoal.report/v1";

#[derive(Serialize)]
struct AuditJson<'a> {
    id: u64,
    created_at: String,
    created_at_ms: u64,
    finished_at: Option<String>,
    finished_at_ms: Option<u64>,
    status: &'a str,
    options: serde_json::Value,
}

#[derive(Serialize)]
struct StatusClassesJson {
    #[serde(rename = "2xx")]
    s2xx: u64,
    #[serde(rename = "3xx")]
    s3xx: u64,
    #[serde(rename = "4xx")]
    s4xx: u64,
    #[serde(rename = "5xx")]
    s5xx: u64,
    other: u64,
    failed: u64,
}

#[derive(Serialize)]
struct SummaryJson<'a> {
    pages: u64,
    errors: u64,
    warnings: u64,
    notices: u64,
    status_classes: StatusClassesJson,
    kinds: &'a BTreeMap<String, u64>,
}

impl<'a> SummaryJson<'a> {
    fn of(stats: &'a SiteStats) -> SummaryJson<'a> {
        let c = &stats.status_classes;
        SummaryJson {
            pages: stats.urls,
            errors: stats.severities.errors,
            warnings: stats.severities.warnings,
            notices: stats.severities.notices,
            status_classes: StatusClassesJson {
                s2xx: c.s2xx,
                s3xx: c.s3xx,
                s4xx: c.s4xx,
                s5xx: c.s5xx,
                other: c.other,
                failed: c.failed,
            },
            kinds: &stats.kinds,
        }
    }
}

#[derive(Serialize)]
struct PairJson<'a> {
    lang: &'a str,
    url: &'a str,
}

#[derive(Serialize)]
struct HeaderJson<'a> {
    name: &'a str,
    value: &'a str,
}

#[derive(Serialize)]
struct LinkJson<'a> {
    url: &'a str,
    kind: &'a str,
    nofollow: bool,
    internal: bool,
    text: Option<&'a str>,
    /// Only the rendered page has it (`--render`).
    rendered: bool,
}

#[derive(Serialize)]
struct PageJson<'a> {
    url: &'a str,
    final_url: Option<String>,
    status: Option<u16>,
    error: Option<&'a str>,
    depth: u16,
    found_via: &'a str,
    found_from: Option<&'a str>,
    kind: &'a str,
    content_type: Option<&'a str>,
    title: Option<&'a str>,
    meta_description: Option<&'a str>,
    h1: &'a [String],
    canonical: Option<&'a str>,
    meta_robots: &'a [String],
    response_ms: u64,
    bytes: u64,
    redirect_to: Option<&'a str>,
    x_robots_tag: &'a [String],
    hreflang: Vec<PairJson<'a>>,
    headers: Vec<HeaderJson<'a>>,
    fetched_at: String,
    fetched_at_ms: u64,
    word_count: Option<u32>,
    structured_data_types: &'a [String],
    rel_next: Option<&'a str>,
    rel_prev: Option<&'a str>,
    links: Vec<LinkJson<'a>>,
    extracted: Pairs<'a>,
    ai_crawlers_blocked: Option<Vec<&'static str>>,
}

/// (name, value) pairs written as one JSON object, in their order.
pub(crate) struct Pairs<'a>(pub(crate) &'a [(String, String)]);

impl Serialize for Pairs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// `sites[].ai_crawlers[]`: one AI crawler on one host of the site.
#[derive(Serialize)]
struct AiCrawlerJson<'a> {
    host: &'a str,
    robots_url: &'a str,
    token: &'static str,
    operator: &'static str,
    purpose: &'static str,
    verdict: &'static str,
    pages: u64,
    blocked_pages: u64,
    start_page: Option<&'static str>,
}

impl<'a> AiCrawlerJson<'a> {
    fn of(r: &'a AiCrawlerRow) -> AiCrawlerJson<'a> {
        AiCrawlerJson {
            host: &r.host,
            robots_url: &r.robots_url,
            token: r.crawler.token,
            operator: r.crawler.operator,
            purpose: r.crawler.purpose.as_str(),
            verdict: r.verdict.as_str(),
            pages: r.pages,
            blocked_pages: r.blocked,
            start_page: r.start_blocked.map(|b| if b { "blocked" } else { "allowed" }),
        }
    }
}

impl<'a> PageJson<'a> {
    fn of(p: &'a PageRow, final_url: Option<String>, links: &'a [LinkRow]) -> PageJson<'a> {
        PageJson {
            url: &p.url,
            final_url,
            status: p.status,
            error: p.error.map(|e| e.as_str()),
            depth: p.depth,
            found_via: p.found_via.as_str(),
            found_from: p.found_from.as_deref(),
            kind: p.kind.as_str(),
            content_type: p.content_type.as_deref(),
            title: p.title.as_deref(),
            meta_description: p.meta_description.as_deref(),
            h1: &p.h1,
            canonical: p.canonical.as_deref(),
            meta_robots: &p.meta_robots,
            response_ms: p.response_ms,
            bytes: p.bytes,
            redirect_to: p.redirect_to.as_deref(),
            x_robots_tag: &p.x_robots_tag,
            hreflang: p.hreflang.iter().map(|(lang, url)| PairJson { lang, url }).collect(),
            headers: p.headers.iter().map(|(name, value)| HeaderJson { name, value }).collect(),
            fetched_at: rfc3339(p.fetched_at),
            fetched_at_ms: p.fetched_at.0,
            word_count: p.word_count,
            structured_data_types: &p.structured_types,
            rel_next: p.rel_next.as_deref(),
            rel_prev: p.rel_prev.as_deref(),
            links: links
                .iter()
                .map(|l| LinkJson {
                    url: &l.to_url,
                    kind: l.kind.as_str(),
                    nofollow: l.nofollow,
                    internal: l.internal,
                    text: l.text.as_deref(),
                    rendered: l.rendered,
                })
                .collect(),
            extracted: Pairs(&p.extracted),
            ai_crawlers_blocked: p.ai_blocked.map(|b| {
                AI_CRAWLERS.iter().enumerate().filter(|(i, _)| b.is_blocked(*i)).map(|(_, c)| c.token).collect()
            }),
        }
    }
}

/// A site's earlier audit and score (`sites[].health.previous`).
#[derive(Serialize)]
struct PreviousJson {
    audit: u64,
    site: u64,
    score: Option<u8>,
}

/// `sites[].health`: the score, how it was computed, its trend.
#[derive(Serialize)]
pub(crate) struct HealthJson {
    score: Option<u8>,
    formula: &'static str,
    answered_pages: u64,
    previous: Option<PreviousJson>,
    trend: Option<i16>,
}

impl HealthJson {
    pub(crate) fn of(h: &SiteHealth) -> HealthJson {
        HealthJson {
            score: h.score.map(|s| s.get()),
            formula: FORMULA,
            answered_pages: h.answered,
            previous: h.earlier.as_ref().map(|e| PreviousJson {
                audit: e.previous.audit.0,
                site: e.previous.site.0,
                score: e.score.map(|s| s.get()),
            }),
            trend: h.trend(),
        }
    }
}

/// `sites[].issues[]`: one issue group.
#[derive(Serialize)]
pub(crate) struct IssueJson<'a> {
    code: &'a str,
    severity: &'static str,
    family: &'static str,
    scope: &'static str,
    urls: u64,
    findings: u64,
    impact: f64,
    message: Option<&'static str>,
    why: Option<String>,
    fix: Option<String>,
}

impl<'a> IssueJson<'a> {
    pub(crate) fn of(g: &'a IssueGroup) -> IssueJson<'a> {
        IssueJson {
            code: &g.code,
            severity: g.severity.as_str(),
            family: g.family,
            scope: g.scope.as_str(),
            urls: g.urls,
            findings: g.findings,
            impact: (g.impact * 10.0).round() / 10.0,
            message: g.message(),
            why: g.why(),
            fix: g.fix(),
        }
    }
}

fn ms_pair(t: Option<UnixMs>) -> (Option<String>, Option<u64>) {
    (t.map(rfc3339), t.map(|t| t.0))
}

/// Writes the `shoal.report/v1` document for one audit to `out`, streaming: one page row (with its
/// links) and one finding in memory at a time. The output is compact JSON followed by a newline.
///
/// # Errors
/// [`ReportError::UnknownAudit`], [`ReportError::Db`] on a read failure, [`ReportError::Write`] if
/// `out` fails. On error `out` holds an incomplete document.
pub fn write_json(db: &AuditDb, audit: AuditId, out: &mut dyn Write) -> Result<(), ReportError> {
    let summary = db.audit(audit)?.ok_or(ReportError::UnknownAudit { audit })?;
    let mut w = BufWriter::new(out);
    open_document(&mut w, SCHEMA)?;
    key(&mut w, false, "audit")?;
    value(&mut w, &audit_json(&summary))?;
    key(&mut w, false, "changes")?;
    write_changes(db, audit, &mut w)?;
    key(&mut w, false, "sites")?;
    w.write_all(b"[")?;
    for (i, health) in audit_health(db, audit)?.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        write_site(db, health, &mut w)?;
    }
    w.write_all(b"]}\n")?;
    w.flush()?;
    Ok(())
}

/// Writes a `shoal.report/v1` document of one site (its audit's `audit` object, `changes` null,
/// `sites` holding that site only): what `shoal report --site` and `--per-site` hand to a
/// customer.
///
/// # Errors
/// [`ReportError::UnknownSite`], [`ReportError::Db`] on a read failure, [`ReportError::Write`] if
/// `out` fails.
pub fn write_site_json(db: &AuditDb, site: SiteId, out: &mut dyn Write) -> Result<(), ReportError> {
    let summary = db.site(site)?.ok_or(ReportError::UnknownSite { site })?;
    let base = baselines(db, summary.audit)?;
    let health = site_health(db, summary, base.get(&site))?;
    write_site_health_json(db, &health, out)
}

/// [`write_site_json`] for a site whose health is already known.
pub(crate) fn write_site_health_json(
    db: &AuditDb,
    health: &SiteHealth,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let audit = health.site.audit;
    let summary = db.audit(audit)?.ok_or(ReportError::UnknownAudit { audit })?;
    let mut w = BufWriter::new(out);
    open_document(&mut w, SCHEMA)?;
    key(&mut w, false, "audit")?;
    value(&mut w, &site_audit_json(&summary, &health.site.start_url))?;
    key(&mut w, false, "changes")?;
    value(&mut w, &serde_json::Value::Null)?;
    key(&mut w, false, "sites")?;
    w.write_all(b"[")?;
    write_site(db, health, &mut w)?;
    w.write_all(b"]}\n")?;
    w.flush()?;
    Ok(())
}

fn audit_json(summary: &AuditSummary) -> AuditJson<'_> {
    let (finished_at, finished_at_ms) = ms_pair(summary.finished_at);
    AuditJson {
        id: summary.id.0,
        created_at: rfc3339(summary.created_at),
        created_at_ms: summary.created_at.0,
        finished_at,
        finished_at_ms,
        status: summary.status.as_str(),
        options: serde_json::from_str(&summary.options_json).unwrap_or(serde_json::Value::Null),
    }
}

/// The audit's object in one site's report: its options list only that site's start URL. The
/// audit's other start URLs are other sites', on a hosting provider's batch other customers', and
/// a per-site report is what one of them is given (`shoal report --per-site`, a site token's
/// report through the API).
fn site_audit_json<'a>(summary: &'a AuditSummary, start: &str) -> AuditJson<'a> {
    let mut audit = audit_json(summary);
    if let Some(starts) = audit.options.get_mut("starts").and_then(serde_json::Value::as_array_mut) {
        starts.retain(|s| s.as_str() == Some(start));
    }
    audit
}

/// What the first run of a schedule says instead of a comparison.
pub(super) const FIRST_RUN: &str = "first run of this schedule: there is no previous run to compare with";

/// The `changes` object: for an audit a schedule started, what changed since that schedule's
/// previous run (new and fixed findings listed per site, remaining ones counted); `null` for a
/// submitted audit. Streams the findings like the rest of the report.
fn write_changes<W: Write>(db: &AuditDb, audit: AuditId, w: &mut W) -> Result<(), ReportError> {
    let Some(run) = db.scheduled_run(audit)? else { return value(w, &serde_json::Value::Null) };
    w.write_all(b"{")?;
    key(w, true, "schedule")?;
    value(w, &serde_json::json!({ "id": run.schedule.0, "name": run.name }))?;
    let Some(previous) = run.previous else {
        key(w, false, "previous_audit")?;
        value(w, &serde_json::Value::Null)?;
        key(w, false, "note")?;
        value(w, FIRST_RUN)?;
        w.write_all(b"}")?;
        return Ok(());
    };
    let core::Comparison { pairs, counts } = core::compare(db, previous, audit).map_err(unknown_audit)?;
    let old = db.audit(previous)?.ok_or(ReportError::UnknownAudit { audit: previous })?;
    key(w, false, "previous_audit")?;
    value(w, &AuditRefJson::of(&old))?;
    key(w, false, "summary")?;
    value(w, &TotalsJson::of(&pairs, core::ChangeCounts::sum(&counts)))?;
    key(w, false, "added_sites")?;
    value(w, &pairs.added.iter().map(site_ref).collect::<Vec<_>>())?;
    key(w, false, "removed_sites")?;
    value(w, &pairs.removed.iter().map(site_ref).collect::<Vec<_>>())?;
    key(w, false, "sites")?;
    w.write_all(b"[")?;
    let reader = Reader::open(db)?;
    for (i, ((o, n), c)) in pairs.both.iter().zip(&counts).enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        w.write_all(b"{")?;
        key(w, true, "start_url")?;
        value(w, &n.start_url)?;
        key(w, false, "previous_site")?;
        value(w, &site_ref(o))?;
        key(w, false, "summary")?;
        value(w, &CountsJson::from(*c))?;
        for wanted in [Change::New, Change::Fixed] {
            key(w, false, wanted.as_str())?;
            w.write_all(b"[")?;
            let mut first = true;
            core::changes_with(&reader, o.id, n.id, |change, f| -> Result<(), ReportError> {
                if change != wanted {
                    return Ok(());
                }
                if !std::mem::take(&mut first) {
                    w.write_all(b",")?;
                }
                value(w, &FindingJson::of(&f))
            })?;
            w.write_all(b"]")?;
        }
        key(w, false, "urls")?;
        super::compare::write_url_changes(w, &reader, o.id, n.id)?;
        w.write_all(b"}")?;
    }
    w.write_all(b"]}")?;
    Ok(())
}

fn write_site<W: Write>(db: &AuditDb, health: &SiteHealth, w: &mut W) -> Result<(), ReportError> {
    let site = &health.site;
    let stats = db.site_stats(site.id)?;
    let (done_at, done_at_ms) = ms_pair(site.done_at);
    w.write_all(b"{")?;
    key(w, true, "id")?;
    value(w, &site.id.0)?;
    key(w, false, "start_url")?;
    value(w, &site.start_url)?;
    key(w, false, "status")?;
    value(w, site.status.as_str())?;
    key(w, false, "done_at")?;
    value(w, &done_at)?;
    key(w, false, "done_at_ms")?;
    value(w, &done_at_ms)?;
    key(w, false, "summary")?;
    value(w, &SummaryJson::of(&stats))?;
    key(w, false, "health")?;
    value(w, &HealthJson::of(health))?;
    key(w, false, "issues")?;
    value(w, &health.groups.iter().map(IssueJson::of).collect::<Vec<_>>())?;
    key(w, false, "ai_crawlers")?;
    value(w, &db.ai_crawlers(site.id)?.iter().map(AiCrawlerJson::of).collect::<Vec<_>>())?;

    key(w, false, "pages")?;
    w.write_all(b"[")?;
    let mut first = true;
    db.for_each_page(site.id, |page| -> Result<(), ReportError> {
        let final_url = if page.is_redirect() { db.final_url(site.id, &page.url)? } else { Some(page.url.clone()) };
        let links = db.links_from(site.id, &page.url)?;
        if !std::mem::take(&mut first) {
            w.write_all(b",")?;
        }
        value(w, &PageJson::of(&page, final_url, &links))
    })?;
    w.write_all(b"]")?;

    key(w, false, "findings")?;
    w.write_all(b"[")?;
    let mut first = true;
    db.for_each_finding(site.id, |f| -> Result<(), ReportError> {
        if !std::mem::take(&mut first) {
            w.write_all(b",")?;
        }
        value(w, &FindingJson::of(&f))
    })?;
    w.write_all(b"]")?;
    key(w, false, "browser")?;
    crate::browser_json::write_browser(db, site, w)?;
    key(w, false, "render")?;
    crate::browser_json::write_render(db, site, w)?;
    key(w, false, "content")?;
    value(w, &ContentJson::of(&db.content_summary(site.id)?))?;
    w.write_all(b"}")?;
    Ok(())
}

/// `sites[].content`: the structured-data types found and the duplicate clusters.
#[derive(Serialize)]
struct ContentJson<'a> {
    structured_data_types: Vec<TypeCountJson<'a>>,
    pages_with_structured_data: u64,
    thin_pages: u64,
    duplicate_clusters: Vec<ClusterJson<'a>>,
}

#[derive(Serialize)]
struct TypeCountJson<'a> {
    r#type: &'a str,
    pages: u64,
}

#[derive(Serialize)]
struct ClusterJson<'a> {
    kind: &'static str,
    detail: &'a str,
    pages: &'a [String],
}

impl<'a> ContentJson<'a> {
    fn of(c: &'a shoal_store::ContentSummary) -> ContentJson<'a> {
        ContentJson {
            structured_data_types: c.types.iter().map(|(t, n)| TypeCountJson { r#type: t, pages: *n }).collect(),
            pages_with_structured_data: c.pages_with_types,
            thin_pages: c.thin_pages,
            duplicate_clusters: c
                .clusters
                .iter()
                .map(|cl| ClusterJson {
                    kind: if cl.code == "content_duplicate" { "exact" } else { "near" },
                    detail: &cl.detail,
                    pages: &cl.urls,
                })
                .collect(),
        }
    }
}
