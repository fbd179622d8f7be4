//! The request pipeline's fixed phase order, whatever order a rule lists
//! its filters in: a refused address is refused before anything else
//! (before credentials are asked for, and costing no rate-limit token), a
//! CORS preflight is answered before authentication and any limit, a
//! request without credentials costs no token, and limits run before the
//! transforms (a rewrite never happens for a refused request).

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::*;
use coxswain_ir::{
    Config, Cors, Extension, ExtensionKind, ExtensionSpec, Filter, IpAccess, RateLimitKey,
};
use http::StatusCode;

use extension_key as key;

fn ext(kind: ExtensionKind, name: &str) -> Filter {
    Filter::Extension(key(kind, name))
}

fn cors() -> Filter {
    Filter::Cors(Cors {
        allow_origins: vec!["https://app.test".into()],
        allow_methods: vec!["GET".into()],
        ..Cors::default()
    })
}

/// Rules whose filters are listed last phase first.
fn config_in_reverse_order(port: u16, backend: SocketAddr) -> Arc<Config> {
    use ExtensionKind::*;
    let routes = vec![
        rule_with(
            "/auth-refused",
            vec![ext(BasicAuth, "office"), ext(IpAccessControl, "elsewhere")],
        ),
        rule_with(
            "/auth",
            vec![ext(RateLimit, "one"), ext(BasicAuth, "office"), cors()],
        ),
        rule_with(
            "/refused",
            vec![
                ext(PathRewriteRegex, "rewrite"),
                ext(RateLimit, "one"),
                cors(),
                ext(IpAccessControl, "elsewhere"),
            ],
        ),
        rule_with(
            "/preflight",
            vec![
                ext(PathRewriteRegex, "rewrite"),
                ext(RateLimit, "one"),
                cors(),
            ],
        ),
    ];
    let extensions = vec![
        Extension {
            key: key(BasicAuth, "office"),
            spec: ExtensionSpec::BasicAuth(coxswain_ir::BasicAuth {
                realm: "Office".into(),
                forward_credentials: false,
                users: vec![coxswain_ir::BasicAuthUser {
                    name: "bob".into(),
                    hash: coxswain_ir::PasswordHash {
                        scheme: coxswain_ir::PasswordScheme::Apr1,
                        // `openssl passwd -apr1 -salt saltsalt secret`
                        text: coxswain_ir::HashText("$apr1$saltsalt$LrttParrLPdxvgutaSXWJ0".into()),
                    },
                }],
            }),
        },
        Extension {
            key: key(IpAccessControl, "elsewhere"),
            spec: ExtensionSpec::IpAccess(IpAccess {
                allow: vec!["203.0.113.0/24".parse().unwrap()],
                deny: vec![],
                ..IpAccess::default()
            }),
        },
        Extension {
            key: key(RateLimit, "one"),
            spec: ExtensionSpec::RateLimit(coxswain_ir::RateLimit {
                name: "one".into(),
                requests: 1,
                period_ms: 3_600_000,
                burst: 1,
                key: RateLimitKey::Route,
                global: None,
            }),
        },
        Extension {
            key: key(PathRewriteRegex, "rewrite"),
            spec: ExtensionSpec::PathRewrite {
                pattern: "^/preflight".into(),
                substitution: "/rewritten".into(),
            },
        },
    ];
    config_with_extensions(port, routes, backend, extensions)
}

#[tokio::test]
async fn phases_run_in_their_fixed_order_whatever_the_rule_lists() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let (_proxy, _) = start_proxy(config_in_reverse_order(port, backend.addr)).await;
    let c = client();

    // Network first: refused every time (403, never the limit's 429).
    for _ in 0..3 {
        let reply = get(&c, port, "h.test", "/refused").await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN);
    }

    // Admission before limits: preflights are answered and spend nothing.
    for _ in 0..3 {
        let preflight = request(port, "h.test", "/preflight")
            .method("OPTIONS")
            .header("origin", "https://app.test")
            .header("access-control-request-method", "GET");
        assert_eq!(send(&c, preflight).await.status, StatusCode::NO_CONTENT);
    }
    assert_eq!(backend.hits.load(Ordering::SeqCst), 0);

    // The one token is still there; the transform ran after the limit.
    let first = get(&c, port, "h.test", "/preflight").await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.json()["path"], "/rewritten");
    let second = get(&c, port, "h.test", "/preflight").await;
    assert_eq!(second.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(backend.hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn authentication_sits_between_admission_and_the_limits() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let (_proxy, _) = start_proxy(config_in_reverse_order(port, backend.addr)).await;
    let c = client();
    // Network before authn: a refused address is never asked for credentials.
    let reply = get(&c, port, "h.test", "/auth-refused").await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    // Admission before authn: a preflight needs no credentials.
    let preflight = request(port, "h.test", "/auth")
        .method("OPTIONS")
        .header("origin", "https://app.test")
        .header("access-control-request-method", "GET");
    assert_eq!(send(&c, preflight).await.status, StatusCode::NO_CONTENT);
    // Authn before limits: refused requests spend no token.
    for _ in 0..3 {
        assert_eq!(
            get(&c, port, "h.test", "/auth").await.status,
            StatusCode::UNAUTHORIZED
        );
    }
    // `bob:secret`
    let authed =
        || request(port, "h.test", "/auth").header("authorization", "Basic Ym9iOnNlY3JldA==");
    assert_eq!(send(&c, authed()).await.status, StatusCode::OK);
    assert_eq!(
        send(&c, authed()).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(backend.hits.load(Ordering::SeqCst), 1);
}
