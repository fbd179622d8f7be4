//! `CoxswainBackendPolicy`: connection behaviour towards backends.
//! Types only for now; the translator does not read it yet.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Timeouts and load balancing for the backends it targets.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "gateway.coxswain-labs.dev",
    version = "v1alpha1",
    kind = "CoxswainBackendPolicy",
    plural = "coxswainbackendpolicies",
    shortname = "cbp",
    namespaced
)]
#[serde(rename_all = "camelCase")]
pub struct CoxswainBackendPolicySpec {
    /// Backends (usually Services in the policy's namespace) this applies to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_refs: Vec<BackendPolicyTargetRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<BackendTimeouts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancer>,
}

/// A local object reference: same namespace as the policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackendPolicyTargetRef {
    /// API group of the target; empty for the core group.
    #[serde(default)]
    pub group: String,
    pub kind: String,
    pub name: String,
}

/// Durations in Gateway API form (e.g. `5s`, `250ms`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackendTimeouts {
    /// How long establishing a connection to a backend may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]{1,5}(h|m|s|ms)){1,4}$"))]
    pub connect: Option<String>,
    /// How long an idle pooled connection is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]{1,5}(h|m|s|ms)){1,4}$"))]
    pub idle: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<LoadBalancerAlgorithm>,
}

/// How an endpoint is picked for each request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum LoadBalancerAlgorithm {
    RoundRobin,
    Random,
    LeastRequest,
}
