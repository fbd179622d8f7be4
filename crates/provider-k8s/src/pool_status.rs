//! A dedicated Gateway is Programmed only once its pool serves it: the
//! Deployment rolled out its current generation with a ready proxy, a
//! proxy acknowledged the config over the stream, and the Service has an
//! address (which becomes the Gateway's status address).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use coxswain_api::{CoxswainGatewayParameters, ObjectKey, Snapshot};
use coxswain_translate::{Statuses, listener_set_parent};

use crate::gateway_service::resource_name;
use crate::pool_service::{pool_addresses, requested_ips, service_type};

/// What the config stream knows of a dedicated Gateway's proxies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamFeedback {
    /// A proxy of the pool acknowledged the current config.
    pub acked: bool,
    /// A proxy rejected it, saying this.
    pub nack: Option<String>,
}

/// Why a pool does not serve its Gateway yet: (Gateway reason, listener
/// reason, message).
type NotServing = (&'static str, &'static str, String);

/// Overlays the pool's state on the status of every dedicated Gateway
/// (keys of `dedicated` and `feedback`: `namespace/name`) and of the
/// ListenerSets it serves: status addresses from its Service; Programmed
/// (Gateway and listeners) False while the pool does not serve it.
pub fn overlay_pool_status(
    statuses: &mut Statuses,
    snapshot: &Snapshot,
    dedicated: &BTreeMap<String, Arc<CoxswainGatewayParameters>>,
    feedback: &BTreeMap<String, StreamFeedback>,
) {
    let mut not_serving: BTreeMap<ObjectKey, NotServing> = BTreeMap::new();
    for (key, status) in statuses.gateways.iter_mut() {
        let Some(parameters) = dedicated.get(&key.to_string()) else {
            continue;
        };
        let spec = &parameters.spec;
        let pool = ObjectKey::new(&*key.namespace, resource_name(&key.name));
        let addresses = snapshot
            .services
            .get(&pool)
            .map(|svc| pool_addresses(svc, spec))
            .unwrap_or_default();
        let requested = snapshot
            .gateways
            .get(key)
            .map(|gw| requested_ips(gw))
            .unwrap_or_default();
        // A rejected config first: it also keeps the proxies from ever
        // becoming ready, which would hide why.
        let stream = feedback.get(&key.to_string());
        let problem = rejected(stream)
            .or_else(|| pool_problem(snapshot, &pool, spec.replicas.unwrap_or(1)))
            .or_else(|| unacknowledged(stream))
            .or_else(|| address_problem(&pool, &addresses, &requested, spec));
        status.addresses = (!addresses.is_empty()).then_some(addresses);
        let Some(problem) = problem else {
            continue;
        };
        downgrade(
            status.conditions.iter_mut().flatten(),
            problem.0,
            &problem.2,
        );
        for listener in status.listeners.iter_mut().flatten() {
            downgrade(listener.conditions.iter_mut(), problem.1, &problem.2);
        }
        not_serving.insert(key.clone(), problem);
    }
    for (key, status) in statuses.listener_sets.iter_mut() {
        let parent = snapshot
            .listener_sets
            .get(key)
            .and_then(|s| listener_set_parent(key, s));
        let Some((_, reason, message)) = parent.and_then(|p| not_serving.get(&p)) else {
            continue;
        };
        downgrade(status.conditions.iter_mut().flatten(), reason, message);
        for listener in status.listeners.iter_mut().flatten() {
            downgrade(listener.conditions.iter_mut(), reason, message);
        }
    }
}

/// The pool's Deployment: rolled out, with a ready proxy?
fn pool_problem(snapshot: &Snapshot, pool: &ObjectKey, replicas: i32) -> Option<NotServing> {
    let pending = |message: String| Some(("Pending", "Pending", message));
    if replicas < 1 {
        return pending(format!(
            "replicas is {replicas}: no proxy of Deployment {pool} serves this Gateway"
        ));
    }
    let Some(deployment) = snapshot.deployments.get(pool) else {
        return pending(format!("waiting for Deployment {pool} to be created"));
    };
    let status = deployment.status.as_ref();
    let observed = status.and_then(|s| s.observed_generation);
    if let Some(generation) = deployment.metadata.generation
        && observed.is_none_or(|o| o < generation)
    {
        return pending(format!(
            "waiting for Deployment {pool} to roll out generation {generation}"
        ));
    }
    let ready = status.and_then(|s| s.ready_replicas).unwrap_or(0);
    (ready < 1).then(|| {
        (
            "Pending",
            "Pending",
            format!("waiting for 1 ready proxy of Deployment {pool} ({ready} of {replicas} ready)"),
        )
    })
}

fn rejected(feedback: Option<&StreamFeedback>) -> Option<NotServing> {
    let why = feedback?.nack.as_ref()?;
    Some((
        "Invalid",
        "Invalid",
        format!("proxy rejected config: {why}"),
    ))
}

fn unacknowledged(feedback: Option<&StreamFeedback>) -> Option<NotServing> {
    (!feedback.is_some_and(|f| f.acked)).then(|| {
        (
            "Pending",
            "Pending",
            "no proxy has acknowledged the current config yet".to_string(),
        )
    })
}

fn address_problem(
    pool: &ObjectKey,
    addresses: &[coxswain_api::gw::gateways::GatewayStatusAddresses],
    requested: &[IpAddr],
    spec: &coxswain_api::crds::CoxswainGatewayParametersSpec,
) -> Option<NotServing> {
    if addresses.is_empty() {
        return Some((
            "AddressNotAssigned",
            "Pending",
            format!("waiting for an address on Service {pool}"),
        ));
    }
    let missing = requested.iter().find(|ip| {
        let ip = ip.to_string();
        !addresses.iter().any(|a| a.value == ip)
    });
    let kind = service_type(spec).as_str();
    missing.map(|ip| {
        (
            "AddressNotAssigned",
            "Pending",
            format!("requested address {ip} is not an address of {kind} Service {pool} yet"),
        )
    })
}

/// A True Programmed condition becomes False with this reason.
fn downgrade<'a>(conditions: impl Iterator<Item = &'a mut Condition>, reason: &str, message: &str) {
    for condition in conditions {
        if condition.type_ == "Programmed" && condition.status == "True" {
            condition.status = "False".to_string();
            condition.reason = reason.to_string();
            condition.message = message.to_string();
        }
    }
}

#[cfg(test)]
#[path = "pool_status_tests.rs"]
mod tests;
