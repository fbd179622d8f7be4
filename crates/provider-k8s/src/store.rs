//! The Snapshot as the watchers see it, and which kinds finished their
//! initial list (nothing is translated before every kind has).

use std::collections::BTreeSet;

use coxswain_api::{Kind, Object, ObjectKey, Snapshot};

/// A change and when its watcher received it (for the latency logs).
pub type Seen = (tokio::time::Instant, Change);

/// One thing a watcher saw.
#[derive(Debug)]
pub enum Change {
    Apply(Object),
    Delete(Kind, ObjectKey),
    /// A complete (re)list of a kind: replaces everything of that kind, so
    /// deletions missed while disconnected disappear too.
    Replace(Kind, Vec<Object>),
}

#[derive(Debug, Default)]
pub struct Store {
    snapshot: Snapshot,
    listed: BTreeSet<Kind>,
    /// Some change since [`Store::take_changed`] may change the loop's
    /// output (anything but a status it never reads).
    changed: bool,
}

impl Store {
    pub fn apply(&mut self, change: Change) {
        match change {
            Change::Apply(object) => {
                let new = object.clone();
                let old = self.snapshot.replace(object);
                let status_only = old.is_some_and(|old| {
                    unread_status_change(&old, &new) && old.same_but_status(&new)
                });
                self.changed |= !status_only;
            }
            Change::Delete(kind, key) => {
                self.snapshot.remove(kind, &key);
                self.changed = true;
            }
            Change::Replace(kind, objects) => {
                self.changed = true;
                self.snapshot.clear(kind);
                for object in objects {
                    self.snapshot.insert(object);
                }
                self.listed.insert(kind);
            }
        }
    }

    /// Did anything but statuses the loop never reads change since the
    /// last call ([`unread_status_change`])? When
    /// not, translating again gives what the last translation gave: our own
    /// status write-backs come back through the watch this way.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// Has every kind been listed at least once?
    pub fn ready(&self) -> bool {
        Kind::ALL.iter().all(|kind| self.listed.contains(kind))
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }
}

/// Would a change from `old` to `new` that touches nothing but the status
/// leave the loop's output as it was? The translator reads no status; the
/// loop reads a Gateway's `status.addresses` (the addresses it keeps),
/// Services' (load balancer addresses) and Deployments' (pool readiness).
/// Routes and Gateways are the objects whose status we write back, so
/// those are the echoes worth recognising.
fn unread_status_change(old: &Object, new: &Object) -> bool {
    match (old, new) {
        (Object::Gateway(old), Object::Gateway(new)) => {
            old.status.as_ref().map(|s| &s.addresses) == new.status.as_ref().map(|s| &s.addresses)
        }
        (old, _) => matches!(
            old.kind(),
            Kind::HttpRoute | Kind::GrpcRoute | Kind::TlsRoute | Kind::TcpRoute | Kind::UdpRoute
        ),
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
        let (last, others) = Kind::ALL.split_last().unwrap();
        for kind in others {
            store.apply(Change::Replace(*kind, vec![]));
            assert!(!store.ready());
        }
        store.apply(Change::Replace(*last, vec![]));
        assert!(store.ready());
    }

    #[test]
    fn relist_drops_objects_deleted_while_disconnected() {
        let mut store = Store::default();
        store.apply(Change::Replace(
            Kind::Service,
            vec![service("a"), service("b")],
        ));
        store.apply(Change::Apply(namespace("default")));
        store.apply(Change::Replace(Kind::Service, vec![service("b")]));
        let keys: Vec<_> = store.snapshot().services.keys().cloned().collect();
        assert_eq!(keys, vec![ObjectKey::new("default", "b")]);
        assert_eq!(store.snapshot().namespaces.len(), 1);
    }

    fn route(path: &str, status: Option<&str>) -> Object {
        let mut value = serde_json::json!({
            "metadata": {"name": "r", "namespace": "default", "resourceVersion": "1"},
            "spec": {"rules": [{"matches": [{"path": {"type": "PathPrefix", "value": path}}]}]}
        });
        if let Some(controller) = status {
            value["status"] = serde_json::json!({"parents": [{
                "parentRef": {"name": "gw"}, "controllerName": controller, "conditions": []
            }]});
            value["metadata"]["resourceVersion"] = "2".into();
        }
        Object::HttpRoute(Arc::new(serde_json::from_value(value).unwrap()))
    }

    #[test]
    fn a_routes_status_alone_changes_nothing_the_loop_reads() {
        let mut store = Store::default();
        store.apply(Change::Replace(Kind::HttpRoute, vec![]));
        assert!(store.take_changed(), "a list");
        assert!(!store.take_changed(), "taken");
        store.apply(Change::Apply(route("/a", None)));
        assert!(store.take_changed(), "a new route");
        store.apply(Change::Apply(route("/a", Some("us"))));
        assert!(!store.take_changed(), "its status written back");
        store.apply(Change::Apply(route("/a", Some("them"))));
        assert!(!store.take_changed(), "another controller's status");
        store.apply(Change::Apply(route("/b", Some("them"))));
        assert!(store.take_changed(), "its spec");
        store.apply(Change::Delete(
            Kind::HttpRoute,
            ObjectKey::new("default", "r"),
        ));
        assert!(store.take_changed(), "deleted");
    }

    fn gateway(address: &str, attached: i32) -> Object {
        let value = serde_json::json!({
            "metadata": {"name": "gw", "namespace": "default"},
            "spec": {"gatewayClassName": "c",
                     "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]},
            "status": {
                "addresses": [{"type": "IPAddress", "value": address}],
                "listeners": [{"name": "http", "attachedRoutes": attached,
                               "supportedKinds": [], "conditions": []}]
            }
        });
        Object::Gateway(Arc::new(serde_json::from_value(value).unwrap()))
    }

    #[test]
    fn a_gateways_status_is_read_for_its_addresses_only() {
        let mut store = Store::default();
        store.apply(Change::Apply(gateway("10.0.0.1", 0)));
        assert!(store.take_changed());
        store.apply(Change::Apply(gateway("10.0.0.1", 1)));
        assert!(!store.take_changed(), "attachedRoutes written back");
        store.apply(Change::Apply(gateway("10.0.0.2", 1)));
        assert!(store.take_changed(), "the addresses it keeps");
    }

    #[test]
    fn a_services_status_is_read() {
        let mut store = Store::default();
        store.apply(Change::Apply(service("a")));
        assert!(store.take_changed());
        let Object::Service(s) = service("a") else {
            unreachable!()
        };
        let mut s = (*s).clone();
        s.status = Some(Default::default());
        store.apply(Change::Apply(Object::Service(Arc::new(s))));
        assert!(store.take_changed(), "load balancer addresses live there");
    }

    #[test]
    fn apply_and_delete() {
        let mut store = Store::default();
        store.apply(Change::Apply(service("a")));
        assert_eq!(store.snapshot().services.len(), 1);
        store.apply(Change::Delete(
            Kind::Service,
            ObjectKey::new("default", "a"),
        ));
        assert!(store.snapshot().services.is_empty());
    }
}
