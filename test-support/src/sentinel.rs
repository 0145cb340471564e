//! A Redis master, its replica and three Sentinels watching them, all private to one test (TCP on
//! free ports of 127.0.0.1, their own directories), for failover tests: kill the master and the
//! Sentinels promote the replica, as in production.

use crate::redis::RedisServer;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The service name the Sentinels monitor the master under.
pub const SERVICE: &str = "shoal";
/// How long the Sentinels wait for a silent master before they call it down: short, so a test's
/// failover takes a few seconds (production keeps Redis' 30 s or sets a few seconds, as here).
const DOWN_AFTER_MS: u32 = 1_000;

/// A master, a replica and three Sentinels; everything is killed on drop.
#[derive(Debug)]
pub struct SentinelGroup {
    /// The master's and replica's password (`requirepass`), if any.
    password: Option<String>,
    /// The master at the start; `None` once killed.
    master: Option<(RedisServer, u16)>,
    replica: (RedisServer, u16),
    sentinels: Vec<(Child, u16)>,
    _dir: tempfile::TempDir,
}

/// A free TCP port on 127.0.0.1 (free when asked: the caller binds it at once).
fn free_port() -> io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// Sends one inline command to 127.0.0.1:`port` and returns what it answered (one read).
fn ask(port: u16, command: &str) -> io::Result<String> {
    ask_as(port, None, command)
}

/// [`ask`] after `AUTH password` when one is given.
fn ask_as(port: u16, password: Option<&str>, command: &str) -> io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut buf = vec![0u8; 16 * 1024];
    if let Some(p) = password {
        s.write_all(format!("AUTH {p}\r\n").as_bytes())?;
        let n = s.read(&mut buf)?;
        if !buf[..n].starts_with(b"+OK") {
            return Err(io::Error::other(format!("AUTH answered {:?}", String::from_utf8_lossy(&buf[..n]))));
        }
    }
    s.write_all(format!("{command}\r\n").as_bytes())?;
    let n = s.read(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// Polls `check` every 100 ms until it is true or `limit` has passed.
fn wait_until(limit: Duration, what: &str, mut check: impl FnMut() -> bool) -> io::Result<()> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(io::Error::new(io::ErrorKind::TimedOut, format!("{what} within {limit:?}")))
}

fn start_sentinel(dir: &Path, i: usize, master_port: u16, password: Option<&str>) -> io::Result<(Child, u16)> {
    let port = free_port()?;
    let sdir = dir.join(format!("sentinel{i}"));
    std::fs::create_dir_all(&sdir)?;
    let conf = sdir.join("sentinel.conf");
    // Sentinel rewrites its configuration file as it learns the group: it must be its own.
    std::fs::write(
        &conf,
        format!(
            "port {port}\nbind 127.0.0.1\ndir {dir}\nsentinel monitor {SERVICE} 127.0.0.1 {master_port} 2\n\
             sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\nsentinel failover-timeout {SERVICE} 10000\n\
             sentinel parallel-syncs {SERVICE} 1\n{auth}",
            dir = sdir.display(),
            auth = password.map(|p| format!("sentinel auth-pass {SERVICE} {p}\n")).unwrap_or_default()
        ),
    )?;
    let child = Command::new("redis-server")
        .arg(&conf)
        .arg("--sentinel")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("starting redis-server --sentinel: {e}")))?;
    Ok((child, port))
}

/// The number after `name:` in an INFO-like answer.
fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|l| l.trim_end().strip_prefix(name)?.strip_prefix(':'))
}

impl SentinelGroup {
    /// Starts the master, the replica (synced) and three Sentinels that know both and each other,
    /// so that a failover can happen as soon as it returns.
    pub fn start() -> io::Result<SentinelGroup> {
        SentinelGroup::start_with_password(None)
    }

    /// [`SentinelGroup::start`] with a master and replica that take commands only after `AUTH
    /// password` (`requirepass`; the replica and the Sentinels are given it too, as in production).
    pub fn start_with_password(password: Option<&str>) -> io::Result<SentinelGroup> {
        let dir = tempfile::Builder::new().prefix("shoal-sentinel-").tempdir()?;
        let tcp = |port: u16| -> Vec<String> {
            let mut args: Vec<String> =
                ["--save", "", "--appendonly", "no", "--bind", "127.0.0.1", "--port", &port.to_string()]
                    .map(str::to_owned)
                    .to_vec();
            if let Some(p) = password {
                args.extend(["--requirepass", p, "--masterauth", p].map(str::to_owned));
            }
            args
        };
        let mport = free_port()?;
        let margs = tcp(mport);
        let master = RedisServer::start_with(&margs.iter().map(String::as_str).collect::<Vec<_>>())?;
        let rport = free_port()?;
        let mut rargs = tcp(rport);
        rargs.extend(["--replicaof".to_owned(), "127.0.0.1".to_owned(), mport.to_string()]);
        let replica = RedisServer::start_with(&rargs.iter().map(String::as_str).collect::<Vec<_>>())?;
        wait_until(Duration::from_secs(20), "the replica synced", || {
            ask_as(rport, password, "INFO replication").is_ok_and(|i| field(&i, "master_link_status") == Some("up"))
        })?;
        let mut sentinels = Vec::new();
        for i in 0..3 {
            sentinels.push(start_sentinel(dir.path(), i, mport, password)?);
        }
        let group = SentinelGroup {
            password: password.map(str::to_owned),
            master: Some((master, mport)),
            replica: (replica, rport),
            sentinels,
            _dir: dir,
        };
        // A Sentinel learns the replica from the master's INFO and the other Sentinels from their
        // hellos on the master (every 2 s): until then it could not agree on a failover.
        wait_until(Duration::from_secs(30), "the Sentinels knew the replica and each other", || {
            group.sentinels.iter().all(|(_, port)| {
                ask(*port, &format!("SENTINEL MASTER {SERVICE}")).is_ok_and(|a| {
                    let lines: Vec<&str> = a.lines().collect();
                    let value = |name: &str| lines.iter().position(|l| *l == name).and_then(|i| lines.get(i + 2));
                    value("num-slaves") == Some(&"1") && value("num-other-sentinels") == Some(&"2")
                })
            })
        })?;
        Ok(group)
    }

    /// The URL to connect through the Sentinels (with the master's password, if any).
    #[must_use]
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self.sentinels.iter().map(|(_, p)| format!("127.0.0.1:{p}")).collect();
        let auth = self.password.as_ref().map(|p| format!(":{p}@")).unwrap_or_default();
        format!("redis+sentinel://{auth}{}/{SERVICE}", nodes.join(","))
    }

    /// Kills the master with SIGKILL (no goodbye to anyone).
    pub fn kill_master(&mut self) {
        if let Some((mut m, _)) = self.master.take() {
            m.kill();
        }
    }

    /// Waits until the replica is a master and every Sentinel names it; returns how long that took.
    pub fn wait_promoted(&self, limit: Duration) -> io::Result<Duration> {
        let start = Instant::now();
        let port = self.replica.1.to_string();
        wait_until(limit, "the replica was promoted", || {
            ask_as(self.replica.1, self.password.as_deref(), "ROLE").is_ok_and(|r| r.contains("master"))
                && self.sentinels.iter().all(|(_, p)| {
                    ask(*p, &format!("SENTINEL GET-MASTER-ADDR-BY-NAME {SERVICE}")).is_ok_and(|a| a.contains(&port))
                })
        })?;
        Ok(start.elapsed())
    }
}

impl Drop for SentinelGroup {
    fn drop(&mut self) {
        for (c, _) in &mut self.sentinels {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
