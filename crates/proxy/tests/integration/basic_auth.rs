//! BasicAuth on the request path: a challenge for missing or wrong
//! credentials, the backend reached only with valid ones (bcrypt and
//! APR1), the `Authorization` header removed unless forwarded, and a
//! resource that cannot be enforced refusing with 503.

use crate::common;

use std::sync::atomic::Ordering;

use base64::Engine;
use common::*;
use coxswain_ir::{
    BasicAuth, BasicAuthUser, Extension, ExtensionKind, ExtensionSpec, Filter, HashText,
    PasswordHash, PasswordScheme,
};
use http::StatusCode;

fn auth(forward: bool) -> ExtensionSpec {
    let user = |name: &str, scheme, text: String| BasicAuthUser {
        name: name.into(),
        hash: PasswordHash {
            scheme,
            text: HashText(text.into()),
        },
    };
    ExtensionSpec::BasicAuth(BasicAuth {
        realm: "Office".into(),
        forward_credentials: forward,
        users: vec![
            user(
                "alice",
                PasswordScheme::Bcrypt,
                bcrypt::hash("wonderland", 4).unwrap(),
            ),
            // `openssl passwd -apr1 -salt saltsalt secret`
            user(
                "bob",
                PasswordScheme::Apr1,
                "$apr1$saltsalt$LrttParrLPdxvgutaSXWJ0".into(),
            ),
        ],
    })
}

fn basic(user: &str, password: &str) -> String {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {token}")
}

#[tokio::test]
async fn only_valid_credentials_reach_the_backend() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let key = |name| extension_key(ExtensionKind::BasicAuth, name);
    let routes = vec![
        rule_with("/strip", vec![Filter::Extension(key("strip"))]),
        rule_with("/forward", vec![Filter::Extension(key("forward"))]),
        rule_with("/broken", vec![Filter::Extension(key("broken"))]),
    ];
    let extensions = vec![
        Extension {
            key: key("strip"),
            spec: auth(false),
        },
        Extension {
            key: key("forward"),
            spec: auth(true),
        },
        Extension {
            key: key("broken"),
            spec: ExtensionSpec::Broken {
                status: 503,
                reason: "Secret not found".into(),
            },
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
    let with = |path: &str, authorization: Option<String>| {
        let req = request(port, "h.test", path);
        match authorization {
            Some(v) => req.header("authorization", v),
            None => req,
        }
    };

    let refused = [
        None,
        Some(basic("alice", "wrong")),
        Some(basic("bob", "wonderland")),
        Some(basic("mallory", "wonderland")),
        Some("Bearer abc".to_string()),
        Some("Basic !!!not-base64".to_string()),
    ];
    for authorization in refused {
        let reply = send(&c, with("/strip", authorization.clone())).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{authorization:?}");
        assert_eq!(
            reply.headers.get("www-authenticate").unwrap(),
            "Basic realm=\"Office\", charset=\"UTF-8\""
        );
    }
    assert_eq!(backend.hits.load(Ordering::SeqCst), 0);

    // Twice each: the second is answered from the verified-credential memory.
    for _ in 0..2 {
        for (user, password) in [("alice", "wonderland"), ("bob", "secret")] {
            let reply = send(&c, with("/strip", Some(basic(user, password)))).await;
            assert_eq!(reply.status, StatusCode::OK, "{user}");
            assert!(
                reply.json()["headers"].get("authorization").is_none(),
                "stripped"
            );
        }
    }
    let reply = send(&c, with("/forward", Some(basic("bob", "secret")))).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        reply.json()["headers"]["authorization"],
        basic("bob", "secret")
    );

    let reply = send(&c, with("/broken", Some(basic("bob", "secret")))).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(backend.hits.load(Ordering::SeqCst), 5);
}
