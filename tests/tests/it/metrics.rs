//! Prometheus metrics scraped while an audit runs: the values move as pages are crawled.

use crate::common;
use crate::procs::free_port;

use shoal_tests::testsite::{Site, TestServer};
use std::time::Duration;

/// Sums every sample of a metric family in OpenMetrics text.
fn sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && (l[name.len()..].starts_with('{') || l[name.len()..].starts_with(' ')))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_move_while_an_audit_runs() {
    let server = TestServer::start(vec![Site::generated("m.test", 40, 3).latency(Duration::from_millis(20))])
        .await
        .expect("server starts");
    let port = free_port();
    let metrics_url = format!("http://127.0.0.1:{port}/metrics");
    let start = server.url("m.test", "/");
    let listen = format!("127.0.0.1:{port}");
    let audit = {
        let listen = listen.clone();
        let start = start.clone();
        async move {
            common::audit_in_process(&["m.test"], &[start], &["--gap-ms", "50", "--metrics-listen", &listen]).await
        }
    };
    let scraper = async {
        shoal_worker::tls::install_crypto_provider();
        let client = reqwest::Client::builder().no_proxy().build().expect("client");
        let mut samples = Vec::new();
        for _ in 0..60 {
            tokio::time::sleep(Duration::from_millis(250)).await;
            if let Ok(r) = client.get(&metrics_url).send().await {
                let ct = r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                let text = r.text().await.unwrap_or_default();
                assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
                samples.push(sum(&text, "shoal_requests_total"));
                if samples.len() >= 3 && samples.last() > samples.first() {
                    break;
                }
            }
        }
        samples
    };
    let (run, samples) = tokio::join!(audit, scraper);
    assert_eq!(run.exit, shoal::Exit::Ok);
    assert!(samples.len() >= 2, "scraped during the audit: {samples:?}");
    assert!(samples.last() > samples.first(), "request counter moved while crawling: {samples:?}");
    let text = shoal_metrics::metrics().encode();
    assert!(sum(&text, "shoal_pages_stored_total") >= 40.0, "{text}");
    assert!(sum(&text, "shoal_fetch_seconds_count") >= 40.0, "{text}");
    assert!(!text.contains("m.test"), "no host in any label");
    server.shutdown().await;
}
