//! What the writer is handed after each translation ([`StatusJob`]) and
//! how it writes ([`WriterConfig`]).

use std::sync::Arc;
use std::time::Duration;

use coxswain_api::Snapshot;
use coxswain_translate::Statuses;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::gateway_labels::LabelApply;
use crate::pool_plan::PoolTeardown;

/// Everything one pass needs: the objects as last seen and what we want.
/// Cheap to clone but for the plans' few objects: a route status echo
/// reuses the last job with the new snapshot.
#[derive(Clone, Debug, Default)]
pub struct StatusJob {
    pub snapshot: Arc<Snapshot>,
    pub statuses: Arc<Statuses>,
    /// Per-Gateway Services (LoadBalancer mode, and dedicated Gateways)
    /// and ServiceAccounts (every Gateway).
    pub services: Vec<Service>,
    pub service_accounts: Vec<ServiceAccount>,
    /// Dedicated Gateways' stream credentials.
    pub secrets: Vec<Secret>,
    /// Dedicated Gateways' proxy pools.
    pub deployments: Vec<Deployment>,
    pub pod_disruption_budgets: Vec<PodDisruptionBudget>,
    /// Pool objects no Gateway wants any more.
    pub teardowns: Vec<PoolTeardown>,
    /// Gateways whose deployment-model labels differ from what we want.
    pub gateway_labels: Vec<LabelApply>,
}

#[derive(Clone, Debug)]
pub struct WriterConfig {
    pub controller_name: String,
    pub field_manager: String,
    pub concurrency: usize,
    pub write_timeout: Duration,
    pub retry_after: Duration,
}

impl WriterConfig {
    pub fn new(controller_name: &str) -> Self {
        WriterConfig {
            controller_name: controller_name.to_string(),
            field_manager: "coxswain".to_string(),
            concurrency: 8,
            write_timeout: Duration::from_secs(5),
            retry_after: Duration::from_secs(2),
        }
    }
}
