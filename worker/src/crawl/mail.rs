//! A conversation with one mail server of an audited domain (SPEC §9): once per audit per server,
//! however many audited domains use it. The first site's lane to get there talks (under the mail
//! server's pace and per-IP cap, at the address the frontier counts it against); the others wait
//! a moment and read the outcome from the audit's result cache, as external link checks do. Each
//! site gets its own findings from the one conversation.

use super::domain::AUDIT_RESULT_TTL;
use super::{Crawler, Job};
use crate::smtp::{self, Conversation, Problem, SmtpSettings, Starttls};
use shoal_shared::finding::Code;
use shoal_shared::frontier::{Frontier, FrontierError, audit_cache_key};
use std::net::SocketAddr;

impl<F: Frontier> Crawler<F> {
    pub(super) async fn smtp_task(&self, job: &mut Job<'_>) -> Result<(), FrontierError> {
        let about = format!("smtp://{}", job.lease.host);
        let key = audit_cache_key(job.task().audit, &format!("smtp:{}", job.lease.host));
        let cached =
            self.frontier.cache_get(&key, job.now).await?.and_then(|b| rmp_serde::from_slice::<Conversation>(&b).ok());
        let conversation = match cached {
            Some(c) => c,
            None => {
                if !self.first_to_ask(job, &key).await {
                    return Ok(());
                }
                let c = self.converse(job).await;
                if let Ok(blob) = rmp_serde::to_vec_named(&c)
                    && let Err(e) = self.frontier.cache_put(&key, blob, job.now, AUDIT_RESULT_TTL).await
                {
                    tracing::warn!(error = %e, "could not share a mail server's answer");
                }
                c
            }
        };
        for (code, detail) in findings(&conversation) {
            job.finding(code, &about, detail);
        }
        Ok(())
    }

    async fn converse(&self, job: &Job<'_>) -> Conversation {
        let url = job.task().url.clone();
        let host = job.lease.host.host_name().to_owned();
        let port = url.as_url().port().unwrap_or(smtp::DEFAULT_SMTP_PORT);
        let ip = match job.lease.ip {
            Some(ip) => ip,
            // The lookup of this lease failed (the frontier knows no address): try once more,
            // through the guard, and say why if it still fails.
            None => match self.fetcher.resolve(url.as_url()).await {
                Ok(ip) => ip,
                Err(e) => return Conversation::Unreachable { reason: e.to_string() },
            },
        };
        let settings =
            SmtpSettings { helo_name: self.settings.helo_name.clone(), step_timeout: self.fetcher.settings().timeout };
        tracing::debug!(host = %host, ip = %ip, port, "talking to a mail server");
        smtp::converse(&host, SocketAddr::new(ip, port), &settings, &self.settings.tls_roots, job.now).await
    }
}

/// The findings of one conversation (the same for every site whose domain uses the server).
#[must_use]
pub fn findings(c: &Conversation) -> Vec<(Code, String)> {
    match c {
        Conversation::Unreachable { reason } => vec![(Code::SmtpUnreachable, reason.clone())],
        Conversation::ProtocolError { step, reason } => vec![(Code::SmtpProtocolError, format!("{step}: {reason}"))],
        Conversation::Talked { starttls, .. } => match starttls {
            Starttls::NotOffered => vec![(Code::SmtpStarttlsMissing, "EHLO does not list STARTTLS".into())],
            Starttls::Refused { reply } => vec![(Code::SmtpStarttlsFailed, format!("STARTTLS refused: {reply}"))],
            Starttls::Failed { reason, old_version: true } => vec![(Code::SmtpTlsOldVersion, reason.clone())],
            Starttls::Failed { reason, .. } => vec![(Code::SmtpStarttlsFailed, reason.clone())],
            Starttls::Done { problems, .. } => problems
                .iter()
                .map(|p| match p {
                    Problem::Expired => (Code::SmtpCertificateExpired, "the certificate has expired".into()),
                    Problem::SelfSigned => (Code::SmtpCertificateUntrusted, "self-signed".into()),
                    Problem::Untrusted { why } => (Code::SmtpCertificateUntrusted, why.clone()),
                    Problem::WrongName { names } => {
                        (Code::SmtpCertificateHostname, format!("certificate names: {}", names.join(", ")))
                    }
                    Problem::Expiring { days } => (Code::SmtpCertificateExpiring, format!("{days} days left")),
                })
                .collect(),
        },
    }
}
