//! URL normalisation, on absolute URLs and on links resolved against a base: never a panic, and
//! normalisation is idempotent (a normalised URL parses back to itself), since the normalised text
//! is what deduplicates the crawl and what is stored and read back.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_shared::url::{HostKey, NormalizedUrl, Scope, twin_host};

fn check(n: &NormalizedUrl) {
    let again = NormalizedUrl::parse(n.as_str()).unwrap_or_else(|e| panic!("{n} does not parse again: {e}"));
    assert_eq!(again.as_str(), n.as_str(), "normalising {n} again changed it");
    let _ = n.fingerprint();
    let key = n.host_key();
    assert_eq!(HostKey::of(n.as_url()), key);
    let _ = key.host_name();
    let _ = twin_host(n.as_url());
    let scope = Scope::of(n.as_url());
    assert!(scope.contains(n.as_url()), "{n} is outside its own site");
    let _ = scope.host_keys();
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // "BASE\nHREF" resolves HREF against BASE; a single line is an absolute URL.
    let (base, href) = text.split_once('\n').unwrap_or(("https://www.example.com/a/b/c?d=e", text));
    if let Ok(n) = NormalizedUrl::parse(text) {
        check(&n);
    }
    if let Ok(base) = url::Url::parse(base)
        && let Ok(n) = NormalizedUrl::join(&base, href)
    {
        check(&n);
    }
});
