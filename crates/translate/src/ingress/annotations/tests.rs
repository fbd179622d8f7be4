use std::collections::BTreeMap;

use super::*;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| {
            let k = k
                .replace("cx/", COXSWAIN_PREFIX)
                .replace("nginx/", NGINX_PREFIX);
            (k, v.to_string())
        })
        .collect()
}

fn parsed(pairs: &[(&str, &str)]) -> (Annotations, Vec<AnnotationProblem>) {
    parse(&map(pairs))
}

fn invalid_names(problems: &[AnnotationProblem]) -> Vec<String> {
    problems
        .iter()
        .filter_map(|p| match p {
            AnnotationProblem::Invalid { name, .. } | AnnotationProblem::Refused { name, .. } => {
                Some(name.clone())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn no_annotations_nothing_set() {
    let (a, p) = parsed(&[("kubernetes.io/ingress.class", "x")]);
    assert!(a.is_empty());
    assert!(p.is_empty());
}

#[test]
fn unknown_annotations_under_either_prefix_are_reported() {
    let (a, p) = parsed(&[("cx/nope", "1"), ("nginx/server-snippet", "x")]);
    assert!(a.is_empty());
    assert_eq!(
        p,
        vec![
            AnnotationProblem::Unsupported {
                name: format!("{COXSWAIN_PREFIX}nope")
            },
            AnnotationProblem::Unsupported {
                name: format!("{NGINX_PREFIX}server-snippet")
            },
        ]
    );
}

#[test]
fn basic_auth_both_spellings() {
    let (a, p) = parsed(&[
        ("cx/auth-basic-secret", "users"),
        ("cx/auth-basic-realm", "Team"),
    ]);
    assert!(p.is_empty(), "{p:?}");
    assert_eq!(
        a.basic_auth,
        Some(BasicAuthAnnotation {
            secret: "users".into(),
            realm: Some("Team".into())
        })
    );
    let (b, p) = parsed(&[
        ("nginx/auth-type", "basic"),
        ("nginx/auth-secret", "users"),
        ("nginx/auth-secret-type", "auth-file"),
        ("nginx/auth-realm", "Team"),
    ]);
    assert!(p.is_empty(), "{p:?}");
    assert_eq!(a.basic_auth, b.basic_auth);
}

#[test]
fn basic_auth_invalid_or_refused_is_unenforceable() {
    for pairs in [
        vec![("cx/auth-basic-secret", "Bad_Name")],
        vec![("nginx/auth-type", "digest"), ("nginx/auth-secret", "u")],
        vec![("nginx/auth-type", "basic")],
        vec![("nginx/auth-secret", "u")],
        vec![
            ("nginx/auth-type", "basic"),
            ("nginx/auth-secret", "u"),
            ("nginx/auth-secret-type", "auth-map"),
        ],
        vec![("nginx/auth-url", "http://auth.example/check")],
        vec![("cx/auth-jwt", "")],
    ] {
        let (a, p) = parsed(&pairs);
        assert!(a.basic_auth.is_none(), "{pairs:?}");
        assert!(!a.unenforceable.is_empty(), "{pairs:?}");
        assert!(!invalid_names(&p).is_empty(), "{pairs:?}: {p:?}");
    }
}

#[test]
fn a_bad_realm_keeps_the_default() {
    let (a, p) = parsed(&[
        ("cx/auth-basic-secret", "u"),
        ("cx/auth-basic-realm", "a\"b"),
    ]);
    assert_eq!(a.basic_auth.map(|b| b.realm), Some(None));
    assert_eq!(
        invalid_names(&p),
        vec![format!("{COXSWAIN_PREFIX}auth-basic-realm")]
    );
    assert!(a.unenforceable.is_empty());
}

#[test]
fn conflict_the_coxswain_value_wins() {
    let (a, p) = parsed(&[
        ("cx/auth-basic-secret", "ours"),
        ("nginx/auth-type", "basic"),
        ("nginx/auth-secret", "theirs"),
    ]);
    assert_eq!(a.basic_auth.map(|b| b.secret), Some("ours".into()));
    assert!(
        matches!(p.as_slice(), [AnnotationProblem::Conflict { .. }]),
        "{p:?}"
    );
    let (a, p) = parsed(&[("cx/max-body-size", "1m"), ("nginx/proxy-body-size", "2m")]);
    assert_eq!(a.max_body_size, Some(BodyLimit::Bytes(1 << 20)));
    assert_eq!(p.len(), 1);
    // The same value spelled differently is no conflict.
    let (_, p) = parsed(&[
        ("cx/max-body-size", "1024k"),
        ("nginx/proxy-body-size", "1m"),
    ]);
    assert!(p.is_empty(), "{p:?}");
}

#[test]
fn jwt_names_a_resource() {
    let (a, p) = parsed(&[("cx/auth-jwt", "issuer")]);
    assert!(p.is_empty());
    assert_eq!(a.jwt_auth.as_deref(), Some("issuer"));
}

#[test]
fn body_size() {
    assert_eq!(
        parsed(&[("nginx/proxy-body-size", "8m")]).0.max_body_size,
        Some(BodyLimit::Bytes(8 << 20))
    );
    assert_eq!(
        parsed(&[("nginx/proxy-body-size", "0")]).0.max_body_size,
        Some(BodyLimit::Unlimited)
    );
    assert_eq!(
        parsed(&[("cx/max-body-size", "100")]).0.max_body_size,
        Some(BodyLimit::Bytes(100))
    );
    let (a, p) = parsed(&[("cx/max-body-size", "1.5m")]);
    assert_eq!(a.max_body_size, None);
    assert_eq!(invalid_names(&p).len(), 1);
    assert!(a.unenforceable.is_empty(), "a size limit is not security");
}

#[test]
fn compression_defaults_or_resource() {
    assert_eq!(
        parsed(&[("cx/compression", "true")]).0.compression,
        Some(CompressionAnnotation::Defaults)
    );
    assert_eq!(
        parsed(&[("cx/compression", "gzip-only")]).0.compression,
        Some(CompressionAnnotation::Resource("gzip-only".into()))
    );
    let (a, p) = parsed(&[("cx/compression", "false")]);
    assert_eq!(a.compression, None);
    assert_eq!(invalid_names(&p).len(), 1);
}

#[test]
fn ip_access_lists_and_resource() {
    let (a, p) = parsed(&[
        ("nginx/whitelist-source-range", "10.0.0.0/8, 192.0.2.1"),
        ("nginx/denylist-source-range", "10.1.0.0/16"),
    ]);
    assert!(p.is_empty(), "{p:?}");
    let Some(IpAccessAnnotation::Ranges { allow, deny }) = a.ip_access else {
        panic!("{a:?}")
    };
    assert_eq!(allow.len(), 2);
    assert_eq!(deny.len(), 1);
    let (a, _) = parsed(&[("cx/allowlist-source-range", "10.0.0.0/8")]);
    assert!(matches!(
        a.ip_access,
        Some(IpAccessAnnotation::Ranges { .. })
    ));
    let (a, p) = parsed(&[("cx/ip-access-control", "office")]);
    assert!(p.is_empty());
    assert_eq!(
        a.ip_access,
        Some(IpAccessAnnotation::Resource("office".into()))
    );
    let (a, p) = parsed(&[
        ("cx/ip-access-control", "office"),
        ("cx/denylist-source-range", "10.0.0.1"),
    ]);
    assert_eq!(
        a.ip_access,
        Some(IpAccessAnnotation::Resource("office".into()))
    );
    assert_eq!(invalid_names(&p).len(), 1);
}

#[test]
fn a_bad_address_list_is_unenforceable() {
    let (a, p) = parsed(&[("nginx/denylist-source-range", "10.0.0.0/8, nonsense")]);
    assert_eq!(a.ip_access, None);
    assert_eq!(a.unenforceable.len(), 1);
    assert_eq!(
        invalid_names(&p),
        vec![format!("{NGINX_PREFIX}denylist-source-range")]
    );
}

#[test]
fn trusted_forwarders() {
    assert_eq!(
        parsed(&[("cx/trust-forwarded-for", "true")])
            .0
            .trust_forwarded_for,
        Some(1)
    );
    assert_eq!(
        parsed(&[("cx/trust-forwarded-for", "2")])
            .0
            .trust_forwarded_for,
        Some(2)
    );
    let (a, p) = parsed(&[("cx/trust-forwarded-for", "17")]);
    assert_eq!(a.trust_forwarded_for, None);
    assert_eq!(p.len(), 1);
}

#[test]
fn balancers_both_spellings() {
    let lb = |pairs: &[(&str, &str)]| parsed(pairs).0.load_balancer;
    assert_eq!(
        lb(&[("cx/load-balancer", "least_conn")]),
        Some(Balancer::LeastConn)
    );
    assert_eq!(lb(&[("nginx/load-balance", "ewma")]), Some(Balancer::Ewma));
    assert_eq!(
        lb(&[("nginx/upstream-hash-by", "$remote_addr")]),
        Some(Balancer::Hash(HashKey::SourceIp))
    );
    assert_eq!(
        lb(&[
            ("nginx/upstream-hash-by", "$http_x_user_id"),
            ("nginx/load-balance", "ewma")
        ]),
        Some(Balancer::Hash(HashKey::Header("x-user-id".into())))
    );
    assert_eq!(
        lb(&[("nginx/upstream-hash-by", "$cookie_session")]),
        Some(Balancer::Hash(HashKey::Cookie("session".into())))
    );
    assert_eq!(
        lb(&[
            ("cx/load-balancer", "hash:source-ip"),
            ("nginx/upstream-hash-by", "$binary_remote_addr")
        ]),
        Some(Balancer::Hash(HashKey::SourceIp))
    );
    let (a, p) = parsed(&[("nginx/upstream-hash-by", "$request_uri$host")]);
    assert_eq!(a.load_balancer, None);
    assert_eq!(invalid_names(&p).len(), 1);
    let (_, p) = parsed(&[("cx/load-balancer", "fastest")]);
    assert_eq!(invalid_names(&p).len(), 1);
}

#[test]
fn protocols_and_timeouts() {
    let (a, p) = parsed(&[
        ("nginx/backend-protocol", "GRPC"),
        ("nginx/proxy-connect-timeout", "5"),
        ("nginx/proxy-read-timeout", "120"),
        ("nginx/proxy-send-timeout", "30"),
    ]);
    assert!(p.is_empty(), "{p:?}");
    assert_eq!(a.backend_protocol, Some(BackendProtocol::Grpc));
    assert_eq!(a.connect_timeout_ms, Some(5_000));
    assert_eq!(a.backend_timeout_ms, Some(120_000));
    let (a, _) = parsed(&[
        ("cx/backend-protocol", "h2c"),
        ("cx/proxy-read-timeout", "500ms"),
    ]);
    assert_eq!(a.backend_protocol, Some(BackendProtocol::H2c));
    assert_eq!(a.backend_timeout_ms, Some(500));
    let (a, p) = parsed(&[
        ("nginx/backend-protocol", "FCGI"),
        ("nginx/proxy-read-timeout", "0"),
    ]);
    assert_eq!(a.backend_protocol, None);
    assert_eq!(a.backend_timeout_ms, None);
    assert_eq!(invalid_names(&p).len(), 2);
}

#[test]
fn rewrite_and_redirects() {
    let (a, p) = parsed(&[
        ("nginx/rewrite-target", "/$2"),
        ("nginx/use-regex", "true"),
        ("nginx/ssl-redirect", "true"),
        ("cx/force-ssl-redirect", "false"),
    ]);
    assert!(p.is_empty(), "{p:?}");
    assert_eq!(a.rewrite_target.as_deref(), Some("/$2"));
    assert!(a.use_regex && a.ssl_redirect && !a.force_ssl_redirect);
    for bad in ["relative", "/a b", "/$x", "/a?b"] {
        let (a, p) = parsed(&[("cx/rewrite-target", bad)]);
        assert_eq!(a.rewrite_target, None, "{bad}");
        assert_eq!(invalid_names(&p).len(), 1, "{bad}");
    }
    let (_, p) = parsed(&[("cx/ssl-redirect", "yes")]);
    assert_eq!(invalid_names(&p).len(), 1);
    assert_eq!(rewrite::substitution("/x/$1$2a"), "/x/${1}${2}a");
}

#[test]
fn cors_defaults_and_values() {
    let (a, p) = parsed(&[("nginx/enable-cors", "true")]);
    assert!(p.is_empty(), "{p:?}");
    let cors = a.cors.unwrap();
    assert_eq!(cors.allow_origins, vec!["*"]);
    assert!(cors.allow_methods.contains(&"PATCH".to_string()));
    assert!(cors.allow_headers.contains(&"authorization".to_string()));
    assert!(cors.allow_credentials);
    assert_eq!(cors.max_age_s, 1_728_000);
    let (a, p) = parsed(&[
        ("cx/enable-cors", "true"),
        (
            "cx/cors-allow-origin",
            "https://a.example, https://*.b.example",
        ),
        ("cx/cors-allow-methods", "get, post"),
        ("cx/cors-allow-headers", "X-Token"),
        ("cx/cors-expose-headers", "X-Trace"),
        ("cx/cors-allow-credentials", "false"),
        ("cx/cors-max-age", "60"),
    ]);
    assert!(p.is_empty(), "{p:?}");
    let cors = a.cors.unwrap();
    assert_eq!(cors.allow_origins.len(), 2);
    assert_eq!(cors.allow_methods, vec!["GET", "POST"]);
    assert_eq!(cors.allow_headers, vec!["x-token"]);
    assert_eq!(cors.expose_headers, vec!["x-trace"]);
    assert!(!cors.allow_credentials);
    assert_eq!(cors.max_age_s, 60);
}

#[test]
fn cors_invalid_or_without_enable() {
    let (a, p) = parsed(&[
        ("cx/enable-cors", "true"),
        ("cx/cors-allow-origin", "ftp://x"),
    ]);
    assert_eq!(a.cors, None);
    assert_eq!(invalid_names(&p).len(), 1);
    let (a, p) = parsed(&[("cx/cors-allow-origin", "https://a.example")]);
    assert_eq!(a.cors, None);
    assert_eq!(invalid_names(&p).len(), 1);
}

#[test]
fn canary_settings() {
    let (a, p) = parsed(&[
        ("nginx/canary", "true"),
        ("nginx/canary-weight", "20"),
        ("nginx/canary-by-header", "X-Canary"),
        ("nginx/canary-by-cookie", "canary"),
    ]);
    assert!(p.is_empty(), "{p:?}");
    assert_eq!(
        a.canary,
        Some(Canary {
            weight: 20,
            weight_total: 100,
            header: Some(CanaryHeader {
                name: "x-canary".into(),
                value: None,
                pattern: None,
            }),
            cookie: Some("canary".into()),
        })
    );
    let (a, p) = parsed(&[
        ("cx/canary", "true"),
        ("cx/canary-weight", "3"),
        ("cx/canary-weight-total", "4"),
        ("cx/canary-by-header", "x-env"),
        ("cx/canary-by-header-value", "staging"),
    ]);
    assert!(p.is_empty(), "{p:?}");
    let c = a.canary.unwrap();
    assert_eq!((c.weight, c.weight_total), (3, 4));
    assert_eq!(c.header.unwrap().value.as_deref(), Some("staging"));
}

#[test]
fn canary_invalid() {
    let (a, p) = parsed(&[("cx/canary-weight", "10")]);
    assert_eq!(a.canary, None);
    assert_eq!(invalid_names(&p).len(), 1, "{p:?}");
    let (a, p) = parsed(&[("cx/canary", "true"), ("cx/canary-weight", "200")]);
    assert_eq!(a.canary.map(|c| c.weight), Some(0));
    assert_eq!(invalid_names(&p).len(), 1);
}

#[test]
fn conflicts_in_every_family_prefer_the_coxswain_value() {
    let conflict = |p: &[AnnotationProblem]| {
        p.iter()
            .filter(|p| matches!(p, AnnotationProblem::Conflict { .. }))
            .count()
    };
    let (a, p) = parsed(&[
        ("cx/load-balancer", "least_conn"),
        ("nginx/load-balance", "ewma"),
    ]);
    assert_eq!(a.load_balancer, Some(Balancer::LeastConn));
    assert_eq!(conflict(&p), 1);
    let (a, p) = parsed(&[
        ("cx/backend-protocol", "HTTPS"),
        ("nginx/backend-protocol", "http"),
    ]);
    assert_eq!(a.backend_protocol, Some(BackendProtocol::Https));
    assert_eq!(conflict(&p), 1);
    let (a, p) = parsed(&[
        ("cx/rewrite-target", "/a"),
        ("nginx/rewrite-target", "/b"),
        ("cx/ssl-redirect", "true"),
        ("nginx/ssl-redirect", "false"),
    ]);
    assert_eq!(a.rewrite_target.as_deref(), Some("/a"));
    assert!(a.ssl_redirect);
    assert_eq!(conflict(&p), 2);
    let (a, p) = parsed(&[
        ("cx/enable-cors", "true"),
        ("cx/cors-allow-origin", "https://a.example"),
        ("nginx/cors-allow-origin", "https://b.example"),
    ]);
    assert_eq!(a.cors.unwrap().allow_origins, vec!["https://a.example"]);
    assert_eq!(conflict(&p), 1);
    let (a, p) = parsed(&[
        ("cx/canary", "true"),
        ("cx/canary-weight", "10"),
        ("nginx/canary-weight", "90"),
    ]);
    assert_eq!(a.canary.unwrap().weight, 10);
    assert_eq!(conflict(&p), 1);
    let (a, p) = parsed(&[
        ("cx/auth-basic-realm", "Ours"),
        ("cx/auth-basic-secret", "u"),
        ("nginx/auth-realm", "Theirs"),
    ]);
    assert_eq!(a.basic_auth.unwrap().realm.as_deref(), Some("Ours"));
    assert_eq!(conflict(&p), 1);
    // An invalid nginx value beside a valid Coxswain one: the Coxswain one
    // is used, and the disagreement reported.
    let (a, p) = parsed(&[("cx/max-body-size", "1m"), ("nginx/proxy-body-size", "big")]);
    assert_eq!(a.max_body_size, Some(BodyLimit::Bytes(1 << 20)));
    assert_eq!(conflict(&p), 1);
}

#[test]
fn problems_name_the_spelling_used() {
    let (_, p) = parsed(&[("nginx/cors-allow-origin", "https://a.example")]);
    assert_eq!(
        invalid_names(&p),
        vec![format!("{NGINX_PREFIX}cors-allow-origin")]
    );
    let (_, p) = parsed(&[("nginx/canary-weight", "5")]);
    assert_eq!(
        invalid_names(&p),
        vec![format!("{NGINX_PREFIX}canary-weight")]
    );
    let (a, _) = parsed(&[("nginx/whitelist-source-range", "bad")]);
    assert_eq!(
        a.unenforceable,
        vec![format!("{NGINX_PREFIX}whitelist-source-range")]
    );
}

#[test]
fn unknown_access_control_annotations_are_refused_not_ignored() {
    let (a, p) = parsed(&[
        ("nginx/auth-tls-verify-client", "on"),
        ("nginx/auth-tls-secret", "default/ca"),
    ]);
    assert_eq!(a.unenforceable.len(), 2);
    assert_eq!(invalid_names(&p).len(), 2);
    assert!(
        !p.iter()
            .any(|p| matches!(p, AnnotationProblem::Unsupported { .. }))
    );
    // Not about access: merely unsupported, the rules still serve.
    let (a, p) = parsed(&[("nginx/proxy-buffering", "on")]);
    assert!(a.unenforceable.is_empty());
    assert!(matches!(
        p.as_slice(),
        [AnnotationProblem::Unsupported { .. }]
    ));
}

#[test]
fn canary_header_pattern() {
    let (a, p) = parsed(&[
        ("nginx/canary", "true"),
        ("nginx/canary-by-header", "x-region"),
        ("nginx/canary-by-header-pattern", "^eu-"),
    ]);
    assert!(p.is_empty(), "{p:?}");
    assert_eq!(
        a.canary.unwrap().header.unwrap().pattern.as_deref(),
        Some("^eu-")
    );
    let (a, p) = parsed(&[
        ("nginx/canary", "true"),
        ("nginx/canary-by-header", "x-region"),
        ("nginx/canary-by-header-pattern", "(unclosed"),
    ]);
    assert_eq!(a.canary.unwrap().header.unwrap().pattern, None);
    assert_eq!(invalid_names(&p).len(), 1);
}
