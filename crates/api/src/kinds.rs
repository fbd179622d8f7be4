//! The one table of kinds the gateway reads. [`Snapshot`], [`Object`],
//! [`Kind`] and everything providers need per kind (type names, API
//! versions, scope, decoding, watching) are generated from it, so adding a
//! kind is one row here (plus RBAC and the translator's handling of it).
//!
//! `route_input` marks the kinds a route's translation reads besides the
//! route itself: the translator keeps per-route results only while every
//! one of them is unchanged ([`Snapshot::same_route_inputs`]). Forgetting a
//! kind there is impossible: the column has no default.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ObjectKey;

/// What every kind's Rust type is: an API resource that (de)serialises.
pub trait ApiObject:
    Resource<DynamicType = ()>
    + DeserializeOwned
    + Serialize
    + Clone
    + fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<T> ApiObject for T where
    T: Resource<DynamicType = ()>
        + DeserializeOwned
        + Serialize
        + Clone
        + fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// What [`Kind::visit`] hands a per-type operation: the Rust type as a
/// generic parameter and the constructor of its [`Object`] variant.
pub trait KindVisitor {
    type Output;
    fn visit<T: ApiObject>(self, kind: Kind, wrap: fn(T) -> Object) -> Self::Output;
}

macro_rules! kinds {
    ($(
        $variant:ident: $ty:ty {
            field: $field:ident,
            kind: $kind:literal,
            group: $group:literal,
            versions: [$($version:literal),+],
            cluster_scoped: $cluster:literal,
            route_input: $route_input:literal $(,)?
        }
    )*) => {
        /// Every object the gateway cares about, keyed by `namespace/name` so
        /// iteration order is deterministic. Objects are behind `Arc` so
        /// providers can rebuild a snapshot after a small change without
        /// deep copies, and the translator can tell unchanged objects by
        /// identity.
        #[derive(Clone, Debug, Default)]
        pub struct Snapshot {
            $(pub $field: BTreeMap<ObjectKey, Arc<$ty>>,)*
        }

        /// One typed object of any kind the snapshot holds.
        #[derive(Clone, Debug)]
        pub enum Object {
            $($variant(Arc<$ty>),)*
        }

        /// The kinds of [`Object`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Kind {
            $($variant,)*
        }

        impl Kind {
            pub const ALL: &'static [Kind] = &[$(Kind::$variant,)*];

            /// The Kubernetes `kind`.
            pub fn name(self) -> &'static str {
                match self { $(Kind::$variant => $kind,)* }
            }

            /// The API group (`""` for core).
            pub fn group(self) -> &'static str {
                match self { $(Kind::$variant => $group,)* }
            }

            /// API versions accepted in files, newest first.
            pub fn versions(self) -> &'static [&'static str] {
                match self { $(Kind::$variant => &[$($version),+],)* }
            }

            pub fn cluster_scoped(self) -> bool {
                match self { $(Kind::$variant => $cluster,)* }
            }

            /// Does a route's translation read objects of this kind?
            pub fn route_input(self) -> bool {
                match self { $(Kind::$variant => $route_input,)* }
            }

            /// Runs `visitor` with this kind's Rust type.
            pub fn visit<V: KindVisitor>(self, visitor: V) -> V::Output {
                match self {
                    $(Kind::$variant => visitor.visit::<$ty>(self, |o| Object::$variant(Arc::new(o))),)*
                }
            }
        }

        impl Object {
            pub fn kind(&self) -> Kind {
                match self { $(Object::$variant(_) => Kind::$variant,)* }
            }

            pub fn meta(&self) -> &ObjectMeta {
                match self { $(Object::$variant(o) => &o.metadata,)* }
            }

            /// Mutable metadata of an object that is not shared yet.
            pub fn meta_mut(&mut self) -> Option<&mut ObjectMeta> {
                match self { $(Object::$variant(o) => Arc::get_mut(o).map(|o| &mut o.metadata),)* }
            }

            /// The very same object (`Arc` identity), as providers keep an
            /// unchanged object.
            pub fn same_arc(&self, other: &Object) -> bool {
                match (self, other) {
                    $((Object::$variant(a), Object::$variant(b)) => Arc::ptr_eq(a, b),)*
                    _ => false,
                }
            }

            /// The very same object, or the same but for its status (see
            /// [`same_but_status`]).
            pub fn same_but_status(&self, other: &Object) -> bool {
                match (self, other) {
                    $((Object::$variant(a), Object::$variant(b)) => same_but_status(a, b),)*
                    _ => false,
                }
            }

            /// Equal kind and equal content.
            pub fn same_content(&self, other: &Object) -> bool {
                match (self, other) {
                    $((Object::$variant(a), Object::$variant(b)) => a == b,)*
                    _ => false,
                }
            }

            /// The object as Kubernetes would print it.
            pub fn to_json(&self) -> serde_json::Result<serde_json::Value> {
                match self { $(Object::$variant(o) => serde_json::to_value(&**o),)* }
            }
        }

        impl Snapshot {
            /// Inserts (or replaces) an object under its key.
            pub fn insert(&mut self, object: Object) {
                drop(self.replace(object));
            }

            /// Inserts an object under its key, returning the one it
            /// replaced.
            pub fn replace(&mut self, object: Object) -> Option<Object> {
                let key = object.key();
                match object {
                    $(Object::$variant(o) => self.$field.insert(key, o).map(Object::$variant),)*
                }
            }

            pub fn remove(&mut self, kind: Kind, key: &ObjectKey) {
                match kind { $(Kind::$variant => drop(self.$field.remove(key)),)* }
            }

            /// Removes every object of `kind`.
            pub fn clear(&mut self, kind: Kind) {
                match kind { $(Kind::$variant => self.$field.clear(),)* }
            }

            pub fn count(&self, kind: Kind) -> usize {
                match kind { $(Kind::$variant => self.$field.len(),)* }
            }

            /// Only the route inputs of this snapshot (cheap: `Arc` copies).
            pub fn route_inputs(&self) -> Snapshot {
                let mut out = Snapshot::default();
                $(if $route_input { out.$field = self.$field.clone(); })*
                out
            }

            /// Does `other` hold the very same route inputs (same keys, same
            /// `Arc`s)? Compares without copying.
            pub fn same_route_inputs(&self, other: &Snapshot) -> bool {
                true $(&& (!$route_input || same_objects(&self.$field, &other.$field)))*
            }

            /// Do the route inputs of `other` say the same as these, but
            /// for their `status` and `metadata.resourceVersion`? Our own
            /// status write-back of a Gateway or a filter resource comes
            /// back through the watch as a new object; it must not cost a
            /// recomputation of every route (the translator never reads an
            /// input's status).
            pub fn equal_route_inputs(&self, other: &Snapshot) -> bool {
                true $(&& (!$route_input || equal_but_status(&self.$field, &other.$field)))*
            }
        }
    };
}

kinds! {
    GatewayClass: crate::GatewayClass {
        field: gateway_classes, kind: "GatewayClass", group: "gateway.networking.k8s.io",
        versions: ["v1", "v1beta1"], cluster_scoped: true, route_input: true,
    }
    Gateway: crate::Gateway {
        field: gateways, kind: "Gateway", group: "gateway.networking.k8s.io",
        versions: ["v1", "v1beta1"], cluster_scoped: false, route_input: true,
    }
    HttpRoute: crate::HttpRoute {
        field: http_routes, kind: "HTTPRoute", group: "gateway.networking.k8s.io",
        versions: ["v1", "v1beta1"], cluster_scoped: false, route_input: false,
    }
    GrpcRoute: crate::GrpcRoute {
        field: grpc_routes, kind: "GRPCRoute", group: "gateway.networking.k8s.io",
        versions: ["v1"], cluster_scoped: false, route_input: false,
    }
    TlsRoute: crate::TlsRoute {
        field: tls_routes, kind: "TLSRoute", group: "gateway.networking.k8s.io",
        versions: ["v1", "v1alpha3", "v1alpha2"], cluster_scoped: false, route_input: false,
    }
    TcpRoute: crate::TcpRoute {
        field: tcp_routes, kind: "TCPRoute", group: "gateway.networking.k8s.io",
        versions: ["v1", "v1alpha2"], cluster_scoped: false, route_input: false,
    }
    UdpRoute: crate::UdpRoute {
        field: udp_routes, kind: "UDPRoute", group: "gateway.networking.k8s.io",
        versions: ["v1", "v1alpha2"], cluster_scoped: false, route_input: false,
    }
    ListenerSet: crate::ListenerSet {
        field: listener_sets, kind: "ListenerSet", group: "gateway.networking.k8s.io",
        versions: ["v1"], cluster_scoped: false, route_input: true,
    }
    BackendTlsPolicy: crate::BackendTlsPolicy {
        field: backend_tls_policies, kind: "BackendTLSPolicy", group: "gateway.networking.k8s.io",
        versions: ["v1", "v1alpha3"], cluster_scoped: false, route_input: false,
    }
    CoxswainBackendPolicy: crate::CoxswainBackendPolicy {
        field: backend_policies, kind: "CoxswainBackendPolicy", group: "gateway.coxswain-labs.dev",
        versions: ["v1alpha1"], cluster_scoped: false, route_input: false,
    }
    ClientTrafficPolicy: crate::ClientTrafficPolicy {
        field: client_traffic_policies, kind: "ClientTrafficPolicy", group: "gateway.coxswain-labs.dev",
        versions: ["v1alpha1"], cluster_scoped: false, route_input: false,
    }
    BasicAuth: crate::BasicAuth {
        field: basic_auths, kind: "BasicAuth", group: "gateway.coxswain-labs.dev",
        versions: ["v1alpha1"], cluster_scoped: false, route_input: true,
    }
    Compression: crate::Compression {
        field: compressions, kind: "Compression", group: "gateway.coxswain-labs.dev",
        versions: ["v1alpha1"], cluster_scoped: false, route_input: true,
    }
    CoxswainExternalAuth: crate::CoxswainExternalAuth {
        field: external_auths, kind: "CoxswainExternalAuth", group: "gateway.coxswain-labs.dev",
        versions: ["v1alpha1"], cluster_scoped: false, route_input: true,
    }
    IpAccessControl: crate::IpAccessControl {
        field: ip_access_controls, kind: "IpAccessControl", group: "gateway.coxswain-labs.dev",
        versions: ["v1alpha1"], cluster_scoped: false, route_input: true,
    }
    JwtAuth: crate::JwtAuth {
        field: jwt_auths, kind: "JwtAuth", group: "gateway.coxswain-labs.dev",
        versions: ["v1alpha1"], cluster_scoped: false, route_input: true,
    }
    PathRewriteRegex: crate::PathRewriteRegex {
        field: path_rewrite_regexes, kind: "PathRewriteRegex", group: "gateway.coxswain-labs.dev",
        versions: ["v1alpha1"], cluster_scoped: false, route_input: true,
    }
    RateLimit: crate::RateLimit {
        field: rate_limits, kind: "RateLimit", group: "gateway.coxswain-labs.dev",
        versions: ["v1alpha1"], cluster_scoped: false, route_input: true,
    }
    RequestSizeLimit: crate::RequestSizeLimit {
        field: request_size_limits, kind: "RequestSizeLimit", group: "gateway.coxswain-labs.dev",
        versions: ["v1alpha1"], cluster_scoped: false, route_input: true,
    }
    // A Gateway's (or its class's) parametersRef: its own proxy pool.
    CoxswainGatewayParameters: crate::CoxswainGatewayParameters {
        field: gateway_parameters, kind: "CoxswainGatewayParameters", group: "gateway.coxswain-labs.dev",
        versions: ["v1alpha1"], cluster_scoped: false, route_input: false,
    }
    XBackendTrafficPolicy: crate::XBackendTrafficPolicy {
        field: backend_traffic_policies, kind: "XBackendTrafficPolicy", group: "gateway.networking.x-k8s.io",
        versions: ["v1alpha1"], cluster_scoped: false, route_input: false,
    }
    Ingress: crate::Ingress {
        field: ingresses, kind: "Ingress", group: "networking.k8s.io",
        versions: ["v1"], cluster_scoped: false, route_input: false,
    }
    IngressClass: crate::IngressClass {
        field: ingress_classes, kind: "IngressClass", group: "networking.k8s.io",
        versions: ["v1"], cluster_scoped: true, route_input: false,
    }
    ReferenceGrant: crate::ReferenceGrant {
        field: reference_grants, kind: "ReferenceGrant", group: "gateway.networking.k8s.io",
        versions: ["v1", "v1beta1"], cluster_scoped: false, route_input: true,
    }
    Service: crate::Service {
        field: services, kind: "Service", group: "",
        versions: ["v1"], cluster_scoped: false, route_input: true,
    }
    EndpointSlice: crate::EndpointSlice {
        field: endpoint_slices, kind: "EndpointSlice", group: "discovery.k8s.io",
        versions: ["v1"], cluster_scoped: false, route_input: false,
    }
    Namespace: crate::Namespace {
        field: namespaces, kind: "Namespace", group: "",
        versions: ["v1"], cluster_scoped: true, route_input: true,
    }
    Secret: crate::Secret {
        field: secrets, kind: "Secret", group: "",
        versions: ["v1"], cluster_scoped: false, route_input: false,
    }
    ConfigMap: crate::ConfigMap {
        field: config_maps, kind: "ConfigMap", group: "",
        versions: ["v1"], cluster_scoped: false, route_input: false,
    }
    // The proxy pools' Deployments (their readiness makes a dedicated
    // Gateway Programmed). The Kubernetes provider watches only those it
    // labels as its own.
    Deployment: crate::Deployment {
        field: deployments, kind: "Deployment", group: "apps",
        versions: ["v1"], cluster_scoped: false, route_input: false,
    }
}

impl Kind {
    /// The kind a document's `apiVersion` and `kind` name, if we read it.
    pub fn recognise(api_version: &str, kind: &str) -> Option<Kind> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        Kind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == kind && k.group() == group && k.versions().contains(&version))
    }

    /// The kind named `name` (as [`Kind::name`] spells it).
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.name() == name)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Object {
    pub fn key(&self) -> ObjectKey {
        ObjectKey::of(self.meta())
    }
}

/// Same keys, each holding the very same object.
pub fn same_objects<T>(a: &BTreeMap<ObjectKey, Arc<T>>, b: &BTreeMap<ObjectKey, Arc<T>>) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && Arc::ptr_eq(va, vb))
}

/// Same keys, each holding the same object or one equal to it but for
/// `status` and `metadata.resourceVersion` (compared as JSON, only for
/// objects that are not the very same `Arc`).
pub fn equal_but_status<T: serde::Serialize>(
    a: &BTreeMap<ObjectKey, Arc<T>>,
    b: &BTreeMap<ObjectKey, Arc<T>>,
) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && same_but_status(va, vb))
}

/// The very same object, or one equal to it but for `status` and
/// `metadata.resourceVersion`.
pub fn same_but_status<T: serde::Serialize>(a: &Arc<T>, b: &Arc<T>) -> bool {
    if Arc::ptr_eq(a, b) {
        return true;
    }
    match (without_status(&**a), without_status(&**b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The object as JSON without what the API server changes on a status
/// write; `None` (never equal) when it does not serialise.
fn without_status<T: serde::Serialize>(object: &T) -> Option<serde_json::Value> {
    let mut value = serde_json::to_value(object).ok()?;
    let map = value.as_object_mut()?;
    map.remove("status");
    if let Some(meta) = map
        .get_mut("metadata")
        .and_then(serde_json::Value::as_object_mut)
    {
        meta.remove("resourceVersion");
        meta.remove("managedFields");
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_group_version_and_kind() {
        let cases = [
            (
                "gateway.networking.k8s.io/v1",
                "HTTPRoute",
                Some(Kind::HttpRoute),
            ),
            (
                "gateway.networking.k8s.io/v1beta1",
                "ReferenceGrant",
                Some(Kind::ReferenceGrant),
            ),
            ("v1", "Service", Some(Kind::Service)),
            (
                "discovery.k8s.io/v1",
                "EndpointSlice",
                Some(Kind::EndpointSlice),
            ),
            ("networking.istio.io/v1", "Gateway", None),
            ("apps/v1", "Deployment", Some(Kind::Deployment)),
            ("apps/v1", "StatefulSet", None),
            ("v1", "HTTPRoute", None),
        ];
        for (api_version, kind, want) in cases {
            assert_eq!(
                Kind::recognise(api_version, kind),
                want,
                "{api_version} {kind}"
            );
        }
    }

    #[test]
    fn every_kind_round_trips_by_name() {
        for kind in Kind::ALL {
            assert_eq!(Kind::from_name(kind.name()), Some(*kind));
        }
    }

    #[test]
    fn route_inputs_exclude_routes_and_endpoints() {
        assert!(!Kind::HttpRoute.route_input());
        assert!(!Kind::EndpointSlice.route_input());
        assert!(Kind::Service.route_input());
    }
}
