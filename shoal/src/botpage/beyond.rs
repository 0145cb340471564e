//! What the bot page says about SPEC §9's checks: which DNS questions are asked and of which
//! resolver, which mail servers are talked to and what is said to them, and where the registry is
//! asked. Taken from the crawl's settings and the code that asks (the DKIM selectors, the number
//! of mail servers, the MTA-STS path, the bootstrap URL), never restated by hand.

use crate::cli::CrawlConfig;
use shoal_shared::domain::{DKIM_SELECTORS, MTA_STS_PATH, rdap};
use shoal_worker::crawl::MAIL_SERVERS_CHECKED;

/// The page's section on the DNS, e-mail and domain checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeyondHttp {
    /// The checks run at all (`--no-dns-checks`, `--no-dns`).
    pub enabled: bool,
    /// Where DNS questions go: the system's resolver, or the configured servers.
    pub resolver: String,
    /// SPF records read at most while following `include:`s.
    pub spf_records: usize,
    /// Name servers whose addresses are looked up at most.
    pub name_servers: usize,
    /// MX hosts whose addresses are looked up at most (the most preferred).
    pub mx_hosts: usize,
    /// How long one domain's DNS questions may take in all, in seconds.
    pub check_time_s: u64,
    /// The DKIM selectors asked about.
    pub dkim_selectors: String,
    /// The MTA-STS policy path on `mta-sts.<domain>`.
    pub mta_sts_path: &'static str,
    /// Mail servers are talked to.
    pub smtp: bool,
    /// How many mail servers per domain.
    pub mail_servers: usize,
    /// The SMTP port.
    pub smtp_port: u16,
    /// The EHLO name.
    pub helo_name: String,
    /// Where the registry's RDAP service is found.
    pub rdap: String,
}

impl BeyondHttp {
    /// From the crawl's own settings.
    #[must_use]
    pub fn from_config(config: &CrawlConfig) -> BeyondHttp {
        let servers = &config.worker.fetch.dns_servers;
        let resolver = if servers.is_empty() {
            "the resolver configured on the machine running the check".to_owned()
        } else {
            servers.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        };
        let rdap = match &config.worker.crawl.rdap_url {
            Some(base) => format!("the RDAP service at {base}"),
            None => {
                format!("the registry's RDAP service, as the IANA bootstrap file {} names it", rdap::IANA_DNS_BOOTSTRAP)
            }
        };
        BeyondHttp {
            enabled: config.engine.defaults.limits.dns_checks,
            resolver,
            spf_records: shoal_worker::dns::MAX_SPF_RECORDS,
            name_servers: shoal_worker::dns::NS_HOSTS_LOOKED_UP,
            mx_hosts: shoal_worker::dns::MX_HOSTS_LOOKED_UP,
            check_time_s: shoal_shared::domain::DNS_CHECK_TIME.as_secs(),
            dkim_selectors: DKIM_SELECTORS.join(", "),
            mta_sts_path: MTA_STS_PATH,
            smtp: config.engine.defaults.limits.smtp,
            mail_servers: MAIL_SERVERS_CHECKED,
            smtp_port: config.worker.crawl.smtp_port,
            helo_name: config.worker.crawl.helo_name.clone(),
            rdap,
        }
    }
}
