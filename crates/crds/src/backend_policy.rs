//! `CoxswainBackendPolicy`: how the proxy talks to the pods behind a
//! Service — timeouts, load balancing, a circuit breaker, sticky sessions.
//!
//! The tunables are plain strings and numbers, deliberately not
//! schema-validated: an invalid value is accepted by the API server and
//! reported in the policy's status (and ignored, failing open), as the user
//! guide promises.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Connection behaviour towards the Services it targets.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "gateway.coxswain-labs.dev",
    version = "v1alpha1",
    kind = "CoxswainBackendPolicy",
    plural = "coxswainbackendpolicies",
    shortname = "cbp",
    status = "CoxswainBackendPolicyStatus",
    derive = "PartialEq",
    namespaced
)]
#[serde(rename_all = "camelCase")]
pub struct CoxswainBackendPolicySpec {
    /// Services in the policy's namespace this applies to.
    #[schemars(length(min = 1, max = 16))]
    pub target_refs: Vec<BackendPolicyTargetRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<BackendTimeouts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_breaker: Option<CircuitBreaker>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_persistence: Option<SessionPersistence>,
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
    /// How long establishing a connection to a pod may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<String>,
    /// How long an idle pooled connection to a pod is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancer {
    /// `round_robin` (default), `least_conn`, `ewma`, `ip_hash`,
    /// `hash:uri`, `hash:source-ip`, `hash:header=<name>` or
    /// `hash:cookie=<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
}

/// A per-pod circuit breaker; `threshold` switches it on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CircuitBreaker {
    /// Error rate in percent (1-100) that opens the breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<i64>,
    /// How far back the error rate looks (default `10s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// How long the breaker stays open before a probe (default `5s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_duration: Option<String>,
    /// Requests in the window before the breaker may open (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_requests: Option<i64>,
    /// Cap for the open time, doubled on each re-open; unset keeps it constant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_open_duration: Option<String>,
}

/// Sticky sessions: `Cookie` or `Header`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionPersistence {
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The cookie (default `__coxswain_session`) or request header name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
}

/// Per targeted Service: was the policy applied to it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoxswainBackendPolicyStatus {
    #[serde(default)]
    pub ancestors: Vec<PolicyAncestorStatus>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyAncestorStatus {
    pub ancestor_ref: PolicyAncestorRef,
    pub controller_name: String,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// The Service a status entry is about.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct PolicyAncestorRef {
    #[serde(default)]
    pub group: String,
    pub kind: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}
