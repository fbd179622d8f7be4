//! Access-control annotations: basic and JWT auth, IP access lists and
//! trusted forwarders.

use super::*;

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
fn jwt_names_a_resource() {
    let (a, p) = parsed(&[("cx/auth-jwt", "issuer")]);
    assert!(p.is_empty());
    assert_eq!(a.jwt_auth.as_deref(), Some("issuer"));
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
