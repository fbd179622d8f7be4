//! Coxswain filter resources (ExtensionRefs) on the request path: the
//! network phase refuses before any other stage or backend sees the
//! request, and a filter that cannot be applied refuses every request.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::*;
use coxswain_ir::{
    Config, Cors, Extension, ExtensionKey, ExtensionKind, ExtensionSpec, Filter, IpAccess,
};
use http::StatusCode;

fn key(name: &str) -> ExtensionKey {
    extension_key(ExtensionKind::IpAccessControl, name)
}

fn access(allow: &[&str], deny: &[&str]) -> ExtensionSpec {
    let parse = |v: &[&str]| v.iter().map(|s| s.parse().unwrap()).collect();
    ExtensionSpec::IpAccess(IpAccess {
        allow: parse(allow),
        deny: parse(deny),
        ..IpAccess::default()
    })
}

/// One route per (path, filters), every one to `backend`, with
/// `extensions` in the config's table.
fn config_with(
    port: u16,
    backend: std::net::SocketAddr,
    routes: Vec<(&str, Vec<Filter>)>,
    extensions: Vec<Extension>,
) -> Arc<Config> {
    let routes = routes
        .into_iter()
        .map(|(path, filters)| rule_with(path, filters))
        .collect();
    config_with_extensions(port, routes, backend, extensions)
}

#[tokio::test]
async fn ip_access_refuses_outside_its_ranges_before_the_backend() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let config = config_with(
        port,
        backend.addr,
        vec![
            ("/loopback", vec![Filter::Extension(key("loopback"))]),
            ("/elsewhere", vec![Filter::Extension(key("elsewhere"))]),
            ("/denied", vec![Filter::Extension(key("denied"))]),
        ],
        vec![
            Extension {
                key: key("loopback"),
                spec: access(&["127.0.0.0/8"], &[]),
            },
            Extension {
                key: key("elsewhere"),
                spec: access(&["203.0.113.0/24"], &[]),
            },
            // Deny wins over allow.
            Extension {
                key: key("denied"),
                spec: access(&["127.0.0.0/8"], &["127.0.0.1"]),
            },
        ],
    );
    let (_proxy, _) = start_proxy(config).await;
    let c = client();
    assert_eq!(
        get(&c, port, "h.test", "/loopback").await.status,
        StatusCode::OK
    );
    assert_eq!(backend.hits.load(Ordering::SeqCst), 1);
    for path in ["/elsewhere", "/denied"] {
        let reply = get(&c, port, "h.test", path).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{path}");
    }
    assert_eq!(
        backend.hits.load(Ordering::SeqCst),
        1,
        "refused requests never reach the backend"
    );
}

#[tokio::test]
async fn a_refused_address_gets_no_cors_preflight_and_unresolved_filters_refuse_everything() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let cors = Filter::Cors(Cors {
        allow_origins: vec!["*".into()],
        allow_methods: vec!["GET".into()],
        ..Cors::default()
    });
    let config = config_with(
        port,
        backend.addr,
        vec![
            // The CORS filter comes first in the rule, yet the network
            // phase runs before admission.
            (
                "/cors",
                vec![cors.clone(), Filter::Extension(key("elsewhere"))],
            ),
            ("/open", vec![cors]),
            (
                "/unresolved",
                vec![Filter::Deny {
                    status: 500,
                    reason: "ExtensionRef missing".into(),
                }],
            ),
            ("/broken", vec![Filter::Extension(key("broken"))]),
            ("/not-in-table", vec![Filter::Extension(key("absent"))]),
        ],
        vec![
            Extension {
                key: key("elsewhere"),
                spec: access(&["203.0.113.0/24"], &[]),
            },
            Extension {
                key: key("broken"),
                spec: ExtensionSpec::Broken {
                    status: 500,
                    reason: "bad CIDR".into(),
                },
            },
        ],
    );
    let (_proxy, _) = start_proxy(config).await;
    let c = client();
    let preflight = |path: &str| {
        request(port, "h.test", path)
            .method("OPTIONS")
            .header("origin", "https://app.test")
            .header("access-control-request-method", "GET")
    };
    assert_eq!(
        send(&c, preflight("/open")).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        send(&c, preflight("/cors")).await.status,
        StatusCode::FORBIDDEN
    );
    for path in ["/unresolved", "/broken", "/not-in-table"] {
        let reply = get(&c, port, "h.test", path).await;
        assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR, "{path}");
    }
    assert_eq!(backend.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_edited_resource_takes_effect_on_reload_and_an_unchanged_one_recompiles_no_route() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let first = config_with(
        port,
        backend.addr,
        vec![("/", vec![Filter::Extension(key("office"))])],
        vec![Extension {
            key: key("office"),
            spec: access(&["127.0.0.1"], &[]),
        }],
    );
    // The same route objects, the resource edited.
    let mut edited = (*first).clone();
    edited.extensions[0].spec = access(&["203.0.113.0/24"], &[]);
    let edited = Arc::new(edited);
    let (proxy, _) = start_proxy(first).await;
    let c = client();
    assert_eq!(get(&c, port, "h.test", "/").await.status, StatusCode::OK);
    let compiled = || {
        let mut out = String::new();
        proxy.render_metrics(&mut out);
        out.lines()
            .find(|l| l.starts_with("coxswain_proxy_routes_compiled_total"))
            .map(str::to_string)
            .unwrap()
    };
    let before = compiled();
    proxy.apply(edited.clone()).await;
    assert_eq!(
        get(&c, port, "h.test", "/").await.status,
        StatusCode::FORBIDDEN
    );
    assert_ne!(
        compiled(),
        before,
        "an edited resource recompiles its routes"
    );
    let after_edit = compiled();
    proxy.apply(Arc::new((*edited).clone())).await;
    assert_eq!(
        compiled(),
        after_edit,
        "an unchanged resource: routes reused"
    );
    assert_eq!(
        get(&c, port, "h.test", "/").await.status,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn ip_access_can_judge_the_address_a_trusted_proxy_forwarded() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let trusting = |hops: u8| {
        let ExtensionSpec::IpAccess(mut a) = access(&["203.0.113.0/24"], &["203.0.113.66"]) else {
            unreachable!()
        };
        a.xff_trusted_hops = hops;
        ExtensionSpec::IpAccess(a)
    };
    let config = config_with(
        port,
        backend.addr,
        vec![
            ("/one", vec![Filter::Extension(key("one"))]),
            ("/two", vec![Filter::Extension(key("two"))]),
        ],
        vec![
            Extension {
                key: key("one"),
                spec: trusting(1),
            },
            Extension {
                key: key("two"),
                spec: trusting(2),
            },
        ],
    );
    let (_proxy, _) = start_proxy(config).await;
    let c = client();
    let with_xff = |path: &str, xff: Option<&'static str>| {
        let req = request(port, "h.test", path);
        match xff {
            Some(v) => req.header("x-forwarded-for", v),
            None => req,
        }
    };
    let cases = [
        // One trusted hop: the last entry is the client.
        ("/one", Some("203.0.113.9"), StatusCode::OK),
        (
            "/one",
            Some("203.0.113.9, 198.51.100.1"),
            StatusCode::FORBIDDEN,
        ),
        ("/one", Some("203.0.113.66"), StatusCode::FORBIDDEN),
        // Two: the client may claim anything left of what they saw.
        (
            "/two",
            Some("198.51.100.1, 203.0.113.9, 10.1.1.1"),
            StatusCode::OK,
        ),
        ("/two", Some("203.0.113.9"), StatusCode::FORBIDDEN),
        // No header, or garbage where the client should be: refused.
        ("/one", None, StatusCode::FORBIDDEN),
        ("/one", Some("not-an-address"), StatusCode::FORBIDDEN),
    ];
    for (path, xff, want) in cases {
        assert_eq!(
            send(&c, with_xff(path, xff)).await.status,
            want,
            "{path} {xff:?}"
        );
    }
    assert_eq!(backend.hits.load(Ordering::SeqCst), 2);
}
