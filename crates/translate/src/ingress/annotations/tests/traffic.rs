//! Traffic annotations: body size, compression, balancers, protocols and
//! timeouts, rewrites and redirects, CORS and canaries.

use super::*;

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
