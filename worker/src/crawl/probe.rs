//! Probing for well-known files and answers (security.txt, llms.txt, a soft 404, the http:// to
//! https:// redirect, the WordPress endpoints): each probe is one small GET whose answer is judged
//! by `checks::probe_checks`, never crawled.

use super::{Crawler, Job, fill_response};
use crate::checks;
use crate::fetch::Method;
use shoal_shared::finding::Code;
use shoal_shared::frontier::{Frontier, FrontierError};
use shoal_shared::task::ProbeKind;
use shoal_shared::url::NormalizedUrl;

/// Probe bodies read at most: enough for security.txt, a directory listing or a JSON index.
const PROBE_BYTES: u64 = 256 * 1024;
/// The four WordPress probes (SPEC §2), made only when the start page looks like WordPress.
pub const WORDPRESS_PROBES: &[(ProbeKind, &str)] = &[
    (ProbeKind::WpJson, "/wp-json/"),
    (ProbeKind::WpXmlrpc, "/xmlrpc.php"),
    (ProbeKind::WpUploads, "/wp-content/uploads/"),
    (ProbeKind::WpP1, "/?p=1"),
];

impl<F: Frontier> Crawler<F> {
    pub(super) async fn probe_task(&self, job: &mut Job<'_>, kind: ProbeKind) -> Result<(), FrontierError> {
        let url = job.task().url.clone();
        let mut rec = job.record();
        let resp = match self.fetch(job, Method::Get, &url, Some(PROBE_BYTES)).await {
            Ok(r) => r,
            Err(e) if kind == ProbeKind::HttpsRedirect => {
                // Nothing answering on http:// (port 80 closed, TLS only) is no redirect either;
                // not a failure of the site's pages, so no retries.
                rec.error = Some(e.kind());
                job.finding(Code::HttpsRedirectMissing, url.as_str(), format!("http:// does not answer: {e}"));
                job.publish(rec);
                return Ok(());
            }
            Err(e) => {
                if self.failure(job, &mut rec, &e) {
                    job.publish(rec);
                }
                return Ok(());
            }
        };
        fill_response(&mut rec, &resp);
        if resp.truncated {
            rec.error = None; // probes read only the start of a body on purpose
        }
        if !self.transient_status(job, &resp) {
            return Ok(());
        }
        let follow = (300..400).contains(&resp.status) && matches!(kind, ProbeKind::SecurityTxt | ProbeKind::LlmsTxt);
        if follow {
            // security.txt and llms.txt may live behind a redirect (http to https, say).
            self.redirect(job, &mut rec, &resp).await?;
        } else {
            let body = String::from_utf8_lossy(&resp.body);
            for (code, detail) in checks::probe_checks(kind, &resp, &body, job.now) {
                job.finding(code, url.as_str(), detail);
            }
            if let Some(to) = resp.header("location").and_then(|l| NormalizedUrl::join(url.as_url(), l).ok()) {
                rec.redirect_to = Some(to.to_string());
            }
        }
        job.publish(rec);
        Ok(())
    }
}
