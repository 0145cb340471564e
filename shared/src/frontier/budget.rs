//! The budget rule of a discovered task: whether the site's page, depth, resource or sitemap
//! budget keeps it out. Both back ends apply it (the embedded frontier's offer; the Redis one's
//! `over_budget` in `frontier-redis/src/lua/`, which the differential test of that crate holds to
//! this function).

use crate::finding::Code;
use crate::task::{SiteLimits, TaskKind};

/// What a site has queued so far against its budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BudgetCounts {
    /// Pages queued.
    pub pages: u64,
    /// Resource and external-link checks queued.
    pub resources: u64,
    /// Sitemap files queued.
    pub sitemaps: u64,
    /// Sitemap bytes read (decompressed).
    pub sitemap_bytes: u64,
}

/// The budget a new task of `kind` at link depth `depth` is over, as the code of the site's limit
/// finding; `None` when it may be queued. A page too deep is over the depth budget before the page
/// budget is looked at; a sitemap is not read once the page budget is spent either (its pages could
/// not be queued).
#[must_use]
pub fn over_budget(kind: TaskKind, depth: u16, counts: &BudgetCounts, limits: &SiteLimits) -> Option<Code> {
    match kind {
        TaskKind::Page if depth > limits.max_depth => Some(Code::DepthLimitReached),
        TaskKind::Page if counts.pages >= u64::from(limits.max_pages) => Some(Code::PageLimitReached),
        _ if kind.is_check() && counts.resources >= u64::from(limits.max_resources) => Some(Code::ResourceLimitReached),
        TaskKind::Sitemap { .. }
            if counts.sitemaps >= u64::from(limits.max_sitemaps)
                || counts.sitemap_bytes >= limits.max_sitemap_bytes
                || counts.pages >= u64::from(limits.max_pages) =>
        {
            Some(Code::SitemapLimitReached)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_meets_its_own_budget() {
        let limits =
            SiteLimits { max_pages: 2, max_depth: 1, max_resources: 1, max_sitemaps: 1, ..SiteLimits::default() };
        let none = BudgetCounts::default();
        let full = BudgetCounts { pages: 2, resources: 1, sitemaps: 0, sitemap_bytes: 0 };
        assert_eq!(over_budget(TaskKind::Page, 1, &none, &limits), None);
        assert_eq!(over_budget(TaskKind::Page, 2, &full, &limits), Some(Code::DepthLimitReached), "depth first");
        assert_eq!(over_budget(TaskKind::Page, 0, &full, &limits), Some(Code::PageLimitReached));
        assert_eq!(over_budget(TaskKind::External, 9, &full, &limits), Some(Code::ResourceLimitReached));
        assert_eq!(over_budget(TaskKind::Robots, 9, &full, &limits), None, "robots.txt has no budget");
        let sitemap = TaskKind::Sitemap { index_depth: 0 };
        assert_eq!(over_budget(sitemap, 0, &none, &limits), None);
        assert_eq!(over_budget(sitemap, 0, &full, &limits), Some(Code::SitemapLimitReached), "pages spent");
    }
}
