//! [`Translator`]: the pure translation, remembering per-route results so a
//! change to one HTTPRoute costs about one route's work.
//!
//! A route's outcome depends on the route object and on everything else a
//! route reads (GatewayClasses, Gateways, Services, ReferenceGrants,
//! Namespaces, the options and assigned addresses): the "world". Objects
//! are compared by identity (`Arc::ptr_eq`): providers keep an unchanged
//! object's `Arc`. If the world changed, every route is recomputed; if only
//! routes changed, only those are. Gateways, statuses of Gateways and
//! classes are rebuilt on every run (they are few); clusters are kept while
//! neither the referenced Service ports nor the EndpointSlices changed.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use coxswain_api::{ObjectKey, Snapshot};

use crate::ir_build::ClusterMemo;
use crate::route::RouteMemo;
use crate::{AssignedAddresses, Options, Output};

/// Translation with memory. Its output equals [`crate::translate_with_addresses`]
/// on the same input, except that a route whose inputs did not change keeps
/// the status (and so the `lastTransitionTime`) computed when they last did.
#[derive(Default)]
pub struct Translator {
    world: Option<World>,
    memo: Memo,
}

/// What one run leaves for the next.
#[derive(Default)]
pub(crate) struct Memo {
    pub routes: RouteMemo,
    pub clusters: Option<ClusterMemo>,
}

impl Translator {
    pub fn new() -> Self {
        Translator::default()
    }

    /// Like [`crate::translate`].
    pub fn translate(&mut self, snapshot: &Snapshot, options: &Options) -> Output {
        self.translate_with_addresses(snapshot, options, &BTreeMap::new())
    }

    /// Like [`crate::translate_with_addresses`].
    pub fn translate_with_addresses(
        &mut self,
        snapshot: &Snapshot,
        options: &Options,
        assigned: &BTreeMap<ObjectKey, AssignedAddresses>,
    ) -> Output {
        let unchanged = self
            .world
            .as_ref()
            .is_some_and(|w| w.same_as(snapshot, options, assigned));
        if !unchanged {
            self.memo.routes.clear();
            self.world = Some(World::of(snapshot, options, assigned));
        }
        crate::translate_memoised(snapshot, options, assigned, &mut self.memo)
    }
}

/// Everything but the routes that a route's outcome reads.
struct World {
    controller_name: String,
    default_address: IpAddr,
    assigned: BTreeMap<ObjectKey, AssignedAddresses>,
    /// The snapshot without routes, endpoints, secrets and config maps.
    objects: Snapshot,
}

impl World {
    fn of(
        snapshot: &Snapshot,
        options: &Options,
        assigned: &BTreeMap<ObjectKey, AssignedAddresses>,
    ) -> World {
        World {
            controller_name: options.controller_name.clone(),
            default_address: options.default_address,
            assigned: assigned.clone(),
            objects: Snapshot {
                gateway_classes: snapshot.gateway_classes.clone(),
                gateways: snapshot.gateways.clone(),
                reference_grants: snapshot.reference_grants.clone(),
                services: snapshot.services.clone(),
                namespaces: snapshot.namespaces.clone(),
                ..Snapshot::default()
            },
        }
    }

    /// Would [`World::of`] these inputs be this world? Compares without
    /// copying anything.
    fn same_as(
        &self,
        snapshot: &Snapshot,
        options: &Options,
        assigned: &BTreeMap<ObjectKey, AssignedAddresses>,
    ) -> bool {
        let (a, b) = (&self.objects, snapshot);
        self.controller_name == options.controller_name
            && self.default_address == options.default_address
            && self.assigned == *assigned
            && same_objects(&a.gateway_classes, &b.gateway_classes)
            && same_objects(&a.gateways, &b.gateways)
            && same_objects(&a.reference_grants, &b.reference_grants)
            && same_objects(&a.services, &b.services)
            && same_objects(&a.namespaces, &b.namespaces)
    }
}

/// Same keys, each holding the very same object.
pub(crate) fn same_objects<T>(
    a: &BTreeMap<ObjectKey, Arc<T>>,
    b: &BTreeMap<ObjectKey, Arc<T>>,
) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && Arc::ptr_eq(va, vb))
}
