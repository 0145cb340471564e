//! The flags of SPEC §9's checks (DNS, e-mail, domain registration): part of the crawl settings
//! ([`super::CrawlArgs`] flattens them, so they are config keys and `SHOAL_*` variables like the
//! others), validated once into what the worker and the seeding need.

use super::ConfigError;
use clap::Args;
use shoal_shared::url::NormalizedUrl;
use std::net::SocketAddr;

/// `--dns-server`, `--no-dns-checks`, `--no-smtp`, `--smtp-port`, `--helo-name`, `--rdap-url`.
#[derive(Debug, Args, Clone)]
pub struct DomainArgs {
    /// Ask these DNS servers (IP:PORT, repeatable; comma-separated in the environment variable)
    /// instead of the system's: every name Shoal resolves goes there (hosts to fetch, mail
    /// servers, the DNS checks), except names given with --resolve.
    #[arg(long = "dns-server", value_name = "IP:PORT", env = "SHOAL_DNS_SERVER", value_delimiter = ',')]
    pub dns_server: Vec<String>,
    /// Do not run the DNS, e-mail and domain checks of audited sites (NS, MX, SPF, DMARC, DKIM,
    /// CAA, DNSSEC, MTA-STS, TLS-RPT, mail servers, RDAP expiry).
    #[arg(long, env = "SHOAL_NO_DNS_CHECKS")]
    pub no_dns_checks: bool,
    /// Do not talk to audited domains' mail servers (the DNS checks still run).
    #[arg(long, env = "SHOAL_NO_SMTP")]
    pub no_smtp: bool,
    /// The port mail servers are talked to on (25; others for tests and intranets).
    #[arg(long, env = "SHOAL_SMTP_PORT", default_value_t = shoal_worker::smtp::DEFAULT_SMTP_PORT)]
    pub smtp_port: u16,
    /// The name sent with EHLO to mail servers; set one that resolves to your workers' addresses.
    #[arg(long, env = "SHOAL_HELO_NAME", default_value = shoal_worker::smtp::DEFAULT_HELO_NAME)]
    pub helo_name: String,
    /// The base URL of one RDAP service asked for every domain's registration, instead of the
    /// registry the IANA bootstrap file names (tests, intranets).
    #[arg(long, env = "SHOAL_RDAP_URL", value_name = "URL")]
    pub rdap_url: Option<String>,
}

/// [`DomainArgs`] validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainSettings {
    /// `--dns-server`s.
    pub dns_servers: Vec<SocketAddr>,
    /// `--smtp-port`.
    pub smtp_port: u16,
    /// `--helo-name`, trimmed.
    pub helo_name: String,
    /// `--rdap-url`, normalised.
    pub rdap_url: Option<String>,
}

impl DomainArgs {
    /// Checks the values: servers as `IP:PORT`, a host name or address literal for EHLO, a port,
    /// an http(s) RDAP base URL.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the flag and what is wrong.
    pub fn validate(&self) -> Result<DomainSettings, ConfigError> {
        let mut dns_servers = Vec::new();
        for d in &self.dns_server {
            let addr: SocketAddr = d
                .trim()
                .parse()
                .map_err(|e| ConfigError::Invalid(format!("--dns-server {d:?}: expected IP:PORT ({e})")))?;
            dns_servers.push(addr);
        }
        let helo = self.helo_name.trim();
        let helo_ok = !helo.is_empty()
            && helo.len() <= 253
            && helo.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'[' | b']' | b':'));
        if !helo_ok {
            return Err(ConfigError::Invalid(format!(
                "--helo-name {:?}: a host name (letters, digits, '-', '.') or an address literal like [192.0.2.1]",
                self.helo_name
            )));
        }
        if self.smtp_port == 0 {
            return Err(ConfigError::Invalid("--smtp-port must be 1-65535".into()));
        }
        let rdap_url = match &self.rdap_url {
            None => None,
            Some(u) => Some(
                NormalizedUrl::parse(u)
                    .map_err(|e| ConfigError::Invalid(format!("--rdap-url {u:?}: {e}")))?
                    .to_string(),
            ),
        };
        Ok(DomainSettings { dns_servers, smtp_port: self.smtp_port, helo_name: helo.to_owned(), rdap_url })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dns: &[&str], helo: &str, port: u16, rdap: Option<&str>) -> DomainArgs {
        DomainArgs {
            dns_server: dns.iter().map(|s| (*s).to_owned()).collect(),
            no_dns_checks: false,
            no_smtp: false,
            smtp_port: port,
            helo_name: helo.to_owned(),
            rdap_url: rdap.map(str::to_owned),
        }
    }

    #[test]
    fn values_are_checked_with_the_flag_named() {
        let ok = args(&["127.0.0.1:5353", "[::1]:53"], " audit.example.com ", 25, Some("https://rdap.example/v1"))
            .validate()
            .expect("valid");
        assert_eq!(ok.dns_servers.len(), 2);
        assert_eq!(ok.helo_name, "audit.example.com");
        assert_eq!(ok.rdap_url.as_deref(), Some("https://rdap.example/v1"));
        let bad = [
            (args(&["127.0.0.1"], "a.test", 25, None), "--dns-server"),
            (args(&[], "two words", 25, None), "--helo-name"),
            (args(&[], "", 25, None), "--helo-name"),
            (args(&[], "a.test", 0, None), "--smtp-port"),
            (args(&[], "a.test", 25, Some("ftp://rdap.example/")), "--rdap-url"),
        ];
        for (a, flag) in bad {
            let e = a.validate().expect_err("refused").to_string();
            assert!(e.contains(flag), "{e}");
        }
    }
}
