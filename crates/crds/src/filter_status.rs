//! The status every Coxswain filter resource carries: whether the gateway
//! enforces it, and whether what it references resolved.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::PolicyAncestorStatus;

/// `Accepted` (the spec is valid and enforced) and `ResolvedRefs` (the
/// Secrets, ConfigMaps or Services it names exist and may be read).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FilterStatus {
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// For a resource that is also a policy (CoxswainExternalAuth's
    /// `targetRefs`): one entry per Gateway it targets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ancestors: Vec<PolicyAncestorStatus>,
}
