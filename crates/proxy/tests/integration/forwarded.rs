//! X-Forwarded-* from clients are not believed unless the peer is trusted.

use crate::common;

use common::*;
use coxswain_proxy::{ForwardedTrust, ProxyOptions};

async fn seen_headers(trust: ForwardedTrust) -> serde_json::Value {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![route("r", &[], vec![prefix("/")], vec![to("echo", 1)])];
    let options = ProxyOptions {
        forwarded: trust,
        ..ProxyOptions::default()
    };
    let (_proxy, _) = start_proxy_with(simple_config(port, routes, backend.addr), options).await;
    let req = request(port, "h.test", "/")
        .header("x-forwarded-for", "6.6.6.6")
        .header("x-forwarded-proto", "https")
        .header("x-forwarded-host", "spoofed.test");
    send(&client(), req).await.json()["headers"].clone()
}

#[tokio::test]
async fn by_default_client_forwarded_headers_are_replaced() {
    let seen = seen_headers(ForwardedTrust::default()).await;
    assert_eq!(seen["x-forwarded-for"], "127.0.0.1", "{seen}");
    assert_eq!(seen["x-forwarded-proto"], "http", "{seen}");
    assert!(seen.get("x-forwarded-host").is_none(), "{seen}");
}

#[tokio::test]
async fn a_trusted_peer_keeps_its_chain() {
    let trust = ForwardedTrust {
        trusted_cidrs: vec!["127.0.0.0/8".parse().unwrap()],
        trusted_hops: 0,
    };
    let seen = seen_headers(trust).await;
    assert_eq!(seen["x-forwarded-for"], "6.6.6.6, 127.0.0.1", "{seen}");
    assert_eq!(seen["x-forwarded-proto"], "https", "{seen}");
    assert_eq!(seen["x-forwarded-host"], "spoofed.test", "{seen}");
}
