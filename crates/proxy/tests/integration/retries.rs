//! Retries against real flaky backends: listed codes are retried up to the
//! policy's attempts, others are not; small bodies are resent whole, large
//! ones stream once; a refused connection is retried on the next endpoint
//! even without a policy; a backend-request timeout is retried.

use crate::common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use common::*;
use coxswain_ir::{Retry, Route};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

/// A backend whose first `fail` requests get `code` (query `fail`, `code`),
/// the rest 200 with the request body echoed; with `hang=1` the first
/// request is never answered. Counts requests in `hits`.
struct Flaky {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

async fn flaky_backend() -> Flaky {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<Incoming>| {
                    let n = counter.fetch_add(1, Ordering::SeqCst);
                    async move {
                        let query = req.uri().query().unwrap_or("").to_string();
                        let param = |name: &str| -> usize {
                            query
                                .split('&')
                                .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                                .and_then(|v| v.parse().ok())
                                .unwrap_or(0)
                        };
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        if param("hang") == 1 && n == 0 {
                            std::future::pending::<()>().await;
                        }
                        let status = match n < param("fail") {
                            true => StatusCode::from_u16(param("code") as u16).unwrap(),
                            false => StatusCode::OK,
                        };
                        let mut response = Response::new(Full::new(body));
                        *response.status_mut() = status;
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Flaky { addr, hits }
}

fn retrying(codes: &[u16], attempts: u32) -> Route {
    let mut r = route("r", &[], vec![prefix("/")], vec![to("echo", 1)]);
    r.retry = Some(Retry {
        codes: codes.to_vec(),
        attempts,
        backoff_ms: 1,
    });
    r
}

async fn serve(route: Route, endpoints: &[SocketAddr]) -> (coxswain_proxy::Proxy, u16) {
    let port = free_port();
    let cfg = config(
        vec![socket(
            port,
            vec![gateway_listener("http", None, vec![route])],
        )],
        vec![cluster("echo", endpoints)],
    );
    let (proxy, _) = start_proxy(cfg).await;
    (proxy, port)
}

#[tokio::test]
async fn listed_codes_are_retried_up_to_the_attempts_and_others_not_at_all() {
    // (fail, code, want status, want hits) with retry on 500, 3 attempts.
    let cases = [
        (2, 500, StatusCode::OK, 3),
        (3, 500, StatusCode::OK, 4),
        (4, 500, StatusCode::INTERNAL_SERVER_ERROR, 4),
        (2, 503, StatusCode::SERVICE_UNAVAILABLE, 1),
    ];
    for (fail, code, want, hits) in cases {
        let backend = flaky_backend().await;
        let (_proxy, port) = serve(retrying(&[500], 3), &[backend.addr]).await;
        let path = format!("/x?fail={fail}&code={code}");
        let reply = get(&client(), port, "h", &path).await;
        assert_eq!(reply.status, want, "{path}");
        assert_eq!(backend.hits.load(Ordering::SeqCst), hits, "{path}");
    }
}

#[tokio::test]
async fn a_small_body_is_resent_whole_and_a_large_one_streams_once() {
    let backend = flaky_backend().await;
    let (proxy, port) = serve(retrying(&[500], 2), &[backend.addr]).await;
    let post = |path: &str, body: Vec<u8>| {
        Request::post(format!("http://127.0.0.1:{port}{path}"))
            .header("host", "h")
            .body(Full::new(Bytes::from(body)))
            .unwrap()
    };
    let small = vec![b's'; 10_000];
    let response = client()
        .request(post("/s?fail=2&code=500", small.clone()))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let echoed = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(echoed, small, "the third attempt carried the whole body");
    assert_eq!(backend.hits.load(Ordering::SeqCst), 3);

    let large = vec![b'l'; 200_000];
    let response = client()
        .request(post("/l?fail=4&code=500", large))
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::INTERNAL_SERVER_ERROR,
        "not retried"
    );
    assert_eq!(backend.hits.load(Ordering::SeqCst), 4);
    let mut metrics = String::new();
    proxy.render_metrics(&mut metrics);
    assert!(
        metrics.contains("coxswain_proxy_upstream_retries_total 2"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_refused_connection_is_retried_on_the_next_endpoint_without_a_policy() {
    let backend = flaky_backend().await;
    let refused = {
        let l = std::net::TcpListener::bind((LOCALHOST, 0)).unwrap();
        l.local_addr().unwrap() // closed again: connections are refused
    };
    let r = route("r", &[], vec![prefix("/")], vec![to("echo", 1)]);
    let (_proxy, port) = serve(r, &[refused, backend.addr]).await;
    let c = client();
    for i in 0..6 {
        let reply = get(&c, port, "h", &format!("/{i}")).await;
        assert_eq!(reply.status, StatusCode::OK, "request {i}");
    }
    assert_eq!(backend.hits.load(Ordering::SeqCst), 6);
}

#[tokio::test]
async fn a_backend_request_timeout_is_retried() {
    let backend = flaky_backend().await;
    let mut r = retrying(&[], 1);
    r.timeouts.backend_request_ms = Some(300);
    let (_proxy, port) = serve(r, &[backend.addr]).await;
    let reply = get(&client(), port, "h", "/t?hang=1").await;
    assert_eq!(reply.status, StatusCode::OK, "the second attempt answered");
    assert_eq!(backend.hits.load(Ordering::SeqCst), 2);

    let mut once = retrying(&[], 0);
    once.timeouts.backend_request_ms = Some(300);
    let other = flaky_backend().await;
    let (_proxy, port) = serve(once, &[other.addr]).await;
    let reply = get(&client(), port, "h", "/t?hang=1").await;
    assert_eq!(
        reply.status,
        StatusCode::GATEWAY_TIMEOUT,
        "attempts: 0 never retries"
    );
}
