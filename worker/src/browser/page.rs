//! One page, start to finish: a fresh browser context, interception and the probe, the load, then
//! each measurement in turn, all under the page's hard time limit.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::browser::{
    BrowserContextId, SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::cdp::browser_protocol::fetch::{EnableParams as FetchEnable, RequestPattern, RequestStage};
use chromiumoxide::cdp::browser_protocol::page::{
    AddScriptToEvaluateOnNewDocumentParams, CaptureScreenshotFormat, SetPrerenderingAllowedParams,
};
use chromiumoxide::cdp::browser_protocol::target::{
    CloseTargetParams, CreateBrowserContextParams, CreateTargetParams, EventTargetCreated,
};
use chromiumoxide::listeners::EventStream;
use chromiumoxide::page::ScreenshotParams;
use futures_util::StreamExt;
use serde::Deserialize;
use shoal_shared::browser::{BrowserPage, Vitals};
use shoal_shared::ids::{AuditId, SiteId};
use tokio::task::JoinSet;
use tracing::{debug, warn};

use super::intercept::{self, SharedNet, lock};
use super::js::{eval, load, short};
use super::proxy::Gate;
use super::{BrowserSettings, axe, consent, keyboard, rendered};

/// The probe injected before the page's scripts.
const PROBE_JS: &str = include_str!("js/probe.js");
/// Desktop and phone viewports (CSS pixels).
const DESKTOP: (i64, i64) = (1366, 768);
const PHONE: (i64, i64) = (390, 844);
/// JPEG quality of the screenshots.
const JPEG_QUALITY: i64 = 70;
/// Limit on the small DevTools steps around the page (context, tab, close).
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Deserialize)]
struct JsVitals {
    lcp: Option<f64>,
    cls: Option<f64>,
    inp: Option<f64>,
    tbt: Option<f64>,
    fcp: Option<f64>,
    ttfb: Option<f64>,
    status: Option<u16>,
    url: String,
}

fn ms(v: Option<f64>) -> Option<u32> {
    v.filter(|x| x.is_finite() && *x >= 0.0).map(|x| x.round().min(f64::from(u32::MAX)) as u32)
}

async fn vitals(page: &Page) -> Result<JsVitals, String> {
    eval(page, "window.__shoal ? window.__shoal.vitals() : null").await
}

async fn viewport(page: &Page, (width, height): (i64, i64), mobile: bool) -> Result<(), String> {
    let metrics = SetDeviceMetricsOverrideParams::new(width, height, if mobile { 2.0 } else { 1.0 }, mobile);
    page.execute(metrics).await.map_err(|e| format!("viewport: {e}"))?;
    Ok(())
}

async fn screenshot(page: &Page) -> Result<Vec<u8>, String> {
    let params = ScreenshotParams::builder().format(CaptureScreenshotFormat::Jpeg).quality(JPEG_QUALITY).build();
    page.screenshot(params).await.map_err(|e| format!("screenshot: {e}"))
}

/// Checks one page; see the module documentation of `browser`.
pub(super) async fn check(
    browser: &chromiumoxide::Browser,
    settings: &BrowserSettings,
    gate: &Gate,
    proxy: std::net::SocketAddr,
    (audit, site, url): (AuditId, SiteId, &str),
    robots: super::RobotsCheck,
) -> BrowserPage {
    let mut record =
        BrowserPage { audit, site, url: url.to_owned(), final_url: url.to_owned(), ..BrowserPage::default() };
    if !matches!(url::Url::parse(url).map(|u| u.scheme().to_owned()).as_deref(), Ok("http" | "https")) {
        record.error = Some("not an http(s) URL".to_owned());
        return record;
    }
    let context = match new_context(browser, proxy).await {
        Ok(id) => id,
        Err(e) => return failed(record, e),
    };
    let (page, created) = match new_tab(browser, &context).await {
        Ok((page, created)) => (Some(page), created),
        Err(e) => {
            record.error = Some(e);
            (None, None)
        }
    };
    if let Some(page) = page {
        let net = SharedNet::default();
        let mut tasks = JoinSet::new();
        if let Some(created) = created {
            tasks.spawn(close_other_tabs(page.clone(), context.clone(), created));
        }
        let started = Instant::now();
        let outcome =
            tokio::time::timeout(settings.page_timeout, measure(&page, (gate, robots), &net, &mut tasks, &mut record))
                .await;
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => record.error = Some(e),
            Err(_) => {
                record.error =
                    Some(format!("the page was not loaded and checked within {} s", settings.page_timeout.as_secs()))
            }
        }
        debug!(url, ms = started.elapsed().as_millis() as u64, error = ?record.error, "browser page checked");
        finish(&mut record, &net);
        tasks.abort_all();
        close_tab(page, url).await;
    }
    close_context(browser, context).await;
    record
}

/// Closes every other tab, pop-up or prerendered page of `context` as soon as Chromium makes one:
/// the check looks at one tab. (The probe keeps links and forms from opening windows, but a
/// page has other ways; whatever such a tab requests before it is closed still passes the proxy.)
pub(super) async fn close_other_tabs(
    page: Page,
    context: BrowserContextId,
    mut created: EventStream<EventTargetCreated>,
) {
    let own = page.target_id().clone();
    while let Some(event) = created.next().await {
        let info = &event.target_info;
        if info.browser_context_id.as_ref() != Some(&context) || info.target_id == own || info.r#type != "page" {
            continue;
        }
        debug!(url = %info.url, "the page opened another tab; closing it");
        if let Err(e) = page.execute(CloseTargetParams::new(info.target_id.clone())).await {
            debug!(error = %e, "could not close a tab the page opened");
        }
    }
}

/// A fresh browser context whose every request goes through the worker's proxy at `proxy`, with
/// downloads denied. Its cookies, storage, cache and service workers end with it
/// ([`close_context`]).
pub(super) async fn new_context(
    browser: &chromiumoxide::Browser,
    proxy: std::net::SocketAddr,
) -> Result<BrowserContextId, String> {
    // The context's own proxy setting repeats Chromium's command line: nothing of this page
    // reaches the network except through the worker's proxy.
    let context_params = CreateBrowserContextParams {
        proxy_server: Some(format!("http://{proxy}")),
        proxy_bypass_list: Some("<-loopback>".to_owned()),
        ..CreateBrowserContextParams::default()
    };
    let context = match tokio::time::timeout(STEP_TIMEOUT, browser.create_browser_context(context_params)).await {
        Ok(Ok(id)) => id,
        Ok(Err(e)) => return Err(format!("Chromium did not open a context: {e}")),
        Err(_) => return Err("Chromium did not answer within 10 s".to_owned()),
    };
    let mut deny = SetDownloadBehaviorParams::new(SetDownloadBehaviorBehavior::Deny);
    deny.browser_context_id = Some(context.clone());
    if let Err(e) = browser.execute(deny).await {
        close_context(browser, context).await;
        return Err(format!("Chromium did not deny downloads: {e}"));
    }
    Ok(context)
}

/// A blank tab in `context`, and (when it could be registered) the stream of targets Chromium
/// creates, for [`close_other_tabs`]: registered before the tab exists, so a window the page
/// opens at once is seen too.
pub(super) async fn new_tab(
    browser: &chromiumoxide::Browser,
    context: &BrowserContextId,
) -> Result<(Page, Option<EventStream<EventTargetCreated>>), String> {
    let created = browser.event_listener::<EventTargetCreated>().await.ok();
    let target = CreateTargetParams::builder()
        .url("about:blank")
        .browser_context_id(context.clone())
        .build()
        .map_err(|e| format!("tab: {e}"))?;
    match tokio::time::timeout(STEP_TIMEOUT, browser.new_page(target)).await {
        Ok(Ok(page)) => Ok((page, created)),
        Ok(Err(e)) => Err(format!("Chromium did not open a tab: {e}")),
        Err(_) => Err("Chromium did not open a tab within 10 s".to_owned()),
    }
}

/// Closes the tab, bounded.
pub(super) async fn close_tab(page: Page, url: &str) {
    if tokio::time::timeout(STEP_TIMEOUT, page.close()).await.is_err() {
        warn!(url, "Chromium did not close the tab");
    }
}

fn failed(mut record: BrowserPage, error: String) -> BrowserPage {
    record.error = Some(error);
    record
}

pub(super) async fn close_context(browser: &chromiumoxide::Browser, context: BrowserContextId) {
    if tokio::time::timeout(STEP_TIMEOUT, browser.dispose_browser_context(context)).await.is_err() {
        warn!("Chromium did not close a browser context");
    }
}

/// What the requests showed: tallies, other sites' hosts, refusals.
fn finish(record: &mut BrowserPage, net: &SharedNet) {
    let n = lock(net);
    record.resources = n.tallies();
    let site =
        url::Url::parse(&record.final_url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
    record.third_party_hosts = n.hosts(0).into_iter().filter(|h| !consent::same_site(h, &site)).collect();
    record.blocked = n.blocked.clone();
    record.robots_blocked = n.robots_blocked.clone();
}

/// Readies a blank tab for a page: request interception (every request through the address
/// guard and the site's robots.txt, `intercept.rs`), the probe before the page's scripts, no
/// prerendering, the desktop viewport.
pub(super) async fn prepare(
    page: &Page,
    (gate, robots): (&Gate, super::RobotsCheck),
    net: &SharedNet,
    tasks: &mut JoinSet<()>,
) -> Result<(), String> {
    let listeners = intercept::listen(page).await?;
    tasks.spawn(intercept::run(page.clone(), listeners, (gate.clone(), robots), Arc::clone(net)));
    let all = RequestPattern {
        url_pattern: Some("*".to_owned()),
        resource_type: None,
        request_stage: Some(RequestStage::Request),
    };
    page.execute(FetchEnable { patterns: Some(vec![all]), handle_auth_requests: None })
        .await
        .map_err(|e| format!("request interception: {e}"))?;
    page.execute(AddScriptToEvaluateOnNewDocumentParams::new(PROBE_JS)).await.map_err(|e| format!("probe: {e}"))?;
    // Speculation rules may ask for prerendered pages; the check loads one page, nothing ahead.
    if let Err(e) = page.execute(SetPrerenderingAllowedParams::new(false)).await {
        debug!(error = %e, "prerendering could not be switched off (the proxy still guards it)");
    }
    viewport(page, DESKTOP, false).await
}

/// Where the loaded page ended and its status, from the probe: an error when it did not end on
/// an http(s) address (an error page, `about:blank`).
pub(super) async fn landed(page: &Page) -> Result<(String, Option<u16>), String> {
    let v = vitals(page).await?;
    if !(v.url.starts_with("http://") || v.url.starts_with("https://")) {
        return Err(format!("the page did not load (ended at {})", short(&v.url)));
    }
    Ok((v.url, v.status))
}

async fn measure(
    page: &Page,
    (gate, robots): (&Gate, super::RobotsCheck),
    net: &SharedNet,
    tasks: &mut JoinSet<()>,
    record: &mut BrowserPage,
) -> Result<(), String> {
    prepare(page, (gate, robots), net, tasks).await?;
    load(page, &record.url).await?;
    let v = vitals(page).await?;
    record.final_url = v.url.clone();
    record.status = v.status;
    record.vitals = Vitals {
        lcp_ms: ms(v.lcp),
        cls_milli: v.cls.filter(|c| c.is_finite() && *c >= 0.0).map(|c| (c * 1000.0).round().min(1e9) as u32),
        inp_ms: None,
        tbt_ms: ms(v.tbt),
        fcp_ms: ms(v.fcp),
        ttfb_ms: ms(v.ttfb),
    };
    if !(record.final_url.starts_with("http://") || record.final_url.starts_with("https://")) {
        return Err(format!("the page did not load (ended at {})", short(&record.final_url)));
    }
    // The DOM as the page's scripts left it, before any viewport change, key or click of ours.
    match rendered::read(page, &record.final_url).await {
        Ok(r) => record.rendered = Some(r),
        Err(e) => warn!(url = %record.url, error = %e, "the rendered page could not be read"),
    }

    record.desktop_jpeg = screenshot(page).await?;
    viewport(page, PHONE, true).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    record.phone_jpeg = screenshot(page).await?;
    viewport(page, DESKTOP, false).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;

    match axe::run(page).await {
        Ok(found) => record.axe = found,
        Err(e) => warn!(url = %record.url, error = %e, "axe-core did not run"),
    }
    record.keyboard = keyboard::run(page).await?;
    // The Tab presses were interactions: Interaction to Next Paint, if the page measured one.
    if let Ok(after) = vitals(page).await {
        record.vitals.inp_ms = ms(after.inp);
    }
    let site =
        url::Url::parse(&record.final_url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
    record.consent = consent::run(page, &site, net).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_are_rounded_and_bounded() {
        assert_eq!(ms(Some(1234.6)), Some(1235));
        assert_eq!(ms(Some(-1.0)), None);
        assert_eq!(ms(Some(f64::NAN)), None);
        assert_eq!(ms(None), None);
        assert_eq!(ms(Some(1e20)), Some(u32::MAX));
    }
}
