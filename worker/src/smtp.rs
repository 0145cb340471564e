//! One short conversation with a mail server (SPEC §9): connect, read the banner, `EHLO`,
//! `STARTTLS` if offered with the same TLS handshake and certificate verdicts as the HTTPS check,
//! then `QUIT`. Nothing else can be sent: [`Command`] has no `MAIL`, `RCPT` or `DATA`, so no
//! message is ever started, let alone sent.
//!
//! Every step is bounded in time (the step timeout) and every reply in size ([`MAX_REPLY_BYTES`],
//! [`MAX_REPLY_LINES`]); a server that never answers, answers garbage or floods is an outcome
//! ([`Conversation`]), never an error of Shoal's. The address connected to is the one the frontier
//! paces the mail server under, which the caller has passed through the address guard. (So the
//! steps fail with a `String`: it is the outcome's text for the site owner, nothing branches on it.)

use crate::tls::{self, Roots};
use serde::{Deserialize, Serialize};
use shoal_shared::time::UnixMs;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// The SMTP port (RFC 5321); `--smtp-port` changes it for tests and intranets.
pub const DEFAULT_SMTP_PORT: u16 = 25;
/// The EHLO name when the operator gives none (`--helo-name`). Operators should set a name that
/// resolves to their workers' addresses; `.invalid` never will, and says so honestly.
pub const DEFAULT_HELO_NAME: &str = "shoalbot.invalid";
/// Bytes one reply may take (RFC 5321 allows 512 per line; EHLO lists a few dozen lines).
pub const MAX_REPLY_BYTES: usize = 16 * 1024;
/// Lines one reply may have.
pub const MAX_REPLY_LINES: usize = 64;

/// The only commands Shoal sends to a mail server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `EHLO <name>`.
    Ehlo(String),
    /// `STARTTLS`.
    StartTls,
    /// `QUIT`.
    Quit,
}

impl Command {
    fn line(&self) -> String {
        match self {
            Command::Ehlo(name) => format!("EHLO {name}\r\n"),
            Command::StartTls => "STARTTLS\r\n".to_owned(),
            Command::Quit => "QUIT\r\n".to_owned(),
        }
    }
}

/// A reply: its code and its text lines (without the code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The three-digit code.
    pub code: u16,
    /// The text of each line.
    pub lines: Vec<String>,
}

impl Reply {
    fn summary(&self) -> String {
        let first = self.lines.first().map(String::as_str).unwrap_or("");
        format!("{} {}", self.code, first.chars().take(200).collect::<String>())
    }
}

/// Parses one complete reply from the start of `buf` (RFC 5321 §4.2: `ddd-text` continuation
/// lines, then `ddd text` or `ddd`), returning it and the bytes it took; `Ok(None)` when more
/// bytes are needed.
///
/// # Errors
/// What makes it no SMTP reply: a malformed line, codes that differ between lines, too many lines.
pub fn parse_reply(buf: &[u8]) -> Result<Option<(Reply, usize)>, String> {
    let mut lines = Vec::new();
    let mut code = None;
    let mut at = 0;
    while let Some(end) = buf[at..].iter().position(|b| *b == b'\n') {
        let raw = &buf[at..at + end];
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        at += end + 1;
        let text = String::from_utf8_lossy(raw);
        let b = raw;
        if b.len() < 3 || !b[..3].iter().all(u8::is_ascii_digit) || !matches!(b.get(3), None | Some(b' ' | b'-')) {
            return Err(format!("not an SMTP reply line: {:?}", text.chars().take(80).collect::<String>()));
        }
        let c: u16 = text[..3].parse().map_err(|_| "a reply code out of range".to_owned())?;
        if !(200..=599).contains(&c) {
            return Err(format!("reply code {c} out of range"));
        }
        if code.is_some_and(|k| k != c) {
            return Err("a multi-line reply whose lines have different codes".into());
        }
        code = Some(c);
        lines.push(text.get(4..).unwrap_or("").to_owned());
        if lines.len() > MAX_REPLY_LINES {
            return Err(format!("a reply of more than {MAX_REPLY_LINES} lines"));
        }
        if b.get(3) != Some(&b'-') {
            return Ok(Some((Reply { code: c, lines }, at)));
        }
    }
    Ok(None)
}

/// What the TLS part of the conversation showed, kept as plain data so one conversation's result
/// can be shared (through the frontier's cache) with every site whose domain uses the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Starttls {
    /// EHLO did not list STARTTLS.
    NotOffered,
    /// STARTTLS was offered but the command was refused.
    Refused {
        /// The reply.
        reply: String,
    },
    /// The handshake failed (or the server speaks no TLS 1.2/1.3: `old_version`).
    Failed {
        /// Why.
        reason: String,
        /// Only TLS older than 1.2 is offered.
        old_version: bool,
    },
    /// The handshake finished.
    Done {
        /// The certificate problems at the time of the conversation (the HTTPS check's verdicts).
        problems: Vec<Problem>,
        /// The negotiated version.
        version: Option<String>,
    },
}

/// A certificate problem ([`tls::CertProblem`]) as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "p", rename_all = "snake_case")]
pub enum Problem {
    /// Expired.
    Expired,
    /// Self-signed.
    SelfSigned,
    /// Untrusted, with why.
    Untrusted {
        /// Why.
        why: String,
    },
    /// Not valid for the MX host name.
    WrongName {
        /// The certificate's names.
        names: Vec<String>,
    },
    /// Expires within 30 days.
    Expiring {
        /// Days left.
        days: i64,
    },
}

impl From<tls::CertProblem> for Problem {
    fn from(p: tls::CertProblem) -> Problem {
        match p {
            tls::CertProblem::Expired => Problem::Expired,
            tls::CertProblem::SelfSigned => Problem::SelfSigned,
            tls::CertProblem::Untrusted(why) => Problem::Untrusted { why },
            tls::CertProblem::WrongName(names) => Problem::WrongName { names },
            tls::CertProblem::Expiring(days) => Problem::Expiring { days },
        }
    }
}

/// How a conversation went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "o", rename_all = "snake_case")]
pub enum Conversation {
    /// No connection, or no banner in time.
    Unreachable {
        /// Why.
        reason: String,
    },
    /// The server answered, but with an error or with something that is not SMTP.
    ProtocolError {
        /// Which step (`banner`, `ehlo`).
        step: String,
        /// What came.
        reason: String,
    },
    /// Banner and EHLO went fine.
    Talked {
        /// The banner's first line.
        banner: String,
        /// STARTTLS.
        starttls: Starttls,
    },
}

/// What a conversation needs.
#[derive(Debug, Clone)]
pub struct SmtpSettings {
    /// The name sent with EHLO.
    pub helo_name: String,
    /// How long each step (connect, each reply, the handshake) may take.
    pub step_timeout: Duration,
}

/// Reads replies from a connection, never more than [`MAX_REPLY_BYTES`] at a time.
struct Replies {
    buf: Vec<u8>,
}

impl Replies {
    async fn next<S: AsyncRead + Unpin>(&mut self, s: &mut S, timeout: Duration) -> Result<Reply, String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some((reply, used)) = parse_reply(&self.buf)? {
                self.buf.drain(..used);
                return Ok(reply);
            }
            if self.buf.len() >= MAX_REPLY_BYTES {
                return Err(format!("a reply over {MAX_REPLY_BYTES} bytes"));
            }
            let mut chunk = [0u8; 2048];
            let room = (MAX_REPLY_BYTES - self.buf.len()).min(chunk.len());
            let n = tokio::time::timeout_at(deadline, s.read(&mut chunk[..room]))
                .await
                .map_err(|_| format!("no reply within {} s", timeout.as_secs()))?
                .map_err(|e| format!("connection failed: {e}"))?;
            if n == 0 {
                return Err("the server closed the connection".into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

async fn send<S: AsyncWrite + Unpin>(s: &mut S, cmd: &Command, timeout: Duration) -> Result<(), String> {
    tokio::time::timeout(timeout, s.write_all(cmd.line().as_bytes()))
        .await
        .map_err(|_| "the server does not read".to_owned())?
        .map_err(|e| format!("connection failed: {e}"))
}

/// Talks to the mail server `host` at `addr` (already through the address guard): banner, EHLO,
/// STARTTLS if offered (certificate judged at `now` against `roots`, for `host`), QUIT.
pub async fn converse(
    host: &str,
    addr: SocketAddr,
    settings: &SmtpSettings,
    roots: &Roots,
    now: UnixMs,
) -> Conversation {
    let t = settings.step_timeout;
    let mut tcp = match tokio::time::timeout(t, TcpStream::connect(addr)).await {
        Err(_) => {
            return Conversation::Unreachable { reason: format!("no connection to {addr} within {} s", t.as_secs()) };
        }
        Ok(Err(e)) => return Conversation::Unreachable { reason: format!("connecting to {addr}: {e}") },
        Ok(Ok(s)) => s,
    };
    let mut replies = Replies { buf: Vec::new() };
    let banner = match replies.next(&mut tcp, t).await {
        Ok(r) if r.code == 220 => r,
        Ok(r) => return quit_with(&mut tcp, t, "banner", r.summary()).await,
        Err(e) if e.starts_with("no reply") || e.contains("closed") || e.starts_with("connection") => {
            return Conversation::Unreachable { reason: format!("no greeting: {e}") };
        }
        Err(e) => return quit_with(&mut tcp, t, "banner", e).await,
    };
    let banner_line = banner.summary();
    let ehlo = Command::Ehlo(settings.helo_name.clone());
    let offered = match send(&mut tcp, &ehlo, t).await {
        Err(e) => return Conversation::ProtocolError { step: "ehlo".into(), reason: e },
        Ok(()) => match replies.next(&mut tcp, t).await {
            Ok(r) if r.code == 250 => r
                .lines
                .iter()
                .skip(1)
                .any(|l| l.split_whitespace().next().is_some_and(|k| k.eq_ignore_ascii_case("STARTTLS"))),
            Ok(r) => return quit_with(&mut tcp, t, "ehlo", r.summary()).await,
            Err(e) => return quit_with(&mut tcp, t, "ehlo", e).await,
        },
    };
    if !offered {
        quit(&mut tcp, &mut replies, t).await;
        return Conversation::Talked { banner: banner_line, starttls: Starttls::NotOffered };
    }
    if let Err(e) = send(&mut tcp, &Command::StartTls, t).await {
        return Conversation::Talked {
            banner: banner_line,
            starttls: Starttls::Failed { reason: e, old_version: false },
        };
    }
    match replies.next(&mut tcp, t).await {
        Ok(r) if r.code == 220 && replies.buf.is_empty() => {}
        Ok(r) if r.code == 220 => {
            // Bytes after the 220 and before the handshake would be read as TLS: a server (or
            // something in between) injecting them is refused, as RFC 3207 §5 asks.
            let starttls =
                Starttls::Failed { reason: "data sent after the 220 reply to STARTTLS".into(), old_version: false };
            let _ = r;
            return Conversation::Talked { banner: banner_line, starttls };
        }
        Ok(r) => {
            quit(&mut tcp, &mut replies, t).await;
            return Conversation::Talked { banner: banner_line, starttls: Starttls::Refused { reply: r.summary() } };
        }
        Err(e) => {
            return Conversation::Talked { banner: banner_line, starttls: Starttls::Refused { reply: e } };
        }
    }
    let deadline = tokio::time::Instant::now() + t;
    let starttls = match tls::handshake(tcp, host, addr, (deadline, t), roots, now).await {
        Ok((facts, mut stream)) => {
            let problems = facts.problems(now).into_iter().map(Problem::from).collect();
            // The session goes on encrypted: a fresh EHLO is not needed to say goodbye.
            let mut after = Replies { buf: Vec::new() };
            quit(&mut stream, &mut after, t).await;
            let _ = tokio::time::timeout(t, stream.shutdown()).await;
            Starttls::Done { problems, version: facts.version }
        }
        Err(e) => {
            let old_version = matches!(e, tls::ProbeError::UnsupportedVersion { .. });
            Starttls::Failed { reason: e.to_string(), old_version }
        }
    };
    Conversation::Talked { banner: banner_line, starttls }
}

/// Says goodbye (QUIT, and waits for the 221 within the step timeout, best effort).
async fn quit<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, replies: &mut Replies, t: Duration) {
    if send(s, &Command::Quit, t).await.is_ok() {
        let _ = replies.next(s, t).await;
    }
}

async fn quit_with(tcp: &mut TcpStream, t: Duration, step: &str, reason: String) -> Conversation {
    let mut replies = Replies { buf: Vec::new() };
    quit(tcp, &mut replies, t).await;
    Conversation::ProtocolError { step: step.into(), reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_table() {
        let ok: &[(&[u8], u16, usize, usize)] = &[
            (b"220 mx.test ESMTP\r\n", 220, 1, 19),
            (b"250-mx.test\r\n250-PIPELINING\r\n250 STARTTLS\r\nrest", 250, 3, 43),
            (b"221\n", 221, 1, 4),
        ];
        for (bytes, code, lines, used) in ok {
            let (r, n) = parse_reply(bytes).expect("valid").expect("complete");
            assert_eq!((r.code, r.lines.len(), n), (*code, *lines, *used), "{:?}", String::from_utf8_lossy(bytes));
        }
        assert_eq!(parse_reply(b"250-a\r\n250 b").expect("valid so far"), None, "incomplete");
        assert_eq!(parse_reply(b"").expect("nothing yet"), None);
        for bad in [
            &b"HTTP/1.1 400 Bad Request\r\n"[..],
            b"2x0 hi\r\n",
            b"250-a\r\n251 b\r\n",
            b"999 x\r\n",
            b"250x\r\n",
            b"\x00\x01\r\n",
        ] {
            assert!(parse_reply(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let flood: Vec<u8> = (0..=MAX_REPLY_LINES).flat_map(|_| b"250-x\r\n".iter().copied()).collect();
        assert!(parse_reply(&flood).is_err());
    }

    /// A server on loopback that answers the first connection with `greeting`, then every line it
    /// reads with `answer` (it lives as long as the test's runtime).
    #[allow(clippy::disallowed_methods, reason = "a test server that ends with the test's runtime")]
    async fn scripted(greeting: &'static [u8], answer: &'static [u8]) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.expect("bind loopback");
        let addr = listener.local_addr().expect("bound address");
        tokio::spawn(async move {
            if let Ok((mut tcp, _)) = listener.accept().await {
                let _ = tcp.write_all(greeting).await;
                let mut buf = [0u8; 512];
                while let Ok(n) = tcp.read(&mut buf).await {
                    if n == 0 || tcp.write_all(answer).await.is_err() {
                        break;
                    }
                }
            }
        });
        addr
    }

    fn settings() -> SmtpSettings {
        SmtpSettings { helo_name: "audit.test".into(), step_timeout: Duration::from_millis(500) }
    }

    /// Bad replies are outcomes, within the step timeouts, never a hang or a panic.
    #[tokio::test]
    async fn misbehaving_servers_are_outcomes() {
        crate::tls::install_crypto_provider();
        let roots = Roots::webpki();
        let now = UnixMs(1_800_000_000_000);
        let flood: &'static [u8] = Box::leak(b"250-x\r\n".repeat(4000).into_boxed_slice());
        let cases: Vec<(&'static [u8], &'static [u8], &str)> = vec![
            (b"HTTP/1.1 400 Bad Request\r\n\r\n", b"", "protocol_error"),
            (b"220 hi\r\n", b"garbage\r\n", "protocol_error"),
            (b"220 hi\r\n", flood, "protocol_error"),
            (b"220 hi\r\n", b"250-half a reply", "protocol_error"),
            (b"", b"", "unreachable"),
            (b"220 hi\r\n", b"250-mx\r\n250 STARTTLS\r\n", "starttls"),
        ];
        for (greeting, answer, want) in cases {
            let addr = scripted(greeting, answer).await;
            let started = std::time::Instant::now();
            let c = converse("mx.test", addr, &settings(), &roots, now).await;
            assert!(started.elapsed() < Duration::from_secs(3), "{want}: took {:?}", started.elapsed());
            let got = match &c {
                Conversation::Unreachable { .. } => "unreachable",
                Conversation::ProtocolError { .. } => "protocol_error",
                Conversation::Talked { starttls: Starttls::NotOffered, .. } => "talked",
                Conversation::Talked { .. } => "starttls",
            };
            assert_eq!(
                got,
                want,
                "{:?} / {:?}: {c:?}",
                String::from_utf8_lossy(greeting),
                String::from_utf8_lossy(&answer[..answer.len().min(40)])
            );
        }
        let refused = converse("mx.test", "127.0.0.1:9".parse().expect("addr"), &settings(), &roots, now).await;
        assert!(matches!(refused, Conversation::Unreachable { .. }), "{refused:?}");
    }

    #[test]
    fn only_three_commands_exist() {
        let lines: Vec<String> =
            [Command::Ehlo("a.test".into()), Command::StartTls, Command::Quit].iter().map(Command::line).collect();
        assert_eq!(lines, vec!["EHLO a.test\r\n", "STARTTLS\r\n", "QUIT\r\n"]);
    }
}
