//! Telling the operator that a scheduled run ended: always a log line, and, when configured
//! (`--notify-url`, `--notify-secret`), a webhook.
//!
//! The webhook is a `POST` of [`RunSummary`] as JSON (`docs/notify.md`), signed with
//! HMAC-SHA256 over the exact body bytes (`X-Shoal-Signature: sha256=<hex>`, ring's `hmac`). Each
//! delivery has a timeout per attempt and at most [`ATTEMPTS`] attempts with doubling back-off; it
//! runs on the scheduler's own task set, never in the aggregation path, and a delivery that fails
//! is a logged warning. Delivery is at least once: a coordinator that restarts before it recorded
//! a run's end notifies again, with the same `X-Shoal-Delivery` value, so receivers can drop the
//! repeat.

use serde::Serialize;
use shoal_shared::status::AuditStatus;
use shoal_shared::time::UnixMs;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long one webhook attempt may take, connection and answer included.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// Attempts per delivery at most (the first and three retries).
pub const ATTEMPTS: u32 = 4;
/// The wait before the first retry; it doubles before each next one (1 s, 2 s, 4 s).
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The shortest secret accepted.
pub const MIN_SECRET_LEN: usize = 16;
/// The signature header.
pub const SIGNATURE_HEADER: &str = "X-Shoal-Signature";
/// The event header (`run.finished`).
pub const EVENT_HEADER: &str = "X-Shoal-Event";
/// The delivery id header (`<schedule>-<audit>`, the same on every attempt and repeat).
pub const DELIVERY_HEADER: &str = "X-Shoal-Delivery";
/// The event a run's end sends.
pub const RUN_FINISHED: &str = "run.finished";

/// Where the webhook goes and the key it is signed with, validated.
#[derive(Clone)]
pub struct NotifySettings {
    url: url::Url,
    secret: String,
}

// By hand: the secret never appears in a log or a `{:?}`.
impl std::fmt::Debug for NotifySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotifySettings").field("url", &self.url.as_str()).field("secret", &"<redacted>").finish()
    }
}

/// Why the notification settings were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotifyError {
    /// Not an http(s) URL.
    #[error("--notify-url {url:?}: {reason}")]
    Url {
        /// As given.
        url: String,
        /// Why.
        reason: String,
    },
    /// The secret is missing or too short.
    #[error("--notify-secret: {0}")]
    Secret(String),
}

impl NotifySettings {
    /// Checks a webhook URL (http or https, no user name or password in it) and its secret (at
    /// least [`MIN_SECRET_LEN`] characters, no spaces or control characters).
    ///
    /// # Errors
    /// [`NotifyError`] saying what is wrong.
    pub fn new(url: &str, secret: &str) -> Result<NotifySettings, NotifyError> {
        let bad = |reason: &str| NotifyError::Url { url: url.to_owned(), reason: reason.to_owned() };
        let parsed = url::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(bad("give an http:// or https:// URL"));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(bad("no credentials in the URL: the signature authenticates the request"));
        }
        if secret.chars().count() < MIN_SECRET_LEN || !secret.chars().all(|c| c.is_ascii_graphic()) {
            return Err(NotifyError::Secret(format!(
                "give at least {MIN_SECRET_LEN} visible ASCII characters (e.g. from `openssl rand -hex 32`); \
                 a webhook needs a secret to be signed"
            )));
        }
        Ok(NotifySettings { url: parsed, secret: secret.to_owned() })
    }

    /// The webhook URL.
    #[must_use]
    pub fn url(&self) -> &url::Url {
        &self.url
    }
}

/// The signature header's value for `body`: `sha256=` and the hex HMAC-SHA256 of the body under
/// `secret`.
#[must_use]
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    let tag = ring::hmac::sign(&key, body);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256=");
    for b in tag.as_ref() {
        out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(b & 0xf)]));
    }
    out
}

/// A schedule, as named in a summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScheduleRef {
    /// Its id.
    pub id: u64,
    /// Its name.
    pub name: String,
}

/// Findings by severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Severities {
    /// Errors.
    pub error: u64,
    /// Warnings.
    pub warning: u64,
    /// Notices.
    pub notice: u64,
}

/// What changed since the schedule's previous run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Changes {
    /// The previous run's audit id; `None` for a schedule's first run (then all counts are 0).
    pub previous_audit: Option<u64>,
    /// Findings in this run only.
    pub new: u64,
    /// Findings in the previous run only.
    pub fixed: u64,
    /// Findings in both ("still open").
    pub still_open: u64,
    /// Pages (by URL) in this run only, over the sites of both runs.
    pub urls_added: u64,
    /// Pages in the previous run only.
    pub urls_removed: u64,
    /// Pages in both whose status, title, canonical, indexability, word count or an extracted value
    /// changed.
    pub urls_changed: u64,
}

/// The webhook's body (`docs/notify.md`), also what the log line says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunSummary {
    /// Always [`RUN_FINISHED`].
    pub event: &'static str,
    /// The schedule.
    pub schedule: ScheduleRef,
    /// The run's audit id.
    pub audit: u64,
    /// How it ended: `done`, `cancelled`, `interrupted` or `failed` (its spelling in the body).
    pub status: AuditStatus,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// When it ended (RFC 3339, UTC), if the database says.
    pub finished_at: Option<String>,
    /// Sites in the run.
    pub sites: u64,
    /// Pages fetched (kind `page`).
    pub pages: u64,
    /// Findings, all severities.
    pub findings: u64,
    /// Findings by severity.
    pub by_severity: Severities,
    /// Against the previous run.
    pub changes: Changes,
    /// The JSON report in the coordinator's API (needs the bearer token).
    pub report: String,
}

impl RunSummary {
    /// The path of an audit's JSON report in the API.
    #[must_use]
    pub fn report_path(audit: u64) -> String {
        format!("/v1/audits/{audit}/report?format=json")
    }

    /// Writes the log line every run's end gets (webhook or not).
    pub fn log(&self) {
        tracing::info!(
            schedule = self.schedule.id,
            schedule_name = %self.schedule.name,
            audit = self.audit,
            status = %self.status,
            pages = self.pages,
            findings = self.findings,
            new = self.changes.new,
            fixed = self.changes.fixed,
            still_open = self.changes.still_open,
            urls_added = self.changes.urls_added,
            urls_removed = self.changes.urls_removed,
            urls_changed = self.changes.urls_changed,
            previous_audit = self.changes.previous_audit,
            "scheduled run ended"
        );
    }
}

/// Formats an instant for a summary.
#[must_use]
pub fn time_text(t: UnixMs) -> String {
    t.to_rfc3339()
}

/// Sends summaries to the configured URL.
#[derive(Debug)]
pub struct Webhook {
    settings: NotifySettings,
    http: reqwest::Client,
}

/// How a delivery ended, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// A 2xx answer, with its status, after this many attempts.
    Delivered {
        /// The HTTP status.
        status: u16,
        /// Attempts made.
        attempts: u32,
    },
    /// Every attempt failed; the last reason.
    Failed {
        /// What went wrong last.
        reason: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The coordinator stopped first.
    Stopped,
}

impl Webhook {
    /// A client for `settings`: [`TIMEOUT`] per attempt, no redirects followed (a redirect is a
    /// failed delivery), no proxy from the environment.
    ///
    /// # Errors
    /// The HTTP client cannot be built (no TLS back end).
    pub fn new(settings: NotifySettings) -> Result<Webhook, reqwest::Error> {
        shoal_worker::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(format!("shoal/{} (webhook)", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Webhook { settings, http })
    }

    /// Where it posts.
    #[must_use]
    pub fn url(&self) -> &url::Url {
        self.settings.url()
    }

    /// Posts `summary` until a 2xx answer, at most [`ATTEMPTS`] times with back-off, or until
    /// `stop`. A 4xx answer other than 408 and 429 is not retried: the receiver refused it.
    pub async fn deliver(&self, summary: &RunSummary, stop: &CancellationToken) -> Delivery {
        let body = match serde_json::to_vec(summary) {
            Ok(b) => b,
            Err(e) => return Delivery::Failed { reason: e.to_string(), attempts: 0 },
        };
        let sig = signature(self.settings.secret.as_bytes(), &body);
        let delivery = format!("{}-{}", summary.schedule.id, summary.audit);
        let mut backoff = FIRST_BACKOFF;
        let mut reason = String::new();
        for attempt in 1..=ATTEMPTS {
            let send = self
                .http
                .post(self.settings.url.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(SIGNATURE_HEADER, &sig)
                .header(EVENT_HEADER, RUN_FINISHED)
                .header(DELIVERY_HEADER, &delivery)
                .body(body.clone())
                .send();
            let answer = tokio::select! {
                r = send => r,
                () = stop.cancelled() => return Delivery::Stopped,
            };
            match answer {
                Ok(r) if r.status().is_success() => {
                    return Delivery::Delivered { status: r.status().as_u16(), attempts: attempt };
                }
                Ok(r) => {
                    let status = r.status().as_u16();
                    reason = format!("answered {status}");
                    if (400..500).contains(&status) && status != 408 && status != 429 {
                        return Delivery::Failed { reason, attempts: attempt };
                    }
                }
                Err(e) => reason = e.to_string(),
            }
            if attempt < ATTEMPTS {
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = stop.cancelled() => return Delivery::Stopped,
                }
                backoff *= 2;
            }
        }
        Delivery::Failed { reason, attempts: ATTEMPTS }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_hmac_sha256_of_the_body() {
        // RFC 4231, test case 2.
        let s = signature(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(s, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }

    #[test]
    fn settings_are_checked() {
        let secret = "0123456789abcdef";
        assert!(NotifySettings::new("https://hooks.example/shoal", secret).is_ok());
        assert!(NotifySettings::new("http://127.0.0.1:9/x", secret).is_ok());
        for bad in ["ftp://x/", "not a url", "https://user:pw@hooks.example/", "file:///etc/passwd"] {
            assert!(matches!(NotifySettings::new(bad, secret), Err(NotifyError::Url { .. })), "{bad}");
        }
        for bad in ["", "short", "has a space in it!!", "0123456789abcde"] {
            assert!(matches!(NotifySettings::new("https://h.example/", bad), Err(NotifyError::Secret(_))), "{bad:?}");
        }
        let shown = format!("{:?}", NotifySettings::new("https://h.example/", secret).expect("valid"));
        assert!(!shown.contains(secret), "{shown}");
    }
}
