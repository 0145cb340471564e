//! Mail servers on loopback for the mail checks (SPEC §9): each answers SMTP one way (STARTTLS
//! with a certificate, no STARTTLS, STARTTLS refused, a refusing greeting, stuck on TLS 1.0's
//! answer, or silence) and writes down every command it receives, so a test can prove what
//! Shoal sent: `EHLO`, `STARTTLS`, `QUIT`, and never `MAIL`, `RCPT` or `DATA`.
//!
//! `--smtp-port` is one port for every mail server, so a fleet listens on one port at several
//! loopback addresses (the MX hosts' A records point at them). Every connection is a task owned
//! by the server, bounded in time and in the lines it reads, and stopped by [`MailFleet::shutdown`].

use crate::testsite::TlsCert;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How one mail server behaves.
#[derive(Debug, Clone)]
pub enum Mail {
    /// 220, EHLO lists STARTTLS, the handshake presents this certificate.
    Starttls(TlsCert),
    /// 220, EHLO does not list STARTTLS.
    Plain,
    /// 220, EHLO lists STARTTLS, the command is answered 454.
    StarttlsRefused,
    /// Greets with 554 (no service).
    Refuses,
    /// Accepts the connection and never says anything.
    Silent,
    /// Offers STARTTLS, then answers the ClientHello with a TLS 1.0 ServerHello.
    Tls10,
}

/// One command a server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The address it listened on.
    pub server: IpAddr,
    /// Which connection to it (0, 1, …).
    pub connection: usize,
    /// The line, without CRLF.
    pub line: String,
}

/// Lines a connection may send before it is closed; bytes per line.
const MAX_LINES: usize = 50;
const MAX_LINE: u64 = 1024;
/// How long one connection may last.
const CONNECTION_TIME: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Log {
    lines: Mutex<Vec<Received>>,
    connections: Mutex<Vec<(IpAddr, SocketAddr)>>,
}

/// Mail servers at several loopback addresses, one port.
pub struct MailFleet {
    port: u16,
    log: Arc<Log>,
    cancel: CancellationToken,
    tasks: JoinSet<()>,
}

impl std::fmt::Debug for MailFleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailFleet").field("port", &self.port).finish_non_exhaustive()
    }
}

impl MailFleet {
    /// Starts one server per (loopback address, behaviour), all on one free port.
    ///
    /// # Errors
    /// A non-loopback address, or no port free on every address.
    pub async fn start(servers: Vec<(IpAddr, Mail)>) -> io::Result<MailFleet> {
        if let Some((ip, _)) = servers.iter().find(|(ip, _)| !ip.is_loopback()) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("mail servers bind loopback, not {ip}")));
        }
        let Some((first, _)) = servers.first() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no mail server"));
        };
        'port: for _ in 0..20 {
            let l0 = TcpListener::bind((*first, 0)).await?;
            let port = l0.local_addr()?.port();
            let mut listeners = vec![l0];
            for (ip, _) in &servers[1..] {
                match TcpListener::bind((*ip, port)).await {
                    Ok(l) => listeners.push(l),
                    Err(_) => continue 'port,
                }
            }
            let log = Arc::new(Log::default());
            let cancel = CancellationToken::new();
            let mut tasks = JoinSet::new();
            for (listener, (ip, mail)) in listeners.into_iter().zip(servers) {
                tasks.spawn(accept(listener, ip, mail, Arc::clone(&log), cancel.clone()));
            }
            return Ok(MailFleet { port, log, cancel, tasks });
        }
        Err(io::Error::other("no port free on every mail server address"))
    }

    /// The port to give `--smtp-port`.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every command received so far.
    #[must_use]
    pub fn received(&self) -> Vec<Received> {
        self.log.lines.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Connections accepted per server address.
    #[must_use]
    pub fn connections(&self, server: IpAddr) -> usize {
        self.log.connections.lock().unwrap_or_else(PoisonError::into_inner).iter().filter(|(s, _)| *s == server).count()
    }

    /// Stops every server and connection and waits for them.
    pub async fn shutdown(mut self) -> Vec<Received> {
        self.cancel.cancel();
        while self.tasks.join_next().await.is_some() {}
        self.received()
    }
}

async fn accept(listener: TcpListener, ip: IpAddr, mail: Mail, log: Arc<Log>, cancel: CancellationToken) {
    let mut conns = JoinSet::new();
    loop {
        let (tcp, peer) = tokio::select! {
            () = cancel.cancelled() => break,
            r = listener.accept() => match r {
                Ok(a) => a,
                Err(_) => continue,
            },
        };
        let n = {
            let mut c = log.connections.lock().unwrap_or_else(PoisonError::into_inner);
            c.push((ip, peer));
            c.iter().filter(|(s, _)| *s == ip).count() - 1
        };
        let (mail, log, cancel) = (mail.clone(), Arc::clone(&log), cancel.clone());
        conns.spawn(async move {
            let talk = serve(tcp, ip, n, mail, log);
            tokio::select! {
                () = cancel.cancelled() => {}
                _ = tokio::time::timeout(CONNECTION_TIME, talk) => {}
            }
        });
        while conns.try_join_next().is_some() {}
    }
    conns.shutdown().await;
}

/// What the plain-text part of a conversation ended with.
enum Next {
    Close,
    Tls,
}

async fn serve(tcp: tokio::net::TcpStream, ip: IpAddr, n: usize, mail: Mail, log: Arc<Log>) -> io::Result<()> {
    let mut stream = BufReader::new(tcp);
    match mail {
        Mail::Silent => {
            // Hold the connection open, saying nothing, until the client gives up.
            let mut sink = [0u8; 256];
            while stream.read(&mut sink).await? > 0 {}
            return Ok(());
        }
        Mail::Refuses => stream.get_mut().write_all(b"554 mx.test no service here\r\n").await?,
        _ => stream.get_mut().write_all(b"220 mx.test ESMTP test server\r\n").await?,
    }
    let offers = matches!(mail, Mail::Starttls(_) | Mail::StarttlsRefused | Mail::Tls10);
    let refuses_tls = matches!(mail, Mail::StarttlsRefused);
    if let Next::Close = dialogue(&mut stream, ip, n, offers, refuses_tls, &log).await? {
        return Ok(());
    }
    let mut tcp = stream.into_inner();
    match mail {
        Mail::Tls10 => {
            let mut hello = [0u8; 2048];
            let _ = tcp.read(&mut hello).await?;
            tcp.write_all(&crate::tls10::server_hello()).await?;
            Ok(())
        }
        Mail::Starttls(cert) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(cert.server_config()?);
            let tls = acceptor.accept(tcp).await?;
            let mut inner = BufReader::new(tls);
            dialogue(&mut inner, ip, n, false, false, &log).await?;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Reads commands and answers them, recording each, until QUIT (or STARTTLS accepted).
async fn dialogue<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut BufReader<S>,
    ip: IpAddr,
    n: usize,
    offer_starttls: bool,
    refuse_starttls: bool,
    log: &Log,
) -> io::Result<Next> {
    for _ in 0..MAX_LINES {
        let mut line = String::new();
        if (&mut *s).take(MAX_LINE).read_line(&mut line).await? == 0 {
            return Ok(Next::Close);
        }
        let line = line.trim_end_matches(['\r', '\n']).to_owned();
        log.lines.lock().unwrap_or_else(PoisonError::into_inner).push(Received {
            server: ip,
            connection: n,
            line: line.clone(),
        });
        let verb = line.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
        let answer: &[u8] = match verb.as_str() {
            "EHLO" if offer_starttls => b"250-mx.test greets you\r\n250-PIPELINING\r\n250-STARTTLS\r\n250 8BITMIME\r\n",
            "EHLO" => b"250-mx.test greets you\r\n250-PIPELINING\r\n250 8BITMIME\r\n",
            "STARTTLS" if refuse_starttls => b"454 4.7.0 TLS not available\r\n",
            "STARTTLS" if offer_starttls => {
                s.get_mut().write_all(b"220 2.0.0 Ready to start TLS\r\n").await?;
                return Ok(Next::Tls);
            }
            "QUIT" => {
                s.get_mut().write_all(b"221 2.0.0 Bye\r\n").await?;
                return Ok(Next::Close);
            }
            _ => b"502 5.5.1 Not implemented here\r\n",
        };
        s.get_mut().write_all(answer).await?;
    }
    Ok(Next::Close)
}
