//! What a server stuck on TLS 1.0 answers a modern ClientHello with: a TLS 1.0 ServerHello, made by
//! hand (rustls servers cannot speak TLS 1.0). For the worker's TLS probe tests
//! (`worker/tests/it/tls_probe.rs`) and the end-to-end finding tests' `old.test`
//! (`tests/tests/it/finding_support/`). Standard library only.

/// A minimal TLS 1.0 ServerHello record: TLS_RSA_WITH_AES_128_CBC_SHA, an empty session id, no
/// compression.
pub fn server_hello() -> Vec<u8> {
    let mut hello = vec![0x03, 0x01]; // server_version TLS 1.0
    hello.extend_from_slice(&[0x42; 32]); // random
    hello.push(0); // empty session id
    hello.extend_from_slice(&[0x00, 0x2f]); // TLS_RSA_WITH_AES_128_CBC_SHA
    hello.push(0); // no compression
    let mut handshake = vec![0x02, 0, 0, u8::try_from(hello.len()).expect("short")];
    handshake.extend_from_slice(&hello);
    let mut record = vec![0x16, 0x03, 0x01, 0, u8::try_from(handshake.len()).expect("short")];
    record.extend_from_slice(&handshake);
    record
}
