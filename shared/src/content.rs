//! A page's main text as numbers, and how pages are grouped by it (issue 37, content).
//!
//! The worker reads a page's main text once, word by word, into a [`TextFingerprint`]: how many
//! words, a hash of the normalised words (equal for exact duplicates) and a 64-bit SimHash of its
//! three-word shingles (close for near-duplicates). Only these 20 bytes travel in the page record
//! and are stored; the site analysis groups pages by them with [`exact_clusters`] and
//! [`near_duplicate_clusters`], both linear in the site's pages.
//!
//! Why SimHash rather than MinHash: eight bytes per page (one SQLite integer) instead of a
//! signature of 64 or more values, and the candidate search below needs nothing else. Its
//! similarity is the share of equal fingerprint bits: `1 - hamming / 64`. Two texts that differ
//! in a few words out of hundreds share most shingles and land a few bits apart; unrelated texts
//! differ in about 32 bits.
//!
//! Why the candidate search is linear: two fingerprints at most `k` bits apart agree exactly on
//! at least two of `k + 2` blocks of bits (pigeonhole), so every such pair shares a bucket of at
//! least one of the `C(k+2, 2)` tables keyed by a pair of blocks (28 tables of 16-bit keys at the
//! default 90 %, after Manku, Jain and Das Sarma, "Detecting near-duplicates for web crawling",
//! 2007). Each page is compared with at most [`BUCKET_REPRESENTATIVES`] pages of each of its
//! buckets, and pages found similar are merged with a union-find: work is `tables × pages ×
//! representatives`, memory one table at a time. A bucket full of pages unlike each other (only
//! likely at thresholds near the minimum, where keys are short) can hide a pair; a cluster of
//! thousands of near-identical pages costs the same per page as a site without duplicates.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Default for [`ContentLimits::thin_page_words`]: Screaming Frog's "low content" default.
pub const DEFAULT_THIN_PAGE_WORDS: u32 = 200;
/// Default for [`ContentLimits::near_duplicate_percent`].
pub const DEFAULT_NEAR_DUPLICATE_PERCENT: u8 = 90;
/// The lowest near-duplicate threshold accepted: below it the tables of the candidate search
/// multiply (91 tables of 9-bit keys at 80 %) and pages that merely share a template match.
pub const MIN_NEAR_DUPLICATE_PERCENT: u8 = 80;
/// Default for [`ContentLimits::image_budget_kib`]: Screaming Frog's "images over 100 KB".
pub const DEFAULT_IMAGE_BUDGET_KIB: u32 = 100;
/// Pages compared per bucket of the candidate search, at most.
pub const BUCKET_REPRESENTATIVES: usize = 8;
/// Near-duplicate search only looks at pages with at least this many words: shorter texts have
/// too few shingles for their fingerprints to mean anything (they are thin pages anyway).
pub const MIN_NEAR_DUPLICATE_WORDS: u32 = 20;

/// The content thresholds of an audit (`--thin-page-words`, `--near-duplicate-percent`,
/// `--image-budget-kib`), carried in its site limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContentLimits {
    /// A page whose main text has fewer words than this is thin (0 turns the check off).
    pub thin_page_words: u32,
    /// Pages whose text fingerprints are at least this similar (percent, 80-100) are
    /// near-duplicates.
    pub near_duplicate_percent: u8,
    /// An image larger than this many KiB is reported (0 turns the check off).
    pub image_budget_kib: u32,
}

impl Default for ContentLimits {
    fn default() -> Self {
        ContentLimits {
            thin_page_words: DEFAULT_THIN_PAGE_WORDS,
            near_duplicate_percent: DEFAULT_NEAR_DUPLICATE_PERCENT,
            image_budget_kib: DEFAULT_IMAGE_BUDGET_KIB,
        }
    }
}

impl ContentLimits {
    /// The most fingerprint bits two near-duplicates may differ in.
    #[must_use]
    pub fn max_distance(&self) -> u32 {
        max_distance(self.near_duplicate_percent)
    }
}

/// The most differing bits of two 64-bit fingerprints at least `percent` similar
/// (`floor(64 × (100 − percent) / 100)`; 6 at 90 %). Percentages are clamped to 80-100.
#[must_use]
pub fn max_distance(percent: u8) -> u32 {
    let p = u32::from(percent.clamp(MIN_NEAR_DUPLICATE_PERCENT, 100));
    64 * (100 - p) / 100
}

/// The similarity of two fingerprints, in whole percent (`100 × (64 − hamming) / 64`, rounded
/// down).
#[must_use]
pub fn similarity_percent(a: u64, b: u64) -> u8 {
    let same = 64 - (a ^ b).count_ones();
    u8::try_from(same * 100 / 64).unwrap_or(100)
}

/// What a page's main text comes down to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextFingerprint {
    /// Words (whitespace-separated runs holding a letter or digit).
    pub words: u32,
    /// Hash of the normalised words in order: equal for texts that differ only in case,
    /// punctuation and spacing.
    pub hash: u64,
    /// SimHash of the text's three-word shingles.
    pub simhash: u64,
}

/// Builds a [`TextFingerprint`] from words as they come, in constant memory.
///
/// Cheap per word, because every HTML page of a crawl passes here: a word is hashed once
/// (a multiply-rotate fold of its bytes, eight at a time, while they are normalised), and the exact hash, the shingles and SimHash's votes are built from those 64-bit word
/// hashes with a few arithmetic steps each, never by hashing bytes again. The votes are kept
/// bit-sliced (a binary counter per fingerprint bit, its digits in `planes`), so one shingle costs
/// a ripple-carry add that usually stops after a plane or two instead of 64 additions.
#[derive(Clone, Default)]
pub struct Fingerprinter {
    words: u32,
    /// The normalised words so far, as a hash: each word's hash folded in order.
    exact: u64,
    /// Shingles voted so far.
    shingles: u32,
    /// Per fingerprint bit, how many shingles set it: plane `i` holds digit `i` of every bit's
    /// count (counts up to 2^32, which no capped page reaches).
    planes: [u64; 32],
    /// Hashes of the last three words, newest last.
    window: [u64; 3],
    /// A word being normalised, when it is not plain ASCII.
    normalised: String,
}

impl std::fmt::Debug for Fingerprinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fingerprinter").field("words", &self.words).finish_non_exhaustive()
    }
}

/// A 64-bit finaliser (MurmurHash3's fmix64): every input bit moves every output bit, so values
/// combined with a few additions and rotations come out as independent hashes.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Words longer than this are cut before hashing (a URL or a base64 blob in the text).
const MAX_WORD_BYTES: usize = 64;

/// [`ASCII_CLASS`] of a byte that is neither whitespace nor a letter or digit.
const SKIP: u8 = 0;
/// [`ASCII_CLASS`] of ASCII whitespace (what `split_ascii_whitespace` splits at).
const SPACE: u8 = 1;
/// Per byte of ASCII text: [`SPACE`], [`SKIP`], or a letter's or digit's lower-case form.
static ASCII_CLASS: [u8; 256] = {
    let mut t = [SKIP; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_whitespace() {
            t[b] = SPACE;
        } else if c.is_ascii_alphanumeric() {
            t[b] = c.to_ascii_lowercase();
        }
        b += 1;
    }
    t
};

/// A normalised word's hash, fed a byte at a time: bytes are gathered eight to a `u64` and
/// folded by a multiply and a rotation, and [`mix`] finishes it. Both the ASCII path and the
/// Unicode path feed it, so a word hashes the same whichever path normalised it.
#[derive(Default)]
struct WordHash {
    folded: u64,
    chunk: u64,
    len: usize,
}

impl WordHash {
    /// Adds a byte; false once the word has [`MAX_WORD_BYTES`] (the byte is then dropped).
    fn push(&mut self, b: u8) -> bool {
        if self.len == MAX_WORD_BYTES {
            return false;
        }
        self.chunk |= u64::from(b) << (8 * (self.len % 8));
        self.len += 1;
        if self.len.is_multiple_of(8) {
            self.folded = (self.folded ^ self.chunk).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
            self.chunk = 0;
        }
        true
    }

    /// The word's hash, or `None` for an empty word.
    fn finish(self) -> Option<u64> {
        (self.len > 0).then(|| mix(self.folded ^ self.chunk.rotate_left(7) ^ self.len as u64))
    }
}

impl Fingerprinter {
    /// Adds every word of `text` (whitespace separates words).
    pub fn push_text(&mut self, text: &str) {
        if text.is_ascii() {
            self.push_ascii_text(text.as_bytes());
        } else {
            for word in text.split_whitespace() {
                self.push_word(word);
            }
        }
    }

    /// Adds one word: lower-cased, letters and digits only; a word with neither is skipped.
    pub fn push_word(&mut self, word: &str) {
        if word.is_ascii() {
            self.push_ascii_word(word.as_bytes());
            return;
        }
        self.normalised.clear();
        for c in word.chars().filter(|c| c.is_alphanumeric()) {
            self.normalised.extend(c.to_lowercase());
        }
        if self.normalised.is_empty() {
            return;
        }
        let cut = floor_char_boundary(&self.normalised, MAX_WORD_BYTES);
        let mut h = WordHash::default();
        for &b in &self.normalised.as_bytes()[..cut] {
            h.push(b);
        }
        if let Some(h) = h.finish() {
            self.add_word(h);
        }
    }

    /// An ASCII word, normalised and hashed in one pass.
    fn push_ascii_word(&mut self, word: &[u8]) {
        let mut h = WordHash::default();
        for &b in word {
            if b.is_ascii_alphanumeric() && !h.push(b.to_ascii_lowercase()) {
                break;
            }
        }
        if let Some(h) = h.finish() {
            self.add_word(h);
        }
    }

    /// ASCII text in one pass over its bytes, each read once through [`ASCII_CLASS`]: whitespace
    /// ends a word, letters and digits go into its hash lower-cased, anything else is skipped. The
    /// same words as splitting at ASCII whitespace and calling [`Self::push_ascii_word`] on each,
    /// without the splitting pass (a page's text is most of what the fingerprint reads).
    fn push_ascii_text(&mut self, text: &[u8]) {
        let mut h = WordHash::default();
        for &b in text {
            match ASCII_CLASS[usize::from(b)] {
                SKIP => {}
                SPACE => {
                    if let Some(word) = std::mem::take(&mut h).finish() {
                        self.add_word(word);
                    }
                }
                lower => {
                    // Past MAX_WORD_BYTES the byte is dropped, as push_ascii_word does.
                    h.push(lower);
                }
            }
        }
        if let Some(word) = h.finish() {
            self.add_word(word);
        }
    }

    /// A normalised word, by its hash.
    fn add_word(&mut self, h: u64) {
        self.words = self.words.saturating_add(1);
        // A multiply folds the sequence (an odd factor is a bijection, and `h` is mixed already);
        // `finish` mixes the result once.
        self.exact = (self.exact.rotate_left(17) ^ h).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.window = [self.window[1], self.window[2], h];
        if self.words >= 3 {
            let [a, b, c] = self.window;
            self.vote(mix(a.rotate_left(21) ^ b.rotate_left(42) ^ c));
        }
    }

    fn vote(&mut self, feature: u64) {
        self.shingles = self.shingles.saturating_add(1);
        let mut carry = feature;
        for plane in &mut self.planes {
            let next = *plane & carry;
            *plane ^= carry;
            carry = next;
            if carry == 0 {
                break;
            }
        }
    }

    /// The fingerprint of everything pushed. A text of one or two words is its own shingle.
    #[must_use]
    pub fn finish(mut self) -> TextFingerprint {
        if (1..3).contains(&self.words) {
            let [_, a, b] = self.window;
            self.vote(mix(a.rotate_left(21) ^ b));
        }
        // A bit is set when more than half the shingles set it: when its count is above
        // floor(shingles / 2). The 64 counts are compared with that number at once, bit-sliced,
        // from the most significant plane down: `above` holds the bits already known greater,
        // `equal` those equal so far. No count exceeds the number of shingles, so planes above
        // its length are all zero.
        let half = self.shingles / 2;
        let used = (u32::BITS - self.shingles.leading_zeros()) as usize;
        let (mut above, mut equal) = (0u64, u64::MAX);
        for (i, plane) in self.planes[..used.min(self.planes.len())].iter().enumerate().rev() {
            let digit = if half >> i & 1 == 1 { u64::MAX } else { 0 };
            above |= equal & plane & !digit;
            equal &= !(plane ^ digit);
        }
        let simhash = above;
        TextFingerprint { words: self.words, hash: mix(self.exact ^ u64::from(self.words)), simhash }
    }
}

/// The largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut i = at.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The fingerprint of a whole text at once.
#[must_use]
pub fn fingerprint(text: &str) -> TextFingerprint {
    let mut f = Fingerprinter::default();
    f.push_text(text);
    f.finish()
}

/// Groups of indices into `hashes` holding the same value, each sorted, groups in order of
/// their first member; singletons left out.
#[must_use]
pub fn exact_clusters(hashes: &[u64]) -> Vec<Vec<usize>> {
    let mut by_hash: HashMap<u64, Vec<usize>, foldhash::fast::RandomState> = HashMap::default();
    for (i, h) in hashes.iter().enumerate() {
        by_hash.entry(*h).or_default().push(i);
    }
    let mut groups: Vec<Vec<usize>> = by_hash.into_values().filter(|g| g.len() > 1).collect();
    groups.sort_unstable_by_key(|g| g[0]);
    groups
}

/// Groups of indices into `prints` whose fingerprints are at most `max_distance` bits apart,
/// directly or through other members (connected components), each sorted, groups in order of
/// their first member; singletons left out. Linear in `prints.len()`; see the module
/// documentation. `max_distance` above 12 is treated as 12 ([`MIN_NEAR_DUPLICATE_PERCENT`]).
#[must_use]
pub fn near_duplicate_clusters(prints: &[u64], max_distance: u32) -> Vec<Vec<usize>> {
    let k = max_distance.min(max_distance_floor());
    if prints.len() <= ALL_PAIRS_UP_TO {
        return clusters_of_all_pairs(prints, k);
    }
    clusters_by_blocks(prints, k)
}

/// Up to this many pages every pair is compared: n²/2 XORs and popcounts cost less than the
/// block tables' hash maps (a site of 50 pages: about 1,300 comparisons instead of 28 tables of 50
/// entries), and the answer is the definition itself.
const ALL_PAIRS_UP_TO: usize = 128;

/// [`near_duplicate_clusters`] by comparing every pair.
fn clusters_of_all_pairs(prints: &[u64], k: u32) -> Vec<Vec<usize>> {
    let mut sets = UnionFind::new(prints.len());
    for (i, p) in prints.iter().enumerate() {
        for (j, q) in prints.iter().enumerate().skip(i + 1) {
            if (p ^ q).count_ones() <= k {
                sets.union(i, j);
            }
        }
    }
    sets.groups()
}

/// [`near_duplicate_clusters`] in time linear in the pages (the module documentation).
fn clusters_by_blocks(prints: &[u64], k: u32) -> Vec<Vec<usize>> {
    let blocks = block_masks(k + 2);
    let mut sets = UnionFind::new(prints.len());
    // A bucket's representatives inline (their count, then the indices): no allocation per page.
    let mut buckets: HashMap<u64, (u8, [u32; BUCKET_REPRESENTATIVES]), foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(prints.len(), foldhash::fast::RandomState::default());
    for (a, mask_a) in blocks.iter().enumerate() {
        for mask_b in &blocks[a + 1..] {
            buckets.clear();
            for (i, p) in prints.iter().enumerate() {
                // The two blocks are disjoint: their bits together are the key.
                let (len, reps) = buckets.entry(p & (mask_a | mask_b)).or_insert((0, [0; BUCKET_REPRESENTATIVES]));
                for &r in &reps[..usize::from(*len)] {
                    let r = r as usize;
                    if (p ^ prints[r]).count_ones() <= k {
                        sets.union(i, r);
                    }
                }
                if usize::from(*len) < BUCKET_REPRESENTATIVES {
                    reps[usize::from(*len)] = u32::try_from(i).unwrap_or(u32::MAX);
                    *len += 1;
                }
            }
        }
    }
    sets.groups()
}

/// [`max_distance`] at the lowest threshold accepted.
fn max_distance_floor() -> u32 {
    max_distance(MIN_NEAR_DUPLICATE_PERCENT)
}

/// `n` disjoint masks covering the 64 bits, as equal in width as they can be.
fn block_masks(n: u32) -> Vec<u64> {
    let n = n.clamp(1, 64);
    let mut masks = Vec::with_capacity(n as usize);
    let mut start = 0u32;
    for i in 0..n {
        let width = 64 / n + u32::from(i < 64 % n);
        let mask = if width == 64 { u64::MAX } else { ((1u64 << width) - 1) << start };
        masks.push(mask);
        start += width;
    }
    masks
}

/// Disjoint sets over `0..n`, with path halving and union by size.
#[derive(Debug)]
struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    fn new(n: usize) -> UnionFind {
        let n32 = u32::try_from(n).unwrap_or(u32::MAX);
        UnionFind { parent: (0..n32).collect(), size: vec![1; n] }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] as usize != x {
            let grand = self.parent[self.parent[x] as usize];
            self.parent[x] = grand;
            x = grand as usize;
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (mut a, mut b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        if self.size[a] < self.size[b] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b] = u32::try_from(a).unwrap_or(u32::MAX);
        self.size[a] += self.size[b];
    }

    fn groups(mut self) -> Vec<Vec<usize>> {
        let mut by_root: HashMap<usize, Vec<usize>, foldhash::fast::RandomState> = HashMap::default();
        for i in 0..self.parent.len() {
            let root = self.find(i);
            if self.size[root] > 1 {
                by_root.entry(root).or_default().push(i);
            }
        }
        let mut groups: Vec<Vec<usize>> = by_root.into_values().collect();
        groups.sort_unstable_by_key(|g| g[0]);
        groups
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(seed: u64, n: usize) -> Vec<String> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!("w{}", x % 5_000)
            })
            .collect()
    }

    #[test]
    fn case_punctuation_and_spacing_do_not_change_the_text() {
        let a = fingerprint("Hello, World!  The   price is $19.99.");
        let b = fingerprint("hello world the price is 1999");
        assert_eq!((a.words, a.hash, a.simhash), (b.words, b.hash, b.simhash));
        assert_eq!(a.words, 6);
        assert_ne!(fingerprint("hello world").hash, fingerprint("world hello").hash);
        assert_eq!(fingerprint("— … !!").words, 0, "no letter or digit, no word");
        assert_eq!(fingerprint("Größe ÄPFEL 東京").words, 3);
    }

    #[test]
    fn a_few_changed_words_stay_close_and_other_texts_do_not() {
        let base = words(1, 400);
        let mut edited = base.clone();
        for i in [10, 120, 250, 390] {
            edited[i] = format!("changed{i}");
        }
        let (a, b) = (fingerprint(&base.join(" ")), fingerprint(&edited.join(" ")));
        assert_ne!(a.hash, b.hash);
        assert!(similarity_percent(a.simhash, b.simhash) >= 90, "{}", similarity_percent(a.simhash, b.simhash));
        let other = fingerprint(&words(2, 400).join(" "));
        assert!(similarity_percent(a.simhash, other.simhash) < 80, "{}", similarity_percent(a.simhash, other.simhash));
    }

    #[test]
    fn thresholds_map_to_bit_distances() {
        assert_eq!(max_distance(90), 6);
        assert_eq!(max_distance(100), 0);
        assert_eq!(max_distance(80), 12);
        assert_eq!(max_distance(10), 12, "clamped to the minimum threshold");
        assert_eq!(similarity_percent(0, 0), 100);
        assert_eq!(similarity_percent(0, 0b11_1111), 90);
        assert_eq!(similarity_percent(0, 0b111_1111), 89);
        for n in 2..=14 {
            let masks = block_masks(n);
            assert_eq!(masks.iter().fold(0, |acc, m| acc | m), u64::MAX);
            assert_eq!(masks.iter().map(|m| m.count_ones()).sum::<u32>(), 64);
        }
    }

    /// Every pair at most `k` bits apart ends in one cluster, and nothing else does, whichever
    /// bits differ (the pigeonhole over blocks must hold at each block boundary).
    #[test]
    fn every_close_pair_is_found_and_far_ones_are_not() {
        let mut x = 0x1234_5678_9abc_def1u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for k in [0u32, 3, 6, 12] {
            let mut prints = Vec::new();
            let mut expected = Vec::new();
            for _ in 0..300 {
                let base = next();
                let mut flipped = base;
                let mut flips = 0;
                while flips < k {
                    let bit = next() % 64;
                    if (flipped ^ base) >> bit & 1 == 0 {
                        flipped ^= 1 << bit;
                        flips += 1;
                    }
                }
                expected.push(vec![prints.len(), prints.len() + 1]);
                prints.push(base);
                prints.push(flipped);
            }
            assert_eq!(near_duplicate_clusters(&prints, k), expected, "k = {k}");
        }
    }

    #[test]
    fn a_huge_cluster_of_near_copies_is_one_group() {
        // 20,000 fingerprints within 6 bits of one another: every bucket is full of members,
        // and each page is still compared with at most 8 per bucket.
        let base = 0xdead_beef_cafe_f00du64;
        let prints: Vec<u64> = (0..20_000u64).map(|i| base ^ (i % 7) ^ ((i % 3) << 40)).collect();
        let groups = near_duplicate_clusters(&prints, 6);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].len(), 20_000);
        assert!(near_duplicate_clusters(&[], 6).is_empty());
        assert!(near_duplicate_clusters(&[base], 6).is_empty());
    }

    #[test]
    fn bit_sliced_votes_decide_like_plain_counters() {
        for n in [1usize, 2, 3, 64, 1_000, 70_001] {
            let mut f = Fingerprinter { words: 10, ..Fingerprinter::default() };
            let mut votes = [0i64; 64];
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ n as u64;
            for _ in 0..n {
                x = mix(x);
                f.vote(x);
                for (bit, v) in votes.iter_mut().enumerate() {
                    *v += if x >> bit & 1 == 1 { 1 } else { -1 };
                }
            }
            let want = votes.iter().enumerate().fold(0u64, |a, (bit, v)| a | u64::from(*v > 0) << bit);
            assert_eq!(f.finish().simhash, want, "{n} shingles");
        }
    }

    #[test]
    fn one_pass_over_ascii_text_reads_the_words_of_splitting_it() {
        let texts = [
            "",
            "  ",
            "one",
            "Two words",
            " lead\ttab\nnewline\r\x0cfeed  trail ",
            "a-b c_d (e) !!! ... 42x",
            &format!("{} end", "y".repeat(200)),
            "The quick brown fox jumps over the lazy dog, again and again and again.",
        ];
        for text in texts {
            let mut split = Fingerprinter::default();
            for word in text.split_ascii_whitespace() {
                split.push_ascii_word(word.as_bytes());
            }
            let mut one = Fingerprinter::default();
            one.push_ascii_text(text.as_bytes());
            let (a, b) = (split.finish(), one.finish());
            assert_eq!((a.words, a.hash, a.simhash), (b.words, b.hash, b.simhash), "{text:?}");
        }
    }

    #[test]
    fn long_and_non_ascii_words_are_read() {
        let a = fingerprint("Grüße aus Köln, ÜBER alles");
        let b = fingerprint("grüße AUS köln über ALLES!");
        assert_eq!((a.words, a.hash, a.simhash), (b.words, b.hash, b.simhash));
        let long = "x".repeat(10_000);
        assert_eq!(fingerprint(&format!("{long} y")).words, 2);
    }

    #[test]
    fn small_sites_compare_every_pair_and_agree_with_the_block_tables() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for n in [0usize, 1, 2, 5, 50, ALL_PAIRS_UP_TO] {
            for k in [0u32, 3, 6, 12] {
                // Families of near copies (a few bits flipped) among unrelated prints.
                let mut prints = Vec::with_capacity(n);
                for i in 0..n {
                    x = mix(x);
                    let p = if i % 3 == 0 || prints.is_empty() { x } else { prints[i - 1] ^ (1u64 << (x % 64)) };
                    prints.push(p);
                }
                assert_eq!(clusters_of_all_pairs(&prints, k), clusters_by_blocks(&prints, k), "{n} prints, k {k}");
            }
        }
    }

    #[test]
    fn exact_groups() {
        assert_eq!(exact_clusters(&[5, 1, 5, 2, 1, 5]), vec![vec![0, 2, 5], vec![1, 4]]);
        assert!(exact_clusters(&[1, 2, 3]).is_empty());
    }
}
