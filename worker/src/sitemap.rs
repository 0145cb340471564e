//! Sitemaps (sitemaps.org protocol): XML `<urlset>` / `<sitemapindex>`, gzip or not, and plain
//! text (one URL per line).
//!
//! Sitemaps are untrusted input that can be huge or hostile (a gzip bomb, a 50 MB single line),
//! so this is a streaming parser (quick-xml, no DOM) reading through a decompressed-size cap, with
//! a cap on URLs kept. Going over either cap is reported in the result, never an error or a
//! crash (SPEC §7). Memory is bounded by the caps: the URL list, one `<loc>` of at most
//! [`MAX_LOC_BYTES`], and quick-xml's buffer for one event (at most `max_bytes`).
//!
//! Decisions worth knowing:
//! - Element names are matched by local name, ASCII case-insensitively, whatever the prefix
//!   (`<s:urlset>`, `<URL>`). Only a `<loc>` that is a direct child of a direct child of the root
//!   counts, so extension elements such as `<image:image><image:loc>` are not page URLs.
//! - A raw `&` in a URL (`?a=1&b=2`, a common mistake) or an undefined entity (`&nbsp;`) is kept
//!   as written and parsing continues, but [`SitemapParse::error`] records it: the file is not
//!   well-formed XML.
//! - A document that ends with elements still open is an error ("unexpected end").
//! - When the size cap cut the document short, the resulting XML error is not reported: the
//!   cause is [`SitemapParse::over_size`], not the site's markup. (So an over-size gzip stream
//!   that is also corrupt past the cap is not reported as corrupt.)
//! - Plain text is recognised when the first non-blank character is not `<`; its kind is
//!   [`SitemapKind::UrlSet`] (its URLs are pages). Lines not starting with `http://` or
//!   `https://` are skipped and the first one is named in the error.
//! - URLs are returned as written (trimmed, entities decoded), not validated or normalised: the
//!   caller resolves them with the crawler's URL rules and reports the bad ones.
//! - hreflang alternates (`<xhtml:link rel="alternate" hreflang="de" href="…"/>`, a direct child
//!   of a `<url>`) are kept with their entry's `<loc>`, in [`SitemapParse::alternates`], at most
//!   [`SitemapCaps::max_alternates`] in all.

use std::io::{self, BufRead, BufReader, Read};

use flate2::read::MultiGzDecoder;
use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::Event;
use serde::{Deserialize, Serialize};

/// Default for [`SitemapCaps::max_bytes`]: 50 MB decompressed, the protocol's limit.
pub const DEFAULT_MAX_BYTES: u64 = 50 * 1024 * 1024;
/// Default for [`SitemapCaps::max_urls`]: 50,000, the protocol's limit.
pub const DEFAULT_MAX_URLS: usize = 50_000;
/// Default for [`SitemapCaps::max_alternates`]: enough for 2,000 URLs in 10 languages, little
/// enough that one sitemap's event stays a few megabytes.
pub const DEFAULT_MAX_ALTERNATES: usize = 20_000;
/// An hreflang value longer than this is kept cut (no valid value is longer than 11 bytes).
const MAX_HREFLANG_BYTES: usize = 64;
/// A `<loc>` (or text line) longer than this is not kept (no crawlable URL is that long); it is
/// counted in [`SitemapParse::oversized_locs`].
pub const MAX_LOC_BYTES: usize = 8 * 1024;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Limits for [`parse_sitemap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SitemapCaps {
    /// Most bytes read after decompression; beyond it parsing stops and
    /// [`SitemapParse::over_size`] is set.
    pub max_bytes: u64,
    /// Most URLs kept; beyond it parsing stops and [`SitemapParse::over_count`] is set.
    pub max_urls: usize,
    /// Most hreflang alternates kept, all entries together; beyond it the rest are skipped (the
    /// URLs are still read) and [`SitemapParse::alternates_over`] is set.
    pub max_alternates: usize,
}

impl Default for SitemapCaps {
    fn default() -> Self {
        SitemapCaps { max_bytes: DEFAULT_MAX_BYTES, max_urls: DEFAULT_MAX_URLS, max_alternates: DEFAULT_MAX_ALTERNATES }
    }
}

/// The hreflang alternates one `<url>` entry names for its `<loc>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryAlternates {
    /// The entry's `<loc>`, as written (trimmed, entities decoded).
    pub loc: String,
    /// (hreflang, href) as written.
    pub alternates: Vec<(String, String)>,
}

/// What the file's root says its URLs are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SitemapKind {
    /// `<urlset>` (or a plain-text sitemap): the URLs are pages.
    UrlSet,
    /// `<sitemapindex>`: the URLs are more sitemaps.
    Index,
    /// Empty, or XML with some other root (an HTML page, a feed): no URLs taken.
    #[default]
    Unknown,
}

/// The outcome of parsing one sitemap. Always a value: problems with the file are data for the
/// report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SitemapParse {
    /// What the root element says.
    pub kind: SitemapKind,
    /// `<url><loc>` or `<sitemap><loc>` values in file order, trimmed and entity-decoded.
    pub urls: Vec<String>,
    /// The decompressed size went over [`SitemapCaps::max_bytes`]; the rest was not read.
    pub over_size: bool,
    /// More than [`SitemapCaps::max_urls`] URLs; the rest was not read.
    pub over_count: bool,
    /// `<loc>` values (or text lines) over [`MAX_LOC_BYTES`], skipped.
    pub oversized_locs: usize,
    /// Why the file is not a well-formed sitemap (first problem only). `urls` keeps everything
    /// parsed before a fatal error.
    pub error: Option<String>,
    /// The entries' hreflang alternates, in file order.
    pub alternates: Vec<EntryAlternates>,
    /// More alternates than [`SitemapCaps::max_alternates`]; the rest were skipped.
    pub alternates_over: bool,
}

/// Parses a sitemap body as fetched: gzip (detected by its magic bytes, whatever the URL or
/// headers say) or not, XML or plain text. Never fails and never panics.
#[must_use]
pub fn parse_sitemap(bytes: &[u8], caps: &SitemapCaps) -> SitemapParse {
    if bytes.starts_with(&GZIP_MAGIC) {
        parse_stream(MultiGzDecoder::new(bytes), caps)
    } else {
        parse_stream(bytes, caps)
    }
}

fn parse_stream<R: Read>(source: R, caps: &SitemapCaps) -> SitemapParse {
    let mut input = BufReader::with_capacity(64 * 1024, CappedReader::new(source, caps.max_bytes));
    let mut out = SitemapParse::default();
    let fatal = match sniff(&mut input) {
        Err(e) => Some(format!("could not read sitemap: {e}")),
        Ok(None) => Some("empty sitemap".to_owned()),
        Ok(Some(Format::Xml)) => {
            let mut reader = quick_xml::Reader::from_reader(input);
            reader.config_mut().allow_dangling_amp = true;
            let fatal = XmlState::default().run(&mut reader, caps, &mut out);
            out.over_size = reader.get_ref().get_ref().over;
            fatal
        }
        Ok(Some(Format::Text)) => {
            let fatal = parse_text(&mut input, caps, &mut out);
            out.over_size = input.get_ref().over;
            fatal
        }
    };
    // When the size cap cut the input, the cut (not the site) caused any truncation error.
    if let Some(fatal) = fatal
        && !out.over_size
    {
        out.error = Some(fatal);
    }
    out
}

enum Format {
    Xml,
    Text,
}

/// Skips a UTF-8 BOM and leading whitespace, then tells XML (`<`) from text.
fn sniff<R: BufRead>(input: &mut R) -> io::Result<Option<Format>> {
    let mut first_chunk = true;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(None);
        }
        let mut skip = 0;
        if first_chunk && chunk.starts_with(UTF8_BOM) {
            skip = UTF8_BOM.len();
        }
        first_chunk = false;
        let rest = &chunk[skip..];
        match rest.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => {
                let format = if rest[i] == b'<' { Format::Xml } else { Format::Text };
                input.consume(skip + i);
                return Ok(Some(format));
            }
            None => {
                let len = chunk.len();
                input.consume(len);
            }
        }
    }
}

/// Where the XML parser is in the sitemap structure.
#[derive(Default)]
struct XmlState {
    depth: usize,
    in_entry: bool,
    in_loc: bool,
    loc: String,
    loc_too_long: bool,
    /// The current `<url>` entry's `<loc>` and alternates, attached when the entry closes.
    entry: EntryAlternates,
    /// Alternates kept so far, all entries together.
    alternates_kept: usize,
}

impl XmlState {
    /// Parses until the end, a cap or a fatal error, which it returns. Non-fatal problems go to
    /// `out.error`.
    fn run<R: BufRead>(
        &mut self,
        reader: &mut quick_xml::Reader<R>,
        caps: &SitemapCaps,
        out: &mut SitemapParse,
    ) -> Option<String> {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let event = match reader.read_event_into(&mut buf) {
                Ok(event) => event,
                Err(e) => {
                    return Some(format!("malformed XML at byte {}: {e}", reader.error_position()));
                }
            };
            match event {
                Event::Start(e) => {
                    self.depth += 1;
                    if !self.open(e.local_name().as_ref(), out) {
                        return None;
                    }
                    self.alternate(&e, caps, out);
                }
                Event::Empty(e) => {
                    self.depth += 1;
                    if !self.open(e.local_name().as_ref(), out) {
                        return None;
                    }
                    self.alternate(&e, caps, out);
                    if !self.close(caps, out) {
                        return None;
                    }
                }
                Event::End(_) => {
                    if !self.close(caps, out) {
                        return None;
                    }
                }
                Event::Text(t) => {
                    if t.starts_with('&') && out.error.is_none() {
                        out.error = Some(format!("unescaped '&' near byte {}", reader.buffer_position()));
                    }
                    self.push_loc(&t.xml10_content());
                }
                Event::CData(c) => self.push_loc(&c),
                Event::GeneralRef(r) => {
                    let resolved = match r.resolve_char_ref() {
                        Ok(Some(ch)) => Some(String::from(ch)),
                        Ok(None) => resolve_predefined_entity(&r).map(str::to_owned),
                        Err(_) => None,
                    };
                    match resolved {
                        Some(text) => self.push_loc(&text),
                        None => {
                            // Undefined entity or bad character reference: not well-formed,
                            // but the rest of the file is still readable. Keep it as written.
                            if out.error.is_none() {
                                out.error = Some(format!(
                                    "undefined entity or bad character reference &{}; near byte {}",
                                    &*r,
                                    reader.buffer_position()
                                ));
                            }
                            self.push_loc(&format!("&{};", &*r));
                        }
                    }
                }
                Event::Eof => {
                    return (self.depth > 0)
                        .then(|| format!("unexpected end of document with {} element(s) still open", self.depth));
                }
                Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
            }
        }
    }

    /// An element opened at `self.depth`. Returns false to stop (a root that is no sitemap).
    fn open(&mut self, name: &str, out: &mut SitemapParse) -> bool {
        match self.depth {
            1 => {
                out.kind = if name.eq_ignore_ascii_case("urlset") {
                    SitemapKind::UrlSet
                } else if name.eq_ignore_ascii_case("sitemapindex") {
                    SitemapKind::Index
                } else {
                    SitemapKind::Unknown
                };
                out.kind != SitemapKind::Unknown
            }
            2 => {
                self.in_entry = match out.kind {
                    SitemapKind::UrlSet => name.eq_ignore_ascii_case("url"),
                    SitemapKind::Index => name.eq_ignore_ascii_case("sitemap"),
                    SitemapKind::Unknown => false,
                };
                self.entry = EntryAlternates::default();
                true
            }
            3 => {
                if self.in_entry && name.eq_ignore_ascii_case("loc") {
                    self.in_loc = true;
                    self.loc.clear();
                    self.loc_too_long = false;
                }
                true
            }
            _ => true,
        }
    }

    /// The element at `self.depth` closed. Returns false to stop (URL cap reached).
    fn close(&mut self, caps: &SitemapCaps, out: &mut SitemapParse) -> bool {
        let mut keep_going = true;
        match self.depth {
            3 if self.in_loc => {
                self.in_loc = false;
                if self.loc_too_long {
                    out.oversized_locs += 1;
                } else {
                    keep_going = keep_url(self.loc.trim(), caps, out);
                    self.entry.loc = self.loc.trim().to_owned();
                }
            }
            2 => {
                self.in_entry = false;
                let entry = std::mem::take(&mut self.entry);
                if !entry.loc.is_empty() && !entry.alternates.is_empty() {
                    out.alternates.push(entry);
                }
            }
            _ => {}
        }
        self.depth = self.depth.saturating_sub(1);
        keep_going
    }

    /// An `<xhtml:link rel="alternate" hreflang href>` directly under a `<url>` entry.
    fn alternate(&mut self, e: &quick_xml::events::BytesStart<'_>, caps: &SitemapCaps, out: &mut SitemapParse) {
        if self.depth != 3
            || !self.in_entry
            || out.kind != SitemapKind::UrlSet
            || !e.local_name().as_ref().eq_ignore_ascii_case("link")
        {
            return;
        }
        let (mut rel, mut hreflang, mut href) = (String::new(), None, None);
        for attr in e.attributes().with_checks(false).flatten() {
            let Ok(value) = attr.normalized_value(quick_xml::XmlVersion::Implicit1_0) else { continue };
            match attr.key.local_name().as_ref() {
                "rel" => rel = value.into_owned(),
                "hreflang" => hreflang = Some(cut(value.trim(), MAX_HREFLANG_BYTES)),
                "href" if value.len() <= MAX_LOC_BYTES => href = Some(value.trim().to_owned()),
                _ => {}
            }
        }
        let (Some(hreflang), Some(href)) = (hreflang, href) else { return };
        if !rel.split_ascii_whitespace().any(|r| r.eq_ignore_ascii_case("alternate")) {
            return;
        }
        if self.alternates_kept >= caps.max_alternates {
            out.alternates_over = true;
            return;
        }
        self.alternates_kept += 1;
        self.entry.alternates.push((hreflang, href));
    }

    fn push_loc(&mut self, s: &str) {
        if !self.in_loc || self.loc_too_long {
            return;
        }
        if self.loc.len() + s.len() > MAX_LOC_BYTES {
            self.loc_too_long = true;
            self.loc.clear();
        } else {
            self.loc.push_str(s);
        }
    }
}

/// `s`, at most `max` bytes (on a character boundary).
fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

/// Adds a URL unless it is empty; returns false when the URL cap stops the parse.
fn keep_url(url: &str, caps: &SitemapCaps, out: &mut SitemapParse) -> bool {
    if url.is_empty() {
        return true;
    }
    if out.urls.len() >= caps.max_urls {
        out.over_count = true;
        return false;
    }
    out.urls.push(url.to_owned());
    true
}

/// One URL per line; lines are read with a bounded buffer, so a huge line cannot take memory.
/// Returns a fatal (read) error.
fn parse_text<R: BufRead>(input: &mut R, caps: &SitemapCaps, out: &mut SitemapParse) -> Option<String> {
    out.kind = SitemapKind::UrlSet;
    let mut line: Vec<u8> = Vec::new();
    let mut too_long = false;
    let mut line_no = 0usize;
    loop {
        let chunk = match input.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) => return Some(format!("could not read sitemap: {e}")),
        };
        let at_eof = chunk.is_empty();
        let newline = chunk.iter().position(|&b| b == b'\n');
        let take = newline.map_or(chunk.len(), |i| i + 1);
        let piece = &chunk[..newline.unwrap_or(chunk.len())];
        if !too_long {
            if line.len() + piece.len() > MAX_LOC_BYTES {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(piece);
            }
        }
        input.consume(take);
        if newline.is_some() || at_eof {
            line_no += 1;
            if !text_line(&line, too_long, line_no, caps, out) {
                return None;
            }
            line.clear();
            too_long = false;
        }
        if at_eof {
            return None;
        }
    }
}

/// Handles one text line; returns false when the URL cap stops the parse.
fn text_line(line: &[u8], too_long: bool, line_no: usize, caps: &SitemapCaps, out: &mut SitemapParse) -> bool {
    if too_long {
        out.oversized_locs += 1;
        return true;
    }
    let text = String::from_utf8_lossy(line);
    let url = text.trim();
    if url.is_empty() {
        return true;
    }
    let is_http = ["http://", "https://"]
        .iter()
        .any(|scheme| url.get(..scheme.len()).is_some_and(|p| p.eq_ignore_ascii_case(scheme)));
    if !is_http {
        if out.error.is_none() {
            out.error = Some(format!("line {line_no} is not an http(s) URL"));
        }
        return true;
    }
    keep_url(url, caps, out)
}

/// Reads at most `remaining` bytes, then reports end of input; notes whether more was there.
struct CappedReader<R> {
    inner: R,
    remaining: u64,
    over: bool,
}

impl<R: Read> CappedReader<R> {
    fn new(inner: R, max: u64) -> Self {
        CappedReader { inner, remaining: max, over: false }
    }
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            if !self.over {
                let mut probe = [0u8; 1];
                loop {
                    match self.inner.read(&mut probe) {
                        Ok(n) => {
                            self.over = n > 0;
                            break;
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            return Ok(0);
        }
        let max = usize::try_from(self.remaining).unwrap_or(usize::MAX).min(buf.len());
        let n = self.inner.read(&mut buf[..max])?;
        self.remaining = self.remaining.saturating_sub(n as u64);
        Ok(n)
    }
}
