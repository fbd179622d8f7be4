//! `RequestSizeLimit`: the largest request body a route rule accepts.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::FilterStatus;

/// Caps the request body of the rules that reference it (ExtensionRef
/// filter). A larger body is answered 413: up front when its
/// `Content-Length` says so, else as soon as the bytes received pass the
/// limit (HTTP/1.1 chunked, HTTP/2 and gRPC streams alike).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "gateway.coxswain-labs.dev",
    version = "v1alpha1",
    kind = "RequestSizeLimit",
    plural = "requestsizelimits",
    status = "FilterStatus",
    derive = "PartialEq",
    namespaced
)]
#[serde(rename_all = "camelCase")]
pub struct RequestSizeLimitSpec {
    /// A byte count, or one with a binary `k`, `m` or `g` suffix
    /// (case-insensitive): `1048576`, `512k`, `8m`, `1g`.
    #[schemars(length(min = 1, max = 32))]
    pub max_size: String,
}
