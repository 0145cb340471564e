//! `shoal submit` and `shoal status` (and the `Client` `shoal schedule` uses too): small clients
//! of the coordinator's HTTP API.

use crate::cli::{ClientArgs, StatusArgs, SubmitArgs};
use crate::{Exit, Failure};
use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use shoal_shared::status::AuditStatus;
use shoal_shared::wire::{AuditView, SitePage, SubmitRequest};
use std::io::{IsTerminal, Write};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often `--wait` asks for progress.
const POLL: Duration = Duration::from_secs(1);
/// How long `--wait` keeps asking while the coordinator does not answer.
const WAIT_OUTAGE: Duration = Duration::from_secs(120);

/// What the coordinator answered when it refused a request.
#[derive(Debug, thiserror::Error)]
#[error("coordinator answered {status}: {message}")]
pub struct Refused {
    /// The HTTP status.
    pub status: reqwest::StatusCode,
    /// Its `error` text.
    pub message: String,
}

/// A refusal for bad input (400, 404: a wrong URL, option or id) or of an audit the fleet cannot
/// run (409: it needs a browser worker and none is live) is the user's to fix (3), as the same
/// refusals are in-process ([`crate::Failure`]'s `From<EngineError>`); anything else is Shoal's or
/// the network's (1).
impl From<Refused> for Failure {
    fn from(e: Refused) -> Failure {
        if matches!(e.status.as_u16(), 400 | 404 | 409 | 422) { Failure::input(e) } else { Failure::internal(e) }
    }
}

/// Why an API call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The coordinator answered with an error status.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// No answer, or an unreadable one.
    #[error(transparent)]
    Transport(#[from] anyhow::Error),
}

impl From<CallError> for Failure {
    fn from(e: CallError) -> Failure {
        match e {
            CallError::Refused(r) => r.into(),
            CallError::Transport(e) => Failure::internal(e),
        }
    }
}

/// An HTTP client of one coordinator, with its bearer token.
pub(crate) struct Client {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
    token: String,
}

impl Client {
    pub(crate) fn new(args: &ClientArgs) -> Result<Client, Failure> {
        // A token the coordinator could never have been started with: say so before sending it.
        crate::cli::check_token(&args.token)?;
        shoal_worker::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .no_proxy()
            .build()
            .context("building the HTTP client")?;
        Ok(Client { http, base: args.coordinator.trim_end_matches('/').to_owned(), token: args.token.clone() })
    }

    pub(crate) async fn call(&self, req: reqwest::RequestBuilder) -> Result<serde_json::Value, CallError> {
        let resp = req
            .bearer_auth(&self.token)
            .send()
            .await
            .with_context(|| format!("cannot reach the coordinator at {}", self.base))?;
        let status = resp.status();
        let body = read_capped(resp, MAX_ANSWER).await.context("reading the coordinator's answer")?;
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
        if !status.is_success() {
            let message = value.get("error").and_then(|e| e.as_str()).unwrap_or("no details").to_owned();
            return Err(Refused { status, message }.into());
        }
        Ok(value)
    }

    async fn status(&self, id: u64, page: SitePage) -> anyhow::Result<AuditView> {
        let mut url = format!("{}/v1/audits/{id}?limit={}", self.base, page.limit());
        if let Some(after) = page.after {
            url.push_str(&format!("&after={after}"));
        }
        let v = self.call(self.http.get(url)).await?;
        serde_json::from_value(v).context("unexpected answer from the coordinator")
    }
}

/// `shoal submit`: prints the audit id; with `--wait`, follows progress until the audit ends.
pub async fn submit(args: &SubmitArgs, shutdown: CancellationToken) -> Result<Exit, Failure> {
    let urls: Vec<String> =
        crate::cli::start_urls(&args.urls, args.file.as_ref())?.into_iter().map(|u| u.to_string()).collect();
    let client = Client::new(&args.client)?;
    let req = SubmitRequest { urls, options: args.options.to_options() };
    let v = client.call(client.http.post(format!("{}/v1/audits", client.base)).json_body(&req)?).await?;
    let id = v.get("id").and_then(serde_json::Value::as_u64).context("the coordinator gave no audit id")?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{id}").context("writing to standard output")?;
    }
    if !args.wait {
        return Ok(Exit::Ok);
    }
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
        b.set_style(
            ProgressStyle::with_template("{spinner} audit {prefix}: {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        b.set_prefix(id.to_string());
        b
    });
    let mut failing_since: Option<std::time::Instant> = None;
    loop {
        // The coordinator or Redis may restart while we wait; the audit goes on, so keep asking
        // for a while before giving up.
        let s = match client.status(id, SitePage::default()).await {
            Ok(s) => {
                failing_since = None;
                s
            }
            Err(e) => {
                let since = *failing_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() > WAIT_OUTAGE {
                    return Err(e
                        .context(format!("no answer about audit {id} for {} s", WAIT_OUTAGE.as_secs()))
                        .into());
                }
                tracing::warn!(audit = id, error = %format!("{e:#}"), "status request failed; asking again");
                tokio::select! {
                    () = tokio::time::sleep(POLL) => {}
                    () = shutdown.cancelled() => return Ok(Exit::Interrupted),
                }
                continue;
            }
        };
        // Queued work is known per listed site: a total only when the page holds every site.
        let queued = match s.sites_next_after {
            None => format!(", {} queued", s.sites.iter().map(|x| x.queued + x.leased).sum::<u64>()),
            Some(_) => String::new(),
        };
        let line = format!(
            "{}: {}/{} sites done, {} pages{queued}, {} findings",
            s.status, s.sites_done, s.sites_total, s.pages, s.findings
        );
        match &bar {
            Some(b) => b.set_message(line.clone()),
            None => tracing::info!(audit = id, "{line}"),
        }
        if s.status != AuditStatus::Running {
            if let Some(b) = bar {
                b.finish_with_message(line);
            }
            if let Some(reason) = &s.reason {
                tracing::error!(audit = id, reason, "the audit failed");
            }
            return Ok(if s.status == AuditStatus::Done { Exit::Ok } else { Exit::Internal });
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            () = shutdown.cancelled() => {
                tracing::warn!(audit = id, "stopped waiting; the audit goes on at the coordinator");
                return Ok(Exit::Interrupted);
            }
        }
    }
}

/// `shoal status`: one audit with its sites, or every audit.
pub async fn status(args: &StatusArgs) -> Result<Exit, Failure> {
    let client = Client::new(&args.client)?;
    let mut out = std::io::stdout().lock();
    match args.audit {
        Some(id) => {
            let s = client.status(id, SitePage { after: args.after, limit: args.limit }).await?;
            if args.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&s)?)?;
            } else {
                writeln!(
                    out,
                    "audit {}: {} ({}/{} sites done, {} pages, {} findings)",
                    s.id, s.status, s.sites_done, s.sites_total, s.pages, s.findings
                )?;
                if let Some(reason) = &s.reason {
                    writeln!(out, "  why: {reason}")?;
                }
                for site in &s.sites {
                    writeln!(
                        out,
                        "  {:>6} {:<8} {:>6} pages {:>6} queued {:>5} findings  {}",
                        site.id,
                        site.status,
                        site.pages,
                        site.queued + site.leased,
                        site.findings,
                        site.start_url
                    )?;
                }
                if let Some(after) = s.sites_next_after {
                    writeln!(out, "  ... more sites: shoal status {} --after {after}", s.id)?;
                }
            }
        }
        None => {
            let v = client.call(client.http.get(format!("{}/v1/audits", client.base))).await?;
            let list: Vec<AuditView> = serde_json::from_value(v).context("unexpected answer from the coordinator")?;
            if args.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
            } else {
                for a in list {
                    writeln!(
                        out,
                        "audit {:>5} {:<10} {:>4}/{:<4} sites {:>7} pages {:>6} findings",
                        a.id, a.status, a.sites_done, a.sites_total, a.pages, a.findings
                    )?;
                }
            }
        }
    }
    Ok(Exit::Ok)
}

/// The largest answer read from the coordinator (a status of 100,000 sites is about 20 MB).
const MAX_ANSWER: usize = 64 * 1024 * 1024;

/// Reads a response body of at most `cap` bytes; a longer one is an error, not a memory spike.
async fn read_capped(mut resp: reqwest::Response, cap: usize) -> anyhow::Result<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if body.len() + chunk.len() > cap {
            bail!("the answer is larger than {} MiB", cap / (1024 * 1024));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// JSON bodies without reqwest's `json` feature.
pub(crate) trait JsonBody {
    fn json_body<T: serde::Serialize>(self, body: &T) -> anyhow::Result<reqwest::RequestBuilder>;
}

impl JsonBody for reqwest::RequestBuilder {
    fn json_body<T: serde::Serialize>(self, body: &T) -> anyhow::Result<reqwest::RequestBuilder> {
        Ok(self
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(body).context("encoding the request")?))
    }
}
