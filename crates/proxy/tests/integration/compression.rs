//! Compression over a real socket: responses in the coding the client
//! prefers (decoded here with the codec crates), their headers (Vary, a
//! weakened ETag, no Content-Length or Accept-Ranges), the responses left
//! alone (below minSize, gRPC, no-transform, already encoded, HEAD, an
//! invalid resource, an upgrade), HTTP/2 clients, and a slow stream that
//! reaches the client event by event.

use crate::common;

use std::convert::Infallible;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use coxswain_ir::{Compression, Config, Extension, ExtensionKind, ExtensionSpec, Filter};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// What the origin answers: `x-len` bytes of text (default 4000) as
/// `x-type` (default text/html), every `x-set: name=value` as a response
/// header, `x-status` as the status. `/stream` sends one event, waits for the test's go-ahead, then
/// sends another.
async fn origin(release: Arc<Notify>) -> SocketAddr {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let release = release.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| answer(req, release.clone()));
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

fn text(len: usize) -> String {
    "The quick brown fox jumps over the lazy dog. "
        .chars()
        .cycle()
        .take(len)
        .collect()
}

const FIRST_EVENT: &str = "data: first\n\n";
const SECOND_EVENT: &str = "data: second\n\n";

async fn answer(
    req: Request<Incoming>,
    release: Arc<Notify>,
) -> Result<Response<BoxBody<Bytes, Infallible>>, Infallible> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    if req.uri().path().ends_with("/stream") {
        let (mut tx, body) = http_body_util::channel::Channel::<Bytes, Infallible>::new(1);
        tokio::spawn(async move {
            tx.send_data(Bytes::from_static(FIRST_EVENT.as_bytes()))
                .await
                .unwrap();
            release.notified().await;
            tx.send_data(Bytes::from_static(SECOND_EVENT.as_bytes()))
                .await
                .unwrap();
        });
        let mut response = Response::new(body.boxed());
        response
            .headers_mut()
            .insert("content-type", "text/event-stream".parse().unwrap());
        return Ok(response);
    }
    let len = header("x-len").and_then(|v| v.parse().ok()).unwrap_or(4000);
    let content_type = header("x-type").unwrap_or("text/html; charset=utf-8");
    let mut response = Response::new(Full::new(Bytes::from(text(len))).boxed());
    if let Some(status) = header("x-status").and_then(|v| v.parse().ok()) {
        *response.status_mut() = StatusCode::from_u16(status).unwrap();
    }
    let headers = response.headers_mut();
    headers.insert("content-type", content_type.parse().unwrap());
    for set in req.headers().get_all("x-set") {
        let (name, value) = set.to_str().unwrap().split_once('=').unwrap();
        headers.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    Ok(response)
}

fn key(name: &str) -> coxswain_ir::ExtensionKey {
    extension_key(ExtensionKind::Compression, name)
}

fn compression(name: &str, types: &[&str], min_size: u64) -> Extension {
    Extension {
        key: key(name),
        spec: ExtensionSpec::Compression(Compression {
            gzip: true,
            brotli: true,
            zstd: true,
            level: 6,
            min_size,
            types: types.iter().map(|t| t.to_string()).collect(),
        }),
    }
}

fn compressing_config(port: u16, backend: SocketAddr) -> Arc<Config> {
    let routes = vec![
        rule_with("/c", vec![Filter::Extension(key("all"))]),
        rule_with("/sse", vec![Filter::Extension(key("events"))]),
        rule_with("/bad", vec![Filter::Extension(key("bad"))]),
        rule_with("/plain", vec![]),
    ];
    let extensions = vec![
        compression("all", Compression::DEFAULT_TYPES, 1024),
        compression("events", &["text/*"], 0),
        Extension {
            key: key("bad"),
            spec: ExtensionSpec::Inactive {
                reason: "spec.types: invalid".into(),
            },
        },
    ];
    config_with_extensions(port, routes, backend, extensions)
}

fn decode(coding: &str, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match coding {
        "gzip" => {
            flate2::read::GzDecoder::new(bytes)
                .read_to_end(&mut out)
                .unwrap();
        }
        "br" => {
            brotli::Decompressor::new(bytes, 4096)
                .read_to_end(&mut out)
                .unwrap();
        }
        "zstd" => out = zstd::decode_all(bytes).unwrap(),
        other => panic!("unexpected coding {other}"),
    }
    out
}

struct Setup {
    _proxy: coxswain_proxy::Proxy,
    port: u16,
    release: Arc<Notify>,
}

async fn setup() -> Setup {
    let release = Arc::new(Notify::new());
    let backend = origin(release.clone()).await;
    let port = free_port();
    let (proxy, _) = start_proxy(compressing_config(port, backend)).await;
    Setup {
        _proxy: proxy,
        port,
        release,
    }
}

async fn fetch(port: u16, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut req = request(port, "h.test", path);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    send(&client(), req).await
}

fn values(headers: &HeaderMap, name: &str) -> Vec<String> {
    headers
        .get_all(name)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn each_coding_decodes_to_the_original_with_its_headers_fixed() {
    let s = setup().await;
    let cases = [
        ("gzip", "gzip"),
        ("br", "br"),
        ("zstd", "zstd"),
        ("gzip, deflate, br, zstd", "br"),
        ("gzip;q=1, br;q=0.5, zstd;q=0.9", "gzip"),
        ("br;q=0, *", "zstd"),
    ];
    for (accept, coding) in cases {
        let reply = fetch(
            s.port,
            "/c/page",
            &[
                ("accept-encoding", accept),
                ("x-set", "etag=\"v7\""),
                ("x-set", "accept-ranges=bytes"),
                ("x-set", "vary=Origin"),
            ],
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{accept}");
        let h = &reply.headers;
        assert_eq!(values(h, "content-encoding"), [coding], "{accept}");
        assert_eq!(values(h, "vary"), ["Origin", "Accept-Encoding"], "{accept}");
        assert_eq!(values(h, "etag"), ["W/\"v7\""], "{accept}");
        assert!(!h.contains_key("content-length"), "{accept}");
        assert!(!h.contains_key("accept-ranges"), "{accept}");
        assert!(
            reply.body.len() < 1000,
            "{accept}: {} bytes",
            reply.body.len()
        );
        assert_eq!(
            decode(coding, &reply.body),
            text(4000).as_bytes(),
            "{accept}"
        );
    }
}

#[tokio::test]
async fn an_http2_client_gets_the_same_compressed_answer() {
    let s = setup().await;
    let h2 = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build(hyper_util::client::legacy::connect::HttpConnector::new());
    for coding in ["gzip", "br", "zstd"] {
        let req = request(s.port, "h.test", "/c/page")
            .header("accept-encoding", coding)
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = h2.request(req).await.unwrap();
        assert_eq!(response.version(), http::Version::HTTP_2);
        let h = response.headers().clone();
        assert_eq!(values(&h, "content-encoding"), [coding]);
        assert!(!h.contains_key("content-length"), "{coding}");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(decode(coding, &body), text(4000).as_bytes(), "{coding}");
    }
}

#[tokio::test]
async fn a_client_that_takes_no_coding_gets_identity_with_vary() {
    let s = setup().await;
    for accept in [
        None,
        Some("identity"),
        Some("identity;q=0"),
        Some("deflate"),
    ] {
        let headers: Vec<(&str, &str)> =
            accept.map(|a| ("accept-encoding", a)).into_iter().collect();
        let reply = fetch(s.port, "/c/page", &headers).await;
        assert_eq!(reply.status, StatusCode::OK, "{accept:?}");
        assert!(
            !reply.headers.contains_key("content-encoding"),
            "{accept:?}"
        );
        assert_eq!(
            values(&reply.headers, "vary"),
            ["Accept-Encoding"],
            "{accept:?}"
        );
        assert_eq!(
            values(&reply.headers, "content-length"),
            ["4000"],
            "{accept:?}"
        );
        assert_eq!(reply.body, text(4000).as_bytes(), "{accept:?}");
    }
    // HEAD: never compressed, but varies like the GET would.
    let req = request(s.port, "h.test", "/c/page")
        .method(Method::HEAD)
        .header("accept-encoding", "gzip");
    let reply = send(&client(), req).await;
    assert!(!reply.headers.contains_key("content-encoding"));
    assert_eq!(values(&reply.headers, "vary"), ["Accept-Encoding"]);
    assert_eq!(values(&reply.headers, "content-length"), ["4000"]);
}

#[tokio::test]
async fn responses_that_must_not_be_compressed_pass_untouched() {
    let s = setup().await;
    let gzip = ("accept-encoding", "gzip, br, zstd");
    let cases: [(&str, Vec<(&str, &str)>); 6] = [
        ("below minSize", vec![("x-len", "1023")]),
        ("grpc", vec![("x-type", "application/grpc")]),
        ("a type not listed", vec![("x-type", "image/png")]),
        (
            "no-transform",
            vec![("x-set", "cache-control=public, no-transform")],
        ),
        (
            "already encoded",
            vec![("x-set", "content-encoding=identity")],
        ),
        ("a 206", vec![("x-status", "206")]),
    ];
    for (what, mut headers) in cases {
        headers.push(gzip);
        let reply = fetch(s.port, "/c/x", &headers).await;
        let status = if what == "a 206" { 206 } else { 200 };
        assert_eq!(reply.status, status, "{what}");
        let h = &reply.headers;
        let encoding = values(h, "content-encoding");
        assert!(
            encoding.is_empty() || encoding == ["identity"],
            "{what}: {encoding:?}"
        );
        assert!(values(h, "vary").is_empty(), "{what}");
        let len: usize = values(h, "content-length")[0].parse().unwrap();
        assert_eq!(reply.body.len(), len, "{what}");
        assert_eq!(reply.body, text(len).as_bytes(), "{what}");
    }
    // A rule without the filter, and one whose resource is invalid (it
    // fails open): served as the origin sent it.
    for path in ["/plain/page", "/bad/page"] {
        let reply = fetch(s.port, path, &[gzip]).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert!(!reply.headers.contains_key("content-encoding"), "{path}");
        assert!(!reply.headers.contains_key("vary"), "{path}");
        assert_eq!(reply.body, text(4000).as_bytes(), "{path}");
    }
}

#[tokio::test]
async fn a_slow_stream_reaches_the_client_event_by_event() {
    let s = setup().await;
    for coding in ["gzip", "br", "zstd"] {
        let req = request(s.port, "h.test", "/sse/stream")
            .header("accept-encoding", coding)
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = client().request(req).await.unwrap();
        assert_eq!(values(response.headers(), "content-encoding"), [coding]);
        let mut body = response.into_body();
        let mut decoder = Prefix::new(coding);
        // The second event waits on us: the first must come through alone.
        let first = tokio::time::timeout(Duration::from_secs(10), async {
            while decoder.decoded() != FIRST_EVENT.as_bytes() {
                let frame = body.frame().await.expect("body ended").unwrap();
                decoder.feed(&frame.into_data().unwrap());
            }
        })
        .await;
        assert!(first.is_ok(), "{coding}: the first event was held back");
        s.release.notify_one();
        let rest = body.collect().await.unwrap().to_bytes();
        decoder.feed(&rest);
        let all = format!("{FIRST_EVENT}{SECOND_EVENT}");
        assert_eq!(decoder.decoded(), all.as_bytes(), "{coding}");
    }
}

/// A decoder fed a stream piece by piece.
enum Prefix {
    Gzip(Box<flate2::write::GzDecoder<Vec<u8>>>),
    Brotli(Box<brotli::DecompressorWriter<Vec<u8>>>),
    Zstd(zstd::stream::write::Decoder<'static, Vec<u8>>),
}

impl Prefix {
    fn new(coding: &str) -> Self {
        match coding {
            "gzip" => Prefix::Gzip(Box::new(flate2::write::GzDecoder::new(Vec::new()))),
            "br" => Prefix::Brotli(Box::new(brotli::DecompressorWriter::new(Vec::new(), 4096))),
            _ => Prefix::Zstd(zstd::stream::write::Decoder::new(Vec::new()).unwrap()),
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        match self {
            Prefix::Gzip(d) => {
                d.write_all(bytes).unwrap();
                d.flush().unwrap();
            }
            Prefix::Brotli(d) => {
                d.write_all(bytes).unwrap();
                d.flush().unwrap();
            }
            Prefix::Zstd(d) => {
                d.write_all(bytes).unwrap();
                d.flush().unwrap();
            }
        }
    }

    fn decoded(&self) -> &[u8] {
        match self {
            Prefix::Gzip(d) => d.get_ref(),
            Prefix::Brotli(d) => d.get_ref(),
            Prefix::Zstd(d) => d.get_ref(),
        }
    }
}

#[tokio::test]
async fn an_upgraded_connection_is_relayed_untouched() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let backend = upgrading_origin().await;
    let port = free_port();
    let (_proxy, _) = start_proxy(compressing_config(port, backend)).await;
    let mut stream = tokio::net::TcpStream::connect((LOCALHOST, port))
        .await
        .unwrap();
    let request = "GET /c/ws HTTP/1.1\r\nHost: h.test\r\nConnection: Upgrade\r\n\
                   Upgrade: websocket\r\nAccept-Encoding: gzip, br, zstd\r\n\r\n";
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    let read_head = async {
        while !head.ends_with(b"\r\n\r\n") {
            assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "closed");
            head.push(byte[0]);
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read_head)
        .await
        .unwrap();
    let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(!head.contains("content-encoding"), "{head}");
    assert!(!head.contains("vary"), "{head}");
    let payload = text(3000);
    stream.write_all(payload.as_bytes()).await.unwrap();
    let mut echoed = vec![0u8; payload.len()];
    tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut echoed))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(echoed, payload.as_bytes());
}
