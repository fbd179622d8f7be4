//! ListenerSets: listeners other namespaces contribute to a Gateway that
//! allows them (`spec.allowedListeners`). They are merged after the
//! Gateway's own listeners, oldest ListenerSet first (then by
//! namespace/name); a listener that clashes with an earlier one is
//! Conflicted, so a tenant can never take a port or hostname already in use.

use coxswain_api::gateway_api::apis::standard::listenersets::ListenerSetStatus;
use coxswain_api::gw::gateways::{
    GatewayAllowedListeners, GatewayAllowedListenersNamespacesFrom, GatewayListeners,
};
use coxswain_api::{GATEWAY_GROUP, ListenerSet, ObjectKey, Snapshot};

use super::GatewayModel;
use super::conflicts;
use super::listeners::ListenerModel;
use super::listeners::{ListenerOwner, build_listener};
use crate::Options;
use crate::conditions::{Cond, ConditionType, Reason, Stamp};
use crate::selector::LabelSelector;

/// Which namespaces may attach ListenerSets to a Gateway.
#[derive(Clone, Debug, Default)]
pub enum AllowedListeners {
    /// The default: none.
    #[default]
    None,
    Same,
    All,
    Selector(LabelSelector),
    /// A selector that does not parse: none, and the reason.
    Invalid(String),
}

impl AllowedListeners {
    pub fn of(spec: Option<&GatewayAllowedListeners>) -> Self {
        let Some(ns) = spec.and_then(|a| a.namespaces.as_ref()) else {
            return AllowedListeners::None;
        };
        match ns.from {
            None | Some(GatewayAllowedListenersNamespacesFrom::None) => AllowedListeners::None,
            Some(GatewayAllowedListenersNamespacesFrom::Same) => AllowedListeners::Same,
            Some(GatewayAllowedListenersNamespacesFrom::All) => AllowedListeners::All,
            Some(GatewayAllowedListenersNamespacesFrom::Selector) => {
                let Some(sel) = &ns.selector else {
                    return AllowedListeners::Invalid(
                        "allowedListeners.namespaces.from is Selector but no selector is set"
                            .into(),
                    );
                };
                let exprs = sel
                    .match_expressions
                    .iter()
                    .flatten()
                    .map(|e| (e.key.as_str(), e.operator.as_str(), e.values.as_deref()));
                match LabelSelector::parse(sel.match_labels.as_ref(), exprs) {
                    Ok(selector) => AllowedListeners::Selector(selector),
                    Err(e) => AllowedListeners::Invalid(format!(
                        "invalid allowedListeners namespace selector: {e}"
                    )),
                }
            }
        }
    }

    /// Why a ListenerSet in `namespace` may not attach, if it may not.
    fn refuses(&self, snapshot: &Snapshot, gateway_ns: &str, namespace: &str) -> Option<String> {
        let allowed = match self {
            AllowedListeners::None => {
                return Some("the Gateway allows no ListenerSets (allowedListeners)".into());
            }
            AllowedListeners::Invalid(why) => return Some(why.clone()),
            AllowedListeners::Same => gateway_ns == namespace,
            AllowedListeners::All => true,
            AllowedListeners::Selector(selector) => {
                let labels = snapshot
                    .namespaces
                    .get(&ObjectKey::cluster(namespace))
                    .and_then(|n| n.metadata.labels.clone())
                    .unwrap_or_default();
                selector.matches(&labels)
            }
        };
        (!allowed).then(|| {
            format!("the Gateway's allowedListeners do not include namespace {namespace:?}")
        })
    }
}

/// One ListenerSet whose parent is a Gateway of ours.
#[derive(Clone, Debug)]
pub struct ListenerSetModel {
    pub key: ObjectKey,
    pub generation: Option<i64>,
    /// Why its listeners are not part of the Gateway (NotAllowed,
    /// ParentNotAccepted), if they are not.
    pub refused: Option<(Reason, String)>,
}

/// The Gateway a ListenerSet names, if it names one in our group.
pub fn parent_of(key: &ObjectKey, set: &ListenerSet) -> Option<ObjectKey> {
    let parent = &set.spec.parent_ref;
    let group = parent.group.as_deref().unwrap_or(GATEWAY_GROUP);
    let kind = parent.kind.as_deref().unwrap_or("Gateway");
    (group == GATEWAY_GROUP && kind == "Gateway").then(|| {
        let namespace = parent.namespace.as_deref().unwrap_or(&key.namespace);
        ObjectKey::new(namespace, parent.name.as_str())
    })
}

/// The ListenerSets naming `gateway`, in merge order.
fn sets_for<'s>(
    snapshot: &'s Snapshot,
    gateway: &ObjectKey,
) -> Vec<(&'s ObjectKey, &'s ListenerSet)> {
    let mut sets: Vec<(&ObjectKey, &ListenerSet)> = snapshot
        .listener_sets
        .iter()
        .filter(|(key, set)| parent_of(key, set).as_ref() == Some(gateway))
        .map(|(key, set)| (key, set.as_ref()))
        .collect();
    sets.sort_by(|a, b| {
        (a.1.metadata.creation_timestamp.as_ref(), a.0)
            .cmp(&(b.1.metadata.creation_timestamp.as_ref(), b.0))
    });
    sets
}

/// Merges the admitted ListenerSets' listeners into `model` (after its own,
/// whose conflicts are already marked) and records every ListenerSet.
pub fn merge(snapshot: &Snapshot, key: &ObjectKey, model: &mut GatewayModel) {
    for (set_key, set) in sets_for(snapshot, key) {
        let refused = if !model.usable() {
            Some((
                Reason::ParentNotAccepted,
                format!("Gateway {key} is not accepted"),
            ))
        } else {
            model
                .allowed_listeners
                .refuses(snapshot, &key.namespace, &set_key.namespace)
                .map(|why| (Reason::NotAllowed, why))
        };
        if refused.is_none() {
            let owner = ListenerOwner::ListenerSet(set_key.clone());
            let mut listeners: Vec<_> = set
                .spec
                .listeners
                .iter()
                .filter_map(as_gateway_listener)
                .map(|spec| build_listener(snapshot, &owner, &set_key.namespace, &spec))
                .collect();
            // Clashes with earlier listeners first: a listener that loses to
            // the Gateway must not also take its siblings down with it.
            conflicts::mark_against_earlier(&model.listeners, &mut listeners);
            conflicts::mark_conflicts(&mut listeners);
            model.listeners.extend(listeners);
        }
        model.listener_sets.push(ListenerSetModel {
            key: set_key.clone(),
            generation: set.metadata.generation,
            refused,
        });
    }
}

/// A ListenerSet entry has a Gateway listener's shape (same fields, same
/// JSON), so one validation serves both.
fn as_gateway_listener<T: serde::Serialize>(entry: &T) -> Option<GatewayListeners> {
    serde_json::to_value(entry)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
}

/// Its listeners of `model`'s merged list.
pub fn listeners_of<'m>(
    model: &'m GatewayModel,
    set: &'m ListenerSetModel,
) -> impl Iterator<Item = (usize, &'m ListenerModel)> {
    model
        .listeners
        .iter()
        .enumerate()
        .filter(move |(_, l)| matches!(&l.owner, ListenerOwner::ListenerSet(k) if *k == set.key))
}

/// A ListenerSet's listener counts as valid when it is accepted and its
/// references resolve (a certificate it may not use makes it invalid).
fn is_valid(l: &ListenerModel) -> bool {
    l.accepted.is_ok() && !matches!(l.tls, Some(Err(_)))
}

/// Admitted with at least one valid listener (counted in the Gateway's
/// `attachedListenerSets`).
pub fn is_accepted(model: &GatewayModel, set: &ListenerSetModel) -> bool {
    set.refused.is_none() && listeners_of(model, set).any(|(_, l)| is_valid(l))
}

/// The ListenerSet's status: admission, its listeners' validity, and each
/// listener's entry as a Gateway's would read.
pub fn status(
    model: &GatewayModel,
    set: &ListenerSetModel,
    options: &Options,
) -> ListenerSetStatus {
    let stamp = Stamp {
        generation: set.generation,
        now: &options.now,
    };
    if let Some((reason, message)) = &set.refused {
        let conditions = vec![
            Cond::new(ConditionType::Accepted, false, *reason, message.clone()),
            Cond::new(ConditionType::Programmed, false, *reason, message.clone()),
        ];
        return ListenerSetStatus {
            conditions: Some(stamp.all(conditions)),
            listeners: Some(Vec::new()),
        };
    }
    let mine: Vec<&ListenerModel> = listeners_of(model, set).map(|(_, l)| l).collect();
    let total = mine.len();
    let valid = mine.iter().filter(|l| is_valid(l)).count();
    let served = mine.iter().any(|l| model.listener_served(l));
    let accepted = if valid == total {
        Cond::new(
            ConditionType::Accepted,
            true,
            Reason::Accepted,
            "ListenerSet is accepted",
        )
    } else {
        Cond::new(
            ConditionType::Accepted,
            valid > 0,
            Reason::ListenersNotValid,
            format!("{} of {total} listeners are not valid", total - valid),
        )
    };
    let programmed = if served {
        Cond::new(
            ConditionType::Programmed,
            true,
            Reason::Programmed,
            "ListenerSet is programmed",
        )
    } else {
        Cond::new(
            ConditionType::Programmed,
            false,
            Reason::ListenersNotValid,
            "no listener of this ListenerSet can be served",
        )
    };
    let listeners = mine
        .iter()
        .filter_map(|l| {
            let entry = super::listener_status(model, l, &stamp);
            serde_json::to_value(entry)
                .ok()
                .and_then(|v| serde_json::from_value(v).ok())
        })
        .collect();
    ListenerSetStatus {
        conditions: Some(stamp.all(vec![accepted, programmed])),
        listeners: Some(listeners),
    }
}
