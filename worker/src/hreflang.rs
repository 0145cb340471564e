//! hreflang in the worker: the `Link` response header's alternates, and the rules about one page
//! that need what only the page's HTML says (its `<html lang>`). The rules about a page's whole
//! set of alternates, sitemaps' included, and about its alternates' answers run in the audit
//! database when the site is done (`store/src/hreflang.rs`, with `shoal_shared::hreflang`).

use shoal_shared::finding::Code;
use shoal_shared::hreflang::{html_lang_agrees, parse};
use url::Url;

/// Alternates read from one page's `<link>` elements, and from its `Link` header, at most (each).
pub const MAX_HREFLANG: usize = crate::extract::MAX_HREFLANG;

/// The `Link` header's hreflang alternates (RFC 8288: `<URL>; rel="alternate"; hreflang="de"`,
/// several links per header and several headers), URLs resolved against `base` as written, at
/// most [`MAX_HREFLANG`] (the bool says there were more). Never panics; a malformed link is
/// skipped up to the next comma.
#[must_use]
pub fn from_link_headers(values: &[String], base: &Url, max_url_len: usize) -> (Vec<(String, String)>, bool) {
    let mut out = Vec::new();
    for value in values {
        let mut rest = value.as_str();
        while let Some(link) = next_link(&mut rest) {
            if !link.rel.split_ascii_whitespace().any(|r| r.eq_ignore_ascii_case("alternate")) {
                continue;
            }
            let Some(lang) = link.hreflang else { continue };
            if out.len() >= MAX_HREFLANG {
                return (out, true);
            }
            let target = match base.join(link.target.trim()) {
                Ok(u) => u.as_str().chars().take(max_url_len).collect(),
                Err(_) => link.target.chars().take(crate::extract::MAX_INVALID_LINK_LEN).collect(),
            };
            out.push((lang.trim().to_owned(), target));
        }
    }
    (out, false)
}

/// One link of a `Link` header.
#[derive(Debug, Default, PartialEq, Eq)]
struct HeaderLink {
    target: String,
    rel: String,
    hreflang: Option<String>,
}

/// Reads the next `<target>; param=value; …` from `rest`, moving past it and its comma.
fn next_link(rest: &mut &str) -> Option<HeaderLink> {
    loop {
        let s = rest.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
        if s.is_empty() {
            *rest = s;
            return None;
        }
        let Some(after_lt) = s.strip_prefix('<') else {
            // Not a link: skip to the next comma outside quotes.
            *rest = skip_to_comma(s);
            continue;
        };
        let Some(end) = after_lt.find('>') else {
            *rest = "";
            return None;
        };
        let mut link = HeaderLink { target: after_lt[..end].to_owned(), ..HeaderLink::default() };
        let mut params = &after_lt[end + 1..];
        loop {
            params = params.trim_start();
            let Some(p) = params.strip_prefix(';') else { break };
            let p = p.trim_start();
            let name_end = p.find(['=', ';', ',']).unwrap_or(p.len());
            let name = p[..name_end].trim().to_ascii_lowercase();
            let mut after = &p[name_end..];
            let mut value = String::new();
            if let Some(v) = after.strip_prefix('=') {
                let (val, tail) = param_value(v.trim_start());
                value = val;
                after = tail;
            }
            match name.as_str() {
                "rel" if link.rel.is_empty() => link.rel = value,
                "hreflang" if link.hreflang.is_none() => link.hreflang = Some(value),
                _ => {}
            }
            params = after;
        }
        *rest = skip_to_comma(params);
        return Some(link);
    }
}

/// A parameter's value (a quoted string with `\` escapes, or a token) and what follows it.
fn param_value(s: &str) -> (String, &str) {
    if let Some(q) = s.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = q.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, e)) = chars.next() {
                        value.push(e);
                    }
                }
                '"' => return (value, &q[i + 1..]),
                _ => value.push(c),
            }
        }
        (value, "")
    } else {
        let end = s.find([';', ',']).unwrap_or(s.len());
        (s[..end].trim().to_owned(), &s[end..])
    }
}

/// What follows the next comma that is outside a quoted string.
fn skip_to_comma(s: &str) -> &str {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => return &s[i + 1..],
            _ => {}
        }
    }
    ""
}

/// `hreflang_lang_mismatch`: the page's `<html lang>` against the entries (of its `<link>`s and
/// its `Link` header) that name the page itself. Reported when none of them agrees; entries
/// with invalid values and `x-default` do not count.
#[must_use]
pub fn lang_mismatch(page: &str, html_lang: Option<&str>, entries: &[(String, String)]) -> Option<(Code, String)> {
    let html_lang = html_lang.map(str::trim).filter(|l| !l.is_empty())?;
    let own: Vec<_> = entries
        .iter()
        .filter(|(_, target)| same_url(target, page))
        .filter_map(|(value, _)| parse(value).ok())
        .filter(|h| *h != shoal_shared::hreflang::Hreflang::XDefault)
        .collect();
    if own.is_empty() || own.iter().any(|h| html_lang_agrees(html_lang, h)) {
        return None;
    }
    let values: Vec<String> = own.iter().map(ToString::to_string).collect();
    let shown: String = html_lang.chars().take(40).collect();
    Some((
        Code::HreflangLangMismatch,
        format!("<html lang=\"{shown}\"> but its own hreflang says {}", values.join(", ")),
    ))
}

/// Whether an hreflang target (resolved as written) names `page` (normalised).
fn same_url(target: &str, page: &str) -> bool {
    shoal_shared::url::NormalizedUrl::parse(target).is_ok_and(|t| t.as_str() == page)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("https://shop.test/en/").expect("base")
    }

    #[test]
    fn link_header_alternates() {
        let headers = vec![
            r#"<https://shop.test/de/>; rel="alternate"; hreflang="de", </fr/>; rel=alternate; hreflang=fr"#.to_owned(),
            r#"<https://shop.test/en/>; rel="canonical""#.to_owned(),
            r#"<https://shop.test/en/>; rel="alternate nofollow"; title="a, \"quoted\"; title"; hreflang="en""#
                .to_owned(),
            r#"<https://shop.test/>; rel="alternate"; hreflang="x-default""#.to_owned(),
            r#"garbage, <https://shop.test/es/>; hreflang=es; rel=ALTERNATE"#.to_owned(),
            r#"<https://shop.test/feed>; rel="alternate"; type="application/rss+xml""#.to_owned(),
        ];
        let (found, more) = from_link_headers(&headers, &base(), 4096);
        assert!(!more);
        let want = [
            ("de", "https://shop.test/de/"),
            ("fr", "https://shop.test/fr/"),
            ("en", "https://shop.test/en/"),
            ("x-default", "https://shop.test/"),
            ("es", "https://shop.test/es/"),
        ];
        let got: Vec<(&str, &str)> = found.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn link_header_parsing_is_bounded_and_never_panics() {
        let many: String = (0..3_000).map(|i| format!("</{i}>; rel=alternate; hreflang=en,")).collect();
        let (found, more) = from_link_headers(&[many], &base(), 4096);
        assert_eq!(found.len(), MAX_HREFLANG);
        assert!(more);
        for junk in
            ["<", ">", "<a", "<a>;", "<a>; rel=\"", "<a>; rel=\"x\\", ";;;,,,", "<<<>>>", "<\u{fffd}>; hreflang=\"é\""]
        {
            let _ = from_link_headers(&[junk.to_owned()], &base(), 4096);
        }
    }

    #[test]
    fn html_lang_against_the_page_own_entries() {
        let page = "https://shop.test/en/";
        let e = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
        };
        let set = e(&[("en", page), ("de", "https://shop.test/de/"), ("x-default", page)]);
        assert_eq!(lang_mismatch(page, Some("en-GB"), &set), None);
        let found = lang_mismatch(page, Some("de"), &set).expect("a mismatch");
        assert_eq!(found.0, Code::HreflangLangMismatch);
        assert!(found.1.contains("own hreflang says en"), "{}", found.1);
        assert_eq!(lang_mismatch(page, None, &set), None, "no lang: html_lang_missing's business");
        assert_eq!(lang_mismatch(page, Some("de"), &e(&[("x-default", page)])), None);
    }
}
