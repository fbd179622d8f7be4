//! RateLimit on the request path: buckets per rule and key, 429 with
//! `Retry-After` and the IETF `RateLimit` headers (gRPC:
//! RESOURCE_EXHAUSTED), the backend never reached by a limited request,
//! and buckets kept across a reload that leaves the resource unchanged.
//!
//! One request per hour with a burst of two, so real time passing during
//! the test never refills a bucket.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use common::*;
use coxswain_ir::{
    Config, Extension, ExtensionKey, ExtensionKind, ExtensionSpec, Filter, RateLimit, RateLimitKey,
};
use http::StatusCode;
use http_body_util::Full;

fn key(name: &str) -> ExtensionKey {
    extension_key(ExtensionKind::RateLimit, name)
}

fn limit(name: &str, key: RateLimitKey) -> Extension {
    Extension {
        key: self::key(name),
        spec: ExtensionSpec::RateLimit(RateLimit {
            name: name.into(),
            requests: 1,
            period_ms: 3_600_000,
            burst: 2,
            key,
            global: None,
        }),
    }
}

fn limited_config(port: u16, backend: std::net::SocketAddr) -> Arc<Config> {
    let rule = |path: &str, resource: &str| rule_with(path, vec![Filter::Extension(key(resource))]);
    let routes = vec![
        rule("/a", "per-client"),
        rule("/b", "per-client"),
        rule("/keyed", "per-key"),
        rule("/shared", "whole-route"),
    ];
    let extensions = vec![
        limit("per-client", RateLimitKey::ClientIp),
        limit("per-key", RateLimitKey::Header("x-api-key".into())),
        limit("whole-route", RateLimitKey::Route),
    ];
    config_with_extensions(port, routes, backend, extensions)
}

fn header<'a>(reply: &'a Reply, name: &str) -> &'a str {
    reply
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

#[tokio::test]
async fn a_bucket_per_rule_and_client_then_429_with_retry_after() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let config = limited_config(port, backend.addr);
    let (proxy, _) = start_proxy(config.clone()).await;
    let c = client();
    let first = get(&c, port, "h.test", "/a").await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(
        header(&first, "ratelimit-policy"),
        "\"per-client\";q=1;w=3600"
    );
    assert_eq!(header(&first, "ratelimit"), "\"per-client\";r=1;t=3600");
    let second = get(&c, port, "h.test", "/a").await;
    assert_eq!(header(&second, "ratelimit"), "\"per-client\";r=0;t=7200");
    let limited = get(&c, port, "h.test", "/a").await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(header(&limited, "retry-after"), "3600");
    assert_eq!(header(&limited, "ratelimit"), "\"per-client\";r=0;t=3600");
    assert_eq!(
        backend.hits.load(Ordering::SeqCst),
        2,
        "a limited request is not forwarded"
    );
    // Another rule using the same resource counts on its own.
    assert_eq!(get(&c, port, "h.test", "/b").await.status, StatusCode::OK);
    // An unchanged resource keeps its buckets across a reload.
    proxy.apply(Arc::new((*config).clone())).await;
    assert_eq!(
        get(&c, port, "h.test", "/a").await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test]
async fn header_and_route_keys() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let (_proxy, _) = start_proxy(limited_config(port, backend.addr)).await;
    let c = client();
    let keyed = |value: Option<&'static str>| {
        let req = request(port, "h.test", "/keyed");
        match value {
            Some(v) => req.header("x-api-key", v),
            None => req,
        }
    };
    for _ in 0..2 {
        assert_eq!(send(&c, keyed(Some("alpha"))).await.status, StatusCode::OK);
    }
    assert_eq!(
        send(&c, keyed(Some("alpha"))).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(send(&c, keyed(Some("beta"))).await.status, StatusCode::OK);
    // Requests without the header share one bucket.
    for _ in 0..2 {
        assert_eq!(send(&c, keyed(None)).await.status, StatusCode::OK);
    }
    assert_eq!(
        send(&c, keyed(None)).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    // One bucket for the whole rule, whoever asks.
    for expected in [
        StatusCode::OK,
        StatusCode::OK,
        StatusCode::TOO_MANY_REQUESTS,
    ] {
        let req = request(port, "h.test", "/shared").header("x-api-key", "anyone");
        assert_eq!(send(&c, req).await.status, expected);
    }
}

#[tokio::test]
async fn a_limited_grpc_call_gets_resource_exhausted() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let (_proxy, _) = start_proxy(limited_config(port, backend.addr)).await;
    let h2 = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build(hyper_util::client::legacy::connect::HttpConnector::new());
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let req = http::Request::post(format!("http://127.0.0.1:{port}/shared"))
            .header("content-type", "application/grpc")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = h2.request(req).await.unwrap();
        statuses.push(
            response
                .headers()
                .get("grpc-status")
                .map(|v| v.to_str().unwrap().to_string()),
        );
    }
    assert_eq!(statuses[2].as_deref(), Some("8"), "{statuses:?}");
    assert_ne!(statuses[0].as_deref(), Some("8"));
}

#[tokio::test]
async fn a_verified_claim_keys_the_bucket_and_requests_without_one_share_a_bucket() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let signer = common::jwt::Signer::new();
    let jwt = extension_key(ExtensionKind::JwtAuth, "jwt");
    let routes = vec![
        rule_with(
            "/api",
            vec![
                Filter::Extension(key("per-user")),
                Filter::Extension(jwt.clone()),
            ],
        ),
        // No JwtAuth: nothing verified, so no claims to key on.
        rule_with("/open", vec![Filter::Extension(key("per-user"))]),
    ];
    let extensions = vec![
        limit("per-user", RateLimitKey::JwtClaim("sub".into())),
        Extension {
            key: jwt,
            spec: signer.auth(),
        },
    ];
    let (_proxy, _) = start_proxy(config_with_extensions(
        port,
        routes,
        backend.addr,
        extensions,
    ))
    .await;
    let c = client();
    let with_token = |path: &str, claims: serde_json::Value| {
        let token = signer.token(claims);
        request(port, "h.test", path).header("authorization", format!("Bearer {token}"))
    };
    let alice = || with_token("/api", serde_json::json!({"sub": "alice"}));
    for expected in [
        StatusCode::OK,
        StatusCode::OK,
        StatusCode::TOO_MANY_REQUESTS,
    ] {
        assert_eq!(send(&c, alice()).await.status, expected);
    }
    let bob = with_token("/api", serde_json::json!({"sub": "bob"}));
    assert_eq!(send(&c, bob).await.status, StatusCode::OK);
    // Numbers are keys too; a token without the claim shares one bucket.
    let numeric = with_token("/api", serde_json::json!({"sub": 7}));
    assert_eq!(send(&c, numeric).await.status, StatusCode::OK);
    for expected in [
        StatusCode::OK,
        StatusCode::OK,
        StatusCode::TOO_MANY_REQUESTS,
    ] {
        let anonymous = with_token("/api", serde_json::json!({"tenant": "t"}));
        assert_eq!(send(&c, anonymous).await.status, expected);
    }
    // Unverified tokens on the rule without JwtAuth: one shared bucket.
    for (sub, expected) in [
        ("carol", StatusCode::OK),
        ("dave", StatusCode::OK),
        ("erin", StatusCode::TOO_MANY_REQUESTS),
    ] {
        let req = with_token("/open", serde_json::json!({"sub": sub}));
        assert_eq!(send(&c, req).await.status, expected, "{sub}");
    }
}
