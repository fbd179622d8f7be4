//! LoadBalancer mode: server-side apply of each Gateway's Service and
//! ServiceAccount, skipped when nothing we own changed.

use std::collections::HashMap;
use std::time::Duration;

use coxswain_api::ObjectKey;
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::Value;
use tokio::time::timeout;

use super::writer::{StatusJob, WriterConfig};
use crate::gateway_service::service_up_to_date;
use crate::metrics::Metrics;

pub struct ResourceWriter {
    client: Client,
    params: PatchParams,
    write_timeout: Duration,
    /// Last applied body per object, so unchanged ones are not re-sent.
    applied: HashMap<(&'static str, ObjectKey), Value>,
}

impl ResourceWriter {
    pub fn new(client: Client, config: &WriterConfig) -> Self {
        ResourceWriter {
            client,
            params: PatchParams::apply(&config.field_manager).force(),
            write_timeout: config.write_timeout,
            applied: HashMap::new(),
        }
    }

    pub fn forget(&mut self) {
        self.applied.clear();
    }

    /// Returns how many applies failed.
    pub async fn apply(&mut self, job: &StatusJob, metrics: &Metrics) -> usize {
        let mut failed = 0;
        for service in &job.services {
            let key = ObjectKey::of(&service.metadata);
            let live = job.snapshot.services.get(&key);
            if live.is_some_and(|live| service_up_to_date(live, service)) {
                continue;
            }
            let api: Api<Service> = Api::namespaced(self.client.clone(), &key.namespace);
            failed += self
                .apply_one("Service", key, &api, service, metrics, live.is_none())
                .await;
        }
        for account in &job.service_accounts {
            let key = ObjectKey::of(&account.metadata);
            let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), &key.namespace);
            failed += self
                .apply_one("ServiceAccount", key, &api, account, metrics, false)
                .await;
        }
        failed
    }

    async fn apply_one<K>(
        &mut self,
        kind: &'static str,
        key: ObjectKey,
        api: &Api<K>,
        object: &K,
        metrics: &Metrics,
        missing: bool,
    ) -> usize
    where
        K: kube::Resource<DynamicType = ()>
            + Clone
            + serde::Serialize
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let Ok(mut body) = serde_json::to_value(object) else {
            return 0;
        };
        if let Value::Object(map) = &mut body {
            map.insert("apiVersion".into(), K::api_version(&()).into());
            map.insert("kind".into(), K::kind(&()).into());
        }
        let id = (kind, key.clone());
        if !missing && self.applied.get(&id) == Some(&body) {
            return 0;
        }
        let patch = Patch::Apply(&body);
        match timeout(
            self.write_timeout,
            api.patch(&key.name, &self.params, &patch),
        )
        .await
        {
            Ok(Ok(_)) => {
                Metrics::add(&metrics.resource_writes);
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
}
