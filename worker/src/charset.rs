//! Bytes to text for HTML: which encoding a page is in, decided the way a browser decides it.
//!
//! We read bodies through our own size cap, so reqwest's `text()` is not used; scraper needs a
//! `&str`. The order is the HTML standard's ("determining the character encoding"): byte order
//! mark, then the `Content-Type` charset, then a `<meta>` prescan of the first 1024 bytes, then a
//! guess (valid UTF-8, otherwise chardetng, Firefox's detector). Malformed sequences become
//! U+FFFD; nothing here can fail or panic.

use std::borrow::Cow;

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252, X_USER_DEFINED};

/// How many bytes the `<meta>` prescan looks at (the HTML standard's figure).
pub const PRESCAN_BYTES: usize = 1024;

/// Decodes an HTML body to text, returning the encoding used (for the report). A body that is
/// already valid UTF-8 (most pages) is borrowed, not copied.
///
/// `content_type` is the raw `Content-Type` header value, if any.
#[must_use]
pub fn decode_html<'a>(bytes: &'a [u8], content_type: Option<&str>) -> (Cow<'a, str>, &'static Encoding) {
    if let Some((encoding, bom_len)) = Encoding::for_bom(bytes) {
        let body = bytes.get(bom_len..).unwrap_or_default();
        let (text, _) = encoding.decode_without_bom_handling(body);
        return (text, encoding);
    }
    let encoding = content_type
        .and_then(charset_from_content_type)
        .or_else(|| prescan(bytes.get(..PRESCAN_BYTES).unwrap_or(bytes)))
        .unwrap_or_else(|| guess(bytes));
    let (text, _) = encoding.decode_without_bom_handling(bytes);
    (text, encoding)
}

/// The encoding named by a `charset` parameter of a `Content-Type` value, if it is one the
/// Encoding Standard knows.
#[must_use]
pub fn charset_from_content_type(content_type: &str) -> Option<&'static Encoding> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        Encoding::for_label(value.as_bytes())
    })
}

/// No declaration: valid UTF-8 is UTF-8, otherwise ask chardetng. The TLD is not known here, so
/// chardetng assumes a generic one.
fn guess(bytes: &[u8]) -> &'static Encoding {
    match std::str::from_utf8(bytes) {
        Ok(_) => return UTF_8,
        // Only an incomplete sequence at the very end: a UTF-8 body cut by the size cap.
        Err(e) if e.error_len().is_none() => return UTF_8,
        Err(_) => {}
    }
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
    detector.feed(bytes, true);
    detector.guess(None, Utf8Detection::Allow)
}

/// The HTML standard's "prescan a byte stream to determine its encoding", over `bytes` (the
/// caller passes the first [`PRESCAN_BYTES`]). Running off the end means "no answer".
fn prescan(bytes: &[u8]) -> Option<&'static Encoding> {
    let mut pos = 0;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        if rest.starts_with(b"<!--") {
            // Skip to the end of the comment; `<!-->` ends immediately.
            let end = find(&bytes[pos + 2..], b"-->")?;
            pos += 2 + end + 3;
            continue;
        }
        if starts_with_ignore_case(rest, b"<meta") && rest.get(5).is_some_and(|&b| is_space(b) || b == b'/') {
            pos += 5;
            if let Some(encoding) = meta_tag(bytes, &mut pos)? {
                return Some(encoding);
            }
            continue;
        }
        let after_lt = if rest.starts_with(b"</") { 2 } else { 1 };
        if rest.first() == Some(&b'<') && rest.get(after_lt).is_some_and(u8::is_ascii_alphabetic) {
            // Some other tag: skip its name and attributes.
            pos += after_lt;
            while pos < bytes.len() && !is_space(bytes[pos]) && bytes[pos] != b'>' {
                pos += 1;
            }
            while get_attribute(bytes, &mut pos)?.is_some() {}
            pos += 1;
            continue;
        }
        if rest.starts_with(b"<!") || rest.starts_with(b"</") || rest.starts_with(b"<?") {
            pos += find(rest, b">")? + 1;
            continue;
        }
        pos += 1;
    }
    None
}

/// Reads the attributes of a `<meta` tag (`pos` just after the name). `None`: ran out of input;
/// `Some(None)`: this meta does not declare an encoding.
fn meta_tag(bytes: &[u8], pos: &mut usize) -> Option<Option<&'static Encoding>> {
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let mut got_pragma = false;
    let mut need_pragma: Option<bool> = None;
    let mut charset: Option<&'static Encoding> = None;
    while let Some((name, value)) = get_attribute(bytes, pos)? {
        if seen.contains(&name) {
            continue;
        }
        match name.as_slice() {
            b"http-equiv" => got_pragma |= value == b"content-type",
            b"content" => {
                if charset.is_none()
                    && let Some(found) = charset_from_meta_content(&value).and_then(Encoding::for_label)
                {
                    charset = Some(found);
                    need_pragma = Some(true);
                }
            }
            b"charset" if charset.is_none() => {
                charset = Encoding::for_label(&value);
                need_pragma = Some(false);
            }
            _ => {}
        }
        seen.push(name);
    }
    let declared = match need_pragma {
        None => None,
        Some(true) if !got_pragma => None,
        Some(_) => charset,
    };
    Some(declared.map(|encoding| {
        if encoding == UTF_16BE || encoding == UTF_16LE {
            UTF_8
        } else if encoding == X_USER_DEFINED {
            WINDOWS_1252
        } else {
            encoding
        }
    }))
}

/// The standard's "get an attribute": names and unquoted values are ASCII-lower-cased.
/// `None`: input ended; `Some(None)`: the tag ended (`pos` at the `>`).
fn get_attribute(bytes: &[u8], pos: &mut usize) -> Option<Option<(Vec<u8>, Vec<u8>)>> {
    let at = |p: usize| bytes.get(p).copied();
    while is_space(at(*pos)?) || at(*pos)? == b'/' {
        *pos += 1;
    }
    if at(*pos)? == b'>' {
        return Some(None);
    }
    let mut name = Vec::new();
    let mut value = Vec::new();
    loop {
        let b = at(*pos)?;
        if b == b'=' && !name.is_empty() {
            *pos += 1;
            break;
        }
        if is_space(b) {
            while is_space(at(*pos)?) {
                *pos += 1;
            }
            if at(*pos)? != b'=' {
                return Some(Some((name, value)));
            }
            *pos += 1;
            break;
        }
        if b == b'/' || b == b'>' {
            return Some(Some((name, value)));
        }
        name.push(b.to_ascii_lowercase());
        *pos += 1;
    }
    while is_space(at(*pos)?) {
        *pos += 1;
    }
    let b = at(*pos)?;
    if b == b'"' || b == b'\'' {
        loop {
            *pos += 1;
            let c = at(*pos)?;
            if c == b {
                *pos += 1;
                return Some(Some((name, value)));
            }
            value.push(c.to_ascii_lowercase());
        }
    }
    if b == b'>' {
        return Some(Some((name, value)));
    }
    loop {
        let c = at(*pos)?;
        if is_space(c) || c == b'>' {
            return Some(Some((name, value)));
        }
        value.push(c.to_ascii_lowercase());
        *pos += 1;
    }
}

/// The standard's "extracting a character encoding from a meta element" (`content` attribute).
fn charset_from_meta_content(content: &[u8]) -> Option<&[u8]> {
    let mut pos = 0;
    loop {
        pos += find_ignore_case(&content[pos..], b"charset")? + b"charset".len();
        while content.get(pos).is_some_and(|&b| is_space(b)) {
            pos += 1;
        }
        if content.get(pos) != Some(&b'=') {
            continue;
        }
        pos += 1;
        while content.get(pos).is_some_and(|&b| is_space(b)) {
            pos += 1;
        }
        let rest = content.get(pos..)?;
        return match rest.first()? {
            &q @ (b'"' | b'\'') => {
                let end = rest[1..].iter().position(|&b| b == q)?;
                Some(&rest[1..1 + end])
            }
            _ => {
                let end = rest.iter().position(|&b| is_space(b) || b == b';').unwrap_or(rest.len());
                Some(&rest[..end])
            }
        };
    }
}

/// HTML's ASCII whitespace.
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn find_ignore_case(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w.eq_ignore_ascii_case(needle))
}

fn starts_with_ignore_case(haystack: &[u8], prefix: &[u8]) -> bool {
    haystack.get(..prefix.len()).is_some_and(|h| h.eq_ignore_ascii_case(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prescan_cases() {
        let cases: &[(&[u8], Option<&str>)] = &[
            (b"<meta charset=utf-8>", Some("UTF-8")),
            (b"<META CHARSET='ISO-8859-1'>", Some("windows-1252")),
            (b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\">", Some("Shift_JIS")),
            // content without the pragma does not count
            (b"<meta content=\"text/html; charset=koi8-r\">", None),
            (b"<!-- <meta charset=koi8-r> --><meta charset=gbk>", Some("GBK")),
            (b"<meta charset=utf-16le>", Some("UTF-8")),
            (b"<meta charset=x-user-defined>", Some("windows-1252")),
            (b"<meta charset=bogus><meta charset=koi8-r>", Some("KOI8-R")),
            (b"<div title='<meta charset=koi8-r>'><meta charset=euc-kr>", Some("EUC-KR")),
            (b"<meta charset=\"utf-8", None),
            (b"<meta", None),
            (b"", None),
        ];
        for (input, want) in cases {
            let got = prescan(input).map(Encoding::name);
            assert_eq!(got, *want, "{}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn content_type_cases() {
        let cases = [
            ("text/html; charset=ISO-8859-2", Some("ISO-8859-2")),
            ("text/html;charset=\"utf-8\"", Some("UTF-8")),
            ("text/html", None),
            ("text/html; charset=nonsense", None),
            ("charset=utf-8", None),
        ];
        for (ct, want) in cases {
            assert_eq!(charset_from_content_type(ct).map(Encoding::name), want, "{ct}");
        }
    }
}
