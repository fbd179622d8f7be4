//! backendRefs -> clusters: kind, ReferenceGrant, Service and port, protocol.

use coxswain_api::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

use coxswain_api::k8s_openapi::api::core::v1::ServicePort;
use coxswain_api::{GATEWAY_GROUP, Service, Snapshot};
use coxswain_ir::{RouteKind, UpstreamProtocol};

use crate::conditions::Reason;
use crate::reference_grant::{self, From, To};
use crate::route::object::BackendRef;

/// A resolved Service port: everything needed to build its cluster later.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterSpec {
    /// `namespace/service:port`.
    pub name: String,
    pub namespace: String,
    pub service: String,
    pub port_name: Option<String>,
    /// Numeric targetPort, used only when EndpointSlices carry no ports.
    pub target_port: Option<i32>,
    pub protocol: UpstreamProtocol,
    /// `appProtocol: https`: the port speaks TLS, so a BackendTLSPolicy
    /// must say how to verify it; without one requests fail rather than go
    /// out in plain text.
    pub requires_tls: bool,
    /// Set on an Ingress's own copy of a cluster whose annotations
    /// choose how its endpoints are spoken to; `None` on shared clusters.
    pub annotated: Option<AnnotatedCluster>,
}

/// Connection settings from an Ingress's annotations. They override the
/// Service's CoxswainBackendPolicy for that Ingress's copy only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnotatedCluster {
    /// `namespace/name` of the Ingress (for logs).
    pub by: String,
    pub balancer: Option<coxswain_ir::Balancer>,
    pub connect_timeout_ms: Option<u64>,
}

/// Borrowed indexes over the snapshot, built once per translation so lookups
/// need no owned keys.
pub struct Lookup<'a> {
    pub snapshot: &'a Snapshot,
    services: BTreeMap<(&'a str, &'a str), &'a Service>,
}

impl<'a> Lookup<'a> {
    pub fn new(snapshot: &'a Snapshot) -> Self {
        let services = snapshot
            .services
            .iter()
            .map(|(k, svc)| ((&*k.namespace, &*k.name), svc.as_ref()))
            .collect();
        Lookup { snapshot, services }
    }

    fn service(&self, namespace: &str, name: &str) -> Option<&'a Service> {
        self.services.get(&(namespace, name)).copied()
    }
}

/// Why a backendRef did not resolve.
pub type Unresolved = (Reason, String);

/// How the gateway speaks to a Service port of `app_protocol` for a route
/// of `route_kind`: the HTTP version, and whether over TLS (the port's
/// BackendTLSPolicy then says how to verify it).
pub(crate) fn upstream_protocol(
    route_kind: RouteKind,
    app_protocol: Option<&str>,
) -> Result<(UpstreamProtocol, bool), String> {
    use UpstreamProtocol::{H2c, Http1};
    // IANA service names compare case-insensitively.
    let tls = app_protocol.is_some_and(|p| p.eq_ignore_ascii_case("https"));
    match (route_kind, app_protocol) {
        // gRPC needs HTTP/2: a port that names no protocol is spoken to
        // over h2c, a TLS one over h2 only.
        (RouteKind::Grpc, None | Some("kubernetes.io/h2c")) => Ok((H2c, false)),
        (RouteKind::Grpc, Some(_)) if tls => Ok((H2c, true)),
        (RouteKind::Grpc, Some(other)) => Err(format!(
            "appProtocol {other:?} is not HTTP/2; a GRPCRoute needs kubernetes.io/h2c, https or none"
        )),
        (
            RouteKind::Http | RouteKind::Ingress,
            None | Some("http" | "kubernetes.io/http" | "kubernetes.io/ws"),
        ) => Ok((Http1, false)),
        (RouteKind::Http | RouteKind::Ingress, Some("kubernetes.io/wss")) => Ok((Http1, true)),
        (RouteKind::Http | RouteKind::Ingress, Some(_)) if tls => Ok((Http1, true)),
        (RouteKind::Http | RouteKind::Ingress, Some("kubernetes.io/h2c")) => Ok((H2c, false)),
        (RouteKind::Http | RouteKind::Ingress, Some(other)) => {
            Err(format!("appProtocol {other:?} is not supported"))
        }
        // A byte stream or datagrams: the application protocol is the
        // backend's business.
        (_, _) => Ok((Http1, tls)),
    }
}

/// Resolves a backendRef of a `route_kind` route in `route_ns` to a
/// Service port. The ReferenceGrant is checked before the Service's
/// existence: a reference that is not permitted says so, whether or not
/// its target exists.
pub fn resolve(
    lookup: &Lookup<'_>,
    route_kind: RouteKind,
    route_ns: &str,
    b: &BackendRef<'_>,
) -> Result<ClusterSpec, Unresolved> {
    let group = b.group.unwrap_or("");
    let kind = b.kind.unwrap_or("Service");
    if !group.is_empty() || kind != "Service" {
        return Err((
            Reason::InvalidKind,
            format!("backendRef kind {group}/{kind} is not supported; only core Service is"),
        ));
    }
    let namespace = b.namespace.unwrap_or(route_ns);
    let from = From {
        group: GATEWAY_GROUP,
        kind: route_kind.as_str(),
        namespace: route_ns,
    };
    let to = To {
        group: "",
        kind: "Service",
        namespace,
        name: b.name,
    };
    if !reference_grant::is_permitted(&lookup.snapshot.reference_grants, from, to) {
        return Err((
            Reason::RefNotPermitted,
            format!(
                "reference to Service {namespace}/{} is not permitted by any ReferenceGrant",
                b.name
            ),
        ));
    }
    let Some(service) = lookup.service(namespace, b.name) else {
        return Err((
            Reason::BackendNotFound,
            format!("Service {namespace}/{} not found", b.name),
        ));
    };
    let Some(port) = b.port else {
        return Err((
            Reason::BackendNotFound,
            format!("backendRef to Service {namespace}/{} has no port", b.name),
        ));
    };
    let service_port = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .and_then(|ports| ports.iter().find(|p| p.port == port));
    let Some(service_port) = service_port else {
        return Err((
            Reason::BackendNotFound,
            format!("Service {namespace}/{} has no port {port}", b.name),
        ));
    };
    cluster_spec(route_kind, namespace, b.name, service_port)
}

/// The cluster of one port of Service `namespace/name`, as a route of
/// `route_kind` speaks to it. Ingress backends share it with HTTPRoute
/// backends (same name), so the same CoxswainBackendPolicy applies.
pub(crate) fn cluster_spec(
    route_kind: RouteKind,
    namespace: &str,
    name: &str,
    service_port: &ServicePort,
) -> Result<ClusterSpec, Unresolved> {
    let port = service_port.port;
    let app_protocol = service_port.app_protocol.as_deref();
    let (protocol, requires_tls) = match upstream_protocol(route_kind, app_protocol) {
        Ok(p) => p,
        Err(why) => {
            return Err((
                Reason::UnsupportedProtocol,
                format!("Service {namespace}/{name} port {port}: {why}"),
            ));
        }
    };
    // The same port can be HTTP/1.1 for an HTTPRoute and HTTP/2 for a
    // GRPCRoute: two clusters.
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
        name: format!("{namespace}/{name}:{port}{suffix}"),
        namespace: namespace.to_string(),
        service: name.to_string(),
        port_name: service_port.name.clone().filter(|n| !n.is_empty()),
        target_port,
        protocol,
        requires_tls,
        annotated: None,
    })
}
