//! The audit's scope rules (`--include`, `--exclude`, `--strip-query`, `shoal_shared::scope_rules`)
//! where links are offered: every task a lease found passes [`apply`] before its completion goes
//! to the frontier, so an excluded URL never becomes a task and never costs the site a request,
//! and neither back end (nor Redis's Lua) has to know the rules.
//!
//! Which tasks: the URLs links lead to, the site's own (`page`, `resource`) and other sites'
//! (`external` checks). The start URL and the redirects that start from it are always fetched
//! (the user named it); robots.txt, sitemaps, the standard probes and the checks of SPEC §9 are
//! the fixed list of SPEC §2 and never excluded.
//!
//! Link records and hreflang entries name the stripped URL too ([`Job::scoped`]), so that what the
//! audit database says links where matches what was fetched.

use super::Job;
use shoal_shared::finding::{Code, Finding};
use shoal_shared::record::Event;
use shoal_shared::task::{FoundVia, Task, TaskKind};
use shoal_shared::url::NormalizedUrl;

impl Job<'_> {
    /// `url` as the crawl queues and records it: without the query parameters `--strip-query`
    /// names.
    pub(super) fn scoped(&self, url: NormalizedUrl) -> NormalizedUrl {
        self.site.limits.scope.strip(url)
    }

    /// An hreflang alternate's URL as recorded: normalised and [scoped](Self::scoped) when it is
    /// an http(s) URL (so that it compares equal to the page it names), as written otherwise.
    pub(super) fn alternate(&self, (value, href): &(String, String)) -> (String, String) {
        (value.clone(), self.scoped_as_written(href))
    }

    /// A URL a page names, as recorded: normalised and [scoped](Self::scoped) when it is an
    /// http(s) URL, as written otherwise (hreflang alternates, `rel=next` / `rel=prev` targets).
    pub(super) fn scoped_as_written(&self, href: &str) -> String {
        NormalizedUrl::parse(href).map_or_else(|_| href.to_owned(), |u| self.scoped(u).to_string())
    }
}

/// Whether the rules apply to a task at all (see the module documentation).
fn subject_to_rules(task: &Task, start: &NormalizedUrl) -> bool {
    let linked = matches!(task.kind, TaskKind::Page | TaskKind::Resource { .. } | TaskKind::External);
    let from_start = match &task.found_via {
        FoundVia::Start => true,
        FoundVia::Redirect { .. } => task.chain.first() == Some(start),
        _ => false,
    };
    linked && !from_start && task.url != *start
}

/// Strips the discovered tasks' URLs and drops those the rules keep out, each recorded as a
/// `url_excluded` finding (on the URL, naming the rule, with the page it was found on).
pub(super) fn apply(job: &mut Job<'_>) {
    let rules = &job.site.limits.scope;
    if rules.is_empty() || job.out.discovered.is_empty() {
        return;
    }
    let tasks = std::mem::take(&mut job.out.discovered);
    let mut kept = Vec::with_capacity(tasks.len());
    for mut task in tasks {
        if !subject_to_rules(&task, &job.site.start) {
            kept.push(task);
            continue;
        }
        task.url = rules.strip(task.url);
        match rules.exclusion(&task.url) {
            None => kept.push(task),
            Some(why) => {
                let mut f = Finding::new(task.audit, task.site, Code::UrlExcluded, task.url.as_str(), why.to_string());
                f.related = match &task.found_via {
                    FoundVia::Link { from } | FoundVia::Redirect { from } => vec![from.to_string()],
                    FoundVia::Sitemap { sitemap } => vec![sitemap.to_string()],
                    FoundVia::Start | FoundVia::Standard => Vec::new(),
                };
                shoal_metrics::metrics().scope_exclusions.inc();
                job.out.events.push(Event::Finding(f));
            }
        }
    }
    job.out.discovered = kept;
}

#[cfg(test)]
mod tests {
    use super::super::testing;
    use super::*;
    use shoal_shared::scope_rules::ScopeRules;
    use shoal_shared::task::SiteLimits;

    #[test]
    fn excluded_tasks_are_dropped_and_recorded_and_the_start_url_never_is() {
        let rules = ScopeRules::new(&[], &["/cart".to_owned(), "^https://a\\.test/$".to_owned()], &["sid".to_owned()])
            .expect("valid rules");
        let site = shoal_shared::frontier::SiteInfo {
            limits: SiteLimits { scope: rules, ..SiteLimits::default() },
            ..testing::site()
        };
        let lease = testing::lease(testing::START, TaskKind::Page, 0);
        let mut job = testing::job(&lease, &site);
        let from = FoundVia::Link { from: testing::url(testing::START) };
        let t = |path: &str, kind| {
            let url = testing::url(&format!("https://a.test{path}"));
            Task::new(lease.task.audit, lease.task.site, url, kind, 1, from.clone())
        };
        job.out.discovered = vec![
            t("/cart?sid=1", TaskKind::Page),
            t("/shoes?sid=2&p=1", TaskKind::Page),
            t("/cart.png", TaskKind::Resource { stylesheet: false }),
            // The start URL matches an exclude rule: still fetched when a link leads to it.
            t("/", TaskKind::Page),
        ];
        apply(&mut job);
        let queued: Vec<&str> = job.out.discovered.iter().map(|t| t.url.as_str()).collect();
        assert_eq!(queued, ["https://a.test/shoes?p=1", "https://a.test/"]);
        let excluded: Vec<(&str, &str)> = job
            .out
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Finding(f) if f.code == Code::UrlExcluded => Some((f.url.as_str(), f.detail.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(
            excluded,
            [
                ("https://a.test/cart", "matches the exclude rule /cart"),
                ("https://a.test/cart.png", "matches the exclude rule /cart")
            ]
        );
    }
}
