//! Every route kind seen through one shape: identity, parentRefs,
//! hostnames and backendRefs. Attachment and status never look at a
//! kind-specific type; only rule compilation does.

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use coxswain_api::{
    GATEWAY_GROUP, GrpcRoute, HttpRoute, Object, ObjectKey, Snapshot, TcpRoute, TlsRoute, UdpRoute,
};
use coxswain_ir::RouteKind;

/// A route of any kind, borrowed from the snapshot.
#[derive(Clone, Copy, Debug)]
pub enum AnyRoute<'a> {
    Http(&'a HttpRoute),
    Grpc(&'a GrpcRoute),
    Tls(&'a TlsRoute),
    Tcp(&'a TcpRoute),
    Udp(&'a UdpRoute),
}

/// A route's identity across kinds; sorts by kind, then namespace/name.
pub type RouteKey = (RouteKind, ObjectKey);

/// A parentRef, whatever the route kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParentRef {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: String,
    pub section_name: Option<String>,
    pub port: Option<i32>,
}

impl ParentRef {
    pub fn group(&self) -> &str {
        self.group.as_deref().unwrap_or(GATEWAY_GROUP)
    }

    pub fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or("Gateway")
    }
}

/// A backendRef, whatever the route kind.
#[derive(Clone, Copy, Debug)]
pub struct BackendRef<'a> {
    pub group: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub name: &'a str,
    pub namespace: Option<&'a str>,
    pub port: Option<i32>,
    pub weight: Option<i32>,
}

impl BackendRef<'_> {
    /// The spec's default weight is 1; negative weights count as 0.
    pub fn weight(&self) -> u32 {
        self.weight.map_or(1, |w| u32::try_from(w).unwrap_or(0))
    }
}

macro_rules! parent_and_backend_refs {
    ($($parent:ty, $backend:ty;)*) => {$(
        impl From<&$parent> for ParentRef {
            fn from(p: &$parent) -> Self {
                ParentRef {
                    group: p.group.clone(),
                    kind: p.kind.clone(),
                    namespace: p.namespace.clone(),
                    name: p.name.clone(),
                    section_name: p.section_name.clone(),
                    port: p.port,
                }
            }
        }

        impl<'a> From<&'a $backend> for BackendRef<'a> {
            fn from(b: &'a $backend) -> Self {
                BackendRef {
                    group: b.group.as_deref(),
                    kind: b.kind.as_deref(),
                    name: &b.name,
                    namespace: b.namespace.as_deref(),
                    port: b.port,
                    weight: b.weight,
                }
            }
        }
    )*};
}

parent_and_backend_refs! {
    coxswain_api::gw::httproutes::HttpRouteParentRefs, coxswain_api::gw::httproutes::HttpRouteRulesBackendRefs;
    coxswain_api::gw::grpcroutes::GrpcRouteParentRefs, coxswain_api::gw::grpcroutes::GrpcRouteRulesBackendRefs;
    coxswain_api::gw::tlsroutes::TlsRouteParentRefs, coxswain_api::gw::tlsroutes::TlsRouteRulesBackendRefs;
    coxswain_api::gw::tcproutes::TcpRouteParentRefs, coxswain_api::gw::tcproutes::TcpRouteRulesBackendRefs;
    coxswain_api::gw::udproutes::UdpRouteParentRefs, coxswain_api::gw::udproutes::UdpRouteRulesBackendRefs;
}

impl<'a> AnyRoute<'a> {
    /// The route inside `object`, if it is one.
    pub fn of(object: &'a Object) -> Option<Self> {
        Some(match object {
            Object::HttpRoute(r) => AnyRoute::Http(r),
            Object::GrpcRoute(r) => AnyRoute::Grpc(r),
            Object::TlsRoute(r) => AnyRoute::Tls(r),
            Object::TcpRoute(r) => AnyRoute::Tcp(r),
            Object::UdpRoute(r) => AnyRoute::Udp(r),
            _ => return None,
        })
    }

    pub fn kind(self) -> RouteKind {
        match self {
            AnyRoute::Http(_) => RouteKind::Http,
            AnyRoute::Grpc(_) => RouteKind::Grpc,
            AnyRoute::Tls(_) => RouteKind::Tls,
            AnyRoute::Tcp(_) => RouteKind::Tcp,
            AnyRoute::Udp(_) => RouteKind::Udp,
        }
    }

    pub fn meta(self) -> &'a ObjectMeta {
        match self {
            AnyRoute::Http(r) => &r.metadata,
            AnyRoute::Grpc(r) => &r.metadata,
            AnyRoute::Tls(r) => &r.metadata,
            AnyRoute::Tcp(r) => &r.metadata,
            AnyRoute::Udp(r) => &r.metadata,
        }
    }

    pub fn parent_refs(self) -> Vec<ParentRef> {
        fn all<'a, P: 'a>(refs: &'a Option<Vec<P>>) -> Vec<ParentRef>
        where
            ParentRef: From<&'a P>,
        {
            refs.iter().flatten().map(ParentRef::from).collect()
        }
        match self {
            AnyRoute::Http(r) => all(&r.spec.parent_refs),
            AnyRoute::Grpc(r) => all(&r.spec.parent_refs),
            AnyRoute::Tls(r) => all(&r.spec.parent_refs),
            AnyRoute::Tcp(r) => all(&r.spec.parent_refs),
            AnyRoute::Udp(r) => all(&r.spec.parent_refs),
        }
    }

    /// `spec.hostnames`; `None` for kinds without hostnames (TCP, UDP),
    /// which attach whatever the listener's hostname.
    pub fn hostnames(self) -> Option<&'a [String]> {
        match self {
            AnyRoute::Http(r) => Some(r.spec.hostnames.as_deref().unwrap_or_default()),
            AnyRoute::Grpc(r) => Some(r.spec.hostnames.as_deref().unwrap_or_default()),
            AnyRoute::Tls(r) => Some(&r.spec.hostnames),
            AnyRoute::Tcp(_) | AnyRoute::Udp(_) => None,
        }
    }
}

/// Every route of every kind in the snapshot, sorted by [`RouteKey`].
pub fn all_routes(snapshot: &Snapshot) -> Vec<(RouteKey, Object)> {
    let http = snapshot
        .http_routes
        .iter()
        .map(|(k, r)| ((RouteKind::Http, k.clone()), Object::HttpRoute(r.clone())));
    let grpc = snapshot
        .grpc_routes
        .iter()
        .map(|(k, r)| ((RouteKind::Grpc, k.clone()), Object::GrpcRoute(r.clone())));
    let tls = snapshot
        .tls_routes
        .iter()
        .map(|(k, r)| ((RouteKind::Tls, k.clone()), Object::TlsRoute(r.clone())));
    let tcp = snapshot
        .tcp_routes
        .iter()
        .map(|(k, r)| ((RouteKind::Tcp, k.clone()), Object::TcpRoute(r.clone())));
    let udp = snapshot
        .udp_routes
        .iter()
        .map(|(k, r)| ((RouteKind::Udp, k.clone()), Object::UdpRoute(r.clone())));
    http.chain(grpc).chain(tls).chain(tcp).chain(udp).collect()
}
