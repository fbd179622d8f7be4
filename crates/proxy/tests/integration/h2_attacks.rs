//! HTTP/2 requests no conforming client sends, written frame by frame:
//! header values with CR/LF, connection-specific headers, a body longer than
//! its content-length, Rapid Reset and a CONTINUATION flood. Each is refused
//! (stream reset, 400, or GOAWAY) without reaching the backend, and the
//! server's limits are the ones configured.

use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const GOAWAY: u8 = 7;
const CONTINUATION: u8 = 9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const ACK: u8 = 0x1;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// HPACK integer with an N-bit prefix (RFC 7541 5.1).
fn hpack_int(out: &mut Vec<u8>, first: u8, prefix_bits: u32, mut value: usize) {
    let max = (1usize << prefix_bits) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// A header block of literal fields without indexing (no Huffman), so any
/// byte can be sent, CR and LF included.
fn header_block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0x00);
        hpack_int(&mut out, 0, 7, name.len());
        out.extend_from_slice(name.as_bytes());
        hpack_int(&mut out, 0, 7, value.len());
        out.extend_from_slice(value.as_bytes());
    }
    out
}

fn request_fields(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut fields = vec![
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "h.test"),
    ];
    fields.extend_from_slice(extra);
    fields
}

struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

/// A raw h2c connection: preface and SETTINGS sent, the server's SETTINGS
/// read and acknowledged.
struct Conn {
    stream: TcpStream,
    server_settings: Vec<(u16, u32)>,
}

impl Conn {
    async fn open(port: u16) -> Conn {
        let mut stream = TcpStream::connect((LOCALHOST, port)).await.unwrap();
        stream.write_all(PREFACE).await.unwrap();
        stream.write_all(&frame(SETTINGS, 0, 0, &[])).await.unwrap();
        let mut conn = Conn {
            stream,
            server_settings: Vec::new(),
        };
        loop {
            let f = conn.read().await.expect("server SETTINGS");
            if f.kind == SETTINGS && f.flags & ACK == 0 {
                conn.server_settings = f
                    .payload
                    .chunks(6)
                    .map(|c| {
                        (
                            u16::from_be_bytes([c[0], c[1]]),
                            u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
                        )
                    })
                    .collect();
                conn.stream
                    .write_all(&frame(SETTINGS, ACK, 0, &[]))
                    .await
                    .unwrap();
                return conn;
            }
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        // The server may already have closed on us; that is an outcome.
        let _ = self.stream.write_all(bytes).await;
    }

    /// The next frame, or `None` when the connection closed or 10 s passed.
    async fn read(&mut self) -> Option<Frame> {
        let mut head = [0u8; 9];
        tokio::time::timeout(Duration::from_secs(10), self.stream.read_exact(&mut head))
            .await
            .ok()?
            .ok()?;
        let len = (head[0] as usize) << 16 | (head[1] as usize) << 8 | head[2] as usize;
        let mut payload = vec![0u8; len];
        self.stream.read_exact(&mut payload).await.ok()?;
        Some(Frame {
            kind: head[3],
            flags: head[4],
            stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
            payload,
        })
    }

    /// What happened to `stream`: a response status, a reset, or GOAWAY.
    async fn outcome(&mut self, stream: u32) -> String {
        while let Some(f) = self.read().await {
            match f.kind {
                HEADERS if f.stream == stream => {
                    // Our responses start with an indexed :status (RFC 7541
                    // static table 8..14) from hyper's encoder.
                    return match f.payload.first() {
                        Some(0x88) => "status 200".into(),
                        Some(b) if *b & 0x80 != 0 => format!("status index {}", b & 0x7f),
                        _ => "status (literal)".into(),
                    };
                }
                RST_STREAM if f.stream == stream => return "reset".into(),
                GOAWAY => return "goaway".into(),
                _ => {}
            }
        }
        "closed".into()
    }
}

async fn proxy_and_backend() -> (u16, EchoBackend, coxswain_proxy::Proxy) {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![route("r", &[], vec![prefix("/")], vec![to("echo", 1)])];
    let (proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    (port, backend, proxy)
}

#[tokio::test]
async fn limits_are_advertised_as_configured() {
    let (port, _backend, _proxy) = proxy_and_backend().await;
    let conn = Conn::open(port).await;
    let setting = |id: u16| {
        conn.server_settings
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, v)| *v)
    };
    assert_eq!(setting(0x3), Some(100), "MAX_CONCURRENT_STREAMS");
    assert_eq!(setting(0x4), Some(64 * 1024), "INITIAL_WINDOW_SIZE");
    assert_eq!(setting(0x6), Some(64 * 1024), "MAX_HEADER_LIST_SIZE");
}

#[tokio::test]
async fn malformed_requests_never_reach_the_backend() {
    let (port, backend, _proxy) = proxy_and_backend().await;
    let cases: [(&str, Vec<(&str, &str)>); 5] = [
        (
            "CR LF in a value",
            request_fields(&[("x-evil", "a\r\nx-injected: b")]),
        ),
        ("LF in a value", request_fields(&[("x-evil", "a\nb")])),
        (
            "connection header",
            request_fields(&[("connection", "keep-alive")]),
        ),
        (
            "transfer-encoding header",
            request_fields(&[("transfer-encoding", "chunked")]),
        ),
        ("te other than trailers", request_fields(&[("te", "gzip")])),
    ];
    for (name, fields) in cases {
        let mut conn = Conn::open(port).await;
        conn.send(&frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            1,
            &header_block(&fields),
        ))
        .await;
        let outcome = conn.outcome(1).await;
        assert!(outcome != "status 200", "{name}: {outcome}");
    }
    assert_eq!(backend.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_body_longer_than_its_content_length_is_refused() {
    let (port, _backend, _proxy) = proxy_and_backend().await;
    let mut conn = Conn::open(port).await;
    let fields = vec![
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/body"),
        (":authority", "h.test"),
        ("content-length", "3"),
    ];
    conn.send(&frame(HEADERS, END_HEADERS, 1, &header_block(&fields)))
        .await;
    conn.send(&frame(DATA, END_STREAM, 1, b"more than three"))
        .await;
    let outcome = conn.outcome(1).await;
    assert!(outcome != "status 200", "{outcome}");
}

/// Rapid Reset: streams opened and cancelled at once, over and over. The
/// connection gets GOAWAY long before the backend sees them all.
#[tokio::test]
async fn rapid_reset_gets_goaway() {
    let (port, backend, _proxy) = proxy_and_backend().await;
    let mut conn = Conn::open(port).await;
    let block = header_block(&request_fields(&[("x-delay-ms", "50")]));
    let mut burst = Vec::new();
    for i in 0..1000u32 {
        let id = 1 + 2 * i;
        burst.extend(frame(HEADERS, END_HEADERS | END_STREAM, id, &block));
        burst.extend(frame(RST_STREAM, 0, id, &8u32.to_be_bytes())); // CANCEL
    }
    conn.send(&burst).await;
    let mut goaway = false;
    while let Some(f) = conn.read().await {
        if f.kind == GOAWAY {
            goaway = true;
            break;
        }
    }
    assert!(goaway, "no GOAWAY after 1000 reset streams");
    assert!(backend.hits.load(Ordering::SeqCst) < 1000);
}

/// A header block that never ends (CONTINUATION frames without
/// END_HEADERS) is cut off at the header list limit, not buffered forever.
#[tokio::test]
async fn continuation_flood_is_cut_off() {
    let (port, backend, _proxy) = proxy_and_backend().await;
    let mut conn = Conn::open(port).await;
    let first = header_block(&request_fields(&[]));
    conn.send(&frame(HEADERS, END_STREAM, 1, &first)).await;
    let filler = header_block(&[("x-filler", &"a".repeat(4000))]);
    let mut sent = 0usize;
    let mut flood = Vec::new();
    while sent < 4 * 1024 * 1024 {
        flood.extend(frame(CONTINUATION, 0, 1, &filler));
        sent += filler.len();
    }
    conn.send(&flood).await;
    let outcome = conn.outcome(1).await;
    assert!(
        [
            "goaway",
            "reset",
            "closed",
            "status index 13",
            "status index 14"
        ]
        .contains(&outcome.as_str())
            || outcome.starts_with("status (literal)"),
        "{outcome}"
    );
    assert_eq!(backend.hits.load(Ordering::SeqCst), 0);
}
