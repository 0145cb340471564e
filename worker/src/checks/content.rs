//! Content rules judged on one page: thin main text (`content_thin`). Exact and near-duplicate
//! main text need every page of the site and run in the site analysis.

use super::Check;
use shoal_shared::finding::Code;

/// `content_thin` when the main text has fewer than `threshold` words (0 turns it off). Only
/// for pages search engines may index as themselves (`indexable`: not noindex, no canonical
/// naming another URL) whose parse was not cut (`whole`).
#[must_use]
pub fn thin_check(words: u32, threshold: u32, indexable: bool, whole: bool) -> Option<Check> {
    (threshold > 0 && indexable && whole && words < threshold)
        .then(|| (Code::ContentThin, format!("{words} words in the main text (threshold {threshold})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thin_only_under_the_threshold_and_on_indexable_whole_pages() {
        assert!(thin_check(199, 200, true, true).is_some());
        assert!(thin_check(200, 200, true, true).is_none());
        assert!(thin_check(0, 0, true, true).is_none(), "0 turns it off");
        assert!(thin_check(5, 200, false, true).is_none());
        assert!(thin_check(5, 200, true, false).is_none());
    }
}
