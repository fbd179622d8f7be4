//! h2c clients, streaming bodies, X-Forwarded-* and hop-by-hop headers.

use crate::common;

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use http::{Request, StatusCode};
use http_body_util::channel::Channel;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;

#[tokio::test]
async fn h2c_prior_knowledge_client_routes_by_authority() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![
        route("a", &["a.test"], vec![prefix("/")], vec![to("echo", 1)]),
        route("other", &[], vec![prefix("/")], vec![to("echo", 1)]),
    ];
    let (_proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let stream = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    for _ in 0..3 {
        let req = Request::get("http://a.test/h2?x=1")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = sender.send_request(req).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let seen: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(seen["headers"]["x-route"], "a");
        assert_eq!(seen["headers"]["host"], "a.test");
        assert_eq!(seen["path"], "/h2");
    }
}

/// hyper's HTTP/1 client sends no body for a GET of unknown length; an
/// HTTP/2 client's GET may still carry one (HEADERS without END_STREAM).
/// It reaches the backend whole, and the answer waits for it.
#[tokio::test]
async fn an_h2_get_with_a_streamed_body_reaches_the_backend_whole() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![route("s", &[], vec![prefix("/")], vec![to("echo", 1)])];
    let (_proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let stream = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let (mut body_tx, body) = Channel::<Bytes, Infallible>::new(4);
    let req = Request::get("http://s.test/body").body(body).unwrap();
    let response = tokio::spawn(async move { sender.send_request(req).await });
    body_tx
        .send_data(Bytes::from_static(b"first "))
        .await
        .unwrap();
    body_tx
        .send_data(Bytes::from_static(b"second"))
        .await
        .unwrap();
    drop(body_tx);
    let response = response.await.unwrap().unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let echoed = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&echoed[..], b"first second");
}

#[tokio::test]
async fn large_bodies_stream_both_ways() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![route("s", &[], vec![prefix("/")], vec![to("echo", 1)])];
    let (_proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;

    let stream = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let (mut body_tx, body) = Channel::<Bytes, Infallible>::new(4);
    let req = Request::post("/body")
        .header("host", "s.test")
        .body(body)
        .unwrap();
    let response_fut = tokio::spawn(async move { sender.send_request(req).await });

    // Send one chunk and wait for it to come back before sending the rest:
    // a proxy that buffered whole bodies would never answer.
    let first = Bytes::from(vec![b'a'; 16 * 1024]);
    body_tx.send_data(first.clone()).await.unwrap();
    let response = tokio::time::timeout(Duration::from_secs(10), response_fut)
        .await
        .expect("response headers before the request body ended")
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut received = response.into_body();
    let mut total = 0usize;
    while total < first.len() {
        let frame = tokio::time::timeout(Duration::from_secs(10), received.frame())
            .await
            .expect("first bytes arrive while the upload is still open")
            .unwrap()
            .unwrap();
        total += frame.into_data().map(|d| d.len()).unwrap_or(0);
    }
    let chunk = Bytes::from(vec![b'b'; 64 * 1024]);
    let sent_more = 8 * 1024 * 1024 / chunk.len();
    let writer = tokio::spawn(async move {
        for _ in 0..sent_more {
            body_tx.send_data(chunk.clone()).await.unwrap();
        }
    });
    let rest = received.collect().await.unwrap().to_bytes();
    writer.await.unwrap();
    assert_eq!(total + rest.len(), first.len() + sent_more * 64 * 1024);
    assert!(rest.iter().all(|&b| b == b'b' || b == b'a'));
}

#[tokio::test]
async fn forwarded_headers_and_hop_by_hop_stripping() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![route("x", &[], vec![prefix("/")], vec![to("echo", 1)])];
    let (_proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let req = request(port, "x.test", "/")
        .header("x-forwarded-for", "10.1.2.3")
        .header("connection", "x-private")
        .header("x-private", "1")
        .header("proxy-connection", "keep-alive")
        .header("te", "trailers")
        .header("x-send-hop", "1");
    let reply = send(&client(), req).await;
    let seen = &reply.json()["headers"];
    // The client is not a trusted proxy: its X-Forwarded-For is replaced.
    assert_eq!(seen["x-forwarded-for"], "127.0.0.1");
    assert_eq!(seen["x-forwarded-proto"], "http");
    assert_eq!(seen["host"], "x.test");
    assert!(seen.get("x-private").is_none());
    assert!(seen.get("proxy-connection").is_none());
    assert_eq!(seen["te"], "trailers");
    // Response direction: the backend's Connection-named header is dropped.
    assert!(reply.headers.get("x-internal").is_none());
    assert!(reply.headers.get("keep-alive").is_none());
    assert_eq!(reply.headers["x-upstream-only"], "kept");
}
