//! PathRewriteRegex on the request path: every match rewritten with its
//! capture groups, after a URLRewrite of the same rule when the rule lists
//! that first, the query kept, and a path that does not match untouched.

use crate::common;

use std::sync::Arc;

use common::*;
use coxswain_ir::{
    Config, Extension, ExtensionKey, ExtensionKind, ExtensionSpec, Filter, PathModifier, Rewrite,
};
use http::StatusCode;

fn key(name: &str) -> ExtensionKey {
    extension_key(ExtensionKind::PathRewriteRegex, name)
}

fn rewrite(name: &str, pattern: &str, substitution: &str) -> Extension {
    Extension {
        key: key(name),
        spec: ExtensionSpec::PathRewrite {
            pattern: pattern.into(),
            substitution: substitution.into(),
        },
    }
}

fn rewriting_config(port: u16, backend: std::net::SocketAddr) -> Arc<Config> {
    let prefix_rewrite = Filter::Rewrite(Rewrite {
        hostname: None,
        path: Some(PathModifier::ReplacePrefixMatch("/api".into())),
    });
    let routes = vec![
        rule_with("/api", vec![Filter::Extension(key("versions"))]),
        // The URLRewrite first (spec order within the transforms phase):
        // the regex sees `/api/...`.
        rule_with(
            "/old",
            vec![prefix_rewrite, Filter::Extension(key("versions"))],
        ),
        rule_with("/bare", vec![Filter::Extension(key("unrooted"))]),
    ];
    let extensions = vec![
        rewrite("versions", r"^/api/v(\d+)/(?P<rest>.*)$", "/v$1/${rest}"),
        rewrite("unrooted", "^/bare/", "moved-"),
    ];
    config_with_extensions(port, routes, backend, extensions)
}

#[tokio::test]
async fn the_path_is_rewritten_with_capture_groups_and_the_query_kept() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let (_proxy, _) = start_proxy(rewriting_config(port, backend.addr)).await;
    let c = client();
    let cases = [
        ("/api/v2/users/7?page=3", "/v2/users/7", Some("page=3")),
        ("/api/latest/users", "/api/latest/users", None),
        ("/old/v1/orders", "/v1/orders", None),
        ("/bare/x", "/moved-x", None),
    ];
    for (asked, seen, query) in cases {
        let reply = get(&c, port, "h.test", asked).await;
        assert_eq!(reply.status, StatusCode::OK, "{asked}");
        let echo = reply.json();
        assert_eq!(echo["path"], seen, "{asked}");
        assert_eq!(echo["query"].as_str(), query, "{asked}");
    }
}
