//! The connection the frontier's commands go through: to one Redis server, or to the master a
//! group of Sentinels names, followed from one master to the next.
//!
//! Following a master (`redis+sentinel://`): the first command asks the Sentinels which server is
//! the master (the redis crate's Sentinel client, which also checks the server's `ROLE`) and
//! connects to it. A connection error, or an answer that the server is no master any more
//! (`READONLY`, `MASTERDOWN`), drops that connection, and the next command asks the Sentinels
//! again: after a failover every process finds the promoted replica by itself, as soon as the
//! Sentinels name it (a second or two after the master's death at their usual settings). A
//! command is never retried here: the caller sees the error as it sees a restarting Redis and
//! tries again at its own pace, because a claim or a completion that may have run on the old
//! master must not run twice blindly.
//!
//! Every new master connection runs the failover fence first ([`Fence`], `lua/fence.lua`), before
//! any other command of this process reaches that master: replication is asynchronous, so a
//! promoted replica may lack the old master's last writes (leases granted, hosts' clocks), and the
//! fence makes the frontier wait those out (docs/redis.md, "Failover").

use crate::keys::Keys;
use crate::params;
use crate::scripts::Scripts;
use crate::target::{Place, RedisTarget, SentinelGroup};
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::sentinel::SentinelClient;
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, RedisResult, Value};
use shoal_shared::time::UnixMs;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How to open a [`Conn`] to a target: the frontier's own, and the progress reads' (status.rs).
pub(crate) struct Connector {
    to: To,
    config: ConnectionManagerConfig,
    scripts: Arc<Scripts>,
    prefix: String,
    lease_ttl_ms: u64,
}

enum To {
    Server(redis::Client),
    Sentinels(SentinelGroup, Option<Vec<u8>>),
}

impl Connector {
    /// How to connect to `target` for the frontier of `keys`, whose leases last `lease_ttl_ms`.
    pub(crate) fn new(
        target: &RedisTarget,
        keys: &Keys,
        scripts: &Arc<Scripts>,
        lease_ttl_ms: u64,
    ) -> Result<Connector, Box<dyn std::error::Error + Send + Sync>> {
        let to = match target.place()? {
            Place::Server(url) => To::Server(RedisTarget::server_client(&url, target.ca_pem())?),
            // Its client is built by the first connection, which `connect_to` opens at once.
            Place::Sentinels(g) => To::Sentinels(g, target.ca_pem().map(<[u8]>::to_vec)),
        };
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(Duration::from_secs(10)))
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_number_of_retries(6);
        Ok(Connector { to, config, scripts: Arc::clone(scripts), prefix: keys.prefix().to_owned(), lease_ttl_ms })
    }

    /// A new connection.
    pub(crate) async fn open(&self) -> RedisResult<Conn> {
        match &self.to {
            To::Server(client) => {
                Ok(Conn::server(client.get_connection_manager_with_config(self.config.clone()).await?))
            }
            To::Sentinels(g, ca) => {
                let fence = Fence {
                    scripts: Arc::clone(&self.scripts),
                    prefix: self.prefix.clone(),
                    lease_ttl_ms: self.lease_ttl_ms,
                };
                // A failed connection is given up and the Sentinels asked again (see `lost_master`),
                // so the manager need not retry by itself, which hid a dead master for seconds.
                let config = self.config.clone().set_number_of_retries(1);
                Conn::following(g.clone(), ca.clone(), config, fence).await
            }
        }
    }
}

/// A connection to the frontier's Redis, cheap to clone (clones share it).
#[derive(Clone)]
pub struct Conn(Route);

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("follows_sentinels", &self.follows_sentinels())
            .field("masters_followed", &self.masters_followed())
            .finish()
    }
}

#[derive(Clone)]
enum Route {
    /// One server; the connection manager reconnects to it by itself.
    Server(ConnectionManager),
    /// Whichever server the Sentinels name the master.
    Following(Arc<Follower>),
}

impl Conn {
    /// A connection to one server.
    fn server(conn: ConnectionManager) -> Conn {
        Conn(Route::Server(conn))
    }

    /// A connection to the master `sentinels` name, opened now (so that a wrong address or
    /// service fails at start, not at the first claim).
    async fn following(
        group: SentinelGroup,
        ca: Option<Vec<u8>>,
        config: ConnectionManagerConfig,
        fence: Fence,
    ) -> RedisResult<Conn> {
        let f = Arc::new(Follower {
            sentinels: tokio::sync::Mutex::new(None),
            group,
            ca,
            config,
            current: Mutex::new(None),
            masters: AtomicU64::new(0),
            fence,
        });
        f.current().await?;
        Ok(Conn(Route::Following(f)))
    }

    /// Whether the connection follows a Sentinel-watched master, whose replica may replace it.
    #[must_use]
    pub fn follows_sentinels(&self) -> bool {
        matches!(self.0, Route::Following(_))
    }

    /// Masters connected to so far (1 after the start; each failover followed adds one; 0 for one
    /// server).
    #[must_use]
    pub fn masters_followed(&self) -> u64 {
        match &self.0 {
            Route::Server(_) => 0,
            Route::Following(f) => f.masters.load(Ordering::Relaxed),
        }
    }
}

/// How long finding and connecting to the master may take before the attempt is given up (the
/// caller sees an error and tries again; the Sentinel client is built anew): a Sentinel or a
/// master that accepts a connection and then says nothing must not hold every command.
const CONNECT_LIMIT: Duration = Duration::from_secs(10);

/// The state of a connection that follows the master.
struct Follower {
    /// Asked for the master, built on first use and again after a failed attempt (its cached
    /// connections to the Sentinels go with it). Its lock makes one task connect while the
    /// others wait.
    sentinels: tokio::sync::Mutex<Option<SentinelClient>>,
    group: SentinelGroup,
    ca: Option<Vec<u8>>,
    config: ConnectionManagerConfig,
    /// The master's connection and its number (of [`Follower::masters`]), until it fails.
    current: Mutex<Option<(ConnectionManager, u64)>>,
    /// Master connections opened.
    masters: AtomicU64,
    fence: Fence,
}

/// Whether an error means that the connection no longer reaches a master: the connection is
/// dropped and the Sentinels asked again. `LOADING` is a restarted server (maybe no master any
/// more); a timeout, a master that stopped answering.
fn lost_master(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || matches!(e.code(), Some("READONLY" | "MASTERDOWN" | "LOADING"))
}

impl Follower {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<(ConnectionManager, u64)>> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The master's connection: the current one, or a new one to the master the Sentinels name
    /// now, fenced before anything else is sent on it.
    async fn current(&self) -> RedisResult<(ConnectionManager, u64)> {
        if let Some(c) = self.slot().clone() {
            return Ok(c);
        }
        let mut sentinels = self.sentinels.lock().await;
        if let Some(c) = self.slot().clone() {
            return Ok(c);
        }
        let attempt = async {
            let s = match sentinels.as_mut() {
                Some(s) => s,
                None => sentinels.insert(self.group.client(self.ca.as_deref())?),
            };
            let client = s.async_get_client().await?;
            let mut conn = client.get_connection_manager_with_config(self.config.clone()).await?;
            self.fence.run(&mut conn).await?;
            Ok::<_, RedisError>((client, conn))
        };
        let (client, conn) = match tokio::time::timeout(CONNECT_LIMIT, attempt).await {
            Ok(Ok(found)) => found,
            Ok(Err(e)) => {
                *sentinels = None;
                tracing::debug!(error = %e, "no Redis master to connect to yet");
                return Err(e);
            }
            Err(_) => {
                *sentinels = None;
                let why = format!("finding the Redis master took over {} s", CONNECT_LIMIT.as_secs());
                return Err(RedisError::from(std::io::Error::new(std::io::ErrorKind::TimedOut, why)));
            }
        };
        let n = self.masters.fetch_add(1, Ordering::Relaxed) + 1;
        let addr = client.get_connection_info().addr().to_string();
        if n > 1 {
            tracing::warn!(master = %addr, "following the Redis master the Sentinels name now");
        } else {
            tracing::info!(master = %addr, "connected to the Redis master the Sentinels name");
        }
        *self.slot() = Some((conn.clone(), n));
        drop(sentinels);
        Ok((conn, n))
    }

    /// Drops connection `n` after `r` showed it reaches no master (a newer one is kept).
    fn check<T>(&self, r: &RedisResult<T>, n: u64) {
        if let Err(e) = r
            && lost_master(e)
        {
            let mut slot = self.slot();
            if slot.as_ref().is_some_and(|(_, m)| *m == n) {
                tracing::warn!(error = %e, "lost the Redis master; asking the Sentinels again");
                *slot = None;
            }
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match &mut self.0 {
            Route::Server(c) => c.req_packed_command(cmd),
            Route::Following(f) => {
                let f = Arc::clone(f);
                Box::pin(async move {
                    let (mut c, n) = f.current().await?;
                    let r = c.req_packed_command(cmd).await;
                    f.check(&r, n);
                    r
                })
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match &mut self.0 {
            Route::Server(c) => c.req_packed_commands(pipeline, offset, count),
            Route::Following(f) => {
                let f = Arc::clone(f);
                Box::pin(async move {
                    let (mut c, n) = f.current().await?;
                    let r = c.req_packed_commands(pipeline, offset, count).await;
                    f.check(&r, n);
                    r
                })
            }
        }
    }

    fn get_db(&self) -> i64 {
        match &self.0 {
            Route::Server(c) => c.get_db(),
            // The Sentinel URL names no database: the master's default one.
            Route::Following(_) => 0,
        }
    }
}

/// The failover fence, run on every new master connection (`lua/fence.lua`).
struct Fence {
    scripts: Arc<Scripts>,
    prefix: String,
    /// The frontier's lease time: no lease granted before a failover outlives it unrenewed.
    lease_ttl_ms: u64,
}

/// A server's `master_replid` from its `INFO replication`, if it says it is a master.
fn master_replid(info: &str) -> Option<&str> {
    let field = |name: &str| info.lines().find_map(|l| l.trim_end().strip_prefix(name)?.strip_prefix(':'));
    (field("role") == Some("master")).then(|| field("master_replid")).flatten()
}

impl Fence {
    /// Compares the master's replication id with the one the namespace's state was last written
    /// under; when they differ (a replica promoted, or a master restarted, since), raises the
    /// fence. True when this call raised it.
    async fn run(&self, conn: &mut ConnectionManager) -> RedisResult<bool> {
        let info: String = redis::cmd("INFO").arg("replication").query_async(conn).await?;
        let Some(replid) = master_replid(&info) else {
            return Err(RedisError::from((
                ErrorKind::Server(redis::ServerErrorKind::ReadOnly),
                "the server the Sentinels named is not a master (yet)",
            )));
        };
        let now = UnixMs::from(std::time::SystemTime::now());
        let mut inv = self.scripts.fence.call(&self.prefix);
        inv.named(&params::FENCE).set("now", now.0).set("replid", replid).set("ttl", self.lease_ttl_ms).done();
        let raised: i64 = inv.invoke_async(conn).await?;
        if raised == 1 {
            tracing::warn!(
                replid,
                hold_s = failover_hold(self.lease_ttl_ms).as_secs_f64(),
                "a new Redis master (a failover, or a restart): no lease is granted until every lease given \
                 before it has ended, then every host waits a full gap (docs/redis.md, \"Failover\")"
            );
        }
        Ok(raised == 1)
    }
}

/// How long an acknowledged seed or cancel waits for a replica to hold it (`WAIT`), on a
/// Sentinel-watched master. Replicas on a network answer in milliseconds; a replica that is down
/// must not stop submits, so past this the step is acknowledged anyway, with a warning.
const REPLICA_WAIT_MS: u64 = 1_000;

/// On a Sentinel-watched master, waits until a replica holds what `c` wrote (`WAIT 1`), so that a
/// failover right after cannot lose what the coordinator acknowledges to its user: an audit's
/// sites (a lost seed would never be crawled; nothing else would notice) and a cancel. A worker's
/// completion needs no wait: one lost with the old master leaves its lease to expire and its URL
/// fetched again (docs/redis.md, "Failover").
pub(crate) async fn replicated(c: &mut Conn, op: &'static str) {
    if !c.follows_sentinels() {
        return;
    }
    let r: Result<u64, RedisError> = redis::cmd("WAIT").arg(1).arg(REPLICA_WAIT_MS).query_async(c).await;
    match r {
        Ok(0) => tracing::warn!(
            op,
            wait_ms = REPLICA_WAIT_MS,
            "no replica confirmed the write: a failover now could lose it"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(op, error = %e, "waiting for a replica failed: a failover now could lose the write"),
    }
}

/// How long a raised failover fence holds every grant (lua/fence.lua, common.lua's `fence_hold`),
/// for messages: [`shoal_shared::frontier::FAILOVER_HOLD`], or the lease time when longer.
fn failover_hold(lease_ttl_ms: u64) -> Duration {
    shoal_shared::frontier::FAILOVER_HOLD.max(Duration::from_millis(lease_ttl_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replication_id_is_read_only_from_a_master() {
        let master =
            "# Replication\r\nrole:master\r\nconnected_slaves:1\r\nmaster_replid:abc123\r\nmaster_replid2:0000\r\n";
        assert_eq!(master_replid(master), Some("abc123"));
        let replica = "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_replid:abc123\r\n";
        assert_eq!(master_replid(replica), None);
        assert_eq!(master_replid(""), None);
    }
}
