//! An authoritative DNS server on loopback for the DNS, e-mail and domain checks (SPEC §9):
//! hickory-server with in-memory zones the tests write record by record, on UDP and TCP at one
//! free port of 127.0.0.1. `shoal --dns-server 127.0.0.1:PORT` then resolves everything through
//! it: the audited hosts, their mail servers, and the records the checks read.
//!
//! Zones are authoritative (no recursion, no validation). A `test.` zone of its own makes names
//! under `.test` that no zone holds answer NXDOMAIN, as a registry's would; names outside every
//! zone are refused (a resolver reports that as a failed lookup). A zone can be made silent
//! ([`Zone::silent`]): questions about its names get no answer at all, as from a dead name server.
//! The server logs every question it receives ([`DnsServer::questions`]), so tests assert what
//! was asked the way a zone's operator would. [`DeadResolver`] is a `--dns-server` that answers
//! nothing at all.

use hickory_server::Server;
use hickory_server::net::runtime::Time;
use hickory_server::proto::op::{Header, HeaderCounts, MessageType, Metadata};
use hickory_server::proto::rr::rdata::{CAA, CNAME, MX, NS, NULL, SOA, TXT};
use hickory_server::proto::rr::{LowerName, Name, RData, Record, RecordType};
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneType};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Questions a server's log keeps at most (a test that asks more is told by a panic).
const MAX_LOGGED: usize = 100_000;

/// One zone: its origin and its records (name relative to nothing: write them in full).
#[derive(Debug, Clone)]
pub struct Zone {
    origin: String,
    records: Vec<(String, RData)>,
    silent: bool,
    /// The TTL of every record, and the SOA's minimum (how long a resolver keeps a "no such
    /// name"): 60 s unless [`Zone::uncached`].
    ttl: u32,
}

/// The TTL of test zones' records unless a zone says otherwise.
const DEFAULT_TTL: u32 = 60;

fn name(s: &str) -> Name {
    let fq = if s.ends_with('.') { s.to_owned() } else { format!("{s}.") };
    Name::from_ascii(&fq).unwrap_or_else(|e| panic!("test zone name {s:?}: {e}"))
}

impl Zone {
    /// A zone with its SOA (and nothing else yet).
    #[must_use]
    pub fn new(origin: &str) -> Zone {
        Zone { origin: origin.to_owned(), records: Vec::new(), silent: false, ttl: DEFAULT_TTL }
    }

    /// Every answer has a TTL of 0, and so does a "no such name" (the SOA's minimum): resolvers
    /// keep nothing, so the server's log counts every question Shoal meant to ask.
    #[must_use]
    pub fn uncached(mut self) -> Zone {
        self.ttl = 0;
        self
    }

    /// Questions about the zone's names get no answer at all (nothing is sent back), as from
    /// name servers that are down or drop queries.
    #[must_use]
    pub fn silent(mut self) -> Zone {
        self.silent = true;
        self
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

/// One question the server received: the name (lower case, without the final dot) and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The name asked about.
    pub name: String,
    /// The record type asked for.
    pub kind: RecordType,
}

type QuestionLog = Arc<Mutex<Vec<Question>>>;

/// The zones' catalog, with the log of questions and the silent zones.
struct Handler {
    catalog: Catalog,
    silent: Vec<LowerName>,
    log: QuestionLog,
}

#[async_trait::async_trait]
impl RequestHandler for Handler {
    async fn handle_request<R: ResponseHandler, T: Time>(&self, request: &Request, response: R) -> ResponseInfo {
        if let Ok(info) = request.request_info() {
            let name = info.query.name().to_string().trim_end_matches('.').to_owned();
            let mut log = self.log.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            assert!(log.len() < MAX_LOGGED, "the test DNS server was asked more than {MAX_LOGGED} questions");
            log.push(Question { name, kind: info.query.query_type() });
            drop(log);
            if self.silent.iter().any(|z| z.zone_of(info.query.name())) {
                // Nothing is sent: the asker waits for an answer that never comes.
                let metadata = Metadata::new(info.metadata.id, MessageType::Response, info.metadata.op_code);
                return ResponseInfo::from(Header { metadata, counts: HeaderCounts::default() });
            }
        }
        self.catalog.handle_request::<R, T>(request, response).await
    }
}

/// The running server.
pub struct DnsServer {
    addr: SocketAddr,
    server: Server<Handler>,
    log: QuestionLog,
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
        let mut silent = Vec::new();
        for z in zones {
            if z.silent {
                silent.push(LowerName::new(&name(&z.origin)));
            }
            let mut handler = InMemoryZoneHandler::<hickory_server::net::runtime::TokioRuntimeProvider>::empty(
                name(&z.origin),
                ZoneType::Primary,
                AxfrPolicy::Deny,
            );
            let soa = SOA::new(
                name(&format!("ns1.{}", z.origin)),
                name(&format!("hostmaster.{}", z.origin)),
                1,
                3600,
                600,
                86_400,
                z.ttl,
            );
            for (owner, data) in std::iter::once((z.origin.clone(), RData::SOA(soa))).chain(z.records) {
                let ok = handler.upsert_mut(Record::from_rdata(name(&owner), z.ttl, data), 1);
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
        let log = QuestionLog::default();
        let mut server = Server::new(Handler { catalog, silent, log: Arc::clone(&log) });
        server.register_socket(udp);
        server.register_listener(tcp, Duration::from_secs(5), 64 * 1024);
        Ok(DnsServer { addr, server, log })
    }

    /// Every question received so far, in order (retries and both transports included).
    #[must_use]
    pub fn questions(&self) -> Vec<Question> {
        self.log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
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

/// A `--dns-server` that answers nothing: a UDP socket and a TCP listener on one port of
/// 127.0.0.1 that note what arrives over UDP and never reply (TCP connections are accepted by the
/// kernel and never read). Dropping it closes both and stops its reader.
#[derive(Debug)]
pub struct DeadResolver {
    addr: SocketAddr,
    heard: Arc<Mutex<Heard>>,
    /// Reads what arrives over UDP; dropped (the task aborted) with the value.
    _reader: tokio::task::JoinSet<()>,
    _tcp: tokio::net::TcpListener,
}

/// What a [`DeadResolver`] received.
#[derive(Debug, Default)]
struct Heard {
    datagrams: usize,
    /// The names asked about, lower case, at most [`MAX_LOGGED`].
    names: std::collections::BTreeSet<String>,
}

/// The name a DNS query asks about (its first question), if the datagram holds one.
fn question_name(query: &[u8]) -> Option<String> {
    let mut at = 12;
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*query.get(at)?);
        if len == 0 {
            return Some(labels.join("."));
        }
        let label = query.get(at + 1..at + 1 + len)?;
        labels.push(String::from_utf8_lossy(label).to_ascii_lowercase());
        at += 1 + len;
    }
}

impl DeadResolver {
    /// Binds it.
    ///
    /// # Errors
    /// If no port is free for UDP and TCP together.
    pub async fn start() -> io::Result<DeadResolver> {
        for _ in 0..20 {
            let udp = tokio::net::UdpSocket::bind((IpAddr::from(Ipv4Addr::LOCALHOST), 0)).await?;
            let addr = udp.local_addr()?;
            let Ok(tcp) = tokio::net::TcpListener::bind(addr).await else { continue };
            let heard = Arc::new(Mutex::new(Heard::default()));
            let note = Arc::clone(&heard);
            let mut reader = tokio::task::JoinSet::new();
            reader.spawn(async move {
                let mut buf = vec![0u8; 4096];
                while let Ok((n, _)) = udp.recv_from(&mut buf).await {
                    let mut h = note.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    h.datagrams += 1;
                    if let Some(name) = question_name(&buf[..n])
                        && h.names.len() < MAX_LOGGED
                    {
                        h.names.insert(name);
                    }
                }
            });
            return Ok(DeadResolver { addr, heard, _reader: reader, _tcp: tcp });
        }
        Err(io::Error::other("no free port for UDP and TCP together"))
    }

    /// The address to give `--dns-server`.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// UDP datagrams received so far (each unanswered; a question is sent again and again).
    #[must_use]
    pub fn datagrams(&self) -> usize {
        self.heard.lock().unwrap_or_else(std::sync::PoisonError::into_inner).datagrams
    }

    /// The distinct names asked about so far.
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        self.heard.lock().unwrap_or_else(std::sync::PoisonError::into_inner).names.iter().cloned().collect()
    }
}
