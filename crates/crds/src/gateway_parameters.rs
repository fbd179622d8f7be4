//! `CoxswainGatewayParameters`: per-Gateway deployment knobs, referenced
//! from a GatewayClass or Gateway `parametersRef`/`infrastructure`.

use std::collections::BTreeMap;

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
    namespaced
)]
#[serde(rename_all = "camelCase")]
pub struct CoxswainGatewayParametersSpec {
    /// Number of proxy replicas for the Gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub replicas: Option<i32>,
    /// Type of the Service that exposes the Gateway (default LoadBalancer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_type: Option<ServiceTypeOverride>,
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
