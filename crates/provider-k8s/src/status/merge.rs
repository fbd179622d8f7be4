//! Pure status merging: what we write is the translator's status with
//! `lastTransitionTime` carried over from the live object when nothing
//! about a condition really changed, and with other controllers' route
//! parents left alone. Also the "would this write change anything?" test.

use coxswain_api::crds::{
    ClientTrafficPolicyStatus, CoxswainBackendPolicyStatus, FilterStatus, PolicyAncestorRef,
    PolicyAncestorStatus,
};
use coxswain_api::gateway_api::apis::standard::backendtlspolicies::{
    BackendTlsPolicyStatus, BackendTlsPolicyStatusAncestors,
    BackendTlsPolicyStatusAncestorsAncestorRef,
};
use coxswain_api::gateway_api::apis::standard::listenersets::{
    ListenerSetStatus, ListenerSetStatusListeners,
};
use coxswain_api::gw::gatewayclasses::GatewayClassStatus;
use coxswain_api::gw::gateways::{GatewayStatus, GatewayStatusListeners};
use coxswain_api::gw::httproutes::{
    HttpRouteStatus, HttpRouteStatusParents, HttpRouteStatusParentsParentRef,
};
use coxswain_api::gw::xbackendtrafficpolicies::{
    XBackendTrafficPolicyStatus, XBackendTrafficPolicyStatusAncestors,
    XBackendTrafficPolicyStatusAncestorsAncestorRef,
};
use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use coxswain_translate::MAX_ANCESTORS;
use serde::Serialize;
use serde_json::Value;

/// `desired` conditions, each keeping the live `lastTransitionTime` when its
/// type, status, reason and observedGeneration are unchanged.
pub fn merge_conditions(live: &[Condition], desired: Vec<Condition>) -> Vec<Condition> {
    desired
        .into_iter()
        .map(|mut condition| {
            let unchanged = live.iter().find(|old| {
                old.type_ == condition.type_
                    && old.status == condition.status
                    && old.reason == condition.reason
                    && old.observed_generation == condition.observed_generation
            });
            if let Some(old) = unchanged {
                condition.last_transition_time = old.last_transition_time.clone();
            }
            condition
        })
        .collect()
}

fn merge_optional(
    live: Option<&Vec<Condition>>,
    desired: Option<Vec<Condition>>,
) -> Option<Vec<Condition>> {
    desired.map(|d| merge_conditions(live.map(Vec::as_slice).unwrap_or_default(), d))
}

/// A Coxswain filter resource's status: its conditions ours alone,
/// merged; its ancestors (a policy's Gateways) shared like a policy's.
pub fn merge_filter(
    live: Option<&FilterStatus>,
    desired: FilterStatus,
    controller_name: &str,
) -> FilterStatus {
    FilterStatus {
        conditions: merge_conditions(
            live.map(|l| l.conditions.as_slice()).unwrap_or_default(),
            desired.conditions,
        ),
        ancestors: merge_ancestors(
            live.map(|l| l.ancestors.as_slice()).unwrap_or_default(),
            desired.ancestors,
            controller_name,
        ),
    }
}

pub fn merge_gateway_class(
    live: Option<&GatewayClassStatus>,
    mut desired: GatewayClassStatus,
) -> GatewayClassStatus {
    desired.conditions =
        merge_optional(live.and_then(|l| l.conditions.as_ref()), desired.conditions);
    desired
}

/// A listener's status entry, in a Gateway or a ListenerSet.
trait ListenerEntry {
    fn name(&self) -> &str;
    fn conditions(&self) -> &[Condition];
    fn conditions_mut(&mut self) -> &mut Vec<Condition>;
}

macro_rules! listener_entries {
    ($($t:ty),*) => {$(
        impl ListenerEntry for $t {
            fn name(&self) -> &str {
                &self.name
            }
            fn conditions(&self) -> &[Condition] {
                &self.conditions
            }
            fn conditions_mut(&mut self) -> &mut Vec<Condition> {
                &mut self.conditions
            }
        }
    )*};
}

listener_entries!(GatewayStatusListeners, ListenerSetStatusListeners);

/// Each desired listener's conditions, merged with those of the live entry
/// of the same name.
fn merge_listeners<L: ListenerEntry>(live: Option<&[L]>, desired: Option<&mut Vec<L>>) {
    let live = live.unwrap_or_default();
    for listener in desired.into_iter().flatten() {
        let old = live.iter().find(|l| l.name() == listener.name());
        let conditions = std::mem::take(listener.conditions_mut());
        *listener.conditions_mut() = merge_conditions(
            old.map(ListenerEntry::conditions).unwrap_or_default(),
            conditions,
        );
    }
}

pub fn merge_gateway(live: Option<&GatewayStatus>, mut desired: GatewayStatus) -> GatewayStatus {
    desired.conditions =
        merge_optional(live.and_then(|l| l.conditions.as_ref()), desired.conditions);
    merge_listeners(
        live.and_then(|l| l.listeners.as_deref()),
        desired.listeners.as_mut(),
    );
    desired
}

/// ListenerSet status: like a Gateway's, conditions and per-listener
/// conditions keep their times when unchanged.
pub fn merge_listener_set(
    live: Option<&ListenerSetStatus>,
    mut desired: ListenerSetStatus,
) -> ListenerSetStatus {
    desired.conditions =
        merge_optional(live.and_then(|l| l.conditions.as_ref()), desired.conditions);
    merge_listeners(
        live.and_then(|l| l.listeners.as_deref()),
        desired.listeners.as_mut(),
    );
    desired
}

/// A status entry several controllers share a list of (a route's
/// parents, a policy's ancestors), keyed by what it refers to.
trait SharedEntry: Clone {
    type Key: PartialEq;
    fn controller(&self) -> &str;
    fn key(&self) -> &Self::Key;
    fn conditions_mut(&mut self) -> &mut Vec<Condition>;
    fn conditions(&self) -> &[Condition];
}

macro_rules! shared_entries {
    ($($t:ty => $key:ident: $k:ty;)*) => {$(
        impl SharedEntry for $t {
            type Key = $k;
            fn controller(&self) -> &str {
                &self.controller_name
            }
            fn key(&self) -> &$k {
                &self.$key
            }
            fn conditions_mut(&mut self) -> &mut Vec<Condition> {
                &mut self.conditions
            }
            fn conditions(&self) -> &[Condition] {
                &self.conditions
            }
        }
    )*};
}

shared_entries! {
    HttpRouteStatusParents => parent_ref: HttpRouteStatusParentsParentRef;
    BackendTlsPolicyStatusAncestors => ancestor_ref: BackendTlsPolicyStatusAncestorsAncestorRef;
    PolicyAncestorStatus => ancestor_ref: PolicyAncestorRef;
    XBackendTrafficPolicyStatusAncestors => ancestor_ref: XBackendTrafficPolicyStatusAncestorsAncestorRef;
}

/// Other controllers' live entries stay as they are, in place; ours are
/// replaced by `desired` (conditions merged), and ours no longer reported
/// are dropped; new ones go last.
fn merge_shared<E: SharedEntry>(live: &[E], desired: Vec<E>, controller_name: &str) -> Vec<E> {
    let mut ours = desired;
    let mut out = Vec::with_capacity(live.len() + ours.len());
    for old in live {
        if old.controller() != controller_name {
            out.push(old.clone());
            continue;
        }
        if let Some(index) = ours.iter().position(|e| e.key() == old.key()) {
            let mut new = ours.remove(index);
            let conditions = std::mem::take(new.conditions_mut());
            *new.conditions_mut() = merge_conditions(old.conditions(), conditions);
            out.push(new);
        }
    }
    out.extend(ours);
    out
}

/// Merges the parents we own into a route's live status (any route kind).
pub fn merge_route(
    live: Option<&HttpRouteStatus>,
    desired: HttpRouteStatus,
    controller_name: &str,
) -> HttpRouteStatus {
    let live = live.map(|l| l.parents.as_slice()).unwrap_or_default();
    HttpRouteStatus {
        parents: merge_shared(live, desired.parents, controller_name),
    }
}

/// Policy status: like routes, keyed by ancestor, and cut to the API's
/// limit, others' entries first.
pub fn merge_backend_tls_policy(
    live: Option<&BackendTlsPolicyStatus>,
    desired: BackendTlsPolicyStatus,
    controller_name: &str,
) -> BackendTlsPolicyStatus {
    let live = live.map(|l| l.ancestors.as_slice()).unwrap_or_default();
    BackendTlsPolicyStatus {
        ancestors: merge_ancestors(live, desired.ancestors, controller_name),
    }
}

/// A policy's ancestors: ours merged into the live list, cut to the API's
/// limit with other controllers' entries first.
fn merge_ancestors<E: SharedEntry>(live: &[E], desired: Vec<E>, controller_name: &str) -> Vec<E> {
    let mut ancestors = merge_shared(live, desired, controller_name);
    ancestors.truncate(MAX_ANCESTORS);
    ancestors
}

/// CoxswainBackendPolicy status: keyed by the targeted Service, like
/// BackendTLSPolicy's by Gateway.
pub fn merge_backend_policy(
    live: Option<&CoxswainBackendPolicyStatus>,
    desired: CoxswainBackendPolicyStatus,
    controller_name: &str,
) -> CoxswainBackendPolicyStatus {
    let live = live.map(|l| l.ancestors.as_slice()).unwrap_or_default();
    CoxswainBackendPolicyStatus {
        ancestors: merge_ancestors(live, desired.ancestors, controller_name),
    }
}

/// ClientTrafficPolicy status: keyed by the targeted Gateway.
pub fn merge_client_traffic_policy(
    live: Option<&ClientTrafficPolicyStatus>,
    desired: ClientTrafficPolicyStatus,
    controller_name: &str,
) -> ClientTrafficPolicyStatus {
    let live = live.map(|l| l.ancestors.as_slice()).unwrap_or_default();
    ClientTrafficPolicyStatus {
        ancestors: merge_ancestors(live, desired.ancestors, controller_name),
    }
}

/// XBackendTrafficPolicy status: keyed by Gateway, like BackendTLSPolicy's.
pub fn merge_backend_traffic_policy(
    live: Option<&XBackendTrafficPolicyStatus>,
    desired: XBackendTrafficPolicyStatus,
    controller_name: &str,
) -> XBackendTrafficPolicyStatus {
    let live = live.map(|l| l.ancestors.as_slice()).unwrap_or_default();
    XBackendTrafficPolicyStatus {
        ancestors: merge_ancestors(live, desired.ancestors, controller_name),
    }
}

/// Equal once every `lastTransitionTime` is ignored?
pub fn same_ignoring_times<T: Serialize>(a: Option<&T>, b: &T) -> bool {
    match (a.map(without_times), without_times(b)) {
        (Some(Some(a)), Some(b)) => a == b,
        _ => false,
    }
}

fn without_times<T: Serialize>(value: &T) -> Option<Value> {
    let mut value = serde_json::to_value(value).ok()?;
    strip_times(&mut value);
    Some(value)
}

fn strip_times(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("lastTransitionTime");
            map.values_mut().for_each(strip_times);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_times),
        _ => {}
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
