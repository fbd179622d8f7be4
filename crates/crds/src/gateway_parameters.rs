//! `CoxswainGatewayParameters`: a Gateway's own proxy pool. A Gateway (or
//! its GatewayClass, as a default) naming one in `parametersRef` is served
//! by a Deployment `coxswain controller` provisions for it, exposed by its
//! own Service, instead of by the shared proxies.
//!
//! What the schema can check it checks (replicas, the PDB's one-of, the
//! Service fields a Service type forbids); the rest is checked by the
//! translator and reported on the Gateway (Accepted=False,
//! InvalidParameters).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, ResourceRequirements, Toleration};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How Coxswain deploys and exposes the proxies of a Gateway.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "gateway.coxswain-labs.dev",
    version = "v1alpha1",
    kind = "CoxswainGatewayParameters",
    plural = "coxswaingatewayparameters",
    shortname = "cgwp",
    derive = "PartialEq",
    namespaced
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!has(self.service) || !has(self.service.loadBalancerClass) || !has(self.serviceType) || self.serviceType == 'LoadBalancer'",
        "message": "service.loadBalancerClass needs serviceType LoadBalancer"
    },
    {
        "rule": "!has(self.service) || !has(self.service.externalTrafficPolicy) || !has(self.serviceType) || self.serviceType != 'ClusterIP'",
        "message": "service.externalTrafficPolicy needs serviceType LoadBalancer or NodePort"
    }
]))]
pub struct CoxswainGatewayParametersSpec {
    /// Number of proxy replicas (default 1; 0 leaves the Gateway without
    /// proxies, never Programmed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub replicas: Option<i32>,
    /// Proxy image (default: the controller's `--proxy-image`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    pub image: Option<String>,
    /// The proxies' log filter (their RUST_LOG), e.g. `info` or
    /// `info,coxswain_proxy=debug` (default `info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    pub log_level: Option<String>,
    /// CPU and memory of each proxy container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Nodes the proxy pods may run on (pod `nodeSelector`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Pod tolerations of the proxies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Pod affinity of the proxies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Type of the Service that exposes the Gateway (default LoadBalancer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_type: Option<ServiceTypeOverride>,
    /// More about that Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceParameters>,
    /// A PodDisruptionBudget for the proxies (none when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PodDisruptionBudgetParameters>,
    /// Extra labels put on the resources created for the Gateway.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Extra annotations put on the resources created for the Gateway.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// Service types a Gateway can be exposed through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ServiceTypeOverride {
    LoadBalancer,
    NodePort,
    #[serde(rename = "ClusterIP")]
    ClusterIp,
}

impl ServiceTypeOverride {
    /// The Service `spec.type` value.
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceTypeOverride::LoadBalancer => "LoadBalancer",
            ServiceTypeOverride::NodePort => "NodePort",
            ServiceTypeOverride::ClusterIp => "ClusterIP",
        }
    }
}

/// The Gateway Service's fields beyond its type.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceParameters {
    /// `Local` keeps client source addresses (traffic only to nodes with a
    /// proxy); `Cluster` (the Kubernetes default) spreads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_traffic_policy: Option<ExternalTrafficPolicy>,
    /// Annotations of the Service only (load-balancer settings), on top of
    /// `annotations`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The load-balancer implementation to use (LoadBalancer type only; a
    /// Service's class cannot change once set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub load_balancer_class: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ExternalTrafficPolicy {
    Cluster,
    Local,
}

impl ExternalTrafficPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            ExternalTrafficPolicy::Cluster => "Cluster",
            ExternalTrafficPolicy::Local => "Local",
        }
    }
}

/// Exactly one of the two, as in a PodDisruptionBudget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "has(self.minAvailable) != has(self.maxUnavailable)",
    "message": "set exactly one of minAvailable and maxUnavailable"
}]))]
pub struct PodDisruptionBudgetParameters {
    /// Proxies that must stay up during voluntary disruptions (a number or
    /// a percentage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
    /// Proxies that may be down during voluntary disruptions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
}
