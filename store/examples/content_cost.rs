//! What the content analysis (exact and near-duplicate clusters, issue 37) costs on a large site:
//! one site of N pages, each with a main text of 250 to 400 words drawn at random, one page in
//! 20 a near copy of an earlier one (three words changed) and one in 50 an exact copy, written
//! into a fresh audit database in batches of 1,000 as `shoal audit` does; then the `SiteDone`
//! batch, which runs the whole site analysis, is timed. The clustering alone (the pure functions
//! of `shoal_shared::content` over the same fingerprints) is timed too, and the process's peak
//! resident memory is read after each step (Linux `VmHWM`). Run it for several sizes (one
//! process each, so the peaks are each size's own) to see the growth with N.
//!
//! `cargo run --release -p shoal-store --example content_cost -- [pages]` (default 50000).

use shoal_shared::content::{Fingerprinter, exact_clusters, max_distance, near_duplicate_clusters};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::{Discovery, Event, PageRecord, UrlKind};
use shoal_shared::time::UnixMs;
use shoal_store::AuditDb;
use std::time::Instant;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap_or(0)
    }
}

/// Peak resident memory so far, in MiB (Linux; 0 elsewhere).
fn peak_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()))
        .map_or(0, |kb| kb / 1024)
}

/// How page `i`'s main text is made: words drawn from a vocabulary of 20,000 by a generator
/// seeded with `seed`, `len` of them, then `edits` (position, word) applied. Copies share the
/// seed, so no text is held: only these few numbers per page.
#[derive(Clone)]
struct Recipe {
    seed: u64,
    len: usize,
    edits: Vec<(usize, usize)>,
}

impl Recipe {
    fn fingerprint(&self) -> shoal_shared::content::TextFingerprint {
        // Scrambled: a seed taken from the page generator would replay its own sequence, and
        // every text would be a shifted copy of another.
        let mut words = Rng(self.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut f = Fingerprinter::default();
        for at in 0..self.len {
            let drawn = words.below(20_000);
            let word = self.edits.iter().rev().find(|(p, _)| *p == at).map_or(drawn, |(_, w)| *w);
            f.push_word(&format!("w{word}"));
        }
        f.finish()
    }
}

/// The recipes of `n` pages: one in 50 an exact copy of an earlier page, one in 20 a near copy
/// (three words changed), the rest texts of their own of 250 to 400 words.
fn recipes(n: usize, rng: &mut Rng) -> Vec<Recipe> {
    let mut out: Vec<Recipe> = Vec::with_capacity(n);
    for i in 0..n {
        let recipe = if i > 0 && i % 50 == 0 {
            out[rng.below(i)].clone()
        } else if i > 0 && i % 20 == 0 {
            let mut copy = out[rng.below(i)].clone();
            for _ in 0..3 {
                let at = rng.below(copy.len);
                copy.edits.push((at, rng.below(20_000)));
            }
            copy
        } else {
            Recipe { seed: rng.next(), len: 250 + rng.below(150), edits: Vec::new() }
        };
        out.push(recipe);
    }
    out
}

#[expect(clippy::print_stdout, reason = "a measuring tool prints its figures")]
fn run(pages: usize) {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let started = Instant::now();
    let prints: Vec<_> = recipes(pages, &mut rng).iter().map(Recipe::fingerprint).collect();
    let after_fingerprints = peak_mib();
    let fingerprinted = started.elapsed();

    let started = Instant::now();
    let hashes: Vec<u64> = prints.iter().map(|p| p.hash).collect();
    let sims: Vec<u64> = prints.iter().map(|p| p.simhash).collect();
    let exact = exact_clusters(&hashes);
    let near = near_duplicate_clusters(&sims, max_distance(90));
    let clustered = started.elapsed();
    let after_clustering = peak_mib();

    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut db = AuditDb::open(&dir.path().join("audit.db")).expect("opens");
    let audit = db.create_audit("{}", UnixMs(1)).expect("an audit");
    let site = db.add_site(audit, "http://big.test/").expect("a site");
    let (a, s) = (AuditId(audit.0), SiteId(site.0));
    for chunk in prints.chunks(1_000).enumerate() {
        let (c, chunk) = chunk;
        let events: Vec<Event> = chunk
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let n = c * 1_000 + k;
                Event::Page(Box::new(PageRecord {
                    audit: a,
                    site: s,
                    url: format!("http://big.test/p/{n}"),
                    kind: UrlKind::Page,
                    status: Some(200),
                    found_via: if n == 0 { Discovery::Start } else { Discovery::Link },
                    content_type: Some("text/html".to_owned()),
                    fetched_at: UnixMs(1),
                    title: Some(format!("Page {n}")),
                    meta_description: Some(format!("About page {n}")),
                    word_count: Some(p.words),
                    text_hash: Some(p.hash),
                    text_simhash: Some(p.simhash),
                    ..PageRecord::default()
                }))
            })
            .collect();
        db.apply(&events).expect("pages apply");
    }
    let before_analysis = peak_mib();
    let started = Instant::now();
    db.apply(&[Event::SiteDone { audit: a, site: s }]).expect("the analysis runs");
    let analysed = started.elapsed();
    let after_analysis = peak_mib();
    let near_pages: usize = near.iter().map(Vec::len).sum();
    println!(
        "{pages:>6} pages: fingerprints {fingerprinted:>9.2?}; clustering {clustered:>9.2?} ({} exact clusters, {} near \
         clusters of {near_pages} pages), peak {after_fingerprints} -> {after_clustering} MiB; site analysis {analysed:>9.2?}, peak {before_analysis} \
         -> {after_analysis} MiB",
        exact.len(),
        near.len(),
    );
}

fn main() {
    run(std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(50_000usize));
}
