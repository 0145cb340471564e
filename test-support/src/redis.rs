//! A private `redis-server` per test: its own temporary directory and unix socket, no TCP port, so
//! tests never depend on (or disturb) a Redis the machine already runs, and can restart theirs.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `redis-server`, killed on drop.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    dir: tempfile::TempDir,
    extra: Vec<String>,
    /// The TLS port and password of a server started by [`RedisServer::start_tls`].
    tls: Option<(u16, String)>,
}

impl RedisServer {
    /// Starts a server with no persistence.
    pub fn start() -> io::Result<RedisServer> {
        RedisServer::start_with(&["--save", "", "--appendonly", "no"])
    }

    /// Starts a server with append-only-file persistence (every write fsynced), for restart tests.
    pub fn start_persistent() -> io::Result<RedisServer> {
        RedisServer::start_with(&["--save", "", "--appendonly", "yes", "--appendfsync", "always"])
    }

    /// Starts a server with extra arguments.
    pub fn start_with(extra: &[&str]) -> io::Result<RedisServer> {
        let dir = tempfile::Builder::new().prefix("shoal-redis-").tempdir()?;
        let mut s = RedisServer { child: None, dir, extra: extra.iter().map(|a| (*a).to_owned()).collect(), tls: None };
        s.spawn()?;
        Ok(s)
    }

    /// Starts a server that takes TCP connections only over TLS, on a free port of 127.0.0.1,
    /// presenting the certificate and key of these PEM files, and only after `AUTH password`
    /// (`--requirepass`); no persistence. Its unix socket stays, for readiness only.
    pub fn start_tls(cert: &Path, key: &Path, password: &str) -> io::Result<RedisServer> {
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port();
        let (port_arg, cert, key) = (port.to_string(), cert.display().to_string(), key.display().to_string());
        let mut s = RedisServer::start_with(&[
            "--save",
            "",
            "--appendonly",
            "no",
            "--bind",
            "127.0.0.1",
            "--tls-port",
            &port_arg,
            "--tls-cert-file",
            &cert,
            "--tls-key-file",
            &key,
            "--tls-auth-clients",
            "no",
            "--requirepass",
            password,
        ])?;
        s.tls = Some((port, password.to_owned()));
        Ok(s)
    }

    /// The `rediss://` URL of a server started by [`RedisServer::start_tls`], with its password
    /// (`None` for the others).
    #[must_use]
    pub fn tls_url(&self) -> Option<String> {
        self.tls.as_ref().map(|(port, password)| format!("rediss://:{password}@127.0.0.1:{port}/0"))
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("redis.sock")
    }

    fn spawn(&mut self) -> io::Result<()> {
        let sock = self.socket();
        let _ = std::fs::remove_file(&sock);
        let child = Command::new("redis-server")
            .arg("--port")
            .arg("0")
            .arg("--unixsocket")
            .arg(&sock)
            .arg("--unixsocketperm")
            .arg("700")
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                io::Error::new(e.kind(), format!("starting redis-server (apt-get install redis-server): {e}"))
            })?;
        self.child = Some(child);
        wait_for_socket(&sock, Duration::from_secs(10))
    }

    /// The URL to connect to (`redis+unix://…`).
    #[must_use]
    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.socket().display())
    }

    /// The server's directory (AOF files live here).
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Kills the server (SIGKILL: no chance to save) and starts it again on the same socket and
    /// directory; with AOF it reloads everything acknowledged before the kill.
    pub fn restart(&mut self) -> io::Result<()> {
        self.kill();
        self.spawn()
    }

    /// Deletes every key (`FLUSHALL`), as a failover to an empty replica or an operator's mistake
    /// would: the server keeps running, its data is gone.
    pub fn flush_all(&self) -> io::Result<()> {
        let answer = self.inline("FLUSHALL")?;
        if answer.starts_with("+OK") { Ok(()) } else { Err(io::Error::other(format!("FLUSHALL answered {answer:?}"))) }
    }

    /// A counter's value (`GET key` of an integer; 0 when missing), for tests that read what the
    /// scripts counted.
    pub fn counter(&self, key: &str) -> io::Result<u64> {
        let answer = self.inline(&format!("GET {key}"))?;
        match answer.lines().collect::<Vec<_>>().as_slice() {
            ["$-1", ..] => Ok(0),
            [_, value, ..] => value.parse().map_err(|e| io::Error::other(format!("GET {key}: {value:?}: {e}"))),
            _ => Err(io::Error::other(format!("GET {key} answered {answer:?}"))),
        }
    }

    /// Sends one inline command (no spaces inside arguments) and returns the first answer read.
    fn inline(&self, command: &str) -> io::Result<String> {
        use std::io::{Read, Write};
        let mut s = std::os::unix::net::UnixStream::connect(self.socket())?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(format!("{command}\r\n").as_bytes())?;
        let mut buf = [0u8; 512];
        let n = s.read(&mut buf)?;
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    /// Kills the server.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn wait_for_socket(sock: &Path, limit: Duration) -> io::Result<()> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(mut s) = std::os::unix::net::UnixStream::connect(sock) {
            use std::io::{Read, Write};
            if s.write_all(b"PING\r\n").is_ok() {
                let mut buf = [0u8; 64];
                s.set_read_timeout(Some(Duration::from_secs(1)))?;
                // A server with a password answers that it wants one: it is up all the same.
                if let Ok(n) = s.read(&mut buf)
                    && (buf[..n].starts_with(b"+PONG") || buf[..n].starts_with(b"-NOAUTH"))
                {
                    return Ok(());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(io::Error::new(io::ErrorKind::TimedOut, format!("redis-server did not answer on {}", sock.display())))
}
