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
        // A probe followed through redirects keeps only its first record (with its redirect):
        // where it leads may be a page of the site (often the home page), whose own record a
        // probe's must not replace. The verdict is a finding either way.
        let hop = !job.task().chain.is_empty();
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
                if self.failure(job, &mut rec, &e) && !hop {
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
        let follow = (300..400).contains(&resp.status)
            && matches!(kind, ProbeKind::SecurityTxt | ProbeKind::LlmsTxt | ProbeKind::Soft404);
        if follow {
            // security.txt and llms.txt may live behind a redirect (http to https, say); a path
            // that cannot exist is judged by where its redirects end: 404 or 410 is right, a page
            // answering 200 (the home page, often) is a soft 404.
            let queued = job.out.discovered.len();
            self.redirect(job, &mut rec, &resp).await?;
            if kind == ProbeKind::Soft404 && job.out.discovered.len() == queued {
                // Not followed (another site, a loop, robots.txt, the hop limit): still no 404.
                let to = rec.redirect_to.clone().unwrap_or_default();
                let first = job.task().chain.first().unwrap_or(&url).clone();
                job.finding(Code::Soft404, first.as_str(), format!("redirected to {to} instead of answering 404"));
            }
        } else if kind == ProbeKind::Soft404 && hop {
            soft_404_after_redirects(job, &url, resp.status);
        } else {
            let body = String::from_utf8_lossy(&resp.body);
            for (code, detail) in checks::probe_checks(kind, &resp, &body, job.now) {
                job.finding(code, url.as_str(), detail);
            }
            if let Some(to) = resp.header("location").and_then(|l| NormalizedUrl::join(url.as_url(), l).ok()) {
                rec.redirect_to = Some(to.to_string());
            }
        }
        if !hop {
            job.publish(rec);
        }
        Ok(())
    }
}

/// The end of a soft-404 probe's redirects: a success there is a soft 404 of the probe's URL; an
/// error (404, 410, or any other) is not.
fn soft_404_after_redirects(job: &mut Job<'_>, end: &NormalizedUrl, status: u16) {
    if !(200..300).contains(&status) {
        return;
    }
    let chain = &job.task().chain;
    let (first, hops) = (chain.first().unwrap_or(end).clone(), chain.len());
    let s = if hops == 1 { "" } else { "s" };
    job.finding(
        Code::Soft404,
        first.as_str(),
        format!("redirected ({hops} hop{s}) to {end}, which answered {status}, instead of answering 404"),
    );
}
