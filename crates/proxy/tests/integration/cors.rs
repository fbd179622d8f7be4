//! CORS end to end: the gateway answers preflights itself (the backend
//! never sees them) and adds CORS headers to an allowed origin's responses.

use crate::common;

use std::sync::atomic::Ordering;

use common::*;
use coxswain_ir::{Cors, Filter};
use http::{Method, StatusCode};

fn cors_route() -> coxswain_ir::Route {
    let mut r = route("r", &[], vec![prefix("/")], vec![to("echo", 1)]);
    r.filters.push(Filter::Cors(Cors {
        allow_origins: vec!["https://www.foo.com".into(), "https://*.bar.com".into()],
        allow_methods: vec!["GET".into(), "PUT".into()],
        allow_headers: vec!["x-token".into()],
        expose_headers: vec!["x-trace".into()],
        allow_credentials: true,
        max_age_s: 3600,
    }));
    r
}

/// An echo backend behind [`cors_route`]: the backend, the port, the proxy.
async fn serve_cors() -> (EchoBackend, u16, coxswain_proxy::Proxy) {
    let backend = echo_backend("b").await;
    let port = free_port();
    let (proxy, _) = start_proxy(simple_config(port, vec![cors_route()], backend.addr)).await;
    (backend, port, proxy)
}

#[tokio::test]
async fn preflights_are_answered_by_the_gateway() {
    let (backend, port, _proxy) = serve_cors().await;
    let c = client();
    let preflight = |origin: &str| {
        request(port, "h", "/api")
            .method(Method::OPTIONS)
            .header("origin", origin)
            .header("access-control-request-method", "PUT")
            .header("access-control-request-headers", "x-token")
    };
    let ok = send(&c, preflight("https://a.b.bar.com")).await;
    assert_eq!(ok.status, StatusCode::NO_CONTENT);
    let h = &ok.headers;
    assert_eq!(h["access-control-allow-origin"], "https://a.b.bar.com");
    assert_eq!(h["access-control-allow-methods"], "GET, PUT");
    assert_eq!(h["access-control-allow-headers"], "x-token");
    assert_eq!(h["access-control-allow-credentials"], "true");
    assert_eq!(h["access-control-max-age"], "3600");
    let denied = send(&c, preflight("https://evil.example")).await;
    assert_eq!(denied.status, StatusCode::NO_CONTENT);
    assert!(!denied.headers.contains_key("access-control-allow-origin"));
    assert_eq!(
        backend.hits.load(Ordering::SeqCst),
        0,
        "no preflight reached the backend"
    );
}

#[tokio::test]
async fn an_allowed_origins_responses_carry_cors_headers() {
    let (backend, port, _proxy) = serve_cors().await;
    let c = client();
    let allowed = send(
        &c,
        request(port, "h", "/api").header("origin", "https://www.foo.com"),
    )
    .await;
    assert_eq!(allowed.status, StatusCode::OK);
    assert_eq!(allowed.json()["backend"], "b");
    assert_eq!(
        allowed.headers["access-control-allow-origin"],
        "https://www.foo.com"
    );
    assert_eq!(allowed.headers["access-control-expose-headers"], "x-trace");
    assert_eq!(allowed.headers["access-control-allow-credentials"], "true");
    assert_eq!(allowed.headers["vary"], "Origin");
    let other = send(
        &c,
        request(port, "h", "/api").header("origin", "https://evil.example"),
    )
    .await;
    assert_eq!(other.status, StatusCode::OK, "served, without CORS headers");
    assert!(!other.headers.contains_key("access-control-allow-origin"));
    // OPTIONS without a requested method is an ordinary request.
    let plain_options = send(&c, request(port, "h", "/api").method(Method::OPTIONS)).await;
    assert_eq!(plain_options.json()["method"], "OPTIONS");
    assert_eq!(backend.hits.load(Ordering::SeqCst), 3);
}
