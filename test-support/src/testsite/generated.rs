//! Deterministic generated sites: `pages` pages linked as a tree with fan-out `links`, rendered on
//! demand so that thousands of hosts cost no memory.
//!
//! Page 0 is `/`, page `i` is `/p/{i}`. Page `i` links to its children `i*links+1 ..= i*links+links`
//! (those that exist), back to its parent, and back to `/`. Every page has a unique title, meta
//! description and exactly one `<h1>`, so a crawl finds exactly `pages` pages and nothing to report
//! about titles or headings; and a viewport, Open Graph and Twitter card tags and a paragraph of
//! [`TEXT_WORDS`] words drawn for that page (so no page is thin, and no two are alike), sent
//! gzipped like any text a server compresses.

use std::fmt::Write as _;

/// Shape of a generated site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Generated {
    pub(crate) pages: usize,
    pub(crate) links: usize,
}

impl Generated {
    pub(crate) fn new(pages: usize, links_per_page: usize) -> Generated {
        Generated { pages, links: links_per_page.max(1) }
    }

    /// The page number a path names, if it is one of this site's pages.
    pub(crate) fn page_of(&self, path: &str) -> Option<usize> {
        let index = if path == "/" {
            0
        } else {
            let digits = path.strip_prefix("/p/")?;
            // Only the canonical spelling: "/p/01" or "/p/+1" are other URLs, so 404.
            if digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse().ok()?
        };
        (index < self.pages).then_some(index)
    }

    /// Depth of page `i` (links from `/`).
    pub(crate) fn depth(&self, mut i: usize) -> usize {
        let mut depth = 0;
        while i > 0 {
            i = (i - 1) / self.links;
            depth += 1;
        }
        depth
    }

    /// The HTML of page `i` on `host`.
    pub(crate) fn render(&self, host: &str, i: usize) -> String {
        let text = words(host, i);
        let mut links = String::new();
        let first_child = i.saturating_mul(self.links).saturating_add(1);
        let children = first_child..first_child.saturating_add(self.links).min(self.pages);
        for child in children {
            let _ = write!(links, "<li><a href=\"{}\">Page {child}</a></li>", page_path(child));
        }
        if i > 0 {
            let parent = (i - 1) / self.links;
            let _ = write!(links, "<li><a href=\"{}\">Up to page {parent}</a></li>", page_path(parent));
            if parent != 0 {
                links.push_str("<li><a href=\"/\">Home</a></li>");
            }
        }
        format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>{host} page {i}</title>\
             <meta name=\"description\" content=\"Generated test page {i} of {pages} on {host}.\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <meta property=\"og:title\" content=\"{host} page {i}\">\
             <meta property=\"og:image\" content=\"http://{host}/og.png\">\
             <meta property=\"og:url\" content=\"http://{host}{path}\">\
             <meta name=\"twitter:card\" content=\"summary\">\
             </head><body><h1>Page {i}</h1><p>This is generated page {i} of the test site {host}.</p>\
             <p>{text}</p><ul>{links}</ul></body></html>\n",
            path = page_path(i),
            pages = self.pages,
        )
    }
}

/// Words of the paragraph each generated page carries: over the thin-page threshold (200).
pub(crate) const TEXT_WORDS: usize = 220;

/// Short words the paragraphs are drawn from.
const VOCABULARY: &[&str] = &[
    "apple", "river", "stone", "cloud", "green", "quick", "table", "light", "north", "sound", "paper", "glass",
    "horse", "field", "music", "plant", "sugar", "train", "water", "smile", "bread", "chair", "dream", "earth",
    "flame", "grape", "heart", "island", "jelly", "knife", "lemon", "metal", "night", "ocean", "piano", "queen",
    "radio", "sheep", "tiger", "uncle", "voice", "whale", "yacht", "zebra", "amber", "brick", "coral", "delta",
    "eagle", "frost", "ghost", "honey", "ivory", "jolly", "koala", "lunar", "maple", "noble", "olive", "pearl",
    "quiet", "robin", "solar", "tulip",
];

/// The paragraph of page `i` on `host`: [`TEXT_WORDS`] words drawn by a generator seeded with
/// both, so every page says something of its own.
fn words(host: &str, i: usize) -> String {
    let mut x = host.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    x ^= (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = String::with_capacity(TEXT_WORDS * 7);
    for n in 0..TEXT_WORDS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if n > 0 {
            out.push(' ');
        }
        out.push_str(VOCABULARY[(x % VOCABULARY.len() as u64) as usize]);
    }
    out
}

/// The path of generated page `i`.
pub(crate) fn page_path(i: usize) -> String {
    if i == 0 { "/".to_owned() } else { format!("/p/{i}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip_and_only_canonical_spellings_match() {
        let site = Generated::new(20, 3);
        for i in 0..20 {
            assert_eq!(site.page_of(&page_path(i)), Some(i));
        }
        for other in ["/p/20", "/p/01", "/p/", "/p/1/", "/p/+1", "/q/1", "/index.html"] {
            assert_eq!(site.page_of(other), None, "{other}");
        }
    }

    #[test]
    fn depth_is_logarithmic() {
        assert_eq!(Generated::new(1, 3).depth(0), 0);
        assert_eq!(Generated::new(13, 3).depth(12), 2);
        assert_eq!(Generated::new(14, 3).depth(13), 3);
        assert_eq!(Generated::new(500, 10).depth(499), 3);
        assert_eq!(Generated::new(5, 1).depth(4), 4);
    }
}
