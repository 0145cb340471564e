//! The Grafana dashboard in deploy/ only queries metrics this crate exports.

#[test]
fn grafana_dashboard_uses_exported_metrics_only() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/grafana-dashboard.json");
    let dashboard = std::fs::read_to_string(path).expect("deploy/grafana-dashboard.json exists");
    // Labelled families appear in the exposition once they have a series.
    let m = shoal_metrics::metrics();
    m.requests.get_or_create(&shoal_metrics::RequestLabels { method: "GET", class: "2xx" }).inc_by(0);
    m.findings.get_or_create(&shoal_metrics::SeverityLabels { severity: "error" }).inc_by(0);
    let exposition = m.encode();
    let mut used = 0;
    for word in dashboard.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if word.starts_with("shoal_") {
            used += 1;
            let base = word
                .trim_end_matches("_bucket")
                .trim_end_matches("_count")
                .trim_end_matches("_sum")
                .trim_end_matches("_total");
            assert!(exposition.contains(base), "the dashboard queries {word}, which Shoal does not export");
        }
    }
    assert!(used >= 10, "the dashboard uses the metrics ({used} references)");
}
