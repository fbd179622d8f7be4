//! `IpAccessControl`: which client addresses a route rule admits.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::FilterStatus;

/// Source-address ranges a rule admits, referenced by an ExtensionRef
/// filter. `deny` is checked first; a non-empty `allow` then admits only
/// its ranges. A refused client gets 403.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "gateway.coxswain-labs.dev",
    version = "v1alpha1",
    kind = "IpAccessControl",
    plural = "ipaccesscontrols",
    status = "FilterStatus",
    derive = "PartialEq",
    namespaced
)]
#[serde(rename_all = "camelCase")]
pub struct IpAccessControlSpec {
    /// CIDRs (`10.0.0.0/8`, `2001:db8::/32`) or bare addresses (one host).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1024))]
    pub allow: Vec<String>,
    /// Checked before `allow`: a client in any of these is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1024))]
    pub deny: Vec<String>,
    /// Take the client's address from `X-Forwarded-For` instead of the
    /// connection's peer, trusting the proxies in front of the gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x_forwarded_for: Option<ForwardedForTrust>,
}

/// How many proxies in front of the gateway append to `X-Forwarded-For`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForwardedForTrust {
    /// The client is the address this many entries from the right of
    /// `X-Forwarded-For`: the one the outermost trusted proxy saw.
    #[schemars(range(min = 1, max = 16))]
    pub trusted_hops: u8,
}
