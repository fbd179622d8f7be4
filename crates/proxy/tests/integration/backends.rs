//! Backend choice and upstream failures: weights, 500/502/503/504, h2c.

use crate::common;

use std::sync::atomic::Ordering;

use common::*;
use coxswain_ir::{BackendTarget, Timeouts, UpstreamProtocol, WeightedBackend};
use http::StatusCode;

#[tokio::test]
async fn weights_split_traffic_and_zero_is_never_chosen() {
    let (one, three, zero) = (
        echo_backend("one").await,
        echo_backend("three").await,
        echo_backend("zero").await,
    );
    let port = free_port();
    let r = route(
        "w",
        &[],
        vec![prefix("/")],
        vec![to("one", 1), to("three", 3), to("zero", 0)],
    );
    let cfg = config(
        vec![socket(port, vec![gateway_listener("http", None, vec![r])])],
        vec![
            cluster("one", &[one.addr]),
            cluster("three", &[three.addr]),
            cluster("zero", &[zero.addr]),
        ],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    let c = client();
    for _ in 0..400 {
        assert_eq!(get(&c, port, "w.test", "/").await.status, StatusCode::OK);
    }
    let (a, b) = (
        one.hits.load(Ordering::SeqCst),
        three.hits.load(Ordering::SeqCst),
    );
    assert_eq!(zero.hits.load(Ordering::SeqCst), 0);
    assert_eq!(a + b, 400);
    // Expected 100 : 300; a wide band keeps this deterministic in practice.
    assert!((50..=160).contains(&a), "1:3 split off: {a} vs {b}");
}

#[tokio::test]
async fn backend_errors_map_to_status_codes() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let refused = std::net::SocketAddr::new(LOCALHOST, free_port());
    let invalid = WeightedBackend {
        weight: 1,
        target: BackendTarget::Invalid {
            reason: "no such service".into(),
        },
        filters: vec![],
    };
    let routes = vec![
        route("invalid", &[], vec![prefix("/invalid")], vec![invalid]),
        route("all-zero", &[], vec![prefix("/zero")], vec![to("echo", 0)]),
        route("none", &[], vec![prefix("/none")], vec![]),
        route(
            "missing-cluster",
            &[],
            vec![prefix("/missing")],
            vec![to("nope", 1)],
        ),
        route("empty", &[], vec![prefix("/empty")], vec![to("empty", 1)]),
        route(
            "refused",
            &[],
            vec![prefix("/refused")],
            vec![to("refused", 1)],
        ),
        route(
            "refused-h2",
            &[],
            vec![prefix("/h2-refused")],
            vec![to("refused-h2", 1)],
        ),
    ];
    let mut refused_h2 = cluster("refused-h2", &[refused]);
    refused_h2.protocol = UpstreamProtocol::H2c;
    let cfg = config(
        vec![socket(port, vec![gateway_listener("http", None, routes)])],
        vec![
            cluster("echo", &[backend.addr]),
            cluster("empty", &[]),
            cluster("refused", &[refused]),
            refused_h2,
        ],
    );
    let (proxy, _) = start_proxy(cfg).await;
    let c = client();
    let cases = [
        ("/invalid", StatusCode::INTERNAL_SERVER_ERROR),
        ("/zero", StatusCode::INTERNAL_SERVER_ERROR),
        ("/none", StatusCode::INTERNAL_SERVER_ERROR),
        ("/missing", StatusCode::INTERNAL_SERVER_ERROR),
        ("/empty", StatusCode::SERVICE_UNAVAILABLE),
        ("/refused", StatusCode::BAD_GATEWAY),
        ("/h2-refused", StatusCode::BAD_GATEWAY),
    ];
    for (path, want) in cases {
        let reply = get(&c, port, "e.test", path).await;
        assert_eq!(reply.status, want, "{path}");
        assert!(
            !reply.body.is_empty(),
            "{path}: generated responses carry text"
        );
    }
    let mut metrics = String::new();
    proxy.render_metrics(&mut metrics);
    // A refused connection of a bodiless request is tried twice more.
    assert!(
        metrics.contains("coxswain_proxy_upstream_connect_errors_total 6"),
        "{metrics}"
    );
    assert!(
        metrics.contains("coxswain_proxy_upstream_retries_total 4"),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"coxswain_proxy_requests_total{route="ns/refused/0",status="502",upstream="refused"} 1"#),
        "{metrics}"
    );
}

/// Paused clock: the 100 ms limits are virtual, so a slow debug build on a
/// busy machine cannot turn the fast requests into timeouts.
#[tokio::test(start_paused = true)]
async fn backend_and_request_timeouts_answer_504() {
    let backend = echo_backend("slow").await;
    let port = free_port();
    let timed = |name: &str, p: &str, timeouts: Timeouts| {
        let mut r = route(name, &[], vec![prefix(p)], vec![to("echo", 1)]);
        r.timeouts = timeouts;
        r
    };
    let routes = vec![
        timed(
            "backend",
            "/backend",
            Timeouts {
                request_ms: None,
                backend_request_ms: Some(100),
            },
        ),
        timed(
            "request",
            "/request",
            Timeouts {
                request_ms: Some(100),
                backend_request_ms: None,
            },
        ),
    ];
    let (_proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let c = client();
    for path in ["/backend", "/request"] {
        let slow = send(
            &c,
            request(port, "t.test", path).header("x-delay-ms", "5000"),
        )
        .await;
        assert_eq!(slow.status, StatusCode::GATEWAY_TIMEOUT, "{path}");
        let fast = get(&c, port, "t.test", path).await;
        assert_eq!(fast.status, StatusCode::OK, "{path}");
    }
}

#[tokio::test]
async fn h2c_upstream_and_round_robin() {
    let (a, b) = (echo_backend("a").await, echo_backend("b").await);
    let port = free_port();
    let mut h2 = cluster("h2", &[a.addr, b.addr]);
    h2.protocol = UpstreamProtocol::H2c;
    let r = route("h2", &[], vec![prefix("/")], vec![to("h2", 1)]);
    let cfg = config(
        vec![socket(port, vec![gateway_listener("http", None, vec![r])])],
        vec![h2],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    let c = client();
    for _ in 0..4 {
        let seen = get(&c, port, "h2.test:7000", "/x").await.json();
        assert_eq!(seen["version"], "HTTP/2.0");
        // The client's host travels as :authority, not as the endpoint.
        assert_eq!(seen["authority"], "h2.test:7000");
        assert_eq!(seen["path"], "/x");
    }
    assert_eq!(
        (a.hits.load(Ordering::SeqCst), b.hits.load(Ordering::SeqCst)),
        (2, 2)
    );
}

/// A backend that reads a request head and closes the connection without
/// answering (a pod killed mid-request); counts the requests it dropped.
async fn dropping_backend() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let dropped = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = dropped.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let count = count.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                count.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    (addr, dropped)
}

#[tokio::test]
async fn a_connection_dropped_before_the_answer_is_retried_only_when_idempotent() {
    let backend = echo_backend("b").await;
    let (flaky, flaky_drops) = dropping_backend().await;
    let (dead, dead_drops) = dropping_backend().await;
    let port = free_port();
    let routes = vec![
        route("flaky", &[], vec![prefix("/flaky")], vec![to("flaky", 1)]),
        route("dead", &[], vec![prefix("/dead")], vec![to("dead", 1)]),
    ];
    let cfg = config(
        vec![socket(port, vec![gateway_listener("http", None, routes)])],
        vec![
            cluster("flaky", &[flaky, backend.addr]),
            cluster("dead", &[dead]),
        ],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    let c = client();
    // Without a retry stanza, a GET whose connection broke goes to the
    // other endpoint: nobody sees the dropping one.
    for _ in 0..10 {
        assert_eq!(
            get(&c, port, "e.test", "/flaky").await.status,
            StatusCode::OK
        );
    }
    assert!(
        flaky_drops.load(Ordering::SeqCst) >= 1,
        "the dropping endpoint was chosen"
    );
    // A POST may have had its effect: never sent twice.
    let post = request(port, "e.test", "/dead").method("POST");
    assert_eq!(send(&c, post).await.status, StatusCode::BAD_GATEWAY);
    assert_eq!(
        dead_drops.load(Ordering::SeqCst),
        1,
        "the POST was not retried"
    );
    // A GET is tried three times in all, then answered 502.
    assert_eq!(
        get(&c, port, "e.test", "/dead").await.status,
        StatusCode::BAD_GATEWAY
    );
    assert_eq!(dead_drops.load(Ordering::SeqCst), 4);
}
