//! The fields every page has in the JSON report (`shoal.report/v1`). Shared by the report's own
//! tests (`db_report.rs`) and the end-to-end test of the report of a real audit
//! (`tests/tests/it/audit_findings.rs`, which includes this file by path), so both check the same
//! list.

/// Every field of a page of the JSON report.
pub(crate) const PAGE_FIELDS: [&str; 29] = [
    "url",
    "final_url",
    "status",
    "error",
    "depth",
    "found_via",
    "found_from",
    "kind",
    "content_type",
    "title",
    "meta_description",
    "h1",
    "canonical",
    "meta_robots",
    "response_ms",
    "bytes",
    "redirect_to",
    "x_robots_tag",
    "hreflang",
    "headers",
    "fetched_at",
    "fetched_at_ms",
    "word_count",
    "structured_data_types",
    "rel_next",
    "rel_prev",
    "links",
    "extracted",
    "ai_crawlers_blocked",
];
