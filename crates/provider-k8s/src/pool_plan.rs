//! What to provision for each of our Gateways after a translation: the
//! shared model's ServiceAccount (and, in LoadBalancer mode, Service), or
//! a dedicated Gateway's whole pool; and which pool objects to delete
//! because their Gateway no longer wants them (the garbage collector only
//! acts when the Gateway itself is deleted).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use coxswain_api::{CoxswainGatewayParameters, Gateway, ObjectKey, Snapshot};
use coxswain_translate::Output;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::addresses::AddressMode;
use crate::gateway_service::{
    desired_service, desired_service_account, owned_by, resource_name, served_ports,
};
use crate::labels::{pool_labels, reserved_collisions};
use crate::pool::{
    PoolSettings, desired_deployment, desired_pdb, desired_pool_service_account, stream_secret_name,
};
use crate::pool_service::desired_pool_service;

/// Pool objects of one Gateway to delete (all named `<gateway>-coxswain`).
/// The writer deletes the PodDisruptionBudget first and the Deployment
/// last, so a failure leaves the Deployment to try again with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolTeardown {
    pub gateway: ObjectKey,
    pub pod_disruption_budget: bool,
    pub service: bool,
    pub deployment: bool,
    /// The pool's stream credentials (`<gateway>-coxswain-stream`).
    pub stream_secret: bool,
}

impl PoolTeardown {
    /// The key of the objects to delete.
    pub fn object(&self) -> ObjectKey {
        ObjectKey::new(&*self.gateway.namespace, resource_name(&self.gateway.name))
    }
}

#[derive(Debug, Default)]
pub struct Provisioning {
    pub services: Vec<Service>,
    pub service_accounts: Vec<ServiceAccount>,
    pub deployments: Vec<Deployment>,
    pub pod_disruption_budgets: Vec<PodDisruptionBudget>,
    pub teardowns: Vec<PoolTeardown>,
    /// Reserved label keys asked for and dropped, by Gateway.
    pub reserved_labels: BTreeMap<ObjectKey, BTreeSet<String>>,
}

pub fn plan<'a>(
    snapshot: &Snapshot,
    gateways: impl Iterator<Item = (&'a ObjectKey, &'a Arc<Gateway>)>,
    output: &Output,
    addresses: &AddressMode,
    pools: Option<&PoolSettings>,
) -> Provisioning {
    let mut out = Provisioning::default();
    for (key, gw) in gateways {
        let parameters = output.dedicated.get(&key.to_string());
        let collisions = reserved_collisions(gw, parameters.map(|p| &p.spec));
        if !collisions.is_empty() {
            out.reserved_labels.insert(key.clone(), collisions);
        }
        let served = served_ports(&output.ir, key);
        match (parameters, pools) {
            (Some(parameters), Some(settings)) => {
                dedicated(&mut out, key, gw, parameters, settings, &served);
            }
            _ => {
                // Every Gateway gets an identity ServiceAccount carrying
                // its spec.infrastructure labels and annotations
                // (GEP-1867); the LoadBalancer mode also gets the Service
                // that gives it an address.
                out.service_accounts.extend(desired_service_account(gw));
                let service = match addresses {
                    AddressMode::LoadBalancer { proxy_selector } => {
                        desired_service(gw, proxy_selector, &served)
                    }
                    AddressMode::Pool(_) => None,
                };
                let replaces_pool_service = service.is_some();
                out.services.extend(service);
                let teardown = stale_pool(snapshot, key, gw, !replaces_pool_service);
                out.teardowns.extend(teardown);
            }
        }
    }
    out
}

fn dedicated(
    out: &mut Provisioning,
    key: &ObjectKey,
    gw: &Gateway,
    parameters: &CoxswainGatewayParameters,
    settings: &PoolSettings,
    served: &BTreeSet<(coxswain_ir::Transport, u16)>,
) {
    let spec = &parameters.spec;
    out.service_accounts
        .extend(desired_pool_service_account(gw, spec));
    out.services.extend(desired_pool_service(gw, spec, served));
    out.deployments
        .extend(desired_deployment(gw, spec, settings));
    match desired_pdb(gw, spec) {
        Some(pdb) => out.pod_disruption_budgets.push(pdb),
        // It may have had one: we do not watch them, so ask for a delete
        // (the writer remembers which it already deleted).
        None => out.teardowns.push(PoolTeardown {
            gateway: key.clone(),
            pod_disruption_budget: true,
            ..PoolTeardown::default()
        }),
    }
}

/// A shared Gateway that had a pool: its Deployment (watched) is still
/// there. Its Service goes too unless the shared model's replaces it.
fn stale_pool(
    snapshot: &Snapshot,
    key: &ObjectKey,
    gw: &Gateway,
    delete_service: bool,
) -> Option<PoolTeardown> {
    let pool = ObjectKey::new(&*key.namespace, resource_name(&key.name));
    let deployment = snapshot
        .deployments
        .get(&pool)
        .is_some_and(|d| owned_by(&d.metadata, gw));
    let labels = pool_labels(&key.name);
    let service = delete_service
        && snapshot.services.get(&pool).is_some_and(|s| {
            owned_by(&s.metadata, gw)
                && s.spec.as_ref().and_then(|s| s.selector.as_ref()) == Some(&labels)
        });
    let secret = ObjectKey::new(&*key.namespace, stream_secret_name(&key.name));
    let stream_secret = snapshot
        .secrets
        .get(&secret)
        .is_some_and(|s| owned_by(&s.metadata, gw));
    (deployment || service || stream_secret).then(|| PoolTeardown {
        gateway: key.clone(),
        pod_disruption_budget: deployment,
        service,
        deployment,
        stream_secret,
    })
}

#[cfg(test)]
#[path = "pool_plan_tests.rs"]
mod tests;
