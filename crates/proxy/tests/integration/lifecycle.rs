//! apply() diffs listeners, reloads under load, bind errors, metrics and
//! graceful shutdown.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use common::*;
use coxswain_ir::{Config, Route};
use http::{Request, StatusCode};
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

fn routes(tag: &str) -> Vec<Route> {
    vec![route(tag, &[], vec![prefix("/")], vec![to("echo", 1)])]
}

fn two_sockets(a: u16, b: u16, backend: std::net::SocketAddr) -> Arc<Config> {
    config(
        vec![
            socket(a, vec![gateway_listener("a", None, routes("on-a"))]),
            socket(b, vec![gateway_listener("b", None, routes("on-b"))]),
        ],
        vec![cluster("echo", &[backend])],
    )
}

async fn keep_alive_conn(port: u16) -> SendRequest<Full<Bytes>> {
    let stream = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

async fn send_on(sender: &mut SendRequest<Full<Bytes>>) -> StatusCode {
    let req = Request::get("/")
        .header("host", "k.test")
        .body(Full::new(Bytes::new()))
        .unwrap();
    sender.send_request(req).await.unwrap().status()
}

async fn refuses(port: u16) -> bool {
    TcpStream::connect((LOCALHOST, port)).await.is_err()
}

#[tokio::test]
async fn adding_and_removing_listeners_keeps_other_connections() {
    let backend = echo_backend("b").await;
    let (a, b, c) = (free_port(), free_port(), free_port());
    let (proxy, report) = start_proxy(two_sockets(a, b, backend.addr)).await;
    assert_eq!(report.bound.len(), 2);
    let mut on_a = keep_alive_conn(a).await;
    assert_eq!(send_on(&mut on_a).await, StatusCode::OK);

    // Remove b, add c: the open connection on a must survive.
    let report = proxy.apply(two_sockets(a, c, backend.addr)).await;
    assert!(report.failed.is_empty());
    assert_eq!(report.bound.len(), 2);
    wait_until("socket b closed", || refuses(b)).await;
    assert_eq!(send_on(&mut on_a).await, StatusCode::OK);
    assert_eq!(get(&client(), c, "k.test", "/").await.route(), "on-b");
    assert_eq!(send_on(&mut on_a).await, StatusCode::OK);
    assert!(!on_a.is_closed());
}

#[tokio::test]
async fn reload_under_load_fails_no_request() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let config_for = |tag: &str| simple_config(port, routes(tag), backend.addr);
    let (proxy, _) = start_proxy(config_for("v0")).await;
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reloader = {
        let (proxy, done) = (proxy.clone(), done.clone());
        let configs = [config_for("v1"), config_for("v2")];
        tokio::spawn(async move {
            let mut applies = 0usize;
            while !done.load(Ordering::SeqCst) {
                let report = proxy.apply(configs[applies % 2].clone()).await;
                assert!(report.failed.is_empty());
                applies += 1;
                tokio::task::yield_now().await;
            }
            applies
        })
    };
    let c = client();
    let mut failures = 0;
    for _ in 0..2000 {
        let reply = get(&c, port, "load.test", "/x").await;
        if reply.status != StatusCode::OK || !reply.route().starts_with('v') {
            failures += 1;
        }
    }
    done.store(true, Ordering::SeqCst);
    let applies = reloader.await.unwrap();
    assert_eq!(failures, 0);
    assert!(
        applies > 1,
        "configs were swapped during the run ({applies})"
    );
}

#[tokio::test]
async fn bind_errors_are_reported_not_fatal() {
    let backend = echo_backend("b").await;
    let taken = std::net::TcpListener::bind((LOCALHOST, 0)).unwrap();
    let busy = taken.local_addr().unwrap().port();
    let free = free_port();
    let proxy = coxswain_proxy::Proxy::new(Default::default());
    let report = proxy.apply(two_sockets(free, busy, backend.addr)).await;
    assert_eq!(report.failed.len(), 1);
    assert_eq!(report.failed[0].address.port(), busy);
    assert_eq!(report.bound.len(), 1);
    assert_eq!(
        get(&client(), free, "k.test", "/").await.status,
        StatusCode::OK
    );
    drop(taken);
    // The next apply retries the socket that failed.
    let report = proxy.apply(two_sockets(free, busy, backend.addr)).await;
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert_eq!(get(&client(), busy, "k.test", "/").await.route(), "on-b");
}

fn rendered(proxy: &coxswain_proxy::Proxy) -> String {
    let mut out = String::new();
    proxy.render_metrics(&mut out);
    out
}

/// `route` answered `n` requests, all 200 from upstream `echo`, and its
/// duration histogram counted each.
fn assert_counted(out: &str, route: &str, n: u32) {
    let requests = format!(
        r#"coxswain_proxy_requests_total{{route="{route}",status="200",upstream="echo"}} {n}"#
    );
    let durations =
        format!(r#"coxswain_proxy_request_duration_seconds_count{{route="{route}"}} {n}"#);
    assert!(out.contains(&requests), "no `{requests}` in:\n{out}");
    assert!(out.contains(&durations), "no `{durations}` in:\n{out}");
}

#[tokio::test]
async fn metrics_count_requests_and_applies() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let (proxy, _) = start_proxy(simple_config(port, routes("m"), backend.addr)).await;
    let c = client();
    for _ in 0..3 {
        get(&c, port, "m.test", "/").await;
    }
    proxy
        .apply(simple_config(port, routes("m"), backend.addr))
        .await;
    get(&c, port, "m.test", "/").await;
    let out = rendered(&proxy);
    assert_counted(&out, "ns/m/0", 4);
    assert!(
        out.contains("coxswain_proxy_config_applies_total 2"),
        "{out}"
    );
    assert_eq!(proxy.config().sockets[0].port, port);
}

/// A route's series are made on its first request: a large config whose
/// routes mostly see no traffic does not hold handles for each.
#[tokio::test]
async fn a_routes_series_appear_with_its_first_request() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let (proxy, _) = start_proxy(simple_config(port, routes("lazy"), backend.addr)).await;
    let before = rendered(&proxy);
    assert!(!before.contains(r#"route="ns/lazy/0""#), "{before}");
    assert_eq!(
        get(&client(), port, "lazy.test", "/").await.status,
        StatusCode::OK
    );
    assert_counted(&rendered(&proxy), "ns/lazy/0", 1);
}

/// Route churn under new names must not grow `/metrics` (or the registry
/// behind it): a removed route's series go with the next config.
#[tokio::test]
async fn a_removed_routes_series_leave_metrics() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let (proxy, _) = start_proxy(simple_config(port, routes("gone"), backend.addr)).await;
    let c = client();
    assert_eq!(get(&c, port, "gone.test", "/").await.status, StatusCode::OK);
    assert!(rendered(&proxy).contains(r#"route="ns/gone/0""#));
    proxy
        .apply(simple_config(port, routes("kept"), backend.addr))
        .await;
    assert_eq!(get(&c, port, "kept.test", "/").await.status, StatusCode::OK);
    let out = rendered(&proxy);
    assert!(!out.contains(r#"route="ns/gone/0""#), "{out}");
    assert!(
        out.contains(
            r#"coxswain_proxy_requests_total{route="ns/kept/0",status="200",upstream="echo"} 1"#
        ),
        "{out}"
    );
}

/// Paused clock: shutdown must wait out the in-flight request (its 300 ms
/// pass in virtual time), so it cannot pass without draining.
#[tokio::test(start_paused = true)]
async fn shutdown_drains_in_flight_requests() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let (proxy, _) = start_proxy(simple_config(port, routes("d"), backend.addr)).await;
    let c = client();
    let in_flight = tokio::spawn({
        let c = c.clone();
        async move { send(&c, request(port, "d.test", "/").header("x-delay-ms", "300")).await }
    });
    wait_until("request reached the backend", || {
        let hits = backend.hits.clone();
        async move { hits.load(Ordering::SeqCst) == 1 }
    })
    .await;
    let started = tokio::time::Instant::now();
    proxy.shutdown().await;
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(250),
        "shutdown returned before the in-flight request finished"
    );
    assert_eq!(in_flight.await.unwrap().status, StatusCode::OK);
    assert!(refuses(port).await);
}

#[tokio::test]
async fn removed_listener_finishes_in_flight_requests_on_its_config() {
    let backend = echo_backend("b").await;
    let (a, b) = (free_port(), free_port());
    let (proxy, _) = start_proxy(two_sockets(a, b, backend.addr)).await;
    let in_flight = tokio::spawn(async move {
        send(
            &client(),
            request(b, "k.test", "/").header("x-delay-ms", "300"),
        )
        .await
    });
    wait_until("request reached the backend", || {
        let hits = backend.hits.clone();
        async move { hits.load(Ordering::SeqCst) == 1 }
    })
    .await;
    let only_a = config(
        vec![socket(a, vec![gateway_listener("a", None, routes("on-a"))])],
        vec![cluster("echo", &[backend.addr])],
    );
    proxy.apply(only_a).await;
    let reply = in_flight.await.unwrap();
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.route(), "on-b");
    wait_until("socket b closed", || refuses(b)).await;
}
