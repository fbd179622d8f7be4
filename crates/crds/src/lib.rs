//! Coxswain's own custom resources (group `gateway.coxswain-labs.dev`).
//!
//! The Rust types are the source of truth: the CustomResourceDefinition
//! YAML in `deploy/crds/` is generated from them by `coxswain crds` and a
//! test fails when the checked-in files drift.

// Input (files, API objects, requests) must never panic the gateway.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod backend_policy;
mod basic_auth;
mod client_traffic;
mod compression;
mod external_auth;
mod filter_status;
mod gateway_parameters;
mod ip_access;
mod jwt_auth;
mod path_rewrite_regex;
mod rate_limit;
mod request_size_limit;

pub use backend_policy::{
    BackendPolicyTargetRef, BackendTimeouts, CircuitBreaker, CoxswainBackendPolicy,
    CoxswainBackendPolicySpec, CoxswainBackendPolicyStatus, LoadBalancer, PolicyAncestorRef,
    PolicyAncestorStatus, SessionPersistence,
};
pub use basic_auth::{BasicAuth, BasicAuthSecretRef, BasicAuthSpec};
pub use client_traffic::{
    AccessLogConfig, ClientTrafficPolicy, ClientTrafficPolicySpec, ClientTrafficPolicyStatus,
    ClientTrafficTargetRef, ProxyProtocolConfig,
};
pub use compression::{Compression, CompressionSpec};
pub use external_auth::{
    CoxswainExternalAuth, CoxswainExternalAuthSpec, ExternalAuthBackendRef, ExternalAuthTargetRef,
    ForwardBody,
};
pub use filter_status::FilterStatus;
pub use gateway_parameters::{
    CoxswainGatewayParameters, CoxswainGatewayParametersSpec, ExternalTrafficPolicy,
    PodDisruptionBudgetParameters, ServiceParameters, ServiceTypeOverride,
};

pub use ip_access::{ForwardedForTrust, IpAccessControl, IpAccessControlSpec};
pub use jwt_auth::{
    ClaimToHeader, InlineJwks, JwksSource, JwtAuth, JwtAuthSpec, RemoteJwks, TokenHeader,
};
pub use path_rewrite_regex::{PathRewriteRegex, PathRewriteRegexSpec};
pub use rate_limit::{
    RateLimit, RateLimitGlobal, RateLimitKey, RateLimitKeyType, RateLimitSpec, RateLimitUnit,
    RedisStore, StoreUnavailablePolicy,
};
pub use request_size_limit::{RequestSizeLimit, RequestSizeLimitSpec};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// The API group of every Coxswain resource.
pub const GROUP: &str = "gateway.coxswain-labs.dev";

/// Every CustomResourceDefinition Coxswain ships, in a stable order.
///
/// Only kinds something reads: CoxswainGatewayParameters gives a Gateway
/// its own proxy pool (`coxswain controller` provisions it);
/// CoxswainBackendPolicy is applied to the Services it targets;
/// ClientTrafficPolicy sets PROXY protocol on the listeners it targets;
/// the filter kinds are enforced by the rules that reference them.
pub fn all() -> Vec<CustomResourceDefinition> {
    vec![
        BasicAuth::crd(),
        ClientTrafficPolicy::crd(),
        Compression::crd(),
        CoxswainBackendPolicy::crd(),
        CoxswainExternalAuth::crd(),
        CoxswainGatewayParameters::crd(),
        IpAccessControl::crd(),
        JwtAuth::crd(),
        PathRewriteRegex::crd(),
        RateLimit::crd(),
        RequestSizeLimit::crd(),
    ]
}

/// One CRD as a YAML document (without the leading `---`).
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_yaml_ng::Error> {
    serde_yaml_ng::to_string(crd)
}

/// Every CRD as one multi-document YAML stream, as `coxswain crds` prints it.
pub fn all_yaml() -> Result<String, serde_yaml_ng::Error> {
    let mut out = String::new();
    for crd in all() {
        out.push_str("---\n");
        out.push_str(&to_yaml(&crd)?);
    }
    Ok(out)
}

/// Where the generated YAML is checked in, relative to the repository root.
pub const CHECKED_IN_PATH: &str = "deploy/crds/coxswain.yaml";
