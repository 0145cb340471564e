//! Crawling a page of the site: fetch it, follow its redirect, and read an HTML page for its facts,
//! its findings and the links to queue next. The start page also sets the site-wide checks.

use super::probe::WORDPRESS_PROBES;
use super::{Crawler, Job, MAX_REDIRECTS};
use crate::charset::decode_html;
use crate::checks;
use crate::custom::{CompiledRules, CustomValues};
use crate::extract::{ExtractCaps, PageFacts, extract_custom};
use crate::fetch::{Fetched, Method};
use crate::hreflang;
use crate::legal::{self, Legal};
use crate::parse::{CutReason, ParseLimits};
use shoal_shared::finding::Code;
use shoal_shared::frontier::{Frontier, FrontierError, SiteInfo};
use shoal_shared::record::{LinkKind, LinkRecord, PageRecord};
use shoal_shared::robots::Verdict;
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::url::{MAX_URL_LEN, NormalizedUrl};
use std::collections::{HashMap, HashSet};

impl<F: Frontier> Crawler<F> {
    pub(super) async fn page_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let mut rec = job.record();
        let result = self.fetch(job, Method::Get, &url, None).await;
        let Some(resp) = self.answered(job, &mut rec, result) else { return Ok(()) };
        if job.task().kind == TaskKind::Page {
            rec.ai_blocked = self.ai_blocked(job, &url).await?;
        }
        if resp.truncated {
            job.finding(Code::BodyTooLarge, url.as_str(), format!("over {} bytes", self.fetcher.settings().max_body));
        }
        let html = is_html(&resp);
        for (code, detail) in checks::response_checks(&resp, html, false) {
            job.finding(code, url.as_str(), detail);
        }
        let page = job.task().kind == TaskKind::Page && (200..300).contains(&resp.status);
        if page {
            // A PDF names its language versions this way too (no `<link>` to put them in).
            let (header, more) = hreflang::from_link_headers(&resp.header_all("link"), url.as_url(), MAX_URL_LEN);
            if more {
                job.finding(
                    Code::HreflangTooMany,
                    url.as_str(),
                    format!("Link header: over {}", hreflang::MAX_HREFLANG),
                );
            }
            rec.hreflang_header = header.iter().map(|a| job.alternate(a)).collect();
        }
        match resp.status {
            300..=399 => self.redirect(job, &mut rec, &resp).await?,
            500..=599 => job.finding(Code::ServerError, url.as_str(), format!("HTTP {}", resp.status)),
            200..=299 if is_html(&resp) && job.task().kind == TaskKind::Page => {
                self.html_page(job, &mut rec, &resp).await?;
            }
            _ => {}
        }
        if page {
            let via = FoundVia::Link { from: url.clone() };
            let depth = job.task().depth + 1;
            let entries: Vec<(String, String)> = rec.hreflang.iter().chain(&rec.hreflang_header).cloned().collect();
            self.queue_alternates(job, &url, &entries, &via, depth).await?;
        }
        job.publish(rec);
        Ok(())
    }

    /// A 3xx answer of a page, resource, sitemap or probe: the target is queued as the same kind
    /// of task (within the site, allowed by robots.txt, at most [`MAX_REDIRECTS`] hops, no loop);
    /// what goes wrong on the way is a finding.
    pub(super) async fn redirect(
        &self,
        job: &mut Job<'_>,
        rec: &mut PageRecord,
        resp: &Fetched,
    ) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let target = match resp.header("location").map(|l| NormalizedUrl::join(url.as_url(), l)) {
            Some(Ok(target)) => target,
            Some(Err(e)) => {
                // Over the URL length cap, or not a URL at all: say which.
                let why: String = e.to_string().chars().take(300).collect();
                job.finding(
                    Code::RedirectInvalid,
                    url.as_str(),
                    format!("HTTP {} without a usable Location: {why}", resp.status),
                );
                return Ok(());
            }
            None => {
                job.finding(
                    Code::RedirectInvalid,
                    url.as_str(),
                    format!("HTTP {} without a usable Location", resp.status),
                );
                return Ok(());
            }
        };
        rec.redirect_to = Some(target.to_string());
        if matches!(resp.status, 302 | 303 | 307) && job.task().kind == TaskKind::Page {
            job.finding(Code::RedirectTemporary, url.as_str(), format!("HTTP {} to {target}", resp.status));
        }
        let mut chain = job.task().chain.clone();
        chain.push(url.clone());
        if chain.contains(&target) {
            return Ok(()); // a loop: the audit database reports it from the page records
        }
        // `chain` holds every URL that redirected so far, this one included: its length is the
        // number of the hop at hand. Hops 1..=MAX_REDIRECTS are followed (the 10th hop's target
        // is requested); the one after is the limit.
        if chain.len() > MAX_REDIRECTS {
            let related = chain.iter().map(ToString::to_string).chain([target.to_string()]).collect();
            let first = chain[0].to_string();
            job.finding_related(Code::RedirectLimit, &first, format!("more than {MAX_REDIRECTS} redirects"), related);
            return Ok(());
        }
        if !job.scope.contains(target.as_url()) {
            return Ok(()); // another site: recorded as redirect_to, never crawled
        }
        let rules = self.lane_rules(job.task().site, &target.host_key(), None).await?;
        if let Some(Verdict::Disallowed { rule }) = rules.rules.check(&target) {
            job.finding(
                Code::RedirectToDisallowed,
                url.as_str(),
                format!("redirects to {target}, blocked by rule {rule}"),
            );
            return Ok(());
        }
        let t = job.task();
        let mut next = Task::new(t.audit, t.site, target, t.kind, t.depth, FoundVia::Redirect { from: url });
        next.chain = chain;
        job.out.discovered.push(next);
        Ok(())
    }

    async fn html_page(&self, job: &mut Job<'_>, rec: &mut PageRecord, resp: &Fetched) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let ct = resp.header("content-type");
        let caps = &self.settings.extract;
        let custom = self.custom_rules(job.site);
        // Parsing is CPU work (bounded, see `crate::parse`, yet up to a second on hostile markup).
        // Most pages are parsed where they arrived, within a small budget: handing each to the
        // blocking pool and back cost more than parsing it. Only a page that needs more is parsed
        // again there, under its own limits (and only then are the body, caps and URL copied).
        let inline = parse_inline(&resp.body, ct, url.as_url(), caps, custom.as_deref());
        let Parsed { facts, wordpress, custom } = match inline {
            Some(done) => done,
            None => {
                let (body, ct, base, caps) =
                    (resp.body.clone(), ct.map(str::to_owned), url.as_url().clone(), caps.clone());
                // Never closed, so this waits for a slot; were it closed, parsing without one is harmless.
                let _slot = self.parse_slots.acquire().await.ok();
                tokio::task::spawn_blocking(move || {
                    parse_html(&body, ct.as_deref(), &base, &caps, caps.parse_limits, custom.as_deref())
                })
                .await
                .unwrap_or_else(|e| {
                    tracing::error!(url = %url, error = %e, "HTML extraction failed; recording the page without facts");
                    Parsed::default()
                })
            }
        };
        rec.extracted = custom.extracted;
        for detail in custom.flagged {
            job.finding(Code::CustomSearch, url.as_str(), detail);
        }
        if job.is_start_page() {
            self.start_page(job, &url, resp, wordpress);
            legal_links(job, &url, &facts);
        }
        if legal::is_imprint(url.as_url().path(), facts.title.as_deref(), &facts.h1) {
            imprint_details(job, &url, &facts);
        }
        if let Some(c) = facts.canonical.as_deref().and_then(|c| NormalizedUrl::parse(c).ok()).map(|c| job.scoped(c))
            && c != url
        {
            let internal = job.scope.contains(c.as_url());
            rec.links.push(LinkRecord {
                url: c.to_string(),
                kind: LinkKind::Canonical,
                nofollow: false,
                internal,
                text: None,
            });
            if internal && self.allowed(job, &c).await? {
                let t = job.task();
                let task =
                    Task::new(t.audit, t.site, c, TaskKind::Page, t.depth + 1, FoundVia::Link { from: url.clone() });
                job.out.discovered.push(task);
            }
        }
        rec.title.clone_from(&facts.title);
        rec.meta_description.clone_from(&facts.meta_description);
        rec.h1.clone_from(&facts.h1);
        rec.canonical.clone_from(&facts.canonical);
        rec.meta_robots.clone_from(&facts.meta_robots);
        rec.hreflang = facts.hreflang.iter().map(|a| job.alternate(a)).collect();
        if facts.hreflang_truncated {
            job.finding(
                Code::HreflangTooMany,
                url.as_str(),
                format!("<link> elements: over {}", hreflang::MAX_HREFLANG),
            );
        }
        let own_entries: Vec<(String, String)> = rec.hreflang.iter().chain(&rec.hreflang_header).cloned().collect();
        if let Some((code, detail)) = hreflang::lang_mismatch(url.as_str(), facts.html_lang.as_deref(), &own_entries) {
            job.finding(code, url.as_str(), detail);
        }
        rec.word_count = Some(facts.main_text.words);
        rec.structured_types.clone_from(&facts.structured.types);
        // Scoped as the pages they name are queued, so the pagination analysis finds their rows.
        rec.rel_next = facts.on_page.rel_next.as_deref().map(|u| job.scoped_as_written(u));
        rec.rel_prev = facts.on_page.rel_prev.as_deref().map(|u| job.scoped_as_written(u));
        let header_nofollow = robots_header_has(&rec.x_robots_tag, self.settings.token.as_str(), "nofollow");
        let header_noindex = robots_header_has(&rec.x_robots_tag, self.settings.token.as_str(), "noindex");
        // Duplicates are compared among pages indexed as themselves, and a cut page's text is
        // only its first part: the others get no fingerprint.
        if facts.parse_cut.is_none() && indexable(job, &facts, &url, header_noindex) {
            rec.text_hash = Some(facts.main_text.hash);
            rec.text_simhash = Some(facts.main_text.simhash);
        }
        let page_nofollow = facts.robots_nofollow() || header_nofollow;
        let follow_nofollow = job.site.limits.follow_nofollow;
        let mut queued = HashSet::new();
        // Internal targets in the order first seen, as a page if any link to them navigates.
        let mut internal_targets: Vec<(NormalizedUrl, TaskKind)> = Vec::new();
        let mut position: HashMap<NormalizedUrl, usize> = HashMap::new();
        for link in &facts.links {
            let Ok(target) = NormalizedUrl::from_url(link.url.clone()) else {
                continue;
            };
            let target = job.scoped(target);
            let internal = job.scope.contains(target.as_url());
            let nofollow =
                link.nofollow || (page_nofollow && matches!(link.kind, LinkKind::Anchor | LinkKind::PageLink));
            rec.links.push(LinkRecord {
                url: target.to_string(),
                kind: link.kind,
                nofollow,
                internal,
                text: link.text.clone(),
            });
            if !link.kind.is_requested() {
                continue; // recorded only: a browser loads nothing for it
            }
            if !internal {
                if self.settings.check_external && queued.insert(target.clone()) {
                    // Checked, never crawled: its host's robots.txt and pace apply when claimed.
                    let t = job.task();
                    let task = Task::new(
                        t.audit,
                        t.site,
                        target,
                        TaskKind::External,
                        t.depth + 1,
                        FoundVia::Link { from: url.clone() },
                    );
                    job.out.discovered.push(task);
                }
                continue;
            }
            if nofollow && !follow_nofollow {
                continue;
            }
            let kind = if link.kind.is_navigation() {
                TaskKind::Page
            } else {
                TaskKind::Resource { stylesheet: link.kind == LinkKind::Stylesheet }
            };
            match position.get(&target) {
                // A page if any link navigates to it, else a stylesheet if any link loads it as one.
                Some(&i) if kind == TaskKind::Page => internal_targets[i].1 = TaskKind::Page,
                Some(&i)
                    if kind == (TaskKind::Resource { stylesheet: true }) && internal_targets[i].1 != TaskKind::Page =>
                {
                    internal_targets[i].1 = kind;
                }
                Some(_) => {}
                None => {
                    position.insert(target.clone(), internal_targets.len());
                    internal_targets.push((target, kind));
                }
            }
        }
        for (target, kind) in internal_targets {
            if !self.allowed(job, &target).await? {
                continue;
            }
            let t = job.task();
            let task = Task::new(t.audit, t.site, target, kind, t.depth + 1, FoundVia::Link { from: url.clone() });
            job.out.discovered.push(task);
        }
        self.page_findings(job, &url, &facts, header_noindex, header_nofollow);
        Ok(())
    }

    /// The site's audit's extraction and search rules, compiled once per audit; `None` when it
    /// has none. A rule set that does not compile here (the configuration compiled it before the
    /// audit started, so only a different worker version could disagree) runs no rule.
    fn custom_rules(&self, site: &SiteInfo) -> Option<std::sync::Arc<CompiledRules>> {
        if site.custom.is_empty() {
            return None;
        }
        let compiled = self.custom.get_with(site.audit, || {
            let compiled = crate::custom::compile(&site.custom).unwrap_or_else(|e| {
                tracing::warn!(audit = %site.audit, error = %e, "the audit's custom rules do not compile here; not running them");
                CompiledRules::default()
            });
            std::sync::Arc::new(compiled)
        });
        Some(compiled)
    }

    /// Site-wide rules read from the start page: security headers, plain http, and whether the
    /// WordPress probes are worth making.
    fn start_page(&self, job: &mut Job<'_>, url: &NormalizedUrl, resp: &Fetched, wordpress: bool) {
        let https = url.as_url().scheme() == "https";
        for (code, detail) in checks::security_header_checks(resp, https) {
            job.finding(code, url.as_str(), detail);
        }
        if !https {
            job.finding(Code::NoHttps, url.as_str(), "");
        }
        if wordpress {
            for (kind, path) in WORDPRESS_PROBES {
                let Ok(u) = NormalizedUrl::join(url.as_url(), path) else { continue };
                let t = job.task();
                job.out.discovered.push(Task::new(t.audit, t.site, u, TaskKind::Probe(*kind), 0, FoundVia::Standard));
            }
        }
    }

    fn page_findings(&self, job: &mut Job<'_>, url: &NormalizedUrl, f: &PageFacts, noindex: bool, nofollow: bool) {
        let max_links = self.settings.extract.max_links;
        for (code, detail) in checks::page_checks(f, &job.scope, noindex, nofollow, max_links) {
            job.finding(code, url.as_str(), detail);
        }
        let whole = f.parse_cut.is_none();
        for (code, detail) in checks::structured::structured_checks(&f.structured) {
            job.finding(code, url.as_str(), detail);
        }
        for (code, detail) in checks::onpage::onpage_checks(&f.on_page, whole) {
            job.finding(code, url.as_str(), detail);
        }
        // Thin is about pages search engines index as themselves.
        let threshold = job.site.limits.content.thin_page_words;
        let indexable = indexable(job, f, url, noindex);
        if let Some((code, detail)) = checks::content::thin_check(f.main_text.words, threshold, indexable, whole) {
            job.finding(code, url.as_str(), detail);
        }
    }
}

/// The start page's links to the site's legal pages: an Impressum where one is required (a
/// German, Austrian, Swiss or Liechtenstein site), a privacy policy where the GDPR applies.
fn legal_links(job: &mut Job<'_>, url: &NormalizedUrl, facts: &PageFacts) {
    let links_to = |kind| {
        facts.links.iter().any(|l| {
            matches!(l.kind, LinkKind::Anchor | LinkKind::PageLink)
                && legal::link_is(kind, l.text.as_deref(), l.url.path())
        })
    };
    let host = url.as_url().host_str().unwrap_or("");
    if legal::imprint_required(host, facts.html_lang.as_deref()) && !links_to(Legal::Imprint) {
        job.finding(Code::ImpressumMissing, url.as_str(), "");
    }
    if legal::privacy_policy_expected(host, facts.html_lang.as_deref()) && !links_to(Legal::Privacy) {
        job.finding(Code::PrivacyPolicyMissing, url.as_str(), "");
    }
}

/// An Impressum's required details: an e-mail address and a postal address, in its text.
fn imprint_details(job: &mut Job<'_>, url: &NormalizedUrl, facts: &PageFacts) {
    let found = legal::ContactDetails::scan(&facts.text_head, facts.mailto);
    let mut missing = Vec::new();
    if !found.email {
        missing.push("no e-mail address");
    }
    if !found.postal_address {
        missing.push("no postal address");
    }
    if !missing.is_empty() {
        job.finding(Code::ImpressumIncomplete, url.as_str(), missing.join(", "));
    }
}

/// Whether search engines may index the page as itself: no noindex (meta or header), no canonical
/// naming another URL (compared as the crawl queues it: without the parameters `--strip-query`
/// names, as the canonical link is followed).
fn indexable(job: &Job<'_>, f: &PageFacts, url: &NormalizedUrl, header_noindex: bool) -> bool {
    let canonical_elsewhere =
        f.canonical.as_deref().and_then(|c| NormalizedUrl::parse(c).ok()).is_some_and(|c| &job.scoped(c) != url);
    !(f.robots_noindex() || header_noindex || canonical_elsewhere)
}

/// Whether an answer is an HTML document: by its Content-Type, or by its first bytes without one.
pub(super) fn is_html(resp: &Fetched) -> bool {
    match resp.header("content-type") {
        Some(ct) => {
            let ct = ct.to_ascii_lowercase();
            ct.contains("text/html") || ct.contains("application/xhtml")
        }
        None => {
            let head = &resp.body[..resp.body.len().min(512)];
            let s = String::from_utf8_lossy(head).to_ascii_lowercase();
            s.trim_start().starts_with('<') && (s.contains("<html") || s.contains("<!doctype html"))
        }
    }
}

/// Whether X-Robots-Tag values carry `directive` for everyone or for our token
/// (`noindex`, `shoalbot: noindex`), but not for another crawler (`googlebot: noindex`).
fn robots_header_has(values: &[String], token: &str, directive: &str) -> bool {
    values.iter().any(|v| {
        let (scope, rest) = match v.split_once(':') {
            Some((ua, rest)) if !ua.contains(',') && !ua.trim().contains(' ') && !is_directive(ua.trim()) => {
                (Some(ua.trim()), rest)
            }
            _ => (None, v.as_str()),
        };
        scope.is_none_or(|ua| ua.eq_ignore_ascii_case(token))
            && rest
                .split(',')
                .map(str::trim)
                .any(|d| d.eq_ignore_ascii_case(directive) || d.eq_ignore_ascii_case("none"))
    })
}

/// The tree builder's work a page may take on an async thread (about 5 ms on the worst markup
/// measured, `worker/examples/parse_cost.rs`; an ordinary page of 500 KB takes less). Parsing is
/// bounded (`crate::parse`), yet hostile markup under the full limits can take a second, which
/// must not stall the other requests on that thread.
const INLINE_PARSE_WORK: u64 = 1_000_000;

/// What one parse of a page gives.
#[derive(Debug, Default, PartialEq)]
struct Parsed {
    facts: PageFacts,
    /// The page looks like WordPress.
    wordpress: bool,
    /// What the audit's own rules found.
    custom: CustomValues,
}

/// A page's facts, whether it looks like WordPress and what the audit's rules find, the parse
/// under `limits`.
fn parse_html(
    body: &[u8],
    content_type: Option<&str>,
    base: &url::Url,
    caps: &ExtractCaps,
    limits: ParseLimits,
    rules: Option<&CompiledRules>,
) -> Parsed {
    let (text, _) = decode_html(body, content_type);
    let (facts, custom) = extract_custom(&text, base, caps, limits, rules);
    Parsed { facts, wordpress: checks::looks_like_wordpress(&text), custom }
}

/// [`parse_html`] within [`INLINE_PARSE_WORK`]; `None` when that was not enough (the caller then
/// parses the page in the blocking pool under its own limits, so the result is the same).
fn parse_inline(
    body: &[u8],
    content_type: Option<&str>,
    base: &url::Url,
    caps: &ExtractCaps,
    rules: Option<&CompiledRules>,
) -> Option<Parsed> {
    let own = caps.parse_limits;
    let limits = ParseLimits { max_work: own.max_work.min(INLINE_PARSE_WORK), ..own };
    let done = parse_html(body, content_type, base, caps, limits, rules);
    let over = done.facts.parse_cut.is_some_and(|c| c.reason == CutReason::Work);
    (!over || limits.max_work == own.max_work).then_some(done)
}

fn is_directive(s: &str) -> bool {
    matches!(
        s.to_ascii_lowercase().as_str(),
        "unavailable_after" | "max-snippet" | "max-image-preview" | "max-video-preview"
    )
}

#[cfg(test)]
mod tests {
    use super::{ExtractCaps, parse_html, parse_inline, robots_header_has};

    #[test]
    fn small_pages_parse_inline_and_hostile_ones_go_to_the_pool_with_the_same_result() {
        let base = url::Url::parse("http://a.test/").expect("valid");
        let caps = ExtractCaps::default();
        let page = "<html><head><title>T</title></head><body><a href=/x>x</a></body></html>".repeat(200);
        let inline = parse_inline(page.as_bytes(), None, &base, &caps, None).expect("an ordinary page fits the budget");
        assert_eq!(inline.facts.title.as_deref(), Some("T"));
        assert_eq!(inline, parse_html(page.as_bytes(), None, &base, &caps, caps.parse_limits, None));
        // Misnested formatting elements, the parser's slowest case (`parse_cost reformat`).
        let hostile: String = (0..900).map(|i| format!("<p><b id={i}>x</p>")).collect();
        assert_eq!(parse_inline(hostile.as_bytes(), None, &base, &caps, None), None, "over the inline budget");
        let full = parse_html(hostile.as_bytes(), None, &base, &caps, caps.parse_limits, None);
        let cut = full.facts.parse_cut;
        assert_ne!(cut.map(|c| c.reason), Some(crate::parse::CutReason::Work), "{cut:?}");
        let tight = ExtractCaps {
            parse_limits: crate::parse::ParseLimits { max_work: 10, ..crate::parse::ParseLimits::default() },
            ..ExtractCaps::default()
        };
        assert!(
            parse_inline(hostile.as_bytes(), None, &base, &tight, None).is_some(),
            "a budget under the inline one is the page's own"
        );
    }

    #[test]
    fn x_robots_tag_scoping() {
        let v = |s: &str| vec![s.to_owned()];
        assert!(robots_header_has(&v("noindex, nofollow"), "ShoalBot", "nofollow"));
        assert!(robots_header_has(&v("shoalbot: noindex"), "ShoalBot", "noindex"));
        assert!(!robots_header_has(&v("googlebot: noindex"), "ShoalBot", "noindex"));
        assert!(robots_header_has(&v("none"), "ShoalBot", "noindex"));
        assert!(!robots_header_has(&v("unavailable_after: 25 Jun 2010 15:00:00 PST"), "ShoalBot", "noindex"));
        assert!(!robots_header_has(&[], "ShoalBot", "noindex"));
    }
}
