//! Pacing and retries: the step every request of every task kind goes through.
//!
//! The rules are `shoal_shared::pace`'s ([`status_pace`] says which answers are tried again and
//! which slow the host, [`retry_decision`] when and how often); this module applies them to a job:
//! it holds a request until the host's gap has passed, queues the retry, and writes the findings
//! of a request given up.

use super::{Crawler, Job, fill_response};
use crate::fetch::{FetchError, Fetched, Method};
use shoal_shared::finding::Code;
use shoal_shared::frontier::{Frontier, Lease};
use shoal_shared::pace::{
    MAX_RETRIES, MAX_RETRY_WAIT, RetryDecision, SLOW_MODE_GAP, StatusPace, answer_pace, parse_retry_after,
    retry_decision,
};
use shoal_shared::ratelimit::RateLimit;
use shoal_shared::record::PageRecord;
use shoal_shared::task::FoundVia;
use shoal_shared::time::UnixMs;
use shoal_shared::url::NormalizedUrl;
use std::time::{Duration, Instant};

impl Job<'_> {
    /// Schedules a retry or says it is time to give up.
    pub(super) fn retry(&mut self, retry_after: Option<UnixMs>) -> Option<RetryDecision> {
        let d = retry_decision(self.task().retries, retry_after, self.now);
        if let RetryDecision::RetryAt(at) = d {
            shoal_metrics::metrics().retries.inc();
            let mut t = self.task().clone();
            t.retries += 1;
            t.not_before = at;
            self.out.requeue = Some(t);
            return None;
        }
        Some(d)
    }

    /// What an answer tells about its server, for the frontier to apply to the host's pace
    /// ([`ServerSignals`](shoal_shared::latency::ServerSignals)): its response time (with the latency guard on), a quota its RateLimit
    /// headers state, and a hold until its Retry-After when it asks the host to slow down (a 429,
    /// a 503 with Retry-After: the whole host waits, not only the retried URL).
    pub(super) fn observe(&mut self, resp: &Fetched, latency_guard: bool) {
        // Retry-After and a quota's reset count from the answer, not from the claim.
        let answered_at = UnixMs::from(std::time::SystemTime::now());
        let ra = resp.header("retry-after").and_then(|v| parse_retry_after(v, answered_at));
        let s = &mut self.out.signals;
        if latency_guard {
            s.response_ms = Some(u32::try_from(resp.head_after.as_millis()).unwrap_or(u32::MAX));
        }
        let headers = resp.headers.iter().filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?)));
        if let Some(rl) = RateLimit::parse(headers, answered_at) {
            let q = rl.pace(answered_at);
            if q.gap_ms.is_some() {
                s.quota_gap_ms = q.gap_ms;
            }
            s.hold_until = s.hold_until.max(q.hold_until);
        }
        if answer_pace(resp.status, ra.is_some()) == StatusPace::SlowDown {
            s.hold_until = s.hold_until.max(ra);
        }
    }

    /// The answer's Retry-After as a time; a value that does not parse counts as none.
    pub(super) fn retry_after(&self, resp: &Fetched) -> Option<UnixMs> {
        resp.header("retry-after").and_then(|v| parse_retry_after(v, self.now))
    }

    /// A 429, or a 503 with Retry-After, was answered: the completion tells the frontier, which
    /// puts the host in slow mode for every worker, and the site owner is told why the audit
    /// slowed down.
    pub(super) fn rate_limited(&mut self, status: u16) {
        shoal_metrics::metrics().rate_limited.inc();
        self.out.rate_limited = true;
        let host_root = self.host_root();
        self.finding(Code::RateLimited, &host_root, slow_mode_detail(status));
    }
}

/// The detail of a `rate_limited` finding: which answer, and what slow mode means, from the
/// shared pace rules.
fn slow_mode_detail(status: u16) -> String {
    let answer = if status == 503 { "503 Service Unavailable with Retry-After" } else { "429 Too Many Requests" };
    format!("answered {answer}; host slowed to 1 request every {} s", SLOW_MODE_GAP.as_secs())
}

/// Why a retry was given up, in words for the finding.
pub(super) fn describe_give_up(d: RetryDecision) -> String {
    match d {
        RetryDecision::GiveUp(shoal_shared::pace::GiveUpReason::WaitTooLong { wait_ms }) => {
            format!("server asked to wait {} s, over the {} s limit", wait_ms / 1000, MAX_RETRY_WAIT.as_secs())
        }
        _ => format!("still failing after {MAX_RETRIES} retries"),
    }
}

impl<F: Frontier> Crawler<F> {
    /// Handles a request that got no answer: retried if the failure may pass, else reported.
    /// Returns whether the record is to be published (false when the task was requeued).
    pub(super) fn failure(&self, job: &mut Job<'_>, rec: &mut PageRecord, e: &FetchError) -> bool {
        rec.error = Some(e.kind());
        if e.is_retryable() {
            match job.retry(None) {
                None => return false,
                Some(d) => {
                    let url = job.task().url.to_string();
                    job.finding(Code::FetchFailed, &url, format!("{e}; {}", describe_give_up(d)));
                }
            }
        } else {
            let url = job.task().url.to_string();
            let code = match (e, &job.task().found_via) {
                (FetchError::PrivateAddress(_), _) => Code::PrivateAddress,
                (FetchError::HeadersTooLarge, _) => Code::HeadersTooLarge,
                (_, FoundVia::Start) => Code::StartUnreachable,
                _ => Code::FetchFailed,
            };
            job.finding(code, &url, e.to_string());
        }
        true
    }

    /// The common first step of every fetch: a failure is recorded (or retried), an answer is
    /// recorded and retried if [`status_pace`] says so; `Some` only for a final answer to
    /// interpret further.
    pub(super) fn answered(
        &self,
        job: &mut Job<'_>,
        rec: &mut PageRecord,
        result: Result<Fetched, FetchError>,
    ) -> Option<Fetched> {
        let resp = match result {
            Ok(r) => r,
            Err(e) => {
                if self.failure(job, rec, &e) {
                    job.publish(rec.clone());
                }
                return None;
            }
        };
        fill_response(rec, &resp);
        self.transient_status(job, &resp).then_some(resp)
    }

    /// An answer to try again ([`answer_pace`]: 429, 502/503/504): retried on the schedule, a 429
    /// or a 503 with Retry-After slowing the host. True when the answer is final, including a
    /// retry given up.
    pub(super) fn transient_status(&self, job: &mut Job<'_>, resp: &Fetched) -> bool {
        let status = resp.status;
        let ra = job.retry_after(resp);
        let pace = answer_pace(status, ra.is_some());
        if pace == StatusPace::Final {
            return true;
        }
        let url = job.task().url.to_string();
        if pace == StatusPace::SlowDown {
            job.rate_limited(status);
        }
        match job.retry(ra) {
            None => false,
            Some(d) => {
                let code = if status == 429 { Code::FetchFailed } else { Code::ServerError };
                job.finding(code, &url, format!("HTTP {status}; {}", describe_give_up(d)));
                true
            }
        }
    }

    /// One request, sent no sooner than the host's gap after this worker's previous request to it.
    ///
    /// The frontier spaces *claims* a gap apart; a request delayed between claim and send (a busy
    /// machine) could otherwise arrive inside the next one's gap, as the site would see it. And a
    /// request let through the gate can still leave late (a new connection to open, a thread the
    /// machine did not run): what its answer shows of that moves the host's mark (see
    /// [`SendMark::answered`]), so the next request waits from when this one really left.
    pub(super) async fn fetch(
        &self,
        job: &mut Job<'_>,
        method: Method,
        url: &NormalizedUrl,
        cap: Option<u64>,
    ) -> Result<Fetched, FetchError> {
        if let Some(why) = &job.unresolved {
            return Err(FetchError::Dns(why.clone()));
        }
        job.sent = true;
        let host = &job.lease.host;
        let gap = Duration::from_millis(job.lease.gap_ms);
        let gate = self.wait_turn(job.lease, gap).await;
        let result = self.fetcher.fetch(method, url.as_url(), cap).await;
        if let (Some(gate), Ok(resp)) = (gate, &result) {
            self.last_send.entry_by_ref(host).and_compute_with(|mark| {
                let mark = mark.map_or(SendMark::new(gate), |e| e.into_value());
                moka::ops::compute::Op::Put(mark.answered(gate, resp.head_after))
            });
        }
        if let Ok(resp) = &result {
            // Only a page's time is a sample for the latency guard: robots.txt, resources and
            // sitemaps are often static files answered far faster than pages, and a baseline of
            // theirs would make every page look slow (shoal_shared::latency).
            let sample = self.settings.latency_guard && job.task().kind == shoal_shared::task::TaskKind::Page;
            job.observe(resp, sample);
        }
        result
    }

    /// Waits until the host's gap has passed since this process's last request to it, and until
    /// the request is on time by the frontier, then marks the send; the gate's instant, or `None`
    /// for a host without a gap (not marked: two cache updates per request cost `shoal audit`
    /// about 5 % of its CPU at gap 0, measured with `bench/cpu.py`; the price is that the first
    /// answer after a gap comes into force, a 429's slow mode, counts whole as a late departure,
    /// which holds the next request back once).
    ///
    /// On time or not at all: the frontier gave the lease a start (its slot) and began the host's
    /// gap there, so another worker may be given the next start a gap later. A request about to
    /// leave more than [`ON_TIME`] after its slot (held back by this process's spacing, or woken
    /// late by a busy machine: 17 ms once in CI, where another worker's request then came 283 ms
    /// after this one at a 300 ms gap) asks the frontier first ([`Frontier::depart`]), which says
    /// when it may leave (a gap after any start given since) and moves the host's next start a gap
    /// past that. The ask takes time too, so the check runs again after it, at most
    /// [`MAX_DEPART_ASKS`] times.
    async fn wait_turn(&self, lease: &Lease, gap: Duration) -> Option<Instant> {
        if gap.is_zero() {
            return None;
        }
        let host = &lease.host;
        let mut slot = lease.started_at;
        let mut asks = 0;
        loop {
            let now = Instant::now();
            let wall = UnixMs::from(std::time::SystemTime::now());
            let may_ask = asks < MAX_DEPART_ASKS;
            // Late even if it left now: it asks the frontier first (below), so it does not take
            // the turn yet.
            let late = may_ask && wall > slot.plus(ON_TIME);
            // One atomic step per host: this process's own spacing (its previous request to the
            // host may have left late), and for a request on time the turn taken, so two requests
            // of this process cannot both take it.
            let mut local = None;
            self.last_send.entry_by_ref(host).and_compute_with(|mark| match mark.map(|e| e.into_value()) {
                Some(m) if m.at + gap > now => {
                    local = Some(m.at + gap - now);
                    moka::ops::compute::Op::Nop
                }
                _ if late => moka::ops::compute::Op::Nop,
                Some(m) => moka::ops::compute::Op::Put(SendMark { at: now, ..m }),
                None => moka::ops::compute::Op::Put(SendMark::new(now)),
            });
            let leave = wall.plus(local.unwrap_or_default());
            if may_ask && leave > slot.plus(ON_TIME) {
                asks += 1;
                shoal_metrics::metrics().late_departures.inc();
                slot = match self.frontier().depart(lease, slot, leave).await {
                    Ok(at) => at,
                    Err(e) => {
                        // The frontier cannot say (Redis is away): leave as planned; the
                        // process's own spacing still holds its requests apart.
                        tracing::warn!(host = %host, error = %e, "could not tell the frontier of a late request");
                        leave
                    }
                };
                let until = slot.0.saturating_sub(UnixMs::from(std::time::SystemTime::now()).0);
                if until > 0 {
                    tokio::time::sleep(Duration::from_millis(until)).await;
                }
                continue;
            }
            match local {
                Some(d) => tokio::time::sleep(d).await,
                None => return Some(now),
            }
        }
    }
}

/// How late after its slot a request may leave without asking the frontier ([`Crawler::wait_turn`]):
/// the scheduling jitter every request has. Later than this, another worker's request given the
/// next start could reach the host first.
const ON_TIME: Duration = Duration::from_millis(2);

/// How often one request asks the frontier when it may leave ([`Crawler::wait_turn`]) before it
/// goes anyway: each ask moves the host's next start a gap past the answer, so a request that
/// stays late only on the last ask's round trip; the bound keeps a machine too busy to answer in
/// time from holding a request forever.
const MAX_DEPART_ASKS: u32 = 4;

/// A host's send mark in this process: when its last request left, as far as can be told, and the
/// quickest answer it has given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SendMark {
    /// The next request may leave a gap after this.
    pub(super) at: Instant,
    /// The shortest time from a request's start to its answer's head seen from this host.
    pub(super) fastest: Option<Duration>,
}

impl SendMark {
    fn new(at: Instant) -> SendMark {
        SendMark { at, fastest: None }
    }

    /// A request that passed the gate at `gate` was answered `head_after` later. It took at least
    /// its host's quickest answer; whatever more it took is an upper bound on how late it left
    /// after the gate (a connection opened first, a machine too busy to run the send at once, or
    /// a slower answer), so the mark moves to the gate plus that much: the next request keeps the
    /// whole gap from when this one may have reached the server. The host's first answer has no
    /// quicker one to compare with, and its request opened the host's first connection: all of
    /// its time counts (once per host: robots.txt, whose connection set-up came out of the next
    /// gap). Never earlier than the mark was.
    #[must_use]
    pub(super) fn answered(self, gate: Instant, head_after: Duration) -> SendMark {
        let late = self.fastest.map_or(head_after, |f| head_after.saturating_sub(f));
        let fastest = self.fastest.map_or(head_after, |f| f.min(head_after));
        SendMark { at: self.at.max(gate + late), fastest: Some(fastest) }
    }
}

#[cfg(test)]
mod tests {
    use super::{describe_give_up, slow_mode_detail};
    use crate::crawl::testing::{crawler, findings, job, lease, response, site};
    use shoal_shared::finding::Code;
    use shoal_shared::pace::{GiveUpReason, RetryDecision};
    use shoal_shared::task::TaskKind;

    /// A request that left late (its answer came later than the host's quickest) moves the host's
    /// mark by that much; an answer as quick as ever leaves it at the gate.
    #[test]
    fn a_late_answer_moves_the_send_mark() {
        let t0 = std::time::Instant::now();
        let ms = std::time::Duration::from_millis;
        let m = super::SendMark { at: t0, fastest: None }.answered(t0, ms(5));
        assert_eq!((m.at, m.fastest), (t0 + ms(5), Some(ms(5))), "the first answer counts whole (its connection)");
        let gate = t0 + ms(300);
        let m = super::SendMark { at: gate, ..m }.answered(gate, ms(70));
        assert_eq!((m.at, m.fastest), (gate + ms(65), Some(ms(5))), "65 ms late: the next waits from there");
        let later = gate + ms(400);
        let m = super::SendMark { at: later, ..m }.answered(gate, ms(5));
        assert_eq!(m.at, later, "never moved back");
    }

    /// Sends to a host with a gap are spaced from the previous one; a host without one is not
    /// marked (what a held-back request tells the frontier is checked end to end, in
    /// `distributed::a_request_held_back_by_its_worker_keeps_the_gap_to_other_workers`).
    #[tokio::test]
    async fn sends_are_spaced_by_the_gap_and_unmarked_without_one() {
        let c = crawler();
        let l = lease("http://a.test/", TaskKind::Page, 0);
        let ms = std::time::Duration::from_millis;
        assert_eq!(c.wait_turn(&l, ms(0)).await, None, "no gap: not marked");
        let t = c.wait_turn(&l, ms(40)).await.expect("marked");
        let t2 = c.wait_turn(&l, ms(40)).await.expect("marked");
        assert!(t2 >= t + ms(40), "the gap counts from the previous send");
    }

    /// The words are read from the shared limits now; they must still say what they said.
    #[test]
    fn give_up_words_are_unchanged() {
        assert_eq!(
            describe_give_up(RetryDecision::GiveUp(GiveUpReason::WaitTooLong { wait_ms: 61_500 })),
            "server asked to wait 61 s, over the 60 s limit"
        );
        assert_eq!(
            describe_give_up(RetryDecision::GiveUp(GiveUpReason::RetriesExhausted)),
            "still failing after 2 retries"
        );
        assert_eq!(slow_mode_detail(429), "answered 429 Too Many Requests; host slowed to 1 request every 3 s");
        assert_eq!(
            slow_mode_detail(503),
            "answered 503 Service Unavailable with Retry-After; host slowed to 1 request every 3 s"
        );
    }

    /// What `transient_status` did with one answer: final or not, requeued with how many
    /// retries, slow mode asked for, findings.
    fn transient(status: u16, retries: u8) -> (bool, Option<u8>, bool, Vec<(Code, String)>) {
        transient_with(status, &[], retries)
    }

    fn transient_with(
        status: u16,
        headers: &[(&'static str, &str)],
        retries: u8,
    ) -> (bool, Option<u8>, bool, Vec<(Code, String)>) {
        let lease = lease("https://a.test/page", TaskKind::Page, retries);
        let site = site();
        let mut job = job(&lease, &site);
        let last = crawler().transient_status(&mut job, &response(status, headers, "", false));
        (last, job.out.requeue.as_ref().map(|t| t.retries), job.out.rate_limited, findings(&job.out))
    }

    /// Issue 10 moved "which statuses are retried" to `status_pace`: the same answers are retried,
    /// slow the host and are given up with the same findings.
    #[test]
    fn transient_statuses_keep_their_meaning() {
        for status in [200, 301, 404, 428, 430, 500, 501, 505] {
            assert_eq!(transient(status, 0), (true, None, false, vec![]), "HTTP {status}");
        }
        for status in [502, 503, 504] {
            assert_eq!(transient(status, 0), (false, Some(1), false, vec![]), "HTTP {status}");
            let gave_up = (Code::ServerError, format!("HTTP {status}; still failing after 2 retries"));
            assert_eq!(transient(status, 2), (true, None, false, vec![gave_up]), "HTTP {status}");
        }
        let slowed = (Code::RateLimited, slow_mode_detail(429));
        assert_eq!(transient(429, 1), (false, Some(2), true, vec![slowed.clone()]));
        let gave_up = (Code::FetchFailed, "HTTP 429; still failing after 2 retries".to_owned());
        assert_eq!(transient(429, 2), (true, None, true, vec![slowed, gave_up]));
    }

    /// Issue 17 item 3: a 503 that says when to come back slows the host like a 429; one
    /// without Retry-After (or with one that does not parse) is a plain retry, as before.
    #[test]
    fn a_503_with_retry_after_slows_the_host() {
        let slowed = (Code::RateLimited, slow_mode_detail(503));
        assert_eq!(transient_with(503, &[("retry-after", "5")], 0), (false, Some(1), true, vec![slowed.clone()]));
        let gave_up = (Code::ServerError, "HTTP 503; still failing after 2 retries".to_owned());
        assert_eq!(transient_with(503, &[("retry-after", "5")], 2), (true, None, true, vec![slowed, gave_up]));
        assert_eq!(transient_with(503, &[("retry-after", "soon")], 0), (false, Some(1), false, vec![]));
        assert_eq!(transient_with(502, &[("retry-after", "5")], 0), (false, Some(1), false, vec![]));
    }
}
