//! `sitemap::parse_sitemap` on fixtures (tests/fixtures/sitemap) and generated hostile input.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use shoal_worker::sitemap::{MAX_LOC_BYTES, SitemapCaps, SitemapKind, SitemapParse, parse_sitemap};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/sitemap/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).expect("fixture file is readable")
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(bytes).expect("gzip into memory");
    enc.finish().expect("gzip into memory")
}

fn parse(bytes: &[u8]) -> SitemapParse {
    parse_sitemap(bytes, &SitemapCaps::default())
}

const URLSET: &[&str] = &[
    "https://www.example.com/",
    "https://www.example.com/search?q=fish&page=2",
    "https://www.example.com/cdata?a=1&b=2",
    "https://www.example.com/café/été",
];

#[test]
fn fixtures() {
    struct Case {
        file: &'static str,
        kind: SitemapKind,
        urls: &'static [&'static str],
        error: Option<&'static str>,
    }
    let cases = [
        Case { file: "urlset.xml", kind: SitemapKind::UrlSet, urls: URLSET, error: None },
        Case {
            file: "index.xml",
            kind: SitemapKind::Index,
            urls: &["https://www.example.com/sitemap-posts.xml.gz", "https://www.example.com/sitemap-pages.xml"],
            error: None,
        },
        Case {
            file: "prefixed.xml",
            kind: SitemapKind::UrlSet,
            urls: &["https://www.example.com/a", "https://www.example.com/b"],
            error: None,
        },
        // Broken halfway: what came before the error is kept.
        Case {
            file: "malformed.xml",
            kind: SitemapKind::UrlSet,
            urls: &["https://www.example.com/one", "https://www.example.com/two"],
            error: Some("malformed XML"),
        },
        Case {
            file: "truncated.xml",
            kind: SitemapKind::UrlSet,
            urls: &["https://www.example.com/one"],
            error: Some("unexpected end"),
        },
        // A raw `&` is reported but does not lose the rest of the file.
        Case {
            file: "raw_ampersand.xml",
            kind: SitemapKind::UrlSet,
            urls: &["https://www.example.com/p?a=1&b=2", "https://www.example.com/after"],
            error: Some("unescaped '&'"),
        },
        Case {
            file: "plain.txt",
            kind: SitemapKind::UrlSet,
            urls: &[
                "https://www.example.com/",
                "https://www.example.com/about",
                "https://www.example.com/contact",
                "HTTPS://www.example.com/upper",
            ],
            error: Some("line 5 is not an http(s) URL"),
        },
        Case { file: "not_a_sitemap.html", kind: SitemapKind::Unknown, urls: &[], error: None },
    ];
    for c in cases {
        let raw = fixture(c.file);
        for (label, bytes) in [("plain", raw.clone()), ("gzip", gzip(&raw))] {
            let got = parse(&bytes);
            assert_eq!(got.kind, c.kind, "{} ({label})", c.file);
            assert_eq!(got.urls, c.urls, "{} ({label})", c.file);
            match c.error {
                None => assert_eq!(got.error, None, "{} ({label})", c.file),
                Some(want) => {
                    let error = got.error.unwrap_or_default();
                    assert!(error.contains(want), "{} ({label}): {error:?}", c.file);
                }
            }
            assert!(!got.over_size && !got.over_count, "{} ({label})", c.file);
        }
    }
}

#[test]
fn empty_and_blank_input() {
    for bytes in [&b""[..], b"   \n\t ", b"\xEF\xBB\xBF"] {
        let got = parse(bytes);
        assert_eq!(got.kind, SitemapKind::Unknown);
        assert!(got.urls.is_empty());
        assert_eq!(got.error.as_deref(), Some("empty sitemap"));
    }
}

fn urlset_of(n: usize) -> Vec<u8> {
    let mut xml =
        String::from("<?xml version=\"1.0\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
    for i in 0..n {
        xml.push_str(&format!("<url><loc>https://www.example.com/p/{i}</loc></url>\n"));
    }
    xml.push_str("</urlset>\n");
    xml.into_bytes()
}

#[test]
fn url_count_cap() {
    let caps = SitemapCaps { max_urls: 3, ..SitemapCaps::default() };
    let got = parse_sitemap(&urlset_of(3), &caps);
    assert_eq!(got.urls.len(), 3);
    assert!(!got.over_count, "exactly at the cap is not over it");

    let got = parse_sitemap(&urlset_of(10), &caps);
    assert_eq!(got.urls, ["https://www.example.com/p/0", "https://www.example.com/p/1", "https://www.example.com/p/2"]);
    assert!(got.over_count);
    assert_eq!(got.error, None);

    let text = "https://a.example/1\nhttps://a.example/2\nhttps://a.example/3\nhttps://a.example/4\n";
    let got = parse_sitemap(text.as_bytes(), &caps);
    assert_eq!(got.urls.len(), 3);
    assert!(got.over_count);

    // The protocol default: 50,000.
    let got = parse(&gzip(&urlset_of(50_001)));
    assert_eq!(got.urls.len(), 50_000);
    assert!(got.over_count);
}

#[test]
fn size_cap_plain_and_gzip() {
    let body = urlset_of(1_000);
    let exact = SitemapCaps { max_bytes: body.len() as u64, ..SitemapCaps::default() };
    let got = parse_sitemap(&body, &exact);
    assert!(!got.over_size, "exactly at the cap is not over it");
    assert_eq!(got.urls.len(), 1_000);

    let small = SitemapCaps { max_bytes: 4_096, ..SitemapCaps::default() };
    for bytes in [body.clone(), gzip(&body)] {
        let got = parse_sitemap(&bytes, &small);
        assert!(got.over_size);
        assert!(!got.urls.is_empty() && got.urls.len() < 1_000);
        assert_eq!(got.error, None, "the cut is not the site's XML error");
    }
}

/// A small gzip file that inflates far past the cap: decompression must stop at the cap.
#[test]
fn gzip_bomb_stops_at_max_bytes() {
    let chunk = vec![0u8; 1 << 20];
    let mut enc = GzEncoder::new(Vec::new(), Compression::best());
    for _ in 0..64 {
        enc.write_all(&chunk).expect("gzip into memory");
    }
    let bomb = enc.finish().expect("gzip into memory");
    assert!(bomb.len() < 200 * 1024, "bomb is small: {}", bomb.len());
    let got = parse(&bomb);
    assert!(got.over_size);
    assert!(got.urls.is_empty());

    // The same with XML content and a low cap.
    let body = urlset_of(200_000);
    let got = parse_sitemap(
        &gzip(&body),
        &SitemapCaps { max_bytes: 1 << 20, max_urls: usize::MAX, ..SitemapCaps::default() },
    );
    assert!(got.over_size);
    assert!(!got.over_count);
    assert!(got.urls.len() > 10_000 && got.urls.len() < 200_000, "{}", got.urls.len());
}

#[test]
fn corrupt_gzip_is_an_error_not_a_panic() {
    let mut bytes = gzip(&urlset_of(100));
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..] {
        *b ^= 0x5a;
    }
    let got = parse(&bytes);
    assert!(got.error.is_some(), "{got:?}");
    let got = parse(&[0x1f, 0x8b]);
    assert!(got.error.is_some());
}

#[test]
fn oversized_locs_are_skipped_and_counted() {
    let long = format!("https://www.example.com/{}", "a".repeat(MAX_LOC_BYTES));
    let xml = format!("<urlset><url><loc>{long}</loc></url><url><loc>https://www.example.com/ok</loc></url></urlset>");
    let got = parse(xml.as_bytes());
    assert_eq!(got.urls, ["https://www.example.com/ok"]);
    assert_eq!(got.oversized_locs, 1);

    let text = format!("{long}\nhttps://www.example.com/ok\n");
    let got = parse(text.as_bytes());
    assert_eq!(got.urls, ["https://www.example.com/ok"]);
    assert_eq!(got.oversized_locs, 1);
}

#[test]
fn loc_outside_its_place_is_not_a_url() {
    let cases = [
        ("<urlset><loc>https://a.example/direct</loc></urlset>", SitemapKind::UrlSet),
        ("<urlset><sitemap><loc>https://a.example/wrong-entry</loc></sitemap></urlset>", SitemapKind::UrlSet),
        ("<sitemapindex><url><loc>https://a.example/wrong-entry</loc></url></sitemapindex>", SitemapKind::Index),
        ("<rss><channel><item><loc>https://a.example/feed</loc></item></channel></rss>", SitemapKind::Unknown),
    ];
    for (xml, kind) in cases {
        let got = parse(xml.as_bytes());
        assert_eq!(got.kind, kind, "{xml}");
        assert!(got.urls.is_empty(), "{xml}");
    }
}

#[test]
fn entities_and_whitespace_in_loc() {
    let xml =
        "<urlset><url><loc>\r\n  https://a.example/?x=&lt;&gt;&quot;&apos;&#65;&unknown;  \n</loc></url></urlset>";
    let got = parse(xml.as_bytes());
    assert_eq!(got.urls, ["https://a.example/?x=<>\"'A&unknown;"]);
    let error = got.error.unwrap_or_default();
    assert!(error.contains("&unknown;"), "{error}");
    let clean = "<urlset><url><loc>https://a.example/&#x2F;&amp;</loc></url></urlset>";
    let got = parse(clean.as_bytes());
    assert_eq!(got.urls, ["https://a.example//&"]);
    assert_eq!(got.error, None);
}

/// hreflang alternates under `<url>` (Google's sitemap form) stay with their entry's `<loc>`,
/// whichever comes first; `<image:loc>`-like extensions and other `rel`s are not alternates.
#[test]
fn hreflang_alternates_stay_with_their_entry() {
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url>
    <xhtml:link rel="alternate" hreflang="de" href="https://shop.test/de/"/>
    <loc>https://shop.test/en/</loc>
    <xhtml:link rel="alternate" hreflang="en" href="https://shop.test/en/?a=1&amp;b=2"/>
    <xhtml:link rel="canonical" href="https://shop.test/other/"/>
    <x:extra><xhtml:link rel="alternate" hreflang="fr" href="https://shop.test/too-deep/"/></x:extra>
  </url>
  <url><loc>https://shop.test/plain/</loc></url>
</urlset>"#;
    let got = parse(xml.as_bytes());
    assert_eq!(got.error, None);
    assert_eq!(got.urls, ["https://shop.test/en/", "https://shop.test/plain/"]);
    assert_eq!(got.alternates.len(), 1, "{:?}", got.alternates);
    assert_eq!(got.alternates[0].loc, "https://shop.test/en/");
    assert_eq!(
        got.alternates[0].alternates,
        [
            ("de".to_owned(), "https://shop.test/de/".to_owned()),
            ("en".to_owned(), "https://shop.test/en/?a=1&b=2".to_owned())
        ]
    );
    assert!(!got.alternates_over);
}

#[test]
fn hreflang_alternates_are_capped() {
    let entry = |i: usize| {
        format!(
            "<url><loc>https://shop.test/{i}</loc>{}</url>",
            (0..10)
                .map(|l| format!(
                    "<xhtml:link rel=\"alternate\" hreflang=\"l{l}\" href=\"https://shop.test/{i}/{l}\"/>"
                ))
                .collect::<String>()
        )
    };
    let xml = format!(
        "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">{}</urlset>",
        (0..100).map(entry).collect::<String>()
    );
    let got = parse_sitemap(xml.as_bytes(), &SitemapCaps { max_alternates: 55, ..SitemapCaps::default() });
    assert_eq!(got.urls.len(), 100, "every URL is still read");
    assert_eq!(got.alternates.iter().map(|e| e.alternates.len()).sum::<usize>(), 55);
    assert!(got.alternates_over);
}
