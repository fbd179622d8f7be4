//! GRPCRoute rules, lowered onto HTTPRoute rules so that one router serves
//! both: a gRPC method is the request path `/<service>/<method>`.
//!
//! - Exact service and method: path Exact `/svc/Method` (a leading `.` of
//!   the service dropped: it is not on the wire).
//! - Exact service only: PathPrefix `/svc` (whole segments, so `/svcX/..`
//!   does not match).
//! - Exact method only: RegularExpression `/[^/]+/Method`.
//! - RegularExpression: `/(?:svc)/(?:method)`, a missing part `[^/]+`.
//! - No method match: PathPrefix `/`.
//!
//! Each match also carries its GRPCRoute precedence (characters of the
//! service, then of the method), which orders it before the path does.
//!
//! Header matches, filters, backendRefs and the rest of a rule have the
//! same JSON shape in both kinds (GRPCRoute's are a subset), so they are
//! converted through JSON and compiled by the HTTPRoute code: one
//! implementation of filters, backends and ReferenceGrant checks (with
//! `GRPCRoute` as the referring kind).

use std::borrow::Cow;

use coxswain_api::gw::grpcroutes::{
    GrpcRouteRules, GrpcRouteRulesMatches, GrpcRouteRulesMatchesMethod,
    GrpcRouteRulesMatchesMethodType,
};
use coxswain_api::gw::httproutes::{
    HttpRouteRules, HttpRouteRulesMatches, HttpRouteRulesMatchesPath, HttpRouteRulesMatchesPathType,
};
use coxswain_api::{GrpcRoute, ObjectKey};
use coxswain_ir::{GrpcMethodChars, RouteKind};

use crate::route::backends::Lookup;
use crate::route::http::{self, CompiledHttp, check_regex};

pub fn compile(lookup: &Lookup<'_>, key: &ObjectKey, route: &GrpcRoute) -> CompiledHttp {
    // The CRD default when unset: one rule matching every gRPC request.
    let default_rules = [GrpcRouteRules::default()];
    let route_rules = match route.spec.rules.as_deref() {
        Some(rules) if !rules.is_empty() => rules,
        _ => &default_rules,
    };
    let mut compiled = http::compile_rules(
        lookup,
        key,
        RouteKind::Grpc,
        route_rules.iter().map(|rule| {
            let (lowered, error) = lower_rule(rule);
            (Cow::Owned(lowered), error)
        }),
    );
    // The GRPCRoute precedence of each match, which the path alone does
    // not carry (a method-only regex must not outrank a service match).
    for rule in &mut compiled.rules {
        let source = usize::try_from(rule.index)
            .ok()
            .and_then(|i| route_rules.get(i))
            .and_then(|r| r.matches.as_deref())
            .unwrap_or_default();
        for (i, m) in rule.matches.iter_mut().enumerate() {
            let method = source.get(i).and_then(|s| s.method.as_ref());
            m.grpc = Some(method_chars(method));
        }
    }
    compiled
}

/// Characters of the service and method a match names (0 when it names
/// none).
fn method_chars(m: Option<&GrpcRouteRulesMatchesMethod>) -> GrpcMethodChars {
    let len = |s: Option<&String>| {
        s.map_or(0, |s| {
            u32::try_from(s.trim_start_matches('.').len()).unwrap_or(u32::MAX)
        })
    };
    GrpcMethodChars {
        service: len(m.and_then(|m| m.service.as_ref())),
        method: len(m.and_then(|m| m.method.as_ref())),
    }
}

/// The HTTPRoute rule a GRPCRoute rule means, and why it cannot be served
/// (its backends still resolve for status).
fn lower_rule(rule: &GrpcRouteRules) -> (HttpRouteRules, Option<String>) {
    let without_matches = GrpcRouteRules {
        matches: None,
        ..rule.clone()
    };
    let mut lowered: HttpRouteRules = match reshape(&without_matches) {
        Ok(r) => r,
        Err(e) => return (HttpRouteRules::default(), Some(e)),
    };
    match rule
        .matches
        .iter()
        .flatten()
        .map(lower_match)
        .collect::<Result<Vec<_>, String>>()
    {
        Ok(matches) if matches.is_empty() => {}
        Ok(matches) => lowered.matches = Some(matches),
        Err(e) => return (lowered, Some(e)),
    }
    (lowered, None)
}

fn lower_match(m: &GrpcRouteRulesMatches) -> Result<HttpRouteRulesMatches, String> {
    let (kind, value) = match &m.method {
        Some(method) => method_path(method)?,
        None => (HttpRouteRulesMatchesPathType::PathPrefix, "/".to_string()),
    };
    Ok(HttpRouteRulesMatches {
        path: Some(HttpRouteRulesMatchesPath {
            r#type: Some(kind),
            value: Some(value),
        }),
        headers: match &m.headers {
            Some(h) => Some(reshape(h)?),
            None => None,
        },
        ..Default::default()
    })
}

/// The path match of a method match.
fn method_path(
    m: &GrpcRouteRulesMatchesMethod,
) -> Result<(HttpRouteRulesMatchesPathType, String), String> {
    use HttpRouteRulesMatchesPathType as Path;
    // A leading `.` (fully qualified, as protobuf spells it) is not on the
    // wire: `/pkg.Svc/Method`.
    let service = m
        .service
        .as_deref()
        .map(|s| match m.r#type {
            Some(GrpcRouteRulesMatchesMethodType::RegularExpression) => s,
            _ => s.strip_prefix('.').unwrap_or(s),
        })
        .filter(|s| !s.is_empty());
    let method = m.method.as_deref().filter(|s| !s.is_empty());
    match m.r#type.as_ref() {
        None | Some(GrpcRouteRulesMatchesMethodType::Exact) => {
            if let Some(s) = service.filter(|s| !valid_service(s)) {
                return Err(format!("gRPC service {s:?} is not a valid service name"));
            }
            if let Some(name) = method.filter(|m| !valid_method(m)) {
                return Err(format!("gRPC method {name:?} is not a valid method name"));
            }
            Ok(match (service, method) {
                (Some(s), Some(m)) => (Path::Exact, format!("/{s}/{m}")),
                (Some(s), None) => (Path::PathPrefix, format!("/{s}")),
                (None, Some(m)) => (Path::RegularExpression, format!("/[^/]+/{m}")),
                (None, None) => (Path::PathPrefix, "/".to_string()),
            })
        }
        Some(GrpcRouteRulesMatchesMethodType::RegularExpression) => {
            for re in service.iter().chain(&method) {
                check_regex(re, re)?;
            }
            let part = |p: Option<&str>| p.map_or("[^/]+".to_string(), |p| format!("(?:{p})"));
            Ok((
                Path::RegularExpression,
                format!("/{}/{}", part(service), part(method)),
            ))
        }
    }
}

/// `^(?i)[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$` (the CRD's, its optional
/// leading `.` already removed).
fn valid_service(s: &str) -> bool {
    s.split('.').all(valid_identifier)
}

/// `^[A-Za-z_][A-Za-z_0-9]*$`, as the CRD says.
fn valid_method(m: &str) -> bool {
    valid_identifier(m)
}

fn valid_identifier(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Converts between types of the same JSON shape.
fn reshape<A: serde::Serialize, B: serde::de::DeserializeOwned>(a: &A) -> Result<B, String> {
    serde_json::to_value(a)
        .and_then(serde_json::from_value)
        .map_err(|e| format!("cannot read the rule as an HTTP rule: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method(
        kind: Option<GrpcRouteRulesMatchesMethodType>,
        service: Option<&str>,
        method: Option<&str>,
    ) -> GrpcRouteRulesMatchesMethod {
        GrpcRouteRulesMatchesMethod {
            r#type: kind,
            service: service.map(Into::into),
            method: method.map(Into::into),
        }
    }

    #[test]
    fn exact_methods_become_paths() {
        use HttpRouteRulesMatchesPathType as P;
        let cases = [
            (Some("a.B"), Some("Echo"), P::Exact, "/a.B/Echo"),
            (Some("a.B"), None, P::PathPrefix, "/a.B"),
            (None, Some("Echo"), P::RegularExpression, "/[^/]+/Echo"),
            (None, None, P::PathPrefix, "/"),
        ];
        for (s, m, kind, path) in cases {
            assert_eq!(
                method_path(&method(None, s, m)).unwrap(),
                (kind, path.to_string()),
                "{s:?} {m:?}"
            );
        }
    }

    #[test]
    fn invalid_exact_names_and_regexes_are_refused() {
        let exact = Some(GrpcRouteRulesMatchesMethodType::Exact);
        let regex = Some(GrpcRouteRulesMatchesMethodType::RegularExpression);
        assert!(method_path(&method(exact.clone(), Some("a/b"), None)).is_err());
        assert!(method_path(&method(exact.clone(), Some("a..b"), None)).is_err());
        assert!(method_path(&method(exact.clone(), None, Some("1x"))).is_err());
        assert!(method_path(&method(exact, Some(".a.b_c"), Some("_x1"))).is_ok());
        assert!(method_path(&method(regex.clone(), Some("("), None)).is_err());
        assert_eq!(
            method_path(&method(regex, Some("a\\..*"), None)).unwrap().1,
            "/(?:a\\..*)/[^/]+"
        );
    }
}
