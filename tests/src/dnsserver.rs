//! An authoritative DNS server on loopback for the DNS, e-mail and domain checks (SPEC §9):
//! hickory-server with in-memory zones the tests write record by record, on UDP and TCP at one
//! free port of 127.0.0.1. `shoal --dns-server 127.0.0.1:PORT` then resolves everything through
//! it: the audited hosts, their mail servers, and the records the checks read.
//!
//! Zones are authoritative (no recursion, no validation). A `test.` zone of its own makes names
//! under `.test` that no zone holds answer NXDOMAIN, as a registry's would; names outside every
//! zone are refused (a resolver reports that as a failed lookup).

use hickory_server::Server;
use hickory_server::proto::rr::rdata::{CAA, CNAME, MX, NS, NULL, SOA, TXT};
use hickory_server::proto::rr::{LowerName, Name, RData, Record, RecordType};
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneType};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// One zone: its origin and its records (name relative to nothing: write them in full).
#[derive(Debug, Clone)]
pub struct Zone {
    origin: String,
    records: Vec<(String, RData)>,
}

fn name(s: &str) -> Name {
    let fq = if s.ends_with('.') { s.to_owned() } else { format!("{s}.") };
    Name::from_ascii(&fq).unwrap_or_else(|e| panic!("test zone name {s:?}: {e}"))
}

impl Zone {
    /// A zone with its SOA (and nothing else yet).
    #[must_use]
    pub fn new(origin: &str) -> Zone {
        let soa =
            SOA::new(name(&format!("ns1.{origin}")), name(&format!("hostmaster.{origin}")), 1, 3600, 600, 86_400, 60);
        Zone { origin: origin.to_owned(), records: vec![(origin.to_owned(), RData::SOA(soa))] }
    }

    /// Adds a record.
    #[must_use]
    pub fn record(mut self, owner: &str, data: RData) -> Zone {
        self.records.push((owner.to_owned(), data));
        self
    }

    /// `owner A ip`.
    #[must_use]
    pub fn a(self, owner: &str, ip: Ipv4Addr) -> Zone {
        self.record(owner, RData::A(ip.into()))
    }

    /// `origin NS host` (and nothing for the host's address: add it with [`Zone::a`]).
    #[must_use]
    pub fn ns(self, host: &str) -> Zone {
        let o = self.origin.clone();
        self.record(&o, RData::NS(NS(name(host))))
    }

    /// `origin MX preference exchange` (`"."` for the null MX).
    #[must_use]
    pub fn mx(self, preference: u16, exchange: &str) -> Zone {
        let o = self.origin.clone();
        self.record(&o, RData::MX(MX::new(preference, name(exchange))))
    }

    /// `owner TXT text` (split into 255-byte strings as DNS requires).
    #[must_use]
    pub fn txt(self, owner: &str, text: &str) -> Zone {
        let parts: Vec<String> = text.as_bytes().chunks(255).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
        self.record(owner, RData::TXT(TXT::new(parts)))
    }

    /// `owner CNAME target`.
    #[must_use]
    pub fn cname(self, owner: &str, target: &str) -> Zone {
        self.record(owner, RData::CNAME(CNAME(name(target))))
    }

    /// `origin CAA critical tag value`, written as given (a malformed value too).
    #[must_use]
    pub fn caa(self, critical: bool, tag: &str, value: &str) -> Zone {
        let mut c = CAA::new_issue(critical, None, Vec::new());
        c.tag = tag.to_owned();
        c.value = value.as_bytes().to_vec();
        let o = self.origin.clone();
        self.record(&o, RData::CAA(c))
    }

    /// A DNSKEY record set at the apex (an Ed25519-sized key blob, flags 257, protocol 3,
    /// algorithm 15), as a signed zone publishes it. The zone is not signed by it: the check
    /// reads whether keys are published, it does not validate signatures.
    #[must_use]
    pub fn dnskey(self) -> Zone {
        let mut key = vec![0x01, 0x01, 3, 15];
        key.extend_from_slice(&[0x5a; 32]);
        let o = self.origin.clone();
        self.record(&o, RData::Unknown { code: RecordType::DNSKEY, rdata: NULL::with(key) })
    }
}

/// The running server.
pub struct DnsServer {
    addr: SocketAddr,
    server: Server<Catalog>,
}

impl std::fmt::Debug for DnsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl DnsServer {
    /// Serves `zones` on 127.0.0.1 (UDP and TCP, one free port).
    ///
    /// # Errors
    /// If binding fails or a zone is not valid.
    pub async fn start(zones: Vec<Zone>) -> io::Result<DnsServer> {
        let mut catalog = Catalog::new();
        for z in zones {
            let mut handler = InMemoryZoneHandler::<hickory_server::net::runtime::TokioRuntimeProvider>::empty(
                name(&z.origin),
                ZoneType::Primary,
                AxfrPolicy::Deny,
            );
            for (owner, data) in z.records {
                let ok = handler.upsert_mut(Record::from_rdata(name(&owner), 60, data), 1);
                if !ok {
                    return Err(io::Error::other(format!("record of {owner} refused in zone {}", z.origin)));
                }
            }
            catalog.upsert(LowerName::new(&name(&z.origin)), vec![Arc::new(handler)]);
        }
        // One port for UDP and TCP: bind UDP on a free port, then TCP on the same (retry a few
        // times if another process holds the TCP side).
        let mut bound = None;
        for _ in 0..20 {
            let udp = tokio::net::UdpSocket::bind((IpAddr::from(Ipv4Addr::LOCALHOST), 0)).await?;
            let addr = udp.local_addr()?;
            if let Ok(tcp) = tokio::net::TcpListener::bind(addr).await {
                bound = Some((udp, tcp, addr));
                break;
            }
        }
        let (udp, tcp, addr) = bound.ok_or_else(|| io::Error::other("no free port for UDP and TCP together"))?;
        let mut server = Server::new(catalog);
        server.register_socket(udp);
        server.register_listener(tcp, Duration::from_secs(5), 64 * 1024);
        Ok(DnsServer { addr, server })
    }

    /// The address to give `--dns-server`.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server and waits for its tasks.
    pub async fn shutdown(mut self) {
        let _ = self.server.shutdown_gracefully().await;
    }
}
