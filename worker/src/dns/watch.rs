//! The worker's one resolver, watched for silence: whether it answers at all.
//!
//! Why: a `--dns-server` (or a system resolver) that never answers made every name of an audit
//! wait out the resolver's whole timeout, one site after another (0 of 2,000 sites done after
//! 280 s), and each site then reported its own timeouts. A question that gets no answer does not
//! say whose fault it is: the zone's name servers may be silent while the resolver is fine. So
//! the watch asks the resolver one question of its own that every live resolver answers at once
//! (a unique name under `.test`, RFC 6761: answered NXDOMAIN without asking anyone, and never
//! from a cache). No answer to that either: the resolver is **silent**, and from then on every
//! question fails at once with [`Silent`], except that one question every [`PROBE_EVERY`] goes
//! out to see whether it answers again. One probe runs at a time; questions that got no answer
//! meanwhile wait for its verdict, so each is told whose silence it met.

use hickory_resolver::TokioResolver;
use hickory_resolver::lookup::Lookup;
use hickory_resolver::lookup_ip::LookupIp;
use hickory_resolver::net::NetError;
use hickory_resolver::proto::rr::RecordType;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// While the resolver is silent, one question goes out this often to see whether it answers
/// again; the others fail at once.
pub const PROBE_EVERY: Duration = Duration::from_secs(15);
/// How long a probe waits for its answer: a live resolver answers a `.test` name at once (or
/// after one question to the root), so one try of the resolver's is plenty.
const PROBE_TIME: Duration = Duration::from_secs(5);

/// The resolver answers nothing, not even a question every live resolver answers at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{servers} gave no answer, not even to a probe every resolver answers at once")]
pub struct Silent {
    /// The resolver: the `--dns-server`s, or the system's.
    pub servers: String,
}

/// Why a question got nothing to go on.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LookupError {
    /// The resolver is silent; the question was not asked, or got no answer either.
    #[error(transparent)]
    Silent(#[from] Silent),
    /// What the resolver said (or that it gave up).
    #[error(transparent)]
    Net(#[from] NetError),
}

impl LookupError {
    /// No answer came: the resolver's time ran out, or nothing could be sent.
    #[must_use]
    pub fn no_answer(&self) -> bool {
        match self {
            LookupError::Silent(_) => true,
            LookupError::Net(e) => no_answer(e),
        }
    }
}

fn no_answer(e: &NetError) -> bool {
    matches!(e, NetError::Timeout | NetError::NoConnections | NetError::Busy | NetError::Io(_))
}

/// The worker's resolver (the system's, or the `--dns-server`s) and its watch. Cheap to clone:
/// clones share the watch.
#[derive(Debug, Clone)]
pub struct Resolver {
    dns: TokioResolver,
    watch: Arc<Watch>,
}

#[derive(Debug)]
struct Watch {
    /// The resolver, as findings and logs name it.
    servers: String,
    state: Mutex<State>,
    /// One probe at a time.
    probing: tokio::sync::Mutex<()>,
    probes: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    /// When a probe last got an answer: a question asked before then that got none met its
    /// zone's silence, not the resolver's.
    alive_at: Option<Instant>,
    /// Silent: when the next probe may go.
    silent_until: Option<Instant>,
}

impl From<TokioResolver> for Resolver {
    fn from(dns: TokioResolver) -> Resolver {
        Resolver::new(dns, &[])
    }
}

impl Resolver {
    /// Watches `dns`, which asks `servers` (empty: the system's resolver).
    #[must_use]
    pub fn new(dns: TokioResolver, servers: &[SocketAddr]) -> Resolver {
        let servers = if servers.is_empty() {
            "the system's DNS resolver".to_owned()
        } else {
            servers.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        };
        let watch =
            Watch { servers, state: Mutex::default(), probing: tokio::sync::Mutex::new(()), probes: AtomicU64::new(0) };
        Resolver { dns, watch: Arc::new(watch) }
    }

    /// The resolver itself, unwatched.
    #[must_use]
    pub fn inner(&self) -> &TokioResolver {
        &self.dns
    }

    /// Whether the resolver is silent now.
    #[must_use]
    pub fn silent(&self) -> Option<Silent> {
        self.watch.lock().silent_until.map(|_| self.watch.silent())
    }

    /// The records of `name` (a fully qualified name) of type `t`.
    ///
    /// # Errors
    /// [`LookupError::Silent`] while the resolver is silent, else what the resolver said.
    pub async fn lookup(&self, name: &str, t: RecordType) -> Result<Lookup, LookupError> {
        self.watched(self.dns.lookup(name, t)).await
    }

    /// The addresses of `name` (A, then AAAA if there is none).
    ///
    /// # Errors
    /// [`LookupError::Silent`] while the resolver is silent, else what the resolver said.
    pub async fn lookup_ip(&self, name: &str) -> Result<LookupIp, LookupError> {
        self.watched(self.dns.lookup_ip(name)).await
    }

    async fn watched<T>(&self, question: impl Future<Output = Result<T, NetError>>) -> Result<T, LookupError> {
        self.admit().await?;
        let asked = Instant::now();
        match question.await {
            Err(e) if no_answer(&e) => {
                self.after_no_answer(asked).await?;
                Err(e.into())
            }
            r => r.map_err(LookupError::from),
        }
    }

    /// Lets a question go unless the resolver is silent; while it is, the first question after
    /// [`PROBE_EVERY`] probes first and goes only if the probe got an answer.
    async fn admit(&self) -> Result<(), Silent> {
        {
            let mut s = self.watch.lock();
            match s.silent_until {
                None => return Ok(()),
                Some(until) if Instant::now() < until => return Err(self.watch.silent()),
                Some(_) => s.silent_until = Some(Instant::now() + PROBE_EVERY),
            }
        }
        if self.probe().await { Ok(()) } else { Err(self.watch.silent()) }
    }

    /// A question asked at `asked` got no answer: whose silence was it? `Err` if the resolver's.
    async fn after_no_answer(&self, asked: Instant) -> Result<(), Silent> {
        let _one = self.watch.probing.lock().await;
        {
            let s = self.watch.lock();
            if s.silent_until.is_some() {
                return Err(self.watch.silent());
            }
            if s.alive_at.is_some_and(|at| at >= asked) {
                return Ok(());
            }
        }
        if self.probe().await { Ok(()) } else { Err(self.watch.silent()) }
    }

    /// Asks the resolver a unique name under `.test`; records and returns whether it answered.
    async fn probe(&self) -> bool {
        let n = self.watch.probes.fetch_add(1, Ordering::Relaxed);
        let name = format!("shoal-probe-{}-{n}.test.", std::process::id());
        let answered = match tokio::time::timeout(PROBE_TIME, self.dns.lookup(name, RecordType::A)).await {
            Ok(r) => !matches!(r, Err(e) if no_answer(&e)),
            Err(_) => false,
        };
        let mut s = self.watch.lock();
        if answered {
            s.alive_at = Some(Instant::now());
            if s.silent_until.take().is_some() {
                tracing::info!(resolver = %self.watch.servers, "the DNS resolver answers again");
            }
        } else {
            if s.silent_until.is_none() {
                tracing::warn!(resolver = %self.watch.servers, "the DNS resolver gives no answers; names fail at once until it does");
            }
            s.silent_until = Some(Instant::now() + PROBE_EVERY);
        }
        answered
    }
}

impl Watch {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn silent(&self) -> Silent {
        Silent { servers: self.servers.clone() }
    }
}
