//! `ClientTrafficPolicy`: how a Gateway's listeners accept client
//! connections. Today one setting: PROXY protocol (v1 and v2), so the real
//! client address reaches the data plane behind an L4 load balancer.

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
