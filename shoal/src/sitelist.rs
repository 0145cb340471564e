//! Reading a list of start URLs (`--file` of `shoal audit` and `shoal submit`): one URL per line,
//! blank lines and `#` comments skipped.
//!
//! The file is **streamed**, line by line, through a buffer of fixed size, and every line is
//! checked as soon as it is read. Before, the whole file was read into memory first, so a 1 GB
//! file cost 1-2 GB of memory before its first bad line was found. Now memory is bounded by what is
//! kept (the start URLs), a line is never held beyond [`MAX_LINE_BYTES`], and a mistake (a binary
//! file, a log passed by accident, a bad URL on line 3 of a huge file) is reported at once with its
//! line number, never as a panic or an exhausted machine.
//!
//! Caps, each a clear error naming the line:
//! - [`MAX_LINE_BYTES`] per line: a start URL is at most [`shoal_shared::url::MAX_URL_LEN`] bytes;
//!   the rest leaves room for indentation and comments.
//! - [`shoal_shared::starts::MAX_SITES_PER_AUDIT`] start URLs per audit (the arguments and the file
//!   together; the coordinator refuses more anyway).
//! - [`MAX_LINES`] lines, blank and comment lines included, so an endless input (`--file
//!   /dev/zero`, a pipe that never ends) stops too.

use std::io::{BufRead, ErrorKind};

/// Longest line accepted, in bytes, without its line ending.
pub const MAX_LINE_BYTES: usize = 8 * 1024;
/// Lines read at most, blank and comment lines included.
pub const MAX_LINES: u64 = 1_000_000;

/// The caps a list is read under (the constants above; tests use small ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Longest line, in bytes, without its line ending.
    pub line_bytes: usize,
    /// Lines read at most.
    pub lines: u64,
}

impl Default for Caps {
    fn default() -> Caps {
        Caps { line_bytes: MAX_LINE_BYTES, lines: MAX_LINES }
    }
}

/// Why a list could not be read; `line` is 1-based.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ListError {
    /// Reading failed (the file vanished, an I/O error).
    #[error("line {line}: cannot read: {error}")]
    Io {
        /// The line being read.
        line: u64,
        /// The cause (shown in this error's text, so not its source).
        error: std::io::Error,
    },
    /// A line over [`Caps::line_bytes`].
    #[error("line {line} is longer than {max} bytes (a start URL is at most {url_max}): is this a list of URLs?")]
    LineTooLong {
        /// The line.
        line: u64,
        /// The cap.
        max: usize,
        /// The longest URL Shoal accepts.
        url_max: usize,
    },
    /// More than [`Caps::lines`] lines.
    #[error("line {line}: the file has more than {max} lines; split it")]
    TooManyLines {
        /// The first line over the cap.
        line: u64,
        /// The cap.
        max: u64,
    },
    /// A line that is not UTF-8 text.
    #[error("line {line} is not UTF-8 text: is this a list of URLs?")]
    NotText {
        /// The line.
        line: u64,
    },
    /// What the caller refused about a line (a bad URL, one URL too many).
    #[error("line {line}: {reason}")]
    Refused {
        /// The line.
        line: u64,
        /// Why.
        reason: String,
    },
}

/// Calls `each(line_number, entry)` for every line of `input` that is not blank or a `#` comment,
/// trimmed, in order, reading no more than one buffer and one line ahead. Stops at the first error,
/// `each`'s included (returned as [`ListError::Refused`] with the line number; `each`'s error is
/// only text put beside that number, so a string).
///
/// # Errors
/// See [`ListError`].
pub fn read_entries<R: BufRead>(
    mut input: R,
    caps: Caps,
    mut each: impl FnMut(u64, &str) -> Result<(), String>,
) -> Result<(), ListError> {
    let mut buf = Vec::with_capacity(256);
    let mut line: u64 = 0;
    loop {
        line += 1;
        buf.clear();
        // One byte more than the cap, for the `\r` of a CRLF line ending.
        let next = next_line(&mut input, &mut buf, caps.line_bytes.saturating_add(1))
            .map_err(|error| ListError::Io { line, error })?;
        if next == Next::End {
            return Ok(());
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        if next == Next::TooLong || buf.len() > caps.line_bytes {
            return Err(ListError::LineTooLong { line, max: caps.line_bytes, url_max: shoal_shared::url::MAX_URL_LEN });
        }
        if line > caps.lines {
            return Err(ListError::TooManyLines { line, max: caps.lines });
        }
        let mut bytes = buf.as_slice();
        if line == 1 {
            // A byte order mark, as some editors write it.
            bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        }
        let text = std::str::from_utf8(bytes).map_err(|_| ListError::NotText { line })?.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        each(line, text).map_err(|reason| ListError::Refused { line, reason })?;
    }
}

/// What [`next_line`] found.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// A line is in the buffer, without its `\n`.
    Line,
    /// The line is longer than the cap; the buffer holds a part of it.
    TooLong,
    /// The end of the input, with no line before it.
    End,
}

/// Reads one line into `buf`, never more than `max` bytes of it: unlike `read_until`, a file
/// without a newline cannot make it allocate more.
fn next_line<R: BufRead>(input: &mut R, buf: &mut Vec<u8>, max: usize) -> std::io::Result<Next> {
    let mut any = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(if any { Next::Line } else { Next::End });
        }
        any = true;
        let (part, used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        if buf.len() + part.len() > max {
            return Ok(Next::TooLong);
        }
        buf.extend_from_slice(part);
        input.consume(used);
        if done {
            return Ok(Next::Line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Cursor, Read};

    fn entries(text: &[u8], caps: Caps) -> Result<Vec<(u64, String)>, ListError> {
        let mut out = Vec::new();
        read_entries(Cursor::new(text), caps, |n, s| {
            out.push((n, s.to_owned()));
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn lines_are_trimmed_and_blank_and_comment_lines_skipped() {
        let text = b"\xEF\xBB\xBFhttps://a.test/\r\n\n   # a comment\n\t b.test  \r\n\nc.test";
        let got = entries(text, Caps::default()).expect("a valid list");
        assert_eq!(got, vec![(1, "https://a.test/".to_owned()), (4, "b.test".to_owned()), (6, "c.test".to_owned())]);
        assert_eq!(entries(b"", Caps::default()).expect("empty").len(), 0);
        assert_eq!(entries(b"\n\n", Caps::default()).expect("blank").len(), 0);
    }

    #[test]
    fn a_line_at_the_cap_passes_and_one_byte_more_names_its_line() {
        let caps = Caps { line_bytes: 10, lines: 100 };
        let ok = entries(b"a.test\n0123456789\r\n0123456789", caps).expect("10 bytes fit, CRLF or not");
        assert_eq!(ok[1], (2, "0123456789".to_owned()));
        assert_eq!(ok[2], (3, "0123456789".to_owned()));
        let e = entries(b"a.test\n\n01234567890\nb.test\n", caps).expect_err("11 bytes do not");
        assert!(matches!(e, ListError::LineTooLong { line: 3, max: 10, .. }), "{e:?}");
        assert!(e.to_string().starts_with("line 3 is longer than 10 bytes"), "{e}");
    }

    #[test]
    fn the_line_count_cap_names_the_first_line_over_it() {
        let caps = Caps { line_bytes: 100, lines: 3 };
        assert_eq!(entries(b"a\n#\nb\n", caps).expect("3 lines fit").len(), 2);
        let e = entries(b"a\n#\nb\n\n", caps).expect_err("a 4th line does not");
        assert!(matches!(e, ListError::TooManyLines { line: 4, max: 3 }), "{e:?}");
        assert_eq!(e.to_string(), "line 4: the file has more than 3 lines; split it");
    }

    #[test]
    fn binary_input_is_refused_with_its_line() {
        let e = entries(b"a.test\n\xFF\xFE\x00\n", Caps::default()).expect_err("not UTF-8");
        assert!(matches!(e, ListError::NotText { line: 2 }), "{e:?}");
    }

    #[test]
    fn what_the_caller_refuses_is_reported_with_the_line() {
        let mut seen = 0;
        let e = read_entries(Cursor::new(b"a\nb\n\nc\nd\n"), Caps::default(), |_, s| {
            seen += 1;
            if s == "c" { Err("no c please".to_owned()) } else { Ok(()) }
        })
        .expect_err("refused");
        assert_eq!(e.to_string(), "line 4: no c please");
        assert_eq!(seen, 3, "reading stops at the refused line");
    }

    /// An input that never ends, counting what was read from it.
    struct Endless {
        pattern: &'static [u8],
        at: usize,
        read: u64,
    }

    impl Read for Endless {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            for b in out.iter_mut() {
                *b = self.pattern[self.at % self.pattern.len()];
                self.at += 1;
            }
            self.read += out.len() as u64;
            Ok(out.len())
        }
    }

    /// The regression the streaming fixes: an input with no line end (a 1 GB file, `/dev/zero`) is
    /// refused after reading one line's cap and one buffer, not read whole.
    #[test]
    fn an_endless_line_is_refused_after_reading_one_cap_and_one_buffer() {
        let mut input = BufReader::with_capacity(64 * 1024, Endless { pattern: b"x", at: 0, read: 0 });
        let e = read_entries(&mut input, Caps::default(), |_, _| Ok(())).expect_err("too long");
        assert!(matches!(e, ListError::LineTooLong { line: 1, .. }), "{e:?}");
        let read = input.get_ref().read;
        assert!(read <= (MAX_LINE_BYTES + 64 * 1024) as u64, "read {read} bytes");
    }

    #[test]
    fn endless_blank_lines_stop_at_the_line_cap() {
        let mut input = BufReader::new(Endless { pattern: b"\n", at: 0, read: 0 });
        let e = read_entries(&mut input, Caps::default(), |_, _| Ok(())).expect_err("too many lines");
        assert!(matches!(e, ListError::TooManyLines { line, .. } if line == MAX_LINES + 1), "{e:?}");
    }
}
