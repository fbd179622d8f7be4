//! `client_hello`: the TLS ClientHello reader
//! (`coxswain_proxy::listen::client_hello::read_client_hello`) over an
//! in-memory stream. The byte parser itself is private; the public async
//! reader is driven with a no-op waker (an in-memory reader never waits).
//!
//! Properties:
//! - never panics, and finishes without waiting;
//! - the replay buffer is exactly a prefix of the input (nothing invented,
//!   nothing lost) and, on success, it holds the whole hello;
//! - SNI, when found, is a plausible DNS name: lower-case, non-empty labels
//!   of visible ASCII, no trailing dot;
//! - the input (after the knob) used as the host_name of a well-formed
//!   hello: a name with an empty label (`a..`, `.a`, ``), a control byte,
//!   a space or a non-ASCII byte makes the hello `Malformed`; any other
//!   name gives that name as SNI, lower-cased, one trailing dot removed;
//! - the result does not depend on how the stream is cut into reads (one
//!   byte at a time, or reads of a size taken from the input);
//! - the result does not depend on how the handshake message is cut into
//!   TLS records: a hello that parses parses the same when re-framed into
//!   records of another size.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::BytesMut;
use coxswain_proxy::listen::client_hello::{
    ClientHello, HelloError, MAX_CLIENT_HELLO, read_client_hello,
};
use tokio::io::{AsyncRead, ReadBuf};

/// An in-memory stream handing out at most `chunk` bytes per read.
struct Chunked<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = self.chunk.min(buf.remaining()).min(self.data.len());
        let (head, tail) = self.data.split_at(n);
        buf.put_slice(head);
        self.data = tail;
        Poll::Ready(Ok(()))
    }
}

/// Reads a hello from `data` in reads of at most `chunk` bytes.
fn read(data: &[u8], chunk: usize) -> (Result<ClientHello, HelloError>, BytesMut) {
    let mut io = Chunked { data, chunk };
    let mut buf = BytesMut::new();
    let result = {
        let mut fut = std::pin::pin!(read_client_hello(&mut io, &mut buf));
        let mut cx = Context::from_waker(Waker::noop());
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(r) => r,
            Poll::Pending => panic!("read_client_hello waited on an in-memory stream"),
        }
    };
    (result, buf)
}

/// The handshake bytes of the leading handshake records, and where the
/// records end; `None` when the records are not well framed.
fn handshake_of(data: &[u8]) -> Option<Vec<u8>> {
    let mut handshake = Vec::new();
    let mut rest = data;
    while rest.len() >= 5 {
        if rest[0] != 22 || rest[1] != 3 {
            break;
        }
        let len = usize::from(rest[3]) << 8 | usize::from(rest[4]);
        if len == 0 || rest.len() < 5 + len {
            break;
        }
        handshake.extend_from_slice(&rest[5..5 + len]);
        rest = &rest[5 + len..];
    }
    (!handshake.is_empty()).then_some(handshake)
}

/// `handshake` framed into handshake records of `size` bytes.
fn reframe(handshake: &[u8], size: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for part in handshake.chunks(size) {
        out.extend_from_slice(&[22, 3, 1]);
        out.extend_from_slice(&(part.len() as u16).to_be_bytes());
        out.extend_from_slice(part);
    }
    out
}

/// Non-empty, and every dot-separated label non-empty and of visible ASCII
/// (`!` to `~`).
fn is_dns_like(name: &[u8]) -> bool {
    name.split(|&b| b == b'.')
        .all(|label| !label.is_empty() && label.iter().all(|&b| (0x21..=0x7e).contains(&b)))
}

fn check_hello(hello: &ClientHello, data: &[u8]) {
    if let Some(sni) = &hello.sni {
        assert!(
            !sni.bytes().any(|b| b.is_ascii_uppercase()),
            "SNI not lower-cased: {sni:?} from {data:?}"
        );
        assert!(
            is_dns_like(sni.as_bytes()),
            "SNI is not a plausible DNS name: {sni:?} from {data:?}"
        );
    }
}

/// A ClientHello record whose only extension is server_name with one
/// host_name, `name`.
fn hello_naming(name: &[u8]) -> Vec<u8> {
    let u16_len = |n: usize| u16::try_from(n).unwrap_or(u16::MAX).to_be_bytes();
    let mut entry = vec![0]; // host_name
    entry.extend_from_slice(&u16_len(name.len()));
    entry.extend_from_slice(name);
    let mut server_name = u16_len(entry.len()).to_vec();
    server_name.extend_from_slice(&entry);
    let mut extensions = vec![0, 0]; // server_name
    extensions.extend_from_slice(&u16_len(server_name.len()));
    extensions.extend_from_slice(&server_name);
    let mut body = vec![3, 3]; // legacy_version
    body.extend_from_slice(&[7; 32]); // random
    body.push(0); // legacy_session_id
    body.extend_from_slice(&[0, 2, 0x13, 0x01]); // cipher_suites
    body.extend_from_slice(&[1, 0]); // legacy_compression_methods
    body.extend_from_slice(&u16_len(extensions.len()));
    body.extend_from_slice(&extensions);
    let mut handshake = vec![1]; // client_hello
    handshake.extend_from_slice(&u32::try_from(body.len()).unwrap_or(0).to_be_bytes()[1..]);
    handshake.extend_from_slice(&body);
    reframe(&handshake, 16384)
}

/// `name` as the host_name of an otherwise well-formed hello.
fn check_name(name: &[u8]) {
    let (result, _) = read(&hello_naming(name), usize::MAX);
    let bare = name.strip_suffix(b".").unwrap_or(name);
    if is_dns_like(bare) {
        let expected = String::from_utf8_lossy(bare).to_ascii_lowercase();
        assert_eq!(
            result,
            Ok(ClientHello {
                sni: Some(expected),
                alpn: Vec::new(),
            }),
            "server_name {name:?} refused or changed"
        );
    } else {
        assert_eq!(
            result,
            Err(HelloError::Malformed),
            "server_name {name:?} (empty label, control, space or non-ASCII) not malformed"
        );
    }
}

pub fn check(data: &[u8]) {
    // The size cap is a property of the buffer, which chunking changes:
    // stay below it so every way of reading sees the same bytes.
    let Some((&knob, data)) = data.split_first() else {
        return;
    };
    if data.len() <= 1024 {
        check_name(data);
    }
    if data.len() >= MAX_CLIENT_HELLO {
        return;
    }
    let (whole, buf) = read(data, usize::MAX);
    assert!(
        data.starts_with(&buf),
        "replay buffer is not a prefix of the input"
    );
    if whole.is_ok() {
        assert!(!buf.is_empty(), "hello parsed from nothing");
    }
    if let Ok(hello) = &whole {
        check_hello(hello, data);
    }
    for chunk in [1, usize::from(knob) + 1] {
        let (result, buf) = read(data, chunk);
        assert_eq!(
            result, whole,
            "reads of {chunk} byte(s) changed the result for {data:?}"
        );
        assert!(data.starts_with(&buf), "replay buffer (chunk {chunk})");
    }
    if let (Ok(hello), Some(handshake)) = (&whole, handshake_of(data)) {
        let size = usize::from(knob % 64) + 1;
        let reframed = reframe(&handshake, size);
        if reframed.len() < MAX_CLIENT_HELLO {
            let (again, _) = read(&reframed, usize::MAX);
            assert_eq!(
                again.as_ref(),
                Ok(hello),
                "re-framing into {size}-byte records changed the result for {data:?}"
            );
        }
    }
}
