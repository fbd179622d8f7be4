//! The Snapshot as the watchers see it, and which kinds finished their
//! initial list (nothing is translated before every kind has).

use std::collections::BTreeSet;

use coxswain_api::{Object, ObjectKey, Snapshot};

/// Every kind the controller watches, as [`Object::kind`] names them.
pub const KINDS: [&str; 9] = [
    "GatewayClass",
    "Gateway",
    "HTTPRoute",
    "ReferenceGrant",
    "Service",
    "EndpointSlice",
    "Namespace",
    "Secret",
    "ConfigMap",
];

/// One thing a watcher saw.
#[derive(Debug)]
pub enum Change {
    Apply(Object),
    Delete(&'static str, ObjectKey),
    /// A complete (re)list of a kind: replaces everything of that kind, so
    /// deletions missed while disconnected disappear too.
    Replace(&'static str, Vec<Object>),
}

#[derive(Debug, Default)]
pub struct Store {
    snapshot: Snapshot,
    listed: BTreeSet<&'static str>,
}

impl Store {
    pub fn apply(&mut self, change: Change) {
        match change {
            Change::Apply(object) => self.snapshot.insert(object),
            Change::Delete(kind, key) => self.snapshot.remove(kind, &key),
            Change::Replace(kind, objects) => {
                self.clear(kind);
                for object in objects {
                    self.snapshot.insert(object);
                }
                self.listed.insert(kind);
            }
        }
    }

    /// Has every kind been listed at least once?
    pub fn ready(&self) -> bool {
        KINDS.iter().all(|kind| self.listed.contains(kind))
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    fn clear(&mut self, kind: &str) {
        let s = &mut self.snapshot;
        match kind {
            "GatewayClass" => s.gateway_classes.clear(),
            "Gateway" => s.gateways.clear(),
            "HTTPRoute" => s.http_routes.clear(),
            "ReferenceGrant" => s.reference_grants.clear(),
            "Service" => s.services.clear(),
            "EndpointSlice" => s.endpoint_slices.clear(),
            "Namespace" => s.namespaces.clear(),
            "Secret" => s.secrets.clear(),
            "ConfigMap" => s.config_maps.clear(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use coxswain_api::{Namespace, Service};

    use super::*;

    fn service(name: &str) -> Object {
        let mut s = Service::default();
        s.metadata.name = Some(name.into());
        s.metadata.namespace = Some("default".into());
        Object::Service(Arc::new(s))
    }

    fn namespace(name: &str) -> Object {
        let mut n = Namespace::default();
        n.metadata.name = Some(name.into());
        Object::Namespace(Arc::new(n))
    }

    #[test]
    fn ready_only_after_every_kind_is_listed() {
        let mut store = Store::default();
        for kind in &KINDS[..KINDS.len() - 1] {
            store.apply(Change::Replace(kind, vec![]));
            assert!(!store.ready());
        }
        store.apply(Change::Replace("ConfigMap", vec![]));
        assert!(store.ready());
    }

    #[test]
    fn relist_drops_objects_deleted_while_disconnected() {
        let mut store = Store::default();
        store.apply(Change::Replace("Service", vec![service("a"), service("b")]));
        store.apply(Change::Apply(namespace("default")));
        store.apply(Change::Replace("Service", vec![service("b")]));
        let keys: Vec<_> = store.snapshot().services.keys().cloned().collect();
        assert_eq!(keys, vec![ObjectKey::new("default", "b")]);
        assert_eq!(store.snapshot().namespaces.len(), 1);
    }

    #[test]
    fn apply_and_delete() {
        let mut store = Store::default();
        store.apply(Change::Apply(service("a")));
        assert_eq!(store.snapshot().services.len(), 1);
        store.apply(Change::Delete("Service", ObjectKey::new("default", "a")));
        assert!(store.snapshot().services.is_empty());
    }
}
