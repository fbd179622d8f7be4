//! The path is normalised before matching and forwarded normalised: dot
//! segments (plain or percent-encoded) cannot walk from one route's prefix
//! into another's.

use crate::common;

use common::*;
use coxswain_proxy::{EscapedSlashes, PathOptions, ProxyOptions};

/// `/public` to backend `pub`, `/admin` to backend `adm`.
async fn two_backends() -> (u16, EchoBackend, EchoBackend, coxswain_proxy::Proxy) {
    two_backends_with(PathOptions::default()).await
}

async fn two_backends_with(
    path: PathOptions,
) -> (u16, EchoBackend, EchoBackend, coxswain_proxy::Proxy) {
    let public = echo_backend("pub").await;
    let admin = echo_backend("adm").await;
    let port = free_port();
    let routes = vec![
        route("public", &[], vec![prefix("/public")], vec![to("pub", 1)]),
        route("admin", &[], vec![prefix("/admin")], vec![to("adm", 1)]),
    ];
    let cfg = config(
        vec![socket(port, vec![gateway_listener("http", None, routes)])],
        vec![
            cluster("pub", &[public.addr]),
            cluster("adm", &[admin.addr]),
        ],
    );
    let options = ProxyOptions {
        path,
        ..ProxyOptions::default()
    };
    let (proxy, _) = start_proxy_with(cfg, options).await;
    (port, public, admin, proxy)
}

fn get_raw(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: h.test\r\nConnection: close\r\n\r\n").into_bytes()
}

fn backend_path(response: &str) -> String {
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
    let json: serde_json::Value =
        serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {response}"));
    format!(
        "{}:{}",
        json["backend"].as_str().unwrap(),
        json["path"].as_str().unwrap()
    )
}

#[tokio::test]
async fn dot_segments_are_resolved_before_matching() {
    let (port, public, _admin, _proxy) = two_backends().await;
    let cases = [
        ("/public/../admin/secret", "adm:/admin/secret"),
        ("/public/%2e%2e/admin/secret", "adm:/admin/secret"),
        ("/public/.%2E/admin/secret", "adm:/admin/secret"),
        ("/public/./a/../b", "pub:/public/b"),
        ("/%70ublic/x", "pub:/public/x"),
        ("/admin/../../../public", "pub:/public"),
    ];
    for (raw, want) in cases {
        let response = raw_exchange(port, &get_raw(raw)).await;
        assert_eq!(raw_status(&response), 200, "{raw}: {response}");
        assert_eq!(backend_path(&response), want, "{raw}");
    }
    // Three of the six were for /public once normalised.
    assert_eq!(public.hits.load(std::sync::atomic::Ordering::SeqCst), 3);
}

#[tokio::test]
async fn walking_out_of_a_prefix_into_no_route_is_404() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![route(
        "public",
        &[],
        vec![prefix("/public")],
        vec![to("echo", 1)],
    )];
    let (_proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let response = raw_exchange(port, &get_raw("/public/../admin/secret")).await;
    assert_eq!(raw_status(&response), 404, "{response}");
    assert_eq!(backend.hits.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn bad_escapes_and_encoded_nul_are_400_and_never_forwarded() {
    let (port, public, admin, _proxy) = two_backends().await;
    for raw in ["/public/%zz", "/public/a%2", "/public/a%00b"] {
        let response = raw_exchange(port, &get_raw(raw)).await;
        assert_eq!(raw_status(&response), 400, "{raw}: {response}");
    }
    let hits = |b: &EchoBackend| b.hits.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(hits(&public) + hits(&admin), 0);
}

#[tokio::test]
async fn encoded_slashes_kept_by_default_rejected_when_configured() {
    let (port, _public, _admin, _proxy) = two_backends().await;
    let response = raw_exchange(port, &get_raw("/public/a%2fb")).await;
    assert_eq!(backend_path(&response), "pub:/public/a%2Fb");

    let reject = PathOptions {
        escaped_slashes: EscapedSlashes::Reject,
        ..PathOptions::default()
    };
    let (port, public, _admin, _proxy) = two_backends_with(reject).await;
    for raw in ["/public/a%2fb", "/public/a%5Cb"] {
        let response = raw_exchange(port, &get_raw(raw)).await;
        assert_eq!(raw_status(&response), 400, "{raw}: {response}");
    }
    assert_eq!(public.hits.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn merged_slashes_when_configured() {
    let merge = PathOptions {
        merge_slashes: true,
        ..PathOptions::default()
    };
    let (port, _public, _admin, _proxy) = two_backends_with(merge).await;
    let response = raw_exchange(port, &get_raw("//admin//x")).await;
    assert_eq!(backend_path(&response), "adm:/admin/x");
}

#[tokio::test]
async fn query_is_untouched() {
    let (port, _public, _admin, _proxy) = two_backends().await;
    let response = raw_exchange(port, &get_raw("/public/../admin?next=/../x%2e%2e")).await;
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
    let json: serde_json::Value = serde_json::from_str(body.trim()).unwrap();
    assert_eq!(json["path"], "/admin");
    assert_eq!(json["query"], "next=/../x%2e%2e");
}
