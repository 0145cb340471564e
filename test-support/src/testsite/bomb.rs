//! A gzip bomb of any size, without compressing that many bytes.
//!
//! DEFLATE output after a sync flush ends on a byte boundary, and a block that compresses a run of
//! spaces only refers back to the previous 32 KiB, which are spaces too. So the compressed block for
//! one 1 MiB run of spaces, taken from the middle of a stream, can be repeated any number of times.
//! The CRC-32 of the whole is combined from the CRC of one run. The result is a valid single-member
//! gzip stream about 1/1000 of its inflated size, built in a few milliseconds.

use std::io::{self, Write as _};

use axum::body::Bytes;
use flate2::write::{DeflateEncoder, GzEncoder};
use flate2::{Compression, Crc};
use futures_util::stream::{self, BoxStream, StreamExt};

/// Inflated size of one repeated run; must be well above the 32 KiB DEFLATE window.
const RUN: usize = 1024 * 1024;
const FILL: u8 = b' ';
/// gzip member header: magic, deflate, no flags, no mtime, no extra flags, unknown OS.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// The precomputed pieces of one bomb; the body is `head + middle * repeats + tail`.
#[derive(Debug)]
pub(crate) struct GzipBomb {
    head: Bytes,
    middle: Bytes,
    repeats: u64,
    tail: Bytes,
}

impl GzipBomb {
    /// A bomb that inflates to exactly `decompressed` bytes of spaces.
    pub(crate) fn new(decompressed: u64) -> GzipBomb {
        Self::build(decompressed).unwrap_or_else(|e| panic!("building a gzip bomb in memory failed: {e}"))
    }

    fn build(decompressed: u64) -> io::Result<GzipBomb> {
        let run = vec![FILL; RUN];
        let runs = decompressed / RUN as u64;
        if runs < 2 {
            // Small enough to compress directly.
            let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
            for _ in 0..runs {
                encoder.write_all(&run)?;
            }
            encoder.write_all(&run[..(decompressed % RUN as u64) as usize])?;
            let all = Bytes::from(encoder.finish()?);
            return Ok(GzipBomb { head: all, middle: Bytes::new(), repeats: 0, tail: Bytes::new() });
        }
        let rest = &run[..(decompressed % RUN as u64) as usize];
        let mut deflate = DeflateEncoder::new(Vec::new(), Compression::best());
        deflate.write_all(&run)?;
        deflate.flush()?; // sync flush: byte-aligned, everything so far emitted
        let mut head = GZIP_HEADER.to_vec();
        head.append(deflate.get_mut());
        deflate.write_all(&run)?;
        deflate.flush()?;
        let middle = std::mem::take(deflate.get_mut());
        deflate.write_all(rest)?;
        let mut tail = deflate.finish()?;

        let mut run_crc = Crc::new();
        run_crc.update(&run);
        let mut crc = Crc::new();
        for _ in 0..runs {
            crc.combine(&run_crc);
        }
        crc.update(rest);
        tail.extend_from_slice(&crc.sum().to_le_bytes());
        // ISIZE is the length modulo 2^32 (RFC 1952); the truncation is the format.
        tail.extend_from_slice(&((decompressed & 0xffff_ffff) as u32).to_le_bytes());
        Ok(GzipBomb {
            head: Bytes::from(head),
            middle: Bytes::from(middle),
            repeats: runs - 1,
            tail: Bytes::from(tail),
        })
    }

    /// Bytes on the wire.
    pub(crate) fn wire_len(&self) -> u64 {
        self.head.len() as u64 + self.middle.len() as u64 * self.repeats + self.tail.len() as u64
    }

    /// The compressed body, streamed by reference to the shared pieces.
    pub(crate) fn stream(&self) -> BoxStream<'static, io::Result<Bytes>> {
        let middle = self.middle.clone();
        let repeats = stream::iter(0..self.repeats).map(move |_| Ok(middle.clone()));
        stream::iter([Ok(self.head.clone())])
            .chain(repeats)
            .chain(stream::iter([Ok(self.tail.clone())]))
            .filter(|chunk| std::future::ready(chunk.as_ref().map_or(true, |c| !c.is_empty())))
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read as _;

    fn inflate(bomb: &GzipBomb) -> (u64, bool) {
        let mut wire = Vec::new();
        wire.extend_from_slice(&bomb.head);
        for _ in 0..bomb.repeats {
            wire.extend_from_slice(&bomb.middle);
        }
        wire.extend_from_slice(&bomb.tail);
        assert_eq!(wire.len() as u64, bomb.wire_len());
        let mut decoder = GzDecoder::new(&wire[..]);
        let (mut total, mut all_spaces) = (0u64, true);
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = decoder.read(&mut buf).expect("bomb must be valid gzip with a correct CRC");
            if n == 0 {
                break;
            }
            all_spaces &= buf[..n].iter().all(|&b| b == FILL);
            total += n as u64;
        }
        (total, all_spaces)
    }

    #[test]
    fn bombs_inflate_to_exactly_their_size() {
        let mib = RUN as u64;
        for size in [0, 1, 1000, mib, 2 * mib, 2 * mib + 12_345, 5 * mib] {
            let bomb = GzipBomb::new(size);
            assert_eq!(inflate(&bomb), (size, true), "size {size}");
            assert!(bomb.wire_len() < size / 500 + 200, "size {size} wire {}", bomb.wire_len());
        }
    }
}
