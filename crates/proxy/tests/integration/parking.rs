//! Idle plain HTTP/1.1 connections are parked (hyper's buffers released,
//! the socket kept) and serve on when their next bytes come: split heads,
//! pipelined requests, request bodies, an upgrade whose tunnel bytes came
//! with its head. Paused clock, real sockets.

use crate::common;

use std::time::Duration;

use common::*;
use coxswain_proxy::{HttpLimits, Proxy, ProxyOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The `coxswain_proxy_http1_parked_connections` gauge.
fn parked(proxy: &Proxy) -> u64 {
    let mut out = String::new();
    proxy.render_metrics(&mut out);
    out.lines()
        .find_map(|l| l.strip_prefix("coxswain_proxy_http1_parked_connections "))
        .and_then(|v| v.parse().ok())
        .expect("the parked gauge is rendered")
}

/// Reads one response with a `Content-Length` body: (status, body).
async fn response(stream: &mut TcpStream) -> (u16, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "closed mid-head");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.unwrap();
    (raw_status(&head), body)
}

/// Lets the proxy's timers run past the park delay (virtual time).
async fn idle_a_while() {
    tokio::time::sleep(Duration::from_secs(1)).await;
}

const GET: &[u8] = b"GET /a HTTP/1.1\r\nHost: h.test\r\n\r\n";

#[tokio::test(start_paused = true)]
async fn an_idle_connection_parks_and_serves_on() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![route("r", &[], vec![prefix("/")], vec![to("echo", 1)])];
    let options = ProxyOptions {
        http: HttpLimits {
            idle_timeout: Duration::from_secs(20),
            ..HttpLimits::default()
        },
        ..ProxyOptions::default()
    };
    let (proxy, _) = start_proxy_with(simple_config(port, routes, backend.addr), options).await;
    let mut stream = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    // Nagle would hold the head's second piece for a delayed ACK, which
    // takes real time while the paused clock runs to the header timeout.
    stream.set_nodelay(true).unwrap();
    stream.write_all(GET).await.unwrap();
    assert_eq!(response(&mut stream).await.0, 200);
    idle_a_while().await;
    assert_eq!(parked(&proxy), 1);

    // A head that arrives in two pieces wakes it.
    stream.write_all(b"GET /b HTTP/1.1\r\nHo").await.unwrap();
    idle_a_while().await;
    stream.write_all(b"st: h.test\r\n\r\n").await.unwrap();
    let (status, body) = response(&mut stream).await;
    assert_eq!(status, 200);
    assert!(
        String::from_utf8_lossy(&body).contains("\"/b\""),
        "{body:?}"
    );

    // Parked again; two pipelined requests and a body, in one write.
    idle_a_while().await;
    assert_eq!(parked(&proxy), 1);
    let mut burst = GET.to_vec();
    burst.extend_from_slice(b"POST /c HTTP/1.1\r\nHost: h.test\r\nContent-Length: 5\r\n\r\nhello");
    burst.extend_from_slice(GET);
    stream.write_all(&burst).await.unwrap();
    for _ in 0..3 {
        assert_eq!(response(&mut stream).await.0, 200);
    }
    assert_eq!(backend.hits.load(std::sync::atomic::Ordering::SeqCst), 5);

    // Parked, then closed on the idle timeout like any idle connection.
    idle_a_while().await;
    assert_eq!(parked(&proxy), 1);
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut rest));
    assert!(closed.await.is_ok(), "not closed on the idle timeout");
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(parked(&proxy), 0);
}

#[tokio::test(start_paused = true)]
async fn a_parked_connection_upgrades_with_the_bytes_that_came_along() {
    let echo = echo_backend("b").await;
    let upgrading = upgrading_origin().await;
    let port = free_port();
    let routes = vec![
        route("plain", &[], vec![prefix("/")], vec![to("echo", 1)]),
        route("ws", &[], vec![prefix("/ws")], vec![to("up", 1)]),
    ];
    let sockets = vec![socket(port, vec![gateway_listener("l", None, routes)])];
    let clusters = vec![cluster("echo", &[echo.addr]), cluster("up", &[upgrading])];
    let (proxy, _) = start_proxy(config(sockets, clusters)).await;
    let mut stream = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    stream.write_all(GET).await.unwrap();
    assert_eq!(response(&mut stream).await.0, 200);
    idle_a_while().await;
    assert_eq!(parked(&proxy), 1);

    // The tunnel's first bytes travel with the upgrade's head: hyper reads
    // them ahead, and they must reach the backend after the 101.
    let upgrade = b"GET /ws HTTP/1.1\r\nHost: h.test\r\nConnection: Upgrade\r\n\
                    Upgrade: websocket\r\n\r\nearly bytes";
    stream.write_all(upgrade).await.unwrap();
    let (status, _) = response(&mut stream).await;
    assert_eq!(status, 101);
    let mut echoed = [0u8; 11];
    stream.read_exact(&mut echoed).await.unwrap();
    assert_eq!(&echoed, b"early bytes");
    stream.write_all(b"later").await.unwrap();
    let mut later = [0u8; 5];
    stream.read_exact(&mut later).await.unwrap();
    assert_eq!(&later, b"later");
    assert_eq!(parked(&proxy), 0);
}

/// A body the proxy answered before reading it whole: the connection is
/// not parked mid-body, so the rest of the body is never read as a request.
#[tokio::test(start_paused = true)]
async fn a_connection_mid_body_is_never_parked() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![route("r", &[], vec![prefix("/")], vec![to("echo", 1)])];
    let (proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let mut stream = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let smuggled = b"GET /smuggled HTTP/1.1\r\nHost: h.test\r\n\r\n";
    let head = format!(
        "POST /upload HTTP/1.1\r\nHost: h.test\r\nContent-Length: {}\r\n\r\n",
        4 + smuggled.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(b"abcd").await.unwrap();
    // The echo backend answers without reading the body.
    assert_eq!(response(&mut stream).await.0, 200);
    idle_a_while().await;
    assert_eq!(parked(&proxy), 0);
    stream.write_all(smuggled).await.unwrap();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut rest));
    assert!(closed.await.is_ok(), "not closed");
    assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
    assert_eq!(backend.hits.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_draining_listener_closes_its_parked_connections() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![route("r", &[], vec![prefix("/")], vec![to("echo", 1)])];
    let (proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let mut stream = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    stream.write_all(GET).await.unwrap();
    assert_eq!(response(&mut stream).await.0, 200);
    idle_a_while().await;
    assert_eq!(parked(&proxy), 1);
    // The listener goes away: its parked connection closes, uncounted.
    proxy.apply(config(vec![], vec![])).await;
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest));
    assert!(closed.await.is_ok(), "not closed by the drain");
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(parked(&proxy), 0);
}
