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
    /// output (anything but a route's status).
    changed: bool,
}

impl Store {
    pub fn apply(&mut self, change: Change) {
        match change {
            Change::Apply(object) => {
                let new = object.clone();
                let old = self.snapshot.replace(object);
                let status_only =
                    status_unread(new.kind()) && old.is_some_and(|old| old.same_but_status(&new));
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

    /// Did anything but route statuses change since the last call? When
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

/// Kinds whose `status` nothing in the loop reads: neither the translator
/// (which reads no status) nor the address, pool and label plans (which
/// read Gateways', Services' and Deployments'). Routes are the many objects
/// whose status we write back.
fn status_unread(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::HttpRoute | Kind::GrpcRoute | Kind::TlsRoute | Kind::TcpRoute | Kind::UdpRoute
    )
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
