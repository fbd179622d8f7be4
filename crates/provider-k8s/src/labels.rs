//! The labels Coxswain puts on what it provisions for a Gateway (GEP-1762),
//! and the user labels that may not override them: the pool's selectors
//! depend on them, so a colliding key is dropped, with a warning logged once
//! per change.

use std::collections::{BTreeMap, BTreeSet};

use coxswain_api::crds::CoxswainGatewayParametersSpec;
use coxswain_api::{Gateway, ObjectKey};

pub const GATEWAY_NAME_LABEL: &str = "gateway.networking.k8s.io/gateway-name";
pub const NAME_LABEL: &str = "app.kubernetes.io/name";
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";
pub const MANAGED_BY: &str = "coxswain";
/// `app.kubernetes.io/name` of pool pods: not the controller's
/// (`coxswain`), so the shared proxies' selector never matches them.
pub const POOL_APP_NAME: &str = "coxswain-proxy";
pub const POOL_COMPONENT: &str = "proxy";

/// On each Gateway we serve (Kubernetes mode): which deployment model
/// serves it ([`SHARED_MODEL`] or [`DEDICATED_MODEL`]), and for a
/// dedicated one the name of its pool's Deployment. Under the CRD group
/// (`coxswain_api::crds::GROUP`), as the Gateway CRD's printer columns are
/// upstream's: `kubectl get gateways -L` shows them.
pub const DEPLOYMENT_MODEL_LABEL: &str = "gateway.coxswain-labs.dev/deployment-model";
pub const POOL_LABEL: &str = "gateway.coxswain-labs.dev/pool";
pub const SHARED_MODEL: &str = "shared";
pub const DEDICATED_MODEL: &str = "dedicated";

/// Keys no user label may set.
pub const RESERVED_LABELS: [&str; 5] = [
    GATEWAY_NAME_LABEL,
    NAME_LABEL,
    INSTANCE_LABEL,
    MANAGED_BY_LABEL,
    COMPONENT_LABEL,
];

/// The labels of a Gateway's pool pods, also the pool's Deployment,
/// Service and PodDisruptionBudget selector. Only the Gateway's name goes
/// in, so they never change for a Gateway (a Deployment's selector cannot).
pub fn pool_labels(gateway: &str) -> BTreeMap<String, String> {
    [
        (GATEWAY_NAME_LABEL, gateway),
        (NAME_LABEL, POOL_APP_NAME),
        (INSTANCE_LABEL, gateway),
        (MANAGED_BY_LABEL, MANAGED_BY),
        (COMPONENT_LABEL, POOL_COMPONENT),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// User labels of a Gateway's objects: the parameters' (if dedicated),
/// then its `spec.infrastructure` labels (more specific: they win), with
/// the reserved keys removed.
pub fn user_labels(
    gw: &Gateway,
    parameters: Option<&CoxswainGatewayParametersSpec>,
) -> BTreeMap<String, String> {
    let mut labels = parameters.map(|p| p.labels.clone()).unwrap_or_default();
    let infra = gw
        .spec
        .infrastructure
        .as_ref()
        .and_then(|i| i.labels.as_ref());
    labels.extend(
        infra
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    labels.retain(|key, _| !RESERVED_LABELS.contains(&key.as_str()));
    labels
}

/// The reserved keys [`user_labels`] drops for this Gateway.
pub fn reserved_collisions(
    gw: &Gateway,
    parameters: Option<&CoxswainGatewayParametersSpec>,
) -> BTreeSet<String> {
    let infra = gw
        .spec
        .infrastructure
        .as_ref()
        .and_then(|i| i.labels.as_ref());
    let params = parameters.map(|p| &p.labels);
    infra
        .into_iter()
        .chain(params)
        .flat_map(BTreeMap::keys)
        .filter(|key| RESERVED_LABELS.contains(&key.as_str()))
        .cloned()
        .collect()
}

/// The collisions last warned about, by Gateway: each is logged once per
/// change, by every replica (like Ingress problems).
#[derive(Default)]
pub struct ReservedLabelLog {
    last: BTreeMap<ObjectKey, BTreeSet<String>>,
}

impl ReservedLabelLog {
    pub fn update(&mut self, now: BTreeMap<ObjectKey, BTreeSet<String>>) {
        for (key, keys) in &now {
            if self.last.get(key) != Some(keys) {
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                tracing::warn!(
                    gateway = %key,
                    labels = ?keys,
                    "reserved label keys dropped: the Gateway's objects are selected by them, so Coxswain sets them"
                );
            }
        }
        self.last = now;
    }
}
