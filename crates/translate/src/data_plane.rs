//! Status from what the data plane actually did: a listener whose socket
//! could not be bound serves nothing, so it must not read Programmed.

use coxswain_api::ObjectKey;
use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use coxswain_ir::{Config, UnboundSocket};

use crate::Statuses;
use crate::conditions::{ConditionType, Reason};

fn set(
    conditions: &mut [Condition],
    type_: ConditionType,
    reason: Reason,
    message: &str,
    now: &Time,
) {
    if let Some(c) = conditions.iter_mut().find(|c| c.type_ == type_.as_str()) {
        if c.status != "False" {
            c.last_transition_time = now.clone();
        }
        c.status = "False".to_string();
        c.reason = reason.as_str().to_string();
        c.message = message.to_string();
    }
}

/// Marks every listener on an unbound socket `Programmed=False`, and a
/// Gateway left with no programmed listener `Programmed=False` too.
pub fn mark_unbound(statuses: &mut Statuses, ir: &Config, unbound: &[UnboundSocket], now: &Time) {
    for failure in unbound {
        let socket = ir
            .sockets
            .iter()
            .find(|s| s.transport == failure.transport && s.addr() == failure.address);
        for listener in socket.iter().flat_map(|s| &s.listeners) {
            let message = format!(
                "the data plane cannot bind {} ({:?}): {}",
                failure.address, failure.transport, failure.error
            );
            if let Some(set) = &listener.listener_set {
                mark_set_listener(statuses, set, &listener.name, &message, now);
                continue;
            }
            let Some((namespace, name)) = listener.gateway.split_once('/') else {
                continue;
            };
            let key = ObjectKey::new(namespace, name);
            let Some(gateway) = statuses.gateways.get_mut(&key) else {
                continue;
            };
            let listeners = gateway.listeners.iter_mut().flatten();
            for status in listeners.filter(|l| l.name == listener.name) {
                set(
                    &mut status.conditions,
                    ConditionType::Programmed,
                    Reason::Invalid,
                    &message,
                    now,
                );
            }
            let any_programmed = gateway.listeners.iter().flatten().any(|l| {
                l.conditions
                    .iter()
                    .any(|c| c.type_ == ConditionType::Programmed.as_str() && c.status == "True")
            });
            if !any_programmed && let Some(conditions) = gateway.conditions.as_mut() {
                set(
                    conditions,
                    ConditionType::Programmed,
                    Reason::Invalid,
                    "no listener of this Gateway is bound",
                    now,
                );
            }
        }
    }
}

/// A ListenerSet listener on an unbound socket: `Programmed=False`, and
/// the ListenerSet too when none of its listeners is left programmed.
fn mark_set_listener(
    statuses: &mut Statuses,
    set: &str,
    listener: &str,
    message: &str,
    now: &Time,
) {
    let Some((namespace, name)) = set.split_once('/') else {
        return;
    };
    let Some(status) = statuses
        .listener_sets
        .get_mut(&ObjectKey::new(namespace, name))
    else {
        return;
    };
    for entry in status
        .listeners
        .iter_mut()
        .flatten()
        .filter(|l| l.name == listener)
    {
        set_condition(&mut entry.conditions, message, now);
    }
    let any_programmed = status.listeners.iter().flatten().any(|l| {
        l.conditions
            .iter()
            .any(|c| c.type_ == ConditionType::Programmed.as_str() && c.status == "True")
    });
    if !any_programmed && let Some(conditions) = status.conditions.as_mut() {
        set_condition(conditions, "no listener of this ListenerSet is bound", now);
    }
}

fn set_condition(conditions: &mut [Condition], message: &str, now: &Time) {
    set(
        conditions,
        ConditionType::Programmed,
        Reason::Invalid,
        message,
        now,
    );
}
