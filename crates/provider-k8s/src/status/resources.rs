//! Server-side apply of what we provision per Gateway (Services,
//! ServiceAccounts, and the dedicated Gateways' Deployments and
//! PodDisruptionBudgets), skipped when nothing we own changed; the
//! deletes of pool objects no Gateway wants any more; and the Gateways'
//! deployment-model labels ([`crate::gateway_labels`]).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use coxswain_api::ObjectKey;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::Value;
use tokio::time::timeout;

use super::job::{StatusJob, WriterConfig};
use crate::gateway_labels::GatewayLabeler;
use crate::gateway_service::service_up_to_date;
use crate::metrics::Metrics;
use crate::pool::stream_secret_name;
use crate::stream_credentials::secret_up_to_date;

type Id = (&'static str, ObjectKey);

pub struct ResourceWriter {
    client: Client,
    params: PatchParams,
    write_timeout: Duration,
    /// Last applied body per object, so unchanged ones are not re-sent.
    applied: HashMap<Id, Value>,
    /// Objects deleted (or found absent) since, so a delete is sent once.
    deleted: HashSet<Id>,
    /// The Gateways' own deployment-model labels.
    labels: GatewayLabeler,
}

/// What the API calls need of a kind.
trait Applied:
    kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + serde::Serialize
    + serde::de::DeserializeOwned
    + std::fmt::Debug
{
}

impl<K> Applied for K where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug
{
}

impl ResourceWriter {
    pub fn new(client: Client, config: &WriterConfig) -> Self {
        ResourceWriter {
            client: client.clone(),
            params: PatchParams::apply(&config.field_manager).force(),
            write_timeout: config.write_timeout,
            applied: HashMap::new(),
            deleted: HashSet::new(),
            labels: GatewayLabeler::new(client, config.write_timeout),
        }
    }

    pub fn forget(&mut self) {
        self.applied.clear();
        self.deleted.clear();
        self.labels.forget();
    }

    /// Returns how many applies and deletes failed.
    pub async fn apply(&mut self, job: &StatusJob, metrics: &Metrics) -> usize {
        let mut failed = 0;
        for service in &job.services {
            let key = ObjectKey::of(&service.metadata);
            let live = job.snapshot.services.get(&key);
            let up_to_date = live.is_some_and(|live| service_up_to_date(live, service));
            failed += self
                .apply_one("Service", key, service, metrics, live.is_none(), up_to_date)
                .await;
        }
        for account in &job.service_accounts {
            let key = ObjectKey::of(&account.metadata);
            failed += self
                .apply_one("ServiceAccount", key, account, metrics, false, false)
                .await;
        }
        for secret in &job.secrets {
            let key = ObjectKey::of(&secret.metadata);
            let live = job.snapshot.secrets.get(&key);
            let up_to_date = live.is_some_and(|live| secret_up_to_date(live, secret));
            failed += self
                .apply_one("Secret", key, secret, metrics, live.is_none(), up_to_date)
                .await;
        }
        for deployment in &job.deployments {
            let key = ObjectKey::of(&deployment.metadata);
            let missing = !job.snapshot.deployments.contains_key(&key);
            failed += self
                .apply_one("Deployment", key, deployment, metrics, missing, false)
                .await;
        }
        for budget in &job.pod_disruption_budgets {
            let key = ObjectKey::of(&budget.metadata);
            failed += self
                .apply_one("PodDisruptionBudget", key, budget, metrics, false, false)
                .await;
        }
        for teardown in &job.teardowns {
            let key = teardown.object();
            // In this order, stopping at a failure: the Deployment goes
            // last, since its presence is what brings the teardown back.
            let secret = ObjectKey::new(
                &*teardown.gateway.namespace,
                stream_secret_name(&teardown.gateway.name),
            );
            let ok = (!teardown.stream_secret
                || self.delete_one::<Secret>("Secret", &secret, metrics).await)
                && (!teardown.pod_disruption_budget
                    || self
                        .delete_one::<PodDisruptionBudget>("PodDisruptionBudget", &key, metrics)
                        .await)
                && (!teardown.service
                    || self.delete_one::<Service>("Service", &key, metrics).await)
                && (!teardown.deployment
                    || self
                        .delete_one::<Deployment>("Deployment", &key, metrics)
                        .await);
            if !ok {
                failed += 1;
            }
        }
        failed += self
            .labels
            .apply(&job.snapshot, &job.gateway_labels, metrics)
            .await;
        failed
    }

    /// Applies `object` unless what we last applied is the same, or (with
    /// nothing applied yet) the live object already carries it.
    async fn apply_one<K: Applied>(
        &mut self,
        kind: &'static str,
        key: ObjectKey,
        object: &K,
        metrics: &Metrics,
        missing: bool,
        live_up_to_date: bool,
    ) -> usize {
        let Ok(mut body) = serde_json::to_value(object) else {
            return 0;
        };
        if let Value::Object(map) = &mut body {
            map.insert("apiVersion".into(), K::api_version(&()).into());
            map.insert("kind".into(), K::kind(&()).into());
        }
        let id = (kind, key.clone());
        let last = self.applied.get(&id);
        if !missing && (last == Some(&body) || (last.is_none() && live_up_to_date)) {
            return 0;
        }
        let api: Api<K> = Api::namespaced(self.client.clone(), &key.namespace);
        let patch = Patch::Apply(&body);
        let result = timeout(
            self.write_timeout,
            api.patch(&key.name, &self.params, &patch),
        )
        .await;
        match result {
            Ok(Ok(_)) => {
                Metrics::add(&metrics.resource_writes);
                self.deleted.remove(&id);
                self.applied.insert(id, body);
                0
            }
            Ok(Err(error)) => {
                tracing::warn!(kind, %key, %error, "apply failed; retrying on the next pass");
                Metrics::add(&metrics.resource_write_errors);
                1
            }
            Err(_) => {
                tracing::warn!(kind, %key, "apply timed out; retrying on the next pass");
                Metrics::add(&metrics.resource_write_errors);
                1
            }
        }
    }

    /// Deletes one object (absent counts as deleted); false when it failed.
    async fn delete_one<K: Applied>(
        &mut self,
        kind: &'static str,
        key: &ObjectKey,
        metrics: &Metrics,
    ) -> bool {
        let id = (kind, key.clone());
        if self.deleted.contains(&id) {
            return true;
        }
        let api: Api<K> = Api::namespaced(self.client.clone(), &key.namespace);
        let result = timeout(
            self.write_timeout,
            api.delete(&key.name, &DeleteParams::background()),
        )
        .await;
        let outcome = match result {
            Ok(Ok(_)) => {
                Metrics::add(&metrics.resource_writes);
                tracing::info!(kind, %key, "deleted: its Gateway no longer has a pool of its own");
                Ok(())
            }
            Ok(Err(kube::Error::Api(status))) if status.is_not_found() => Ok(()),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err("timed out".to_string()),
        };
        match outcome {
            Ok(()) => {
                self.applied.remove(&id);
                self.deleted.insert(id);
                true
            }
            Err(error) => {
                tracing::warn!(kind, %key, %error, "delete failed; retrying on the next pass");
                Metrics::add(&metrics.resource_write_errors);
                false
            }
        }
    }
}
