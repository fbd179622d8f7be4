//! HTTP/1 limits and overload protection: slowloris heads and idle
//! connections are closed on time (paused clock), oversized heads and
//! targets are refused, connections are capped at accept (and only
//! accepted ones count), requests beyond the in-flight limit are shed with
//! 503.

use crate::common;

use std::time::Duration;

use common::*;
use coxswain_proxy::{HttpLimits, OverloadLimits, ProxyOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn proxy_with(options: ProxyOptions) -> (u16, EchoBackend, coxswain_proxy::Proxy) {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![route("r", &[], vec![prefix("/")], vec![to("echo", 1)])];
    let (proxy, _) = start_proxy_with(simple_config(port, routes, backend.addr), options).await;
    (port, backend, proxy)
}

fn http(limits: HttpLimits) -> ProxyOptions {
    ProxyOptions {
        http: limits,
        ..ProxyOptions::default()
    }
}

/// Reads until EOF; `true` when the peer closed within the (virtual) limit.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let mut sink = Vec::new();
    matches!(
        tokio::time::timeout(limit, stream.read_to_end(&mut sink)).await,
        Ok(Ok(_))
    )
}

#[tokio::test(start_paused = true)]
async fn a_slowloris_head_is_cut_off() {
    let limits = HttpLimits {
        header_read_timeout: Duration::from_secs(5),
        ..HttpLimits::default()
    };
    let (port, backend, _proxy) = proxy_with(http(limits)).await;
    let mut stream = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: h.test\r\nX-Slow: ")
        .await
        .unwrap();
    assert!(closed_within(&mut stream, Duration::from_secs(30)).await);
    assert_eq!(backend.hits.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn idle_connections_are_closed() {
    let limits = HttpLimits {
        idle_timeout: Duration::from_secs(20),
        header_read_timeout: Duration::from_secs(3600),
        ..HttpLimits::default()
    };
    let (port, _backend, _proxy) = proxy_with(http(limits)).await;
    // Before any request...
    let mut silent = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    assert!(closed_within(&mut silent, Duration::from_secs(60)).await);
    // ...and after one, with keep-alive.
    let mut stream = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        .await
        .unwrap();
    let mut first = [0u8; 12];
    stream.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    assert!(closed_within(&mut stream, Duration::from_secs(60)).await);
}

#[tokio::test]
async fn oversized_heads_and_targets_are_refused() {
    let limits = HttpLimits {
        max_header_bytes: 16 * 1024,
        max_headers: 20,
        max_uri_bytes: 1024,
        ..HttpLimits::default()
    };
    let (port, backend, proxy) = proxy_with(http(limits)).await;
    let big = format!(
        "GET / HTTP/1.1\r\nHost: h.test\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(32 * 1024)
    );
    assert_eq!(raw_status(&raw_exchange(port, big.as_bytes()).await), 431);
    let many: String = (0..40).map(|i| format!("X-{i}: v\r\n")).collect();
    let many = format!("GET / HTTP/1.1\r\nHost: h.test\r\n{many}Connection: close\r\n\r\n");
    assert_eq!(raw_status(&raw_exchange(port, many.as_bytes()).await), 431);
    let long = format!(
        "GET /{} HTTP/1.1\r\nHost: h.test\r\nConnection: close\r\n\r\n",
        "a".repeat(2048)
    );
    assert_eq!(raw_status(&raw_exchange(port, long.as_bytes()).await), 414);
    assert_eq!(backend.hits.load(std::sync::atomic::Ordering::SeqCst), 0);
    let mut metrics = String::new();
    proxy.render_metrics(&mut metrics);
    assert!(metrics.contains(r#"coxswain_proxy_rejected_requests_total{reason="uri_too_long"} 1"#));
    assert!(
        metrics.contains(r#"coxswain_proxy_rejected_requests_total{reason="head_parse"} 2"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn connections_close_after_their_request_quota() {
    let limits = HttpLimits {
        max_requests_per_connection: 2,
        ..HttpLimits::default()
    };
    let (port, _backend, _proxy) = proxy_with(http(limits)).await;
    let mut stream = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    // Three pipelined requests: the second response says close, the third
    // is never answered.
    let one = "GET / HTTP/1.1\r\nHost: h.test\r\n\r\n";
    stream.write_all(one.repeat(3).as_bytes()).await.unwrap();
    let mut all = Vec::new();
    let done = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut all)).await;
    assert!(done.is_ok(), "the connection closed");
    let text = String::from_utf8_lossy(&all);
    assert_eq!(text.matches("HTTP/1.1 200").count(), 2, "{text}");
    assert!(text.contains("connection: close"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn a_full_listener_stops_accepting_until_a_connection_ends() {
    let options = ProxyOptions {
        overload: OverloadLimits {
            max_connections_per_listener: 1,
            ..OverloadLimits::default()
        },
        ..ProxyOptions::default()
    };
    let (port, _backend, _proxy) = proxy_with(options).await;
    let mut first = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    first
        .write_all(b"GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
        .await
        .unwrap();
    let mut head = [0u8; 12];
    first.read_exact(&mut head).await.unwrap();
    // The second connection waits in the kernel's backlog: no answer yet.
    let mut second = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    second
        .write_all(b"GET / HTTP/1.1\r\nHost: h.test\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let early = tokio::time::timeout(Duration::from_secs(5), second.read_exact(&mut head)).await;
    assert!(early.is_err(), "answered while the listener was full");
    drop(first);
    second.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
}

/// An idle accept loop holds no connection permit: with two listener
/// sockets and room for two connections, both can be open on one socket
/// while the other only waits for clients. The limit still holds: a third
/// connection waits in the kernel's backlog until one of them ends.
#[tokio::test]
async fn idle_listeners_hold_no_connection_permit() {
    let options = ProxyOptions {
        overload: OverloadLimits {
            max_connections: 2,
            ..OverloadLimits::default()
        },
        ..ProxyOptions::default()
    };
    let backend = echo_backend("b").await;
    let (a, b) = (free_port(), free_port());
    let routes = |tag| vec![route(tag, &[], vec![prefix("/")], vec![to("echo", 1)])];
    let sockets = vec![
        socket(a, vec![gateway_listener("a", None, routes("on-a"))]),
        socket(b, vec![gateway_listener("b", None, routes("on-b"))]),
    ];
    let config = config(sockets, vec![cluster("echo", &[backend.addr])]);
    let (_proxy, _) = start_proxy_with(config, options).await;

    let mut head = [0u8; 12];
    let mut open = Vec::new();
    for n in 1..=2 {
        let mut conn = TcpStream::connect((LOCALHOST, a)).await.unwrap();
        conn.write_all(b"GET / HTTP/1.1\r\nHost: h.test\r\n\r\n")
            .await
            .unwrap();
        let read = tokio::time::timeout(Duration::from_secs(10), conn.read_exact(&mut head)).await;
        assert!(
            matches!(read, Ok(Ok(_))),
            "connection {n} of 2 on one socket not served, the other socket idle: {read:?}"
        );
        assert_eq!(&head, b"HTTP/1.1 200");
        open.push(conn);
    }
    // A bounded read that must time out: the third waits in the backlog.
    let mut third = TcpStream::connect((LOCALHOST, b)).await.unwrap();
    third
        .write_all(b"GET / HTTP/1.1\r\nHost: h.test\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let early = tokio::time::timeout(Duration::from_secs(1), third.read_exact(&mut head)).await;
    assert!(early.is_err(), "answered beyond max_connections 2");
    drop(open);
    let read = tokio::time::timeout(Duration::from_secs(10), third.read_exact(&mut head)).await;
    assert!(
        matches!(read, Ok(Ok(_))),
        "not served once a connection ended: {read:?}"
    );
    assert_eq!(&head, b"HTTP/1.1 200");
}

#[tokio::test(start_paused = true)]
async fn requests_beyond_the_in_flight_limit_get_503() {
    let options = ProxyOptions {
        overload: OverloadLimits {
            max_requests_in_flight: 1,
            ..OverloadLimits::default()
        },
        ..ProxyOptions::default()
    };
    let (port, _backend, proxy) = proxy_with(options).await;
    let c = client();
    let slow = tokio::spawn({
        let c = c.clone();
        async move {
            send(
                &c,
                request(port, "h.test", "/").header("x-delay-ms", "1000"),
            )
            .await
        }
    });
    // The slow request is in flight once the backend holds it.
    let mut shed = None;
    for _ in 0..100 {
        let reply = get(&c, port, "h.test", "/").await;
        if reply.status == http::StatusCode::SERVICE_UNAVAILABLE {
            shed = Some(reply);
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(shed.is_some(), "a second request was never shed");
    assert_eq!(slow.await.unwrap().status, http::StatusCode::OK);
    let mut metrics = String::new();
    proxy.render_metrics(&mut metrics);
    assert!(metrics.contains(r#"coxswain_proxy_rejected_requests_total{reason="overloaded"}"#));
}
