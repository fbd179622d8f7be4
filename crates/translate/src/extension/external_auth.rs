//! CoxswainExternalAuth: the authorization service's Service port becomes
//! a cluster like any route backend's (so the proxy balances over its
//! ready pods), and the resource the check the proxy runs against it.
//!
//! Everything that keeps the check from running as written fails closed,
//! whatever `failClosed` says — its rules answer 503 — and the status
//! says why: an unknown protocol, a timeout, header name or body size that
//! does not parse, a Service (or port) that does not exist, or one in
//! another namespace without a ReferenceGrant.

use coxswain_api::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use coxswain_api::{CoxswainExternalAuth, ObjectKey, Snapshot};
use coxswain_ir::{ExtensionSpec, ExternalAuth, ExternalAuthProtocol, RouteKind};

use super::{Resolved, accepted, accepted_with, invalid};
use crate::conditions::{Cond, ConditionType, Reason};
use crate::duration::parse_duration_ms;
use crate::reference_grant::{From, To, is_permitted};
use crate::route::ClusterSpec;
use crate::route::backends::upstream_protocol;

/// How long a check may take when the resource does not say.
pub const DEFAULT_TIMEOUT_MS: u64 = 1000;
/// The kind a ReferenceGrant's `from` names.
pub const KIND: &str = "CoxswainExternalAuth";

/// Every refusal answers this: the request cannot be authorised.
const REFUSED: u16 = 503;

type Refusal = (Vec<Cond>, String);

pub fn resolve(snapshot: &Snapshot, cr: &CoxswainExternalAuth) -> Resolved {
    match parse(snapshot, cr) {
        Ok((auth, _)) => Resolved {
            spec: ExtensionSpec::ExternalAuth(auth),
            // A Gateway policy applies to every rule on its Gateways, not
            // only to the rules that name it.
            conditions: if cr.spec.target_refs.is_empty() {
                accepted()
            } else {
                accepted_with(
                    "enforced by the rules that reference it and, as a policy, on its targeted Gateways",
                )
            },
        },
        Err((conditions, reason)) => Resolved {
            spec: ExtensionSpec::Broken {
                status: REFUSED,
                reason,
            },
            conditions,
        },
    }
}

/// The cluster the resource's checks go to, when it resolves.
pub fn cluster(snapshot: &Snapshot, cr: &CoxswainExternalAuth) -> Option<ClusterSpec> {
    parse(snapshot, cr).ok().map(|(_, spec)| spec)
}

fn parse(
    snapshot: &Snapshot,
    cr: &CoxswainExternalAuth,
) -> Result<(ExternalAuth, ClusterSpec), Refusal> {
    let spec = &cr.spec;
    let refuse = |m: String| (invalid(format!("{m}; its rules answer 503")), m);
    let protocol = match spec.protocol.as_str() {
        "HTTP" => ExternalAuthProtocol::Http,
        "GRPC" => ExternalAuthProtocol::Grpc,
        other => {
            return Err(refuse(format!(
                "spec.protocol: {other:?} is not supported (HTTP or GRPC)"
            )));
        }
    };
    let timeout_ms = match &spec.timeout {
        None => DEFAULT_TIMEOUT_MS,
        Some(text) => match parse_duration_ms(text) {
            Ok(0) => return Err(refuse("spec.timeout: must be more than 0".into())),
            Ok(ms) => ms,
            Err(e) => return Err(refuse(format!("spec.timeout: {e}"))),
        },
    };
    let request_headers = header_names("spec.allowedRequestHeaders", &spec.allowed_request_headers)
        .map_err(refuse)?;
    let response_headers = header_names(
        "spec.allowedResponseHeaders",
        &spec.allowed_response_headers,
    )
    .map_err(refuse)?;
    let body_max_bytes = match &spec.forward_body {
        None => None,
        Some(body) => Some(
            super::request_size_limit::parse_size(&body.max_size)
                .map_err(|e| refuse(format!("spec.forwardBody.maxSize: {e}")))?,
        ),
    };
    let cluster = backend(snapshot, cr, protocol)?;
    Ok((
        ExternalAuth {
            protocol,
            cluster: cluster.name.clone(),
            timeout_ms,
            fail_closed: spec.fail_closed.unwrap_or(true),
            request_headers,
            response_headers,
            body_max_bytes,
        },
        cluster,
    ))
}

/// Header names, lower-cased; an invalid one refuses the resource.
fn header_names(field: &str, names: &[String]) -> Result<Vec<String>, String> {
    names
        .iter()
        .map(|name| {
            let valid = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if valid {
                Ok(name.to_ascii_lowercase())
            } else {
                Err(format!("{field}: {name:?} is not a header name"))
            }
        })
        .collect()
}

/// The Service port of `spec.backendRef`, as a cluster.
fn backend(
    snapshot: &Snapshot,
    cr: &CoxswainExternalAuth,
    protocol: ExternalAuthProtocol,
) -> Result<ClusterSpec, Refusal> {
    let namespace = cr.metadata.namespace.as_deref().unwrap_or("default");
    let reference = &cr.spec.backend_ref;
    let service_ns = reference.namespace.as_deref().unwrap_or(namespace);
    let key = ObjectKey::new(service_ns, &reference.name);
    let from = From {
        group: super::GROUP,
        kind: KIND,
        namespace,
    };
    let to = To {
        group: "",
        kind: "Service",
        namespace: service_ns,
        name: &reference.name,
    };
    if !is_permitted(&snapshot.reference_grants, from, to) {
        let m = format!(
            "Service {key}: no ReferenceGrant in {service_ns} lets {KIND} in {namespace} use it"
        );
        return Err((unresolved(Reason::RefNotPermitted, &m), m));
    }
    let Some(service) = snapshot.services.get(&key) else {
        let m = format!("Service {key} not found");
        return Err((unresolved(Reason::BackendNotFound, &m), m));
    };
    let port = reference.port;
    let Some(service_port) = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .and_then(|ports| ports.iter().find(|p| p.port == port))
    else {
        let m = format!("Service {key} has no port {port}");
        return Err((unresolved(Reason::BackendNotFound, &m), m));
    };
    let app_protocol = service_port.app_protocol.as_deref();
    // gRPC needs HTTP/2, as for a GRPCRoute's backend (and the same
    // cluster name, so the two share it).
    let route_kind = match protocol {
        ExternalAuthProtocol::Http => RouteKind::Http,
        ExternalAuthProtocol::Grpc => RouteKind::Grpc,
    };
    let (upstream, requires_tls) = upstream_protocol(route_kind, app_protocol).map_err(|why| {
        let m = format!("Service {key} port {port}: {why}");
        (unresolved(Reason::UnsupportedProtocol, &m), m)
    })?;
    let suffix = if route_kind == RouteKind::Grpc && app_protocol != Some("kubernetes.io/h2c") {
        "/h2c"
    } else {
        ""
    };
    let target_port = match &service_port.target_port {
        Some(IntOrString::Int(p)) => Some(*p),
        Some(IntOrString::String(_)) => None,
        None => Some(port),
    };
    Ok(ClusterSpec {
        name: format!("{key}:{port}{suffix}"),
        namespace: service_ns.to_string(),
        service: reference.name.clone(),
        port_name: service_port.name.clone().filter(|n| !n.is_empty()),
        target_port,
        protocol: upstream,
        requires_tls,
        annotated: None,
    })
}

/// A backendRef that does not resolve: not enforced, and why.
fn unresolved(reason: Reason, message: &str) -> Vec<Cond> {
    vec![
        Cond::new(
            ConditionType::Accepted,
            false,
            Reason::Invalid,
            "its authorization service cannot be used: the rules using it answer 503",
        ),
        Cond::new(
            ConditionType::ResolvedRefs,
            false,
            reason,
            message.to_string(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::header_names;

    #[test]
    fn header_names_are_lower_cased_and_checked() {
        assert_eq!(
            header_names("f", &["X-Auth-User".into()]),
            Ok(vec!["x-auth-user".to_string()])
        );
        assert!(header_names("f", &["bad name".into()]).is_err());
        assert!(header_names("f", &[String::new()]).is_err());
    }
}
