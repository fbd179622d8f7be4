//! Header modifiers, redirects (with the spec's port rules) and rewrites.

use crate::common;

use common::*;
use coxswain_ir::{Filter, Header, HeaderModifier, PathModifier, Redirect, Rewrite, Route};
use http::StatusCode;

fn hdr(name: &str, value: &str) -> Header {
    Header {
        name: name.into(),
        value: value.into(),
    }
}

fn with_filters(mut r: Route, filters: Vec<Filter>) -> Route {
    r.filters.extend(filters);
    r
}

fn redirect(
    scheme: Option<&str>,
    hostname: Option<&str>,
    port: Option<u16>,
    path: Option<PathModifier>,
) -> Filter {
    Filter::Redirect(Redirect {
        scheme: scheme.map(Into::into),
        hostname: hostname.map(Into::into),
        port,
        path,
        status_code: 301,
    })
}

#[tokio::test]
async fn request_and_response_header_modifiers() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let mut backend_ref = to("echo", 1);
    backend_ref.filters = vec![
        Filter::RequestHeaders(HeaderModifier {
            set: vec![hdr("x-backend-level", "yes")],
            ..Default::default()
        }),
        Filter::ResponseHeaders(HeaderModifier {
            set: vec![hdr("x-order", "backend")],
            ..Default::default()
        }),
    ];
    let r = with_filters(
        route("r", &[], vec![prefix("/")], vec![backend_ref]),
        vec![
            Filter::RequestHeaders(HeaderModifier {
                set: vec![hdr("x-set", "new")],
                add: vec![hdr("x-add", "two")],
                remove: vec!["x-remove".into()],
            }),
            Filter::ResponseHeaders(HeaderModifier {
                set: vec![hdr("x-order", "rule")],
                add: vec![hdr("x-resp-add", "1")],
                remove: vec!["x-backend".into()],
            }),
        ],
    );
    let (_proxy, _) = start_proxy(simple_config(port, vec![r], backend.addr)).await;
    let req = request(port, "h.test", "/")
        .header("x-set", "old")
        .header("x-add", "one")
        .header("x-remove", "gone");
    let reply = send(&client(), req).await;
    let seen = &reply.json()["headers"];
    assert_eq!(seen["x-set"], "new");
    assert_eq!(seen["x-add"], "one, two");
    assert!(seen.get("x-remove").is_none());
    assert_eq!(seen["x-backend-level"], "yes");
    // Rule-level response edits run first, then backend-level ones.
    assert_eq!(reply.headers["x-order"], "backend");
    assert_eq!(reply.headers["x-resp-add"], "1");
    assert!(reply.headers.get("x-backend").is_none());
}

#[tokio::test]
async fn redirect_port_rules_and_paths() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let prefix_route = |name: &str, p: &str, f: Filter| {
        with_filters(route(name, &[], vec![prefix(p)], vec![]), vec![f])
    };
    let routes = vec![
        prefix_route("keep", "/keep", redirect(None, None, None, None)),
        prefix_route("https", "/https", redirect(Some("https"), None, None, None)),
        prefix_route(
            "http",
            "/http",
            redirect(Some("http"), Some("other.test"), None, None),
        ),
        prefix_route(
            "https-port",
            "/sport",
            redirect(Some("https"), None, Some(8443), None),
        ),
        prefix_route("port-80", "/p80", redirect(None, None, Some(80), None)),
        prefix_route(
            "full",
            "/full",
            redirect(
                None,
                None,
                None,
                Some(PathModifier::ReplaceFullPath("/replaced".into())),
            ),
        ),
        prefix_route(
            "pre",
            "/old",
            redirect(
                None,
                None,
                None,
                Some(PathModifier::ReplacePrefixMatch("/new".into())),
            ),
        ),
        prefix_route(
            "pre-root",
            "/strip",
            redirect(
                None,
                None,
                None,
                Some(PathModifier::ReplacePrefixMatch("/".into())),
            ),
        ),
    ];
    let (_proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let c = client();
    let cases = [
        ("/keep/x?a=1", format!("http://r.test:{port}/keep/x?a=1")),
        ("/https/x", "https://r.test/https/x".to_string()),
        ("/http", "http://other.test/http".to_string()),
        ("/sport", "https://r.test:8443/sport".to_string()),
        ("/p80", "http://r.test/p80".to_string()),
        ("/full/deep?q", format!("http://r.test:{port}/replaced?q")),
        ("/old/x", format!("http://r.test:{port}/new/x")),
        ("/old", format!("http://r.test:{port}/new")),
        ("/strip/x", format!("http://r.test:{port}/x")),
        ("/strip", format!("http://r.test:{port}/")),
    ];
    for (path, want) in cases {
        let reply = get(&c, port, "r.test:1234", path).await;
        assert_eq!(reply.status, StatusCode::MOVED_PERMANENTLY, "{path}");
        assert_eq!(reply.headers["location"], want.as_str(), "{path}");
    }
    assert_eq!(backend.hits.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn rewrite_hostname_and_path_table() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let rewrite = |name: &str, p: &str, path: PathModifier, hostname: Option<&str>| {
        with_filters(
            route(name, &[], vec![prefix(p)], vec![to("echo", 1)]),
            vec![Filter::Rewrite(Rewrite {
                hostname: hostname.map(Into::into),
                path: Some(path),
            })],
        )
    };
    let routes = vec![
        rewrite(
            "foo",
            "/foo",
            PathModifier::ReplacePrefixMatch("/bar".into()),
            Some("upstream.test"),
        ),
        rewrite(
            "slash",
            "/slash/",
            PathModifier::ReplacePrefixMatch("/".into()),
            None,
        ),
        rewrite(
            "full",
            "/full",
            PathModifier::ReplaceFullPath("/whole".into()),
            None,
        ),
    ];
    let (_proxy, _) = start_proxy(simple_config(port, routes, backend.addr)).await;
    let c = client();
    let cases = [
        ("/foo", "/bar"),
        ("/foo/", "/bar/"),
        ("/foo/x", "/bar/x"),
        ("/slash/x", "/x"),
        ("/slash", "/"),
        ("/full/a/b", "/whole"),
    ];
    for (path, want) in cases {
        let seen = get(&c, port, "orig.test", path).await.json();
        assert_eq!(seen["path"], want, "{path}");
    }
    let seen = get(&c, port, "orig.test", "/foo/q?a=b").await.json();
    assert_eq!(seen["query"], "a=b");
    assert_eq!(seen["headers"]["host"], "upstream.test");
    assert_eq!(seen["headers"]["x-forwarded-host"], "orig.test");
    let plain = get(&c, port, "orig.test:99", "/slash/y").await.json();
    assert_eq!(
        plain["headers"]["host"], "orig.test:99",
        "Host is preserved"
    );
}

/// A client's `Connection` header names hop-by-hop headers of its own; it
/// must not delete a header the route's RequestHeaderModifier sets, nor one
/// the gateway adds (X-Forwarded-*).
#[tokio::test]
async fn client_connection_header_cannot_strip_gateway_headers() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let r = with_filters(
        route("r", &[], vec![prefix("/")], vec![to("echo", 1)]),
        vec![Filter::RequestHeaders(HeaderModifier {
            set: vec![hdr("x-route", "api-v1")],
            add: vec![hdr("x-added", "1")],
            ..Default::default()
        })],
    );
    let (_proxy, _) = start_proxy(simple_config(port, vec![r], backend.addr)).await;
    let req = request(port, "h.test", "/")
        .header(
            "connection",
            "x-route, x-added, x-forwarded-for, x-forwarded-proto, x-client-hop",
        )
        .header("x-client-hop", "dropped");
    let reply = send(&client(), req).await;
    let seen = &reply.json()["headers"];
    assert_eq!(seen["x-route"], "api-v1", "{seen}");
    assert_eq!(seen["x-added"], "1", "{seen}");
    assert_eq!(seen["x-forwarded-for"], "127.0.0.1", "{seen}");
    assert_eq!(seen["x-forwarded-proto"], "http", "{seen}");
    // The client's own hop-by-hop header still goes.
    assert!(seen.get("x-client-hop").is_none(), "{seen}");
    assert!(seen.get("connection").is_none(), "{seen}");
}
