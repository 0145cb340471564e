//! The two DevTools steps every measurement of a page uses: evaluate an expression and read its
//! value, and load a URL. Below the page and each measurement (axe, consent, keyboard), which the
//! page runs in turn, so none of them imports the page.

use std::time::Duration;

use chromiumoxide::Page;
use serde::de::DeserializeOwned;

/// After the load event: late shifts, late images, late trackers.
const SETTLE: Duration = Duration::from_millis(1_000);

/// Evaluates `expression` in the page (promises awaited) and reads its JSON value as `T`.
pub(super) async fn eval<T: DeserializeOwned>(page: &Page, expression: &str) -> Result<T, String> {
    let result = page.evaluate_expression(expression).await.map_err(|e| short(&e.to_string()))?;
    match result.value() {
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| format!("unexpected answer from the page: {e}")),
        None => serde_json::from_value(serde_json::Value::Null).map_err(|_| "the page returned no value".to_owned()),
    }
}

pub(super) fn short(s: &str) -> String {
    s.chars().take(300).collect()
}

/// Opens `url` in `page` and waits for its load event and a short settling time.
pub(super) async fn load(page: &Page, url: &str) -> Result<(), String> {
    page.goto(url).await.map_err(|e| format!("the page did not load: {}", short(&e.to_string())))?;
    // goto returns at the load event; make sure, then give late work a moment.
    for _ in 0..50 {
        let state: String = eval(page, "document.readyState").await.unwrap_or_default();
        if state == "complete" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(SETTLE).await;
    // A busy machine runs the page late: the settling time may have passed before its timers
    // and the frame they change (a layout shift 100 ms after load was missed once in CI, with the
    // machine's load at 9). A timer set now runs after every timer due before it; two frames
    // after that, what those timers changed has been laid out and measured. Bounded by the page's
    // own second timer, for a page that renders no frames.
    let caught_up = "new Promise((done) => { setTimeout(done, 1000); \
        setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 0))), 0); })";
    if let Err(e) = tokio::time::timeout(CATCH_UP, eval::<()>(page, caught_up)).await.unwrap_or(Ok(())) {
        tracing::debug!(error = %e, "the page did not say when it caught up");
    }
    Ok(())
}

/// How long [`load`] waits at most for the page to catch up with its timers after [`SETTLE`].
const CATCH_UP: Duration = Duration::from_secs(3);
