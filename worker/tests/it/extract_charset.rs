//! `charset::decode_html`: BOM, then Content-Type, then `<meta>` prescan, then a guess.

use encoding_rs::{Encoding, UTF_8, UTF_16LE, WINDOWS_1252};
use proptest::prelude::*;
use shoal_worker::charset::decode_html;
use shoal_worker::extract::{ExtractCaps, extract};
use url::Url;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/html/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).expect("fixture file is readable")
}

fn title_of(html: &str) -> Option<String> {
    let base = Url::parse("https://example.com/").expect("URL parses");
    extract(html, &base, &ExtractCaps::default()).title
}

#[test]
fn fixtures() {
    struct Case {
        file: &'static str,
        content_type: Option<&'static str>,
        encoding: &'static Encoding,
        title: Option<&'static str>,
    }
    let cases = [
        // The BOM wins over a (wrong) meta charset.
        Case { file: "utf8_bom.html", content_type: None, encoding: UTF_8, title: Some("über") },
        // ... and over the header.
        Case {
            file: "utf8_bom.html",
            content_type: Some("text/html; charset=iso-8859-1"),
            encoding: UTF_8,
            title: Some("über"),
        },
        Case { file: "utf16le_bom.html", content_type: None, encoding: UTF_16LE, title: Some("日本") },
        // http-equiv Content-Type in the first 1024 bytes.
        Case {
            file: "windows1252_meta.html",
            content_type: Some("text/html"),
            encoding: WINDOWS_1252,
            title: Some("Café crème – €5"),
        },
        // The header charset wins over the meta.
        Case {
            file: "windows1252_meta.html",
            content_type: Some("text/html; charset=utf-8"),
            encoding: UTF_8,
            title: Some("Caf\u{FFFD} cr\u{FFFD}me \u{FFFD} \u{FFFD}5"),
        },
        // Declared UTF-8 with invalid sequences: replacement characters, no failure.
        Case {
            file: "invalid_utf8.html",
            content_type: None,
            encoding: UTF_8,
            title: Some("ok \u{FFFD}\u{FFFD} bad \u{FFFD} end"),
        },
        // No declaration: chardetng recognises Latin-1-ish French.
        Case { file: "undeclared_latin.html", content_type: Some("text/html"), encoding: WINDOWS_1252, title: None },
    ];
    for c in cases {
        let bytes = fixture(c.file);
        let (text, encoding) = decode_html(&bytes, c.content_type);
        assert_eq!(encoding, c.encoding, "{} {:?}", c.file, c.content_type);
        assert_eq!(title_of(&text).as_deref(), c.title, "{}", c.file);
        assert!(!text.starts_with('\u{FEFF}'), "BOM removed");
    }
    let bytes = fixture("undeclared_latin.html");
    let (text, _) = decode_html(&bytes, None);
    assert!(text.contains("Le café était très fréquenté"));
}

#[test]
fn inline_cases() {
    let cases: &[(&[u8], Option<&str>, &Encoding, &str)] = &[
        (b"", None, UTF_8, ""),
        (b"plain ascii", None, UTF_8, "plain ascii"),
        ("undeclared ünïcödé".as_bytes(), None, UTF_8, "undeclared ünïcödé"),
        (b"caf\xe9", Some("text/html; charset=ISO-8859-1"), WINDOWS_1252, "café"),
        (b"caf\xe9", Some("text/html; charset=\"latin1\""), WINDOWS_1252, "café"),
        // An unknown header label falls through to the meta prescan.
        (
            b"<meta charset=windows-1252>caf\xe9",
            Some("text/html; charset=no-such-thing"),
            WINDOWS_1252,
            "<meta charset=windows-1252>café",
        ),
        // Undeclared UTF-8 cut mid-character by the body size cap is still UTF-8.
        (b"caf\xc3\xa9 cr\xc3\xa8me br\xc3", None, UTF_8, "café crème br\u{FFFD}"),
        // Declared UTF-8, invalid byte.
        (b"\xff", Some("text/html; charset=utf-8"), UTF_8, "\u{FFFD}"),
    ];
    for (bytes, content_type, want_encoding, want_text) in cases {
        let (text, encoding) = decode_html(bytes, *content_type);
        assert_eq!(encoding, *want_encoding, "{content_type:?}");
        assert_eq!(text, *want_text);
    }
}

#[test]
fn meta_after_prescan_window_is_not_used() {
    let mut bytes = b"<!doctype html>".to_vec();
    bytes.extend(std::iter::repeat_n(b' ', 1100));
    bytes.extend_from_slice(b"<meta charset=koi8-r>\xc1\xc2");
    let (_, encoding) = decode_html(&bytes, None);
    assert_ne!(encoding, encoding_rs::KOI8_R);
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048),
                                   ct in proptest::option::of("[ -~]{0,40}")) {
        let _ = decode_html(&bytes, ct.as_deref());
    }

    #[test]
    fn meta_soup_never_panics(pieces in prop::collection::vec(prop_oneof![
        Just(&b"<meta"[..]), Just(&b" charset="[..]), Just(&b" http-equiv=content-type"[..]),
        Just(&b" content='text/html;charset=gbk'"[..]), Just(&b"<!--"[..]), Just(&b"-->"[..]),
        Just(&b"\""[..]), Just(&b"'"[..]), Just(&b">"[..]), Just(&b"/"[..]), Just(&b"<a "[..]),
        Just(&b"</"[..]), Just(&b"<?"[..]), Just(&b"\xff"[..]), Just(&b"="[..]),
    ], 0..40)) {
        let _ = decode_html(&pieces.concat(), None);
    }
}
