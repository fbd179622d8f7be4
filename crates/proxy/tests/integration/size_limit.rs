//! RequestSizeLimit on the request path: a declared length past the limit
//! is refused before any byte is read; a streamed body (HTTP/1.1 chunked,
//! HTTP/2, gRPC) is cut off where it passes the limit, with 413 (gRPC:
//! RESOURCE_EXHAUSTED), no byte past the limit reaching the backend, and an
//! HTTP/2 connection that goes on serving.

use crate::common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use common::*;
use coxswain_ir::{Config, Extension, ExtensionKind, ExtensionSpec, Filter};
use http::{Request, Response, StatusCode};
use http_body::Frame;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

const LIMIT: u64 = 64 * 1024;
const CHUNK: usize = 16 * 1024;

/// A backend that reads each request body to its end before answering
/// `got <n>`, and counts every body byte it was ever sent.
struct ReadingBackend {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
    received: Arc<AtomicU64>,
}

async fn reading_backend() -> ReadingBackend {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let received = Arc::new(AtomicU64::new(0));
    let (h, r) = (hits.clone(), received.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (h, r) = (h.clone(), r.clone());
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<Incoming>| {
                    let (h, r) = (h.clone(), r.clone());
                    async move {
                        h.fetch_add(1, Ordering::SeqCst);
                        let mut body = req.into_body();
                        let mut n = 0u64;
                        while let Some(Ok(frame)) = body.frame().await {
                            let len = frame.data_ref().map_or(0, |d| d.len() as u64);
                            n += len;
                            r.fetch_add(len, Ordering::SeqCst);
                        }
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(format!(
                            "got {n}"
                        )))))
                    }
                });
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    ReadingBackend {
        addr,
        hits,
        received,
    }
}

/// A body of `chunks` chunks of [`CHUNK`] bytes with no declared length
/// (chunked on HTTP/1.1), made as it is read.
struct Chunks(usize);

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.0 == 0 {
            return Poll::Ready(None);
        }
        self.0 -= 1;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(vec![b'x'; CHUNK])))))
    }
}

type StreamClient = Client<HttpConnector, BoxBody<Bytes, Infallible>>;

fn stream_client(h2: bool) -> StreamClient {
    Client::builder(TokioExecutor::new())
        .http2_only(h2)
        .build(HttpConnector::new())
}

fn limited_config(port: u16, backend: SocketAddr) -> Arc<Config> {
    let key = extension_key(ExtensionKind::RequestSizeLimit, "uploads");
    let rule = rule_with("/", vec![Filter::Extension(key.clone())]);
    let limit = Extension {
        key,
        spec: ExtensionSpec::SizeLimit { max_bytes: LIMIT },
    };
    config_with_extensions(port, vec![rule], backend, vec![limit])
}

async fn upload(
    client: &StreamClient,
    port: u16,
    body: BoxBody<Bytes, Infallible>,
    grpc: bool,
) -> (Response<()>, Bytes) {
    let mut req = Request::post(format!("http://127.0.0.1:{port}/upload"));
    if grpc {
        req = req.header("content-type", "application/grpc");
    }
    let response = client.request(req.body(body).unwrap()).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    (Response::from_parts(parts, ()), bytes)
}

fn too_large_count(proxy: &coxswain_proxy::Proxy) -> String {
    let mut out = String::new();
    proxy.render_metrics(&mut out);
    out.lines()
        .find(|l| l.contains("reason=\"body_too_large\""))
        .map(str::to_string)
        .unwrap_or_default()
}

#[tokio::test]
async fn a_declared_length_past_the_limit_is_refused_before_the_backend() {
    let backend = reading_backend().await;
    let port = free_port();
    let (_proxy, _) = start_proxy(limited_config(port, backend.addr)).await;
    let client = stream_client(false);
    let big = Full::new(Bytes::from(vec![b'x'; LIMIT as usize + 1]))
        .map_err(|n| match n {})
        .boxed();
    let (response, _) = upload(&client, port, big, false).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(backend.hits.load(Ordering::SeqCst), 0);
    let exact = Full::new(Bytes::from(vec![b'x'; LIMIT as usize]))
        .map_err(|n| match n {})
        .boxed();
    let (response, body) = upload(&client, port, exact, false).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(body, format!("got {LIMIT}"));
}

#[tokio::test]
async fn a_chunked_upload_is_cut_at_the_limit_with_413() {
    let backend = reading_backend().await;
    let port = free_port();
    let (proxy, _) = start_proxy(limited_config(port, backend.addr)).await;
    let client = stream_client(false);
    // 1 GiB offered; the gateway stops reading a little past 64 KiB.
    let (response, _) = upload(&client, port, Chunks(65_536).boxed(), false).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        backend.received.load(Ordering::SeqCst) <= LIMIT,
        "{} bytes reached the backend",
        backend.received.load(Ordering::SeqCst)
    );
    assert!(
        too_large_count(&proxy).ends_with(" 1"),
        "{}",
        too_large_count(&proxy)
    );
    // Within the limit, a chunked body goes through whole.
    let (response, body) = upload(&client, port, Chunks(3).boxed(), false).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(body, format!("got {}", 3 * CHUNK));
}

#[tokio::test]
async fn an_h2_stream_is_cut_at_the_limit_and_its_connection_serves_on() {
    let backend = reading_backend().await;
    let port = free_port();
    let (_proxy, _) = start_proxy(limited_config(port, backend.addr)).await;
    let client = stream_client(true);
    let (response, _) = upload(&client, port, Chunks(65_536).boxed(), false).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(backend.received.load(Ordering::SeqCst) <= LIMIT);
    // The same client (one HTTP/2 connection): only the stream was reset.
    let (response, body) = upload(&client, port, Chunks(2).boxed(), false).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(body, format!("got {}", 2 * CHUNK));
}

#[tokio::test]
async fn a_grpc_stream_past_the_limit_gets_resource_exhausted() {
    let backend = reading_backend().await;
    let port = free_port();
    let (_proxy, _) = start_proxy(limited_config(port, backend.addr)).await;
    let client = stream_client(true);
    let (response, _) = upload(&client, port, Chunks(65_536).boxed(), true).await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "gRPC answers are HTTP 200"
    );
    assert_eq!(
        response.headers().get("grpc-status").map(|v| v.as_bytes()),
        Some(&b"8"[..]),
        "{:?}",
        response.headers()
    );
    assert!(backend.received.load(Ordering::SeqCst) <= LIMIT);
}
