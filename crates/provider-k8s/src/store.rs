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
}

impl Store {
    pub fn apply(&mut self, change: Change) {
        match change {
            Change::Apply(object) => self.snapshot.insert(object),
            Change::Delete(kind, key) => self.snapshot.remove(kind, &key),
            Change::Replace(kind, objects) => {
                self.snapshot.clear(kind);
                for object in objects {
                    self.snapshot.insert(object);
                }
                self.listed.insert(kind);
            }
        }
    }

    /// Has every kind been listed at least once?
    pub fn ready(&self) -> bool {
        Kind::ALL.iter().all(|kind| self.listed.contains(kind))
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
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
