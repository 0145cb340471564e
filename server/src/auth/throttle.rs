//! Throttling of dashboard logins, per client address and overall.
//!
//! Every login attempt takes one unit from two allowances, its client address's and the
//! coordinator's overall one; a login that succeeds gives its unit back, so only failures count.
//! When either allowance is used up the login is refused with 429 and a `Retry-After`, **before**
//! the token is compared: a throttled guesser learns nothing, not even from a right guess.
//!
//! | allowance | burst | then | so at most |
//! |---|---|---|---|
//! | one client address (an IPv4 address, an IPv6 /64) | [`PER_CLIENT_BURST`] failures | one per [`PER_CLIENT_EVERY`] | 5 a minute |
//! | all addresses together | [`OVERALL_BURST`] failures | one per [`OVERALL_EVERY`] | 30 a minute, 43,200 a day |
//!
//! With the token at least 16 characters long ([`crate::auth::MIN_TOKEN_LEN`]), 43,200 guesses a day
//! are nothing against 2^64 possible hex tokens; the per-address allowance keeps one noisy client
//! from using up everyone's, and the overall one holds against many addresses. The price is that
//! a guesser can keep real users out of the *form* for as long as it keeps guessing; the bearer
//! header (scripts, `curl`) is not throttled and keeps working.
//!
//! Each allowance is a GCRA (a token bucket stored as one time: when it would be full again). A
//! client whose bucket is full again is the same as one never seen, so such entries are dropped
//! whenever the table of client addresses is full; if none is, the entry closest to full again
//! goes. The table thus never holds more than [`MAX_CLIENTS`] addresses (a few hundred KiB),
//! however many addresses try, and forgets nobody that matters: the overall allowance lets about
//! 60 failures through a minute, and a client's bucket is full again a minute after its last one.
//! Behind a proxy every client has the proxy's address and shares its allowance (documented in
//! docs/dashboard.md).
//!
//! Time is a parameter, so the arithmetic is tested to the millisecond without sleeping.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Failed logins one client address may make at once.
pub const PER_CLIENT_BURST: u32 = 5;
/// After its burst, a client address earns one more attempt per this long.
pub const PER_CLIENT_EVERY: Duration = Duration::from_secs(12);
/// Failed logins all addresses together may make at once.
pub const OVERALL_BURST: u32 = 30;
/// After the overall burst, one more attempt (from anyone) per this long.
pub const OVERALL_EVERY: Duration = Duration::from_secs(2);
/// Client addresses remembered at most.
pub const MAX_CLIENTS: usize = 4096;

/// One allowance: `burst` attempts at once, then one per `every`.
#[derive(Debug, Clone, Copy)]
struct Rate {
    burst: u32,
    every: Duration,
}

impl Rate {
    /// How long until an attempt fits, given the bucket's "full again" time `tat`; zero if now.
    fn wait(self, tat: Option<Instant>, now: Instant) -> Duration {
        let owed = tat.map_or(Duration::ZERO, |t| t.saturating_duration_since(now));
        (owed + self.every).saturating_sub(self.every * self.burst)
    }

    /// The bucket's "full again" time after one more attempt at `now`.
    fn take(self, tat: Option<Instant>, now: Instant) -> Instant {
        tat.map_or(now, |t| t.max(now)) + self.every
    }

    /// The bucket's "full again" time after an attempt is given back; `None` when that is full.
    fn give_back(self, tat: Instant, now: Instant) -> Option<Instant> {
        tat.checked_sub(self.every).filter(|t| *t > now)
    }
}

const CLIENT: Rate = Rate { burst: PER_CLIENT_BURST, every: PER_CLIENT_EVERY };
const OVERALL: Rate = Rate { burst: OVERALL_BURST, every: OVERALL_EVERY };

/// A refused attempt: how long to wait, and whose allowance is used up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limited {
    /// How long until an attempt would be let through.
    pub(crate) retry_after: Duration,
    /// The overall allowance (rather than the client's own) is used up.
    pub(crate) overall: bool,
}

impl Limited {
    /// `Retry-After` in whole seconds, rounded up, at least 1.
    pub(crate) fn retry_after_secs(&self) -> u64 {
        let d = self.retry_after;
        (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1)
    }
}

/// Which allowance an address draws from: IPv4 addresses one each, IPv6 by /64 (what one
/// subscriber usually holds), IPv4-mapped IPv6 as the IPv4 address. An unknown peer (no socket
/// address) shares one key.
fn client_key(addr: Option<IpAddr>) -> IpAddr {
    match addr {
        Some(IpAddr::V4(v4)) => IpAddr::V4(v4),
        Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        None => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

#[derive(Debug, Default)]
struct State {
    /// Per client key: when its bucket is full again.
    clients: HashMap<IpAddr, Instant>,
    /// When the overall bucket is full again.
    overall: Option<Instant>,
}

/// The login throttle (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Throttle {
    state: Mutex<State>,
}

impl Throttle {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes one attempt from `client`'s and the overall allowance, or, when either is used up,
    /// takes nothing and says how long to wait.
    pub(crate) fn attempt(&self, client: Option<IpAddr>, now: Instant) -> Result<(), Limited> {
        let key = client_key(client);
        let mut st = self.lock();
        let mine = st.clients.get(&key).copied();
        let wait = CLIENT.wait(mine, now);
        if !wait.is_zero() {
            return Err(Limited { retry_after: wait, overall: false });
        }
        let wait = OVERALL.wait(st.overall, now);
        if !wait.is_zero() {
            return Err(Limited { retry_after: wait, overall: true });
        }
        st.overall = Some(OVERALL.take(st.overall, now));
        if mine.is_none() && st.clients.len() >= MAX_CLIENTS {
            make_room(&mut st.clients, now);
        }
        st.clients.insert(key, CLIENT.take(mine, now));
        Ok(())
    }

    /// Gives back the attempt of a login that succeeded: only failures count.
    pub(crate) fn succeeded(&self, client: Option<IpAddr>, now: Instant) {
        let key = client_key(client);
        let mut st = self.lock();
        match st.clients.get(&key).and_then(|t| CLIENT.give_back(*t, now)) {
            Some(t) => st.clients.insert(key, t),
            None => st.clients.remove(&key),
        };
        st.overall = st.overall.and_then(|t| OVERALL.give_back(t, now));
    }

    /// Client addresses remembered now.
    #[cfg(test)]
    fn clients(&self) -> usize {
        self.lock().clients.len()
    }
}

/// Drops every client whose bucket is full again; if none is, the one closest to it.
fn make_room(clients: &mut HashMap<IpAddr, Instant>, now: Instant) {
    clients.retain(|_, t| *t > now);
    if clients.len() >= MAX_CLIENTS
        && let Some(k) = clients.iter().min_by_key(|(_, t)| **t).map(|(k, _)| *k)
    {
        clients.remove(&k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn v4(last: u8) -> Option<IpAddr> {
        Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, last)))
    }

    #[test]
    fn a_client_gets_its_burst_then_one_attempt_per_interval() {
        let t = Throttle::default();
        let t0 = Instant::now();
        for i in 0..PER_CLIENT_BURST {
            assert_eq!(t.attempt(v4(1), t0), Ok(()), "attempt {i} of the burst");
        }
        let limited = t.attempt(v4(1), t0).expect_err("over the burst");
        assert_eq!(limited, Limited { retry_after: PER_CLIENT_EVERY, overall: false });
        assert_eq!(limited.retry_after_secs(), 12);
        let almost = t0 + PER_CLIENT_EVERY - Duration::from_millis(1);
        let limited = t.attempt(v4(1), almost).expect_err("1 ms early");
        assert_eq!(limited.retry_after, Duration::from_millis(1));
        assert_eq!(limited.retry_after_secs(), 1, "rounded up");
        assert_eq!(t.attempt(v4(1), t0 + PER_CLIENT_EVERY), Ok(()), "one more after the interval");
        assert!(t.attempt(v4(1), t0 + PER_CLIENT_EVERY).is_err(), "and only one");
        assert_eq!(t.attempt(v4(2), t0), Ok(()), "another address has its own allowance");
        let full_again = t0 + PER_CLIENT_EVERY * (PER_CLIENT_BURST + 1);
        for _ in 0..PER_CLIENT_BURST {
            assert_eq!(t.attempt(v4(1), full_again), Ok(()), "a whole burst once the bucket refilled");
        }
    }

    #[test]
    fn a_successful_login_gives_its_attempt_back() {
        let t = Throttle::default();
        let t0 = Instant::now();
        for _ in 0..(PER_CLIENT_BURST * 3) {
            assert_eq!(t.attempt(v4(1), t0), Ok(()));
            t.succeeded(v4(1), t0);
        }
        assert_eq!(t.clients(), 0, "nothing is remembered of successful logins");
        for _ in 0..PER_CLIENT_BURST {
            assert_eq!(t.attempt(v4(1), t0), Ok(()));
        }
        assert!(t.attempt(v4(1), t0).is_err());
    }

    #[test]
    fn the_overall_allowance_holds_against_many_addresses() {
        let t = Throttle::default();
        let t0 = Instant::now();
        for i in 0..OVERALL_BURST {
            let last = u8::try_from(i).expect("small");
            assert_eq!(t.attempt(v4(last), t0), Ok(()), "address {i}");
        }
        let limited = t.attempt(v4(200), t0).expect_err("over the overall burst");
        assert_eq!(limited, Limited { retry_after: OVERALL_EVERY, overall: true });
        assert_eq!(t.attempt(v4(200), t0 + OVERALL_EVERY), Ok(()), "one more after its interval");
        assert!(t.attempt(v4(201), t0 + OVERALL_EVERY).is_err());
    }

    #[test]
    fn a_refused_attempt_takes_nothing() {
        let t = Throttle::default();
        let t0 = Instant::now();
        for _ in 0..PER_CLIENT_BURST {
            t.attempt(v4(1), t0).expect("within the burst");
        }
        for _ in 0..1000 {
            assert!(t.attempt(v4(1), t0).is_err());
        }
        assert_eq!(t.attempt(v4(1), t0 + PER_CLIENT_EVERY), Ok(()), "hammering did not push the wait out");
        // The refused attempts did not use the overall allowance either.
        for i in 0..(OVERALL_BURST - PER_CLIENT_BURST - 1) {
            let last = u8::try_from(10 + i).expect("small");
            assert_eq!(t.attempt(v4(last), t0 + PER_CLIENT_EVERY), Ok(()));
        }
    }

    #[test]
    fn ipv6_addresses_share_their_64_and_mapped_ipv4_is_ipv4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().expect("ip");
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().expect("ip");
        let c: IpAddr = "2001:db8:1:3::1".parse().expect("ip");
        assert_eq!(client_key(Some(a)), client_key(Some(b)));
        assert_ne!(client_key(Some(a)), client_key(Some(c)));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().expect("ip");
        assert_eq!(client_key(Some(mapped)), client_key(v4(7)));
        let t = Throttle::default();
        let t0 = Instant::now();
        for _ in 0..PER_CLIENT_BURST {
            t.attempt(Some(a), t0).expect("within the burst");
        }
        assert!(t.attempt(Some(b), t0).is_err(), "the same /64");
        assert_eq!(t.attempt(Some(c), t0), Ok(()), "another /64");
    }

    #[test]
    fn the_client_table_stays_bounded_with_many_addresses() {
        let t = Throttle::default();
        let mut now = Instant::now();
        // One failure from each of 3 x MAX_CLIENTS addresses, as fast as the overall allowance lets.
        for i in 0..(3 * MAX_CLIENTS as u32) {
            let addr = Some(IpAddr::V4(Ipv4Addr::from(0x0A00_0000 + i)));
            if t.attempt(addr, now).is_err() {
                now += OVERALL_EVERY;
                t.attempt(addr, now).expect("let through after the overall interval");
            }
            assert!(t.clients() <= MAX_CLIENTS, "{} clients after {i}", t.clients());
        }
    }

    #[test]
    fn a_full_table_drops_the_entry_closest_to_full_again() {
        let t = Throttle::default();
        let t0 = Instant::now();
        {
            let mut st = t.lock();
            for i in 0..MAX_CLIENTS as u32 {
                let tat = t0 + Duration::from_secs(60) + Duration::from_millis(u64::from(i));
                st.clients.insert(IpAddr::V4(Ipv4Addr::from(i)), tat);
            }
        }
        t.attempt(v4(1), t0).expect("a new address");
        assert_eq!(t.clients(), MAX_CLIENTS);
        let st = t.lock();
        assert!(!st.clients.contains_key(&IpAddr::V4(Ipv4Addr::from(0))), "the entry closest to full made room");
        assert!(st.clients.contains_key(&IpAddr::V4(Ipv4Addr::from(1))));
        assert!(st.clients.contains_key(&client_key(v4(1))));
        drop(st);
        // Entries already full again are dropped first, all of them.
        let later = t0 + Duration::from_secs(120);
        t.attempt(v4(2), later).expect("another new address");
        assert_eq!(t.clients(), 1, "every full bucket was dropped");
    }

    #[test]
    fn an_unknown_peer_shares_one_allowance() {
        let t = Throttle::default();
        let t0 = Instant::now();
        for _ in 0..PER_CLIENT_BURST {
            t.attempt(None, t0).expect("within the burst");
        }
        assert!(t.attempt(None, t0).is_err());
    }
}
