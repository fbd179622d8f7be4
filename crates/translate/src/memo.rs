//! [`Translator`]: the pure translation, remembering per-route results so a
//! change to one HTTPRoute costs about one route's work.
//!
//! A route's outcome depends on the route object and on everything else a
//! route reads (GatewayClasses, Gateways, Services, ReferenceGrants,
//! Namespaces — the kinds table marks them `route_input` — the options and
//! assigned addresses, and what parametersRefs make of Gateways and
//! classes: CoxswainGatewayParameters are not route inputs, only whether
//! they make one unusable is): the "world". Objects
//! are compared by identity (`Arc::ptr_eq`), then without their status (our
//! own status write-backs come back as new objects): providers keep an unchanged
//! object's `Arc`. If the world changed, every route is recomputed; if only
//! routes changed, only those are. Gateways, statuses of Gateways and
//! classes are rebuilt on every run (they are few); clusters are kept while
//! neither the referenced Service ports nor the EndpointSlices changed.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use coxswain_api::{ObjectKey, Snapshot};

use crate::ir_build::ClusterMemo;
use crate::parameters::{self, Verdicts};
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
        let verdicts = parameters::verdicts(snapshot, options);
        let identical = self
            .world
            .as_ref()
            .is_some_and(|w| w.same_as(snapshot, options, assigned) && w.parameters == verdicts);
        if !identical {
            // Only statuses changed (our own write-backs, through the
            // watch): the routes stand; the world takes the new objects so
            // the next run compares by identity again.
            let equal = self.world.as_ref().is_some_and(|w| {
                w.equal_to(snapshot, options, assigned) && w.parameters == verdicts
            });
            if !equal {
                self.memo.routes.clear();
            }
            self.world = Some(World::of(snapshot, options, assigned, verdicts));
        }
        crate::translate_memoised(snapshot, options, assigned, &mut self.memo)
    }

    /// See [`crate::route::RouteMemo::cluster_copies`].
    #[cfg(test)]
    pub(crate) fn cluster_copies(&self) -> (usize, usize) {
        self.memo.routes.cluster_copies()
    }
}

/// Everything but the routes that a route's outcome reads.
struct World {
    controller_name: Arc<str>,
    default_address: IpAddr,
    assigned: BTreeMap<ObjectKey, AssignedAddresses>,
    /// The snapshot's route inputs ([`coxswain_api::Kind::route_input`]).
    objects: Snapshot,
    parameters: Verdicts,
}

impl World {
    fn of(
        snapshot: &Snapshot,
        options: &Options,
        assigned: &BTreeMap<ObjectKey, AssignedAddresses>,
        parameters: Verdicts,
    ) -> World {
        World {
            controller_name: options.controller_name.clone(),
            default_address: options.default_address,
            assigned: assigned.clone(),
            objects: snapshot.route_inputs(),
            parameters,
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
        self.controller_name == options.controller_name
            && self.default_address == options.default_address
            && self.assigned == *assigned
            && self.objects.same_route_inputs(snapshot)
    }

    /// Like [`World::same_as`], but objects that differ only in their
    /// status count as the same.
    fn equal_to(
        &self,
        snapshot: &Snapshot,
        options: &Options,
        assigned: &BTreeMap<ObjectKey, AssignedAddresses>,
    ) -> bool {
        self.controller_name == options.controller_name
            && self.default_address == options.default_address
            && self.assigned == *assigned
            && self.objects.equal_route_inputs(snapshot)
    }
}
