//! `CoxswainExternalAuth`: an external authorization service decides
//! whether a request reaches its upstream (GEP-1494, the Envoy ext_authz
//! model), as a route rule's ExtensionRef filter or as a Gateway's default.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::FilterStatus;

/// Asks the Service `backendRef` names (load-balanced over its ready pods)
/// to allow or deny each request: by forward-auth over HTTP, or by the
/// Envoy `Authorization/Check` gRPC call. Unreachable, failing or slow:
/// 503 unless `failClosed` is false.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "gateway.coxswain-labs.dev",
    version = "v1alpha1",
    kind = "CoxswainExternalAuth",
    plural = "coxswainexternalauths",
    status = "FilterStatus",
    derive = "PartialEq",
    namespaced
)]
#[serde(rename_all = "camelCase")]
pub struct CoxswainExternalAuthSpec {
    /// `HTTP` (forward-auth) or `GRPC` (envoy.service.auth.v3.Authorization).
    #[schemars(length(min = 1, max = 16))]
    pub protocol: String,
    /// The authorization service: a Service port.
    pub backend_ref: ExternalAuthBackendRef,
    /// How long one check may take (Gateway API duration; default `1s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Deny with 503 when the service is unreachable, errors or times out
    /// (default true); false lets such requests through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_closed: Option<bool>,
    /// When set, only these client headers are sent to the service
    /// (default: every header but the hop-by-hop ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub allowed_request_headers: Vec<String>,
    /// Headers of the service's allowing answer copied onto the request
    /// to the upstream (a client's own header of that name is replaced).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub allowed_response_headers: Vec<String>,
    /// Send the request body (at most `maxSize` bytes) to the service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_body: Option<ForwardBody>,
    /// Gateways every HTTPRoute of which this applies to (a Gateway
    /// policy); empty: used only where an ExtensionRef names it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub target_refs: Vec<ExternalAuthTargetRef>,
}

/// A Service port; `namespace` other than the resource's needs a
/// ReferenceGrant.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAuthBackendRef {
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForwardBody {
    /// The largest body sent (a quantity such as `8k` or `1Mi`); a larger
    /// one is refused with 413.
    #[schemars(length(min = 1, max = 32))]
    pub max_size: String,
}

/// A Gateway in the resource's namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAuthTargetRef {
    pub group: String,
    pub kind: String,
    pub name: String,
}
