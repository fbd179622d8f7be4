//! The annotation parser: unknown names, conflicts between the two
//! prefixes and the spellings problems name. Each family has its own file.

mod access;
mod traffic;

use std::collections::BTreeMap;

use super::*;

pub(super) fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
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

pub(super) fn parsed(pairs: &[(&str, &str)]) -> (Annotations, Vec<AnnotationProblem>) {
    parse(&map(pairs))
}

pub(super) fn invalid_names(problems: &[AnnotationProblem]) -> Vec<String> {
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
