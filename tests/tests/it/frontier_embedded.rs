//! The frontier conformance suite on the embedded back end.

use shoal_shared::frontier::embedded::EmbeddedFrontier;
use shoal_tests::conformance;

#[tokio::test]
async fn embedded_frontier_passes_conformance() {
    conformance::run_all(|| async { EmbeddedFrontier::new(Default::default()) }).await;
}
