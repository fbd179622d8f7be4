//! Which `apiVersion`/`kind` pairs we load, and how each becomes an [`Object`].

use std::sync::Arc;

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use coxswain_api::{
    ConfigMap, EndpointSlice, GATEWAY_GROUP, Gateway, GatewayClass, HttpRoute, Namespace, Object,
    ReferenceGrant, Secret, Service,
};

/// The kinds the snapshot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    GatewayClass,
    Gateway,
    HttpRoute,
    ReferenceGrant,
    Service,
    EndpointSlice,
    Namespace,
    Secret,
    ConfigMap,
}

/// What to do with a document of a given `apiVersion`/`kind`.
#[derive(Debug, PartialEq, Eq)]
pub enum Recognised {
    Load(Kind),
    /// A `kind: List` whose `items` are documents themselves.
    List,
    /// Not something we serve; skipped with a warning.
    Unknown,
}

/// Classifies a document by its type fields. Gateway API kinds are accepted
/// at v1 and v1beta1 (ReferenceGrant was v1beta1 for a long time).
pub fn recognise(api_version: &str, kind: &str) -> Recognised {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gateway_version = group == GATEWAY_GROUP && matches!(version, "v1" | "v1beta1");
    let core = group.is_empty() && version == "v1";
    match kind {
        "GatewayClass" if gateway_version => Recognised::Load(Kind::GatewayClass),
        "Gateway" if gateway_version => Recognised::Load(Kind::Gateway),
        "HTTPRoute" if gateway_version => Recognised::Load(Kind::HttpRoute),
        "ReferenceGrant" if gateway_version => Recognised::Load(Kind::ReferenceGrant),
        "Service" if core => Recognised::Load(Kind::Service),
        "Namespace" if core => Recognised::Load(Kind::Namespace),
        "Secret" if core => Recognised::Load(Kind::Secret),
        "ConfigMap" if core => Recognised::Load(Kind::ConfigMap),
        "EndpointSlice" if api_version == "discovery.k8s.io/v1" => {
            Recognised::Load(Kind::EndpointSlice)
        }
        "List" if core => Recognised::List,
        _ => Recognised::Unknown,
    }
}

impl Kind {
    pub fn cluster_scoped(self) -> bool {
        matches!(self, Kind::GatewayClass | Kind::Namespace)
    }
}

/// Gives uniform access to `metadata` across the typed objects.
pub trait HasMeta {
    fn meta_mut(&mut self) -> &mut ObjectMeta;
}

macro_rules! has_meta {
    ($($t:ty),*) => {$(
        impl HasMeta for $t {
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    )*};
}

has_meta!(
    GatewayClass,
    Gateway,
    HttpRoute,
    ReferenceGrant,
    Service,
    EndpointSlice,
    Namespace,
    Secret,
    ConfigMap
);

/// Mutable metadata of an object that is not yet shared.
pub fn object_meta_mut(object: &mut Object) -> Option<&mut ObjectMeta> {
    Some(match object {
        Object::GatewayClass(o) => Arc::get_mut(o)?.meta_mut(),
        Object::Gateway(o) => Arc::get_mut(o)?.meta_mut(),
        Object::HttpRoute(o) => Arc::get_mut(o)?.meta_mut(),
        Object::ReferenceGrant(o) => Arc::get_mut(o)?.meta_mut(),
        Object::Service(o) => Arc::get_mut(o)?.meta_mut(),
        Object::EndpointSlice(o) => Arc::get_mut(o)?.meta_mut(),
        Object::Namespace(o) => Arc::get_mut(o)?.meta_mut(),
        Object::Secret(o) => Arc::get_mut(o)?.meta_mut(),
        Object::ConfigMap(o) => Arc::get_mut(o)?.meta_mut(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_versions() {
        assert_eq!(
            recognise("gateway.networking.k8s.io/v1beta1", "ReferenceGrant"),
            Recognised::Load(Kind::ReferenceGrant)
        );
        assert_eq!(
            recognise("networking.istio.io/v1", "Gateway"),
            Recognised::Unknown
        );
        assert_eq!(recognise("v1", "List"), Recognised::List);
        assert_eq!(recognise("apps/v1", "Deployment"), Recognised::Unknown);
    }
}
