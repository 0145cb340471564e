//! The connection that answers progress reads (an audit's status, the gauges), apart from the one
//! that carries the frontier's work.
//!
//! Why: a multiplexed connection answers in order, so on the shared one a status read waited
//! behind whatever was sent before it: a pipeline of 500 seed scripts, a read of 1,000 events,
//! their acknowledgement. During a 100,000-site audit (`bench/cpu.py` part C) that made
//! `GET /v1/audits/{id}` take 100-240 ms, where it takes 2 ms once the audit is over. Redis
//! serves its clients in turns, so a read on its own connection waits at most for the command
//! being run. Opened on first use: workers never read progress and keep one connection.

use crate::conn::{Conn, Connector};
use crate::{RedisFrontier, store};
use redis::Value;
use shoal_shared::frontier::{FrontierError, SiteProgress};
use shoal_shared::ids::SiteId;
use tokio::sync::OnceCell;

/// The progress readers' connection, opened by the first read.
pub(crate) struct StatusConn {
    connector: Connector,
    conn: OnceCell<Conn>,
}

impl StatusConn {
    pub(crate) fn new(connector: Connector) -> StatusConn {
        StatusConn { connector, conn: OnceCell::new() }
    }

    /// The connection, opened now if this is the first read.
    pub(crate) async fn get(&self) -> Result<Conn, FrontierError> {
        self.conn.get_or_try_init(|| self.connector.open()).await.cloned().map_err(store("connect for progress reads"))
    }
}

/// The site hash's fields a progress read takes, in [`progress_of`]'s order.
const PROGRESS_FIELDS: [&str; 5] = ["queued", "leased", "pages", "completed", "done"];

/// What a progress read made of a site's [`PROGRESS_FIELDS`].
#[derive(Debug, PartialEq)]
enum Progress {
    /// Redis holds no such site.
    Missing,
    /// Its counts.
    Read(SiteProgress),
    /// A field that is not a number: which, and what it holds.
    Unreadable(String),
}

/// A site's progress from its [`PROGRESS_FIELDS`] as HMGET answered them.
fn progress_of(v: &[Value]) -> Progress {
    if v.iter().all(|x| matches!(x, Value::Nil)) {
        return Progress::Missing;
    }
    // The browser phase after the counts: a letter (keys.rs, the site hash), `a` while the site
    // waits for its browser tasks.
    let awaiting = v
        .get(PROGRESS_FIELDS.len())
        .is_some_and(|x| redis::from_redis_value::<Option<String>>(x.clone()).ok().flatten().as_deref() == Some("a"));
    let mut n = [0u64; 5];
    for (i, (field, value)) in PROGRESS_FIELDS.iter().zip(v).enumerate() {
        match redis::from_redis_value::<Option<i64>>(value.clone()) {
            Ok(x) => n[i] = x.map_or(0, |x| u64::try_from(x).unwrap_or(0)),
            Err(_) => {
                let shown: String = match redis::from_redis_value::<Vec<u8>>(value.clone()) {
                    Ok(b) => String::from_utf8_lossy(&b).chars().take(24).collect(),
                    Err(_) => format!("{value:?}").chars().take(24).collect(),
                };
                return Progress::Unreadable(format!("{field} = {shown:?}"));
            }
        }
    }
    Progress::Read(SiteProgress {
        queued: n[0],
        leased: n[1],
        pages_enqueued: n[2],
        completed: n[3],
        done: n[4] == 1,
        awaiting_browser: awaiting && n[4] != 1,
    })
}

impl RedisFrontier {
    /// The progress of `sites` in one round trip on the status connection. A site whose counts
    /// cannot be read is quarantined (recorded for the coordinator, which fails its audit) and
    /// reads as all zeros: one corrupt counter must not fail a status page, the gauges or the
    /// coordinator's start, which all read progress.
    pub(crate) async fn progress_many_now(&self, sites: &[SiteId]) -> Result<Vec<Option<SiteProgress>>, FrontierError> {
        if sites.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for s in sites {
            pipe.cmd("HMGET").arg(self.keys.site(*s)).arg(&PROGRESS_FIELDS).arg("bphase");
        }
        let mut c = self.status.get().await?;
        // One site's key of another type than a hash answers an error for its HMGET alone.
        let rows: Vec<redis::RedisResult<Value>> =
            pipe.ignore_errors().query_async(&mut c).await.map_err(store("read progress"))?;
        let mut out = Vec::with_capacity(sites.len());
        for (site, row) in sites.iter().zip(rows) {
            let fields = match row {
                Ok(Value::Array(f)) => f,
                other => {
                    let what = match other {
                        Err(e) => e.to_string(),
                        Ok(v) => format!("{v:?}"),
                    };
                    let what: String = what.chars().take(60).collect();
                    self.quarantine_site(&mut c, *site, &format!("site {site}: not readable ({what})")).await;
                    out.push(Some(SiteProgress::default()));
                    continue;
                }
            };
            out.push(match progress_of(&fields) {
                Progress::Missing => None,
                Progress::Read(p) => Some(p),
                Progress::Unreadable(what) => {
                    self.quarantine_site(&mut c, *site, &format!("site {site}: {what}")).await;
                    Some(SiteProgress::default())
                }
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_that_is_no_number_makes_the_site_unreadable_not_the_read() {
        let b = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let read = progress_of(&[b("3"), b("1"), b("7"), b("2"), b("0")]);
        let want = SiteProgress {
            queued: 3,
            leased: 1,
            pages_enqueued: 7,
            completed: 2,
            done: false,
            awaiting_browser: false,
        };
        assert_eq!(read, Progress::Read(want));
        let awaiting = progress_of(&[b("0"), b("0"), b("7"), b("9"), b("0"), b("a")]);
        assert_eq!(
            awaiting,
            Progress::Read(SiteProgress {
                completed: 9,
                pages_enqueued: 7,
                awaiting_browser: true,
                ..SiteProgress::default()
            })
        );
        assert_eq!(progress_of(&[Value::Nil, Value::Nil, Value::Nil, Value::Nil, Value::Nil]), Progress::Missing);
        let bad = progress_of(&[b("garbage"), b("1"), b("7"), b("2"), b("0")]);
        assert_eq!(bad, Progress::Unreadable("queued = \"garbage\"".into()));
        for f in PROGRESS_FIELDS {
            assert!(crate::keys::SITE_NUMBERS.contains(&f), "{f} is a number the quarantine checks");
        }
    }
}
