//! End-to-end routing precedence and listener isolation.

use crate::common;

use common::*;
use coxswain_ir::{HeaderMatch, PathMatch, QueryMatch, RouteMatch, StringMatch};
use http::StatusCode;

fn with_method(mut m: RouteMatch, method: &str) -> RouteMatch {
    m.method = Some(method.into());
    m
}

fn with_header(mut m: RouteMatch, name: &str, value: StringMatch) -> RouteMatch {
    m.headers.push(HeaderMatch {
        name: name.into(),
        value,
    });
    m
}

fn with_query(mut m: RouteMatch, name: &str, value: StringMatch) -> RouteMatch {
    m.query.push(QueryMatch {
        name: name.into(),
        value,
    });
    m
}

#[tokio::test]
async fn path_method_header_query_precedence() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let e = || vec![to("echo", 1)];
    let routes = vec![
        // Listed least specific first: IR order must not decide these.
        route("root", &[], vec![prefix("/")], e()),
        route("prefix-a", &[], vec![prefix("/a/")], e()),
        route("prefix-a-b", &[], vec![prefix("/a/b")], e()),
        route("exact-a", &[], vec![exact("/a")], e()),
        route(
            "regex",
            &[],
            vec![RouteMatch {
                grpc: None,
                path: PathMatch::Regex("/r/[0-9]+".into()),
                ..prefix("/")
            }],
            e(),
        ),
        route("post-m", &[], vec![with_method(prefix("/m"), "POST")], e()),
        route("plain-m", &[], vec![prefix("/m")], e()),
        route(
            "header-h",
            &[],
            vec![with_header(
                prefix("/h"),
                "x-env",
                StringMatch::Exact("canary".into()),
            )],
            e(),
        ),
        route(
            "header-re",
            &[],
            vec![with_header(
                prefix("/h"),
                "x-user",
                StringMatch::Regex("adm".into()),
            )],
            e(),
        ),
        route("plain-h", &[], vec![prefix("/h")], e()),
        route(
            "query-q",
            &[],
            vec![with_query(
                prefix("/q"),
                "v",
                StringMatch::Exact("2".into()),
            )],
            e(),
        ),
        route("plain-q", &[], vec![prefix("/q")], e()),
        route("tie-first", &[], vec![prefix("/tie")], e()),
        route("tie-second", &[], vec![prefix("/tie")], e()),
        route(
            "bad-regex",
            &[],
            vec![RouteMatch {
                grpc: None,
                path: PathMatch::Regex("(".into()),
                ..prefix("/")
            }],
            e(),
        ),
    ];
    let (_proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let c = client();
    let cases = [
        ("/a", "exact-a"),
        ("/a/", "prefix-a"),
        ("/a/x", "prefix-a"),
        ("/a/b", "prefix-a-b"),
        ("/a/b/c", "prefix-a-b"),
        ("/a/bc", "prefix-a"),
        ("/ab", "root"),
        ("/r/42", "regex"),
        ("/r/42x", "root"),
        ("/m", "plain-m"),
        ("/h", "plain-h"),
        ("/q?v=1", "plain-q"),
        ("/q?v=2", "query-q"),
        ("/q?v=3&v=2", "plain-q"),
        ("/tie", "tie-first"),
    ];
    for (path, want) in cases {
        assert_eq!(get(&c, port, "x.test", path).await.route(), want, "{path}");
    }
    let post = send(&c, request(port, "x.test", "/m").method("POST")).await;
    assert_eq!(post.route(), "post-m");
    let canary = send(&c, request(port, "x.test", "/h").header("X-Env", "canary")).await;
    assert_eq!(canary.route(), "header-h");
    let admin = send(
        &c,
        request(port, "x.test", "/h").header("x-user", "the-admin"),
    )
    .await;
    assert_eq!(admin.route(), "header-re");
}

#[tokio::test]
async fn hostname_precedence_falls_back_to_less_specific_hosts() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let e = || vec![to("echo", 1)];
    let routes = vec![
        route("catch-all", &[], vec![prefix("/")], e()),
        route("wild", &["*.example.com"], vec![prefix("/w")], e()),
        route("deep-wild", &["*.a.example.com"], vec![prefix("/w")], e()),
        route("exact-host", &["a.example.com"], vec![exact("/only")], e()),
    ];
    let (_proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let c = client();
    let cases = [
        ("A.Example.com:8080", "/only", "exact-host"),
        ("a.example.com", "/w", "wild"),
        ("b.a.example.com", "/w", "deep-wild"),
        ("b.example.com", "/w/x", "wild"),
        ("b.example.com", "/only", "catch-all"),
        ("example.com", "/w", "catch-all"),
    ];
    for (h, path, want) in cases {
        assert_eq!(get(&c, port, h, path).await.route(), want, "{h}{path}");
    }
}

#[tokio::test]
async fn listener_isolation_uses_only_the_most_specific_listener() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let e = || vec![to("echo", 1)];
    let listeners = vec![
        gateway_listener(
            "exact",
            Some("a.example.com"),
            vec![route("exact-l", &[], vec![prefix("/x")], e())],
        ),
        gateway_listener(
            "wild",
            Some("*.example.com"),
            vec![route("wild-l", &[], vec![prefix("/")], e())],
        ),
        gateway_listener(
            "any",
            None,
            vec![route("any-l", &[], vec![prefix("/")], e())],
        ),
    ];
    let cfg = config(
        vec![socket(port, listeners)],
        vec![cluster("echo", &[backend.addr])],
    );
    let (_proxy, _) = start_proxy(cfg).await;
    let c = client();
    assert_eq!(
        get(&c, port, "a.example.com", "/x").await.route(),
        "exact-l"
    );
    // The exact listener owns a.example.com: no fallback to other listeners.
    assert_eq!(
        get(&c, port, "a.example.com", "/y").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(get(&c, port, "b.example.com", "/y").await.route(), "wild-l");
    assert_eq!(get(&c, port, "other.test", "/y").await.route(), "any-l");
}

#[tokio::test]
async fn no_route_is_404_with_text_body() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let routes = vec![route(
        "only",
        &["a.test"],
        vec![prefix("/")],
        vec![to("echo", 1)],
    )];
    let (_proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let reply = get(&client(), port, "b.test", "/").await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert!(!reply.body.is_empty());
    assert_eq!(backend.hits.load(std::sync::atomic::Ordering::SeqCst), 0);
}
