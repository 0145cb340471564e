//! gzip for [`super::Route::gzip`]: whole bodies in memory, streamed bodies chunk by chunk so a
//! huge page stays streamed.

use std::io::{self, Write as _};

use axum::body::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use futures_util::stream::{self, BoxStream, StreamExt};

/// gzip of a whole body.
pub(crate) fn compress(body: &[u8]) -> Bytes {
    let mut encoder = GzEncoder::new(Vec::with_capacity(body.len() / 4 + 64), Compression::default());
    // Writing into a Vec cannot fail.
    match encoder.write_all(body).and_then(|()| encoder.finish()) {
        Ok(out) => Bytes::from(out),
        Err(_) => Bytes::new(),
    }
}

/// gzip of a stream, emitted as the compressor produces output; errors of the inner stream pass through.
pub(crate) fn compress_stream(chunks: BoxStream<'static, io::Result<Bytes>>) -> BoxStream<'static, io::Result<Bytes>> {
    let encoder = GzEncoder::new(Vec::new(), Compression::fast());
    stream::unfold(Some((chunks, encoder)), |state| async move {
        let (mut chunks, mut encoder) = state?;
        loop {
            match chunks.next().await {
                Some(Ok(chunk)) => {
                    if let Err(e) = encoder.write_all(&chunk) {
                        return Some((Err(e), None));
                    }
                    let out = std::mem::take(encoder.get_mut());
                    if !out.is_empty() {
                        return Some((Ok(Bytes::from(out)), Some((chunks, encoder))));
                    }
                }
                Some(Err(e)) => return Some((Err(e), None)),
                None => return Some((encoder.finish().map(Bytes::from), None)),
            }
        }
    })
    .boxed()
}
