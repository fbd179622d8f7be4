//! The labels saying which deployment model (and, dedicated, which pool)
//! serves each Gateway of ours, for `kubectl get gateways -L …`: the
//! Gateway CRD is upstream's, so its printer columns cannot say it.
//!
//! The leader applies them server-side under a field manager of their own
//! ([`FIELD_MANAGER`]): the user's labels are never touched, and a key left
//! out of an apply (`pool` when a Gateway goes back to the shared proxies;
//! both keys when it stops being ours or accepted) is removed if this
//! manager set it. Applied only when the Gateway as last seen differs.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

use coxswain_api::gw::gateways::GatewayStatus;
use coxswain_api::{Gateway, ObjectKey, Snapshot};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, Resource};
use serde_json::{Value, json};
use tokio::time::timeout;

use crate::gateway_service::resource_name;
use crate::labels::{DEDICATED_MODEL, DEPLOYMENT_MODEL_LABEL, POOL_LABEL, SHARED_MODEL};
use crate::metrics::Metrics;

/// Owns exactly the keys of [`LABEL_KEYS`] on the Gateways it labelled.
pub const FIELD_MANAGER: &str = "coxswain-model";
/// Every key this module writes.
pub const LABEL_KEYS: [&str; 2] = [DEPLOYMENT_MODEL_LABEL, POOL_LABEL];

/// One Gateway's labels to apply (`labels` empty: remove ours).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelApply {
    pub gateway: ObjectKey,
    pub labels: BTreeMap<String, String>,
    /// The Gateway's resourceVersion and class as planned on (see
    /// [`Memory`]).
    pub resource_version: Option<String>,
    pub class: String,
}

/// Our labels of a Gateway served by the shared proxies (`pool: None`) or
/// by the pool whose Deployment is named `pool`.
pub fn model_labels(pool: Option<&str>) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let model = if pool.is_some() {
        DEDICATED_MODEL
    } else {
        SHARED_MODEL
    };
    labels.insert(DEPLOYMENT_MODEL_LABEL.to_string(), model.to_string());
    if let Some(pool) = pool {
        labels.insert(POOL_LABEL.to_string(), pool.to_string());
    }
    labels
}

/// Do the live labels differ from `desired` in any of our keys? (Other
/// keys are the user's and not compared.)
pub fn needs_write(
    live: Option<&BTreeMap<String, String>>,
    desired: &BTreeMap<String, String>,
) -> bool {
    LABEL_KEYS
        .iter()
        .any(|key| live.and_then(|l| l.get(*key)) != desired.get(*key))
}

/// The server-side apply body: only the Gateway's identity and our labels
/// (none at all for a removal, so this manager ends up owning nothing).
pub fn apply_body(gateway: &ObjectKey, labels: &BTreeMap<String, String>) -> Value {
    let mut metadata = json!({"name": gateway.name, "namespace": gateway.namespace});
    if !labels.is_empty()
        && let Value::Object(map) = &mut metadata
    {
        map.insert("labels".into(), json!(labels));
    }
    json!({
        "apiVersion": Gateway::api_version(&()),
        "kind": Gateway::kind(&()),
        "metadata": metadata,
    })
}

/// The applies one translation asks for, over every Gateway of `snapshot`
/// (the store's, with every class). Ours (class in `ours`) get our labels
/// once accepted (`statuses`), dedicated when `dedicated` says so, and
/// lose them otherwise; a Gateway of a class of another controller loses
/// them; one of a class of ours that the class filter leaves to another
/// instance of ours is left alone.
pub fn plan(
    snapshot: &Snapshot,
    ours: &BTreeSet<String>,
    controller_name: &str,
    statuses: &BTreeMap<ObjectKey, GatewayStatus>,
    dedicated: impl Fn(&ObjectKey) -> bool,
) -> Vec<LabelApply> {
    let mut out = Vec::new();
    for (key, gw) in &snapshot.gateways {
        // Going away: an apply now could only race the delete.
        if gw.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let class = &gw.spec.gateway_class_name;
        let desired = if ours.contains(class) {
            if accepted(statuses.get(key)) {
                let pool = dedicated(key).then(|| resource_name(&key.name));
                model_labels(pool.as_deref())
            } else {
                BTreeMap::new()
            }
        } else if sibling_class(snapshot, class, controller_name) {
            continue;
        } else {
            BTreeMap::new()
        };
        if needs_write(gw.metadata.labels.as_ref(), &desired) {
            out.push(LabelApply {
                gateway: key.clone(),
                labels: desired,
                resource_version: gw.metadata.resource_version.clone(),
                class: class.clone(),
            });
        }
    }
    out
}

fn accepted(status: Option<&GatewayStatus>) -> bool {
    status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Accepted" && c.status == "True")
}

/// A class with our controllerName that is not ours: another instance of
/// ours (with another class filter) labels its Gateways.
fn sibling_class(snapshot: &Snapshot, class: &str, controller_name: &str) -> bool {
    snapshot
        .gateway_classes
        .get(&ObjectKey::cluster(class))
        .is_some_and(|c| c.spec.controller_name == controller_name)
}

/// What the leader applied, so a write is not repeated before the watch
/// shows it (same resourceVersion, same labels), and a removal is sent
/// once per Gateway and class: a label another Coxswain serving that class
/// sets (under the same manager name) is then not fought over. Labelling
/// a Gateway again re-arms its removal.
#[derive(Debug, Default)]
pub struct Memory {
    applied: HashMap<ObjectKey, (Option<String>, BTreeMap<String, String>)>,
    removed: HashSet<(ObjectKey, String)>,
}

impl Memory {
    pub fn due(&self, apply: &LabelApply) -> bool {
        if apply.labels.is_empty()
            && self
                .removed
                .contains(&(apply.gateway.clone(), apply.class.clone()))
        {
            return false;
        }
        self.applied.get(&apply.gateway)
            != Some(&(apply.resource_version.clone(), apply.labels.clone()))
    }

    pub fn done(&mut self, apply: &LabelApply) {
        if apply.labels.is_empty() {
            self.removed
                .insert((apply.gateway.clone(), apply.class.clone()));
        } else {
            self.removed.retain(|(key, _)| *key != apply.gateway);
        }
        let seen = (apply.resource_version.clone(), apply.labels.clone());
        self.applied.insert(apply.gateway.clone(), seen);
    }

    /// Forgets Gateways no longer stored.
    pub fn retain(&mut self, stored: impl Fn(&ObjectKey) -> bool) {
        self.applied.retain(|key, _| stored(key));
        self.removed.retain(|(key, _)| stored(key));
    }
}

/// Applies the [`LabelApply`]s of each pass (the status writer calls it
/// only while we lead).
pub struct GatewayLabeler {
    client: Client,
    params: PatchParams,
    write_timeout: Duration,
    memory: Memory,
    warned_forbidden: bool,
}

impl GatewayLabeler {
    pub fn new(client: Client, write_timeout: Duration) -> Self {
        GatewayLabeler {
            client,
            params: PatchParams::apply(FIELD_MANAGER).force(),
            write_timeout,
            memory: Memory::default(),
            warned_forbidden: false,
        }
    }

    pub fn forget(&mut self) {
        self.memory = Memory::default();
    }

    /// Returns how many applies failed (retried by the next pass).
    pub async fn apply(
        &mut self,
        snapshot: &Snapshot,
        applies: &[LabelApply],
        metrics: &Metrics,
    ) -> usize {
        self.memory
            .retain(|key| snapshot.gateways.contains_key(key));
        let mut failed = 0;
        for apply in applies {
            if !self.memory.due(apply) {
                continue;
            }
            let key = &apply.gateway;
            let api: Api<Gateway> = Api::namespaced(self.client.clone(), &key.namespace);
            let body = apply_body(key, &apply.labels);
            let result = timeout(
                self.write_timeout,
                api.patch(&key.name, &self.params, &Patch::Apply(&body)),
            )
            .await;
            let error = match result {
                Ok(Ok(_)) => {
                    Metrics::add(&metrics.resource_writes);
                    self.memory.done(apply);
                    continue;
                }
                // RBAC older than this code: say so once, and try again
                // with the next change rather than every retry interval.
                Ok(Err(kube::Error::Api(status))) if status.is_forbidden() => {
                    Metrics::add(&metrics.resource_write_errors);
                    if !self.warned_forbidden {
                        self.warned_forbidden = true;
                        tracing::warn!(gateway = %key, error = %status, "Gateway labels not applied: the controller needs `patch` on gateways");
                    }
                    continue;
                }
                Ok(Err(error)) => error.to_string(),
                Err(_) => "timed out".to_string(),
            };
            tracing::warn!(gateway = %key, %error, "Gateway label apply failed; retrying on the next pass");
            Metrics::add(&metrics.resource_write_errors);
            failed += 1;
        }
        failed
    }
}

#[cfg(test)]
#[path = "gateway_labels_tests.rs"]
mod tests;
