//! Pure status merging: what we write is the translator's status with
//! `lastTransitionTime` carried over from the live object when nothing
//! about a condition really changed, and with other controllers' route
//! parents left alone. Also the "would this write change anything?" test.

use coxswain_api::gateway_api::apis::standard::backendtlspolicies::BackendTlsPolicyStatus;
use coxswain_api::gateway_api::apis::standard::listenersets::{
    ListenerSetStatus, ListenerSetStatusListeners,
};
use coxswain_api::gw::gatewayclasses::GatewayClassStatus;
use coxswain_api::gw::gateways::{GatewayStatus, GatewayStatusListeners};
use coxswain_api::gw::httproutes::HttpRouteStatus;
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

/// Route status: live parents of other controllers stay as they are, in
/// place; ours are replaced by `desired` (merged), and ours that we no
/// longer report are dropped.
/// Merges the parents we own into a route's live status (any route kind).
pub fn merge_route(
    live: Option<&HttpRouteStatus>,
    desired: HttpRouteStatus,
    controller_name: &str,
) -> HttpRouteStatus {
    let live_parents = live.map(|l| l.parents.as_slice()).unwrap_or_default();
    let mut ours = desired.parents;
    let mut parents = Vec::with_capacity(live_parents.len() + ours.len());
    for old in live_parents {
        if old.controller_name != controller_name {
            parents.push(old.clone());
            continue;
        }
        if let Some(index) = ours.iter().position(|p| p.parent_ref == old.parent_ref) {
            let mut new = ours.remove(index);
            new.conditions = merge_conditions(&old.conditions, new.conditions);
            parents.push(new);
        }
    }
    parents.extend(ours);
    HttpRouteStatus { parents }
}

/// Policy status: like routes, keyed by ancestor. Other controllers'
/// entries stay; ours are replaced (merged) or dropped; the list is cut to
/// the API's limit, others' entries first.
pub fn merge_backend_tls_policy(
    live: Option<&BackendTlsPolicyStatus>,
    desired: BackendTlsPolicyStatus,
    controller_name: &str,
) -> BackendTlsPolicyStatus {
    let live_ancestors = live.map(|l| l.ancestors.as_slice()).unwrap_or_default();
    let mut ours = desired.ancestors;
    let mut ancestors = Vec::with_capacity(live_ancestors.len() + ours.len());
    for old in live_ancestors {
        if old.controller_name != controller_name {
            ancestors.push(old.clone());
            continue;
        }
        if let Some(index) = ours.iter().position(|a| a.ancestor_ref == old.ancestor_ref) {
            let mut new = ours.remove(index);
            new.conditions = merge_conditions(&old.conditions, new.conditions);
            ancestors.push(new);
        }
    }
    ancestors.extend(ours);
    ancestors.truncate(MAX_ANCESTORS);
    BackendTlsPolicyStatus { ancestors }
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
