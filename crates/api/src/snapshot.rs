use std::collections::BTreeMap;
use std::sync::Arc;

use crate::{
    ConfigMap, EndpointSlice, Gateway, GatewayClass, HttpRoute, Namespace, ObjectKey,
    ReferenceGrant, Secret, Service,
};

/// Every object the gateway cares about, keyed by `namespace/name` so iteration
/// order is deterministic. Objects are behind `Arc` so providers can rebuild a
/// snapshot after a small change without deep copies.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub gateway_classes: BTreeMap<ObjectKey, Arc<GatewayClass>>,
    pub gateways: BTreeMap<ObjectKey, Arc<Gateway>>,
    pub http_routes: BTreeMap<ObjectKey, Arc<HttpRoute>>,
    pub reference_grants: BTreeMap<ObjectKey, Arc<ReferenceGrant>>,
    pub services: BTreeMap<ObjectKey, Arc<Service>>,
    pub endpoint_slices: BTreeMap<ObjectKey, Arc<EndpointSlice>>,
    pub namespaces: BTreeMap<ObjectKey, Arc<Namespace>>,
    pub secrets: BTreeMap<ObjectKey, Arc<Secret>>,
    pub config_maps: BTreeMap<ObjectKey, Arc<ConfigMap>>,
}

/// One typed object of any kind the snapshot holds.
#[derive(Clone, Debug)]
pub enum Object {
    GatewayClass(Arc<GatewayClass>),
    Gateway(Arc<Gateway>),
    HttpRoute(Arc<HttpRoute>),
    ReferenceGrant(Arc<ReferenceGrant>),
    Service(Arc<Service>),
    EndpointSlice(Arc<EndpointSlice>),
    Namespace(Arc<Namespace>),
    Secret(Arc<Secret>),
    ConfigMap(Arc<ConfigMap>),
}

impl Object {
    pub fn kind(&self) -> &'static str {
        match self {
            Object::GatewayClass(_) => "GatewayClass",
            Object::Gateway(_) => "Gateway",
            Object::HttpRoute(_) => "HTTPRoute",
            Object::ReferenceGrant(_) => "ReferenceGrant",
            Object::Service(_) => "Service",
            Object::EndpointSlice(_) => "EndpointSlice",
            Object::Namespace(_) => "Namespace",
            Object::Secret(_) => "Secret",
            Object::ConfigMap(_) => "ConfigMap",
        }
    }

    pub fn key(&self) -> ObjectKey {
        match self {
            Object::GatewayClass(o) => ObjectKey::of(&o.metadata),
            Object::Gateway(o) => ObjectKey::of(&o.metadata),
            Object::HttpRoute(o) => ObjectKey::of(&o.metadata),
            Object::ReferenceGrant(o) => ObjectKey::of(&o.metadata),
            Object::Service(o) => ObjectKey::of(&o.metadata),
            Object::EndpointSlice(o) => ObjectKey::of(&o.metadata),
            Object::Namespace(o) => ObjectKey::of(&o.metadata),
            Object::Secret(o) => ObjectKey::of(&o.metadata),
            Object::ConfigMap(o) => ObjectKey::of(&o.metadata),
        }
    }
}

impl Snapshot {
    /// Inserts (or replaces) an object under its key.
    pub fn insert(&mut self, object: Object) {
        let key = object.key();
        match object {
            Object::GatewayClass(o) => drop(self.gateway_classes.insert(key, o)),
            Object::Gateway(o) => drop(self.gateways.insert(key, o)),
            Object::HttpRoute(o) => drop(self.http_routes.insert(key, o)),
            Object::ReferenceGrant(o) => drop(self.reference_grants.insert(key, o)),
            Object::Service(o) => drop(self.services.insert(key, o)),
            Object::EndpointSlice(o) => drop(self.endpoint_slices.insert(key, o)),
            Object::Namespace(o) => drop(self.namespaces.insert(key, o)),
            Object::Secret(o) => drop(self.secrets.insert(key, o)),
            Object::ConfigMap(o) => drop(self.config_maps.insert(key, o)),
        }
    }

    /// Removes an object of `kind` (as returned by [`Object::kind`]).
    pub fn remove(&mut self, kind: &str, key: &ObjectKey) {
        match kind {
            "GatewayClass" => drop(self.gateway_classes.remove(key)),
            "Gateway" => drop(self.gateways.remove(key)),
            "HTTPRoute" => drop(self.http_routes.remove(key)),
            "ReferenceGrant" => drop(self.reference_grants.remove(key)),
            "Service" => drop(self.services.remove(key)),
            "EndpointSlice" => drop(self.endpoint_slices.remove(key)),
            "Namespace" => drop(self.namespaces.remove(key)),
            "Secret" => drop(self.secrets.remove(key)),
            "ConfigMap" => drop(self.config_maps.remove(key)),
            _ => {}
        }
    }
}
