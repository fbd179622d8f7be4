//! `ClientTrafficPolicy`: how a Gateway's listeners accept client
//! connections: PROXY protocol (v1 and v2), so the real client address
//! reaches the data plane behind an L4 load balancer, and access logs.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::backend_policy::PolicyAncestorStatus;

/// Connection settings for the Gateway listeners it targets.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "gateway.coxswain-labs.dev",
    version = "v1alpha1",
    kind = "ClientTrafficPolicy",
    plural = "clienttrafficpolicies",
    shortname = "ctp",
    status = "ClientTrafficPolicyStatus",
    derive = "PartialEq",
    namespaced
)]
#[serde(rename_all = "camelCase")]
pub struct ClientTrafficPolicySpec {
    /// Gateways (or one listener of one, by `sectionName`) in the policy's
    /// namespace.
    #[schemars(length(min = 1, max = 16))]
    pub target_refs: Vec<ClientTrafficTargetRef>,
    /// Expect a PROXY protocol header before anything else on a connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_protocol: Option<ProxyProtocolConfig>,
    /// Access-log settings for the targeted listeners, in place of the
    /// `--access-log-*` flags' (docs/observability.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_log: Option<AccessLogConfig>,
}

/// What the targeted listeners' requests, connections and sessions log.
/// Unset fields keep the process-wide flags' values.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessLogConfig {
    /// `true`: no records at all for these listeners.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// The share of requests logged, from 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub sample_ratio: Option<f64>,
    /// The fields records carry (names as in docs/observability.md, e.g.
    /// `time`, `status`, `request_id`); unset: the flags' choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub fields: Option<Vec<String>>,
}

/// A Gateway in the policy's namespace, optionally one of its listeners.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientTrafficTargetRef {
    /// `gateway.networking.k8s.io`.
    pub group: String,
    /// `Gateway`.
    pub kind: String,
    pub name: String,
    /// A listener name; unset targets every listener of the Gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section_name: Option<String>,
}

/// PROXY protocol v1 (text) or v2 (binary), told apart by the signature.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProxyProtocolConfig {
    /// `false` (default): a connection without a valid header is closed.
    /// `true`: it is served with the socket peer as the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

/// Per targeted Gateway (or listener): was the policy applied.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientTrafficPolicyStatus {
    #[serde(default)]
    pub ancestors: Vec<PolicyAncestorStatus>,
}
