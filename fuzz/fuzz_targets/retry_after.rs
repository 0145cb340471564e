//! Retry-After values as a server sends them (delta seconds, HTTP dates, garbage), at any current
//! time: never a panic, never a time before now, and the retry decision that follows is sane.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_shared::pace::{RetryDecision, parse_retry_after, retry_decision};
use shoal_shared::time::UnixMs;

fuzz_target!(|data: &[u8]| {
    // The first 8 bytes are the current time (any u64 milliseconds), the rest the header value.
    let (now, value) = match data.split_first_chunk::<8>() {
        Some((head, rest)) => (UnixMs(u64::from_le_bytes(*head)), rest),
        None => (UnixMs(1_795_996_800_000), data),
    };
    let value = String::from_utf8_lossy(value);
    let parsed = parse_retry_after(&value, now);
    if let Some(at) = parsed {
        assert!(at >= now, "Retry-After {value:?} parsed to {at:?}, before now {now:?}");
    }
    for retries in 0..4 {
        if let RetryDecision::RetryAt(at) = retry_decision(retries, parsed, now) {
            assert!(at >= now, "a retry scheduled before now");
        }
    }
});
