//! Resource types Coxswain reads, and [`Snapshot`]: every object the gateway
//! cares about as plain values. Providers (files, Kubernetes) build snapshots;
//! the translator reads them. No I/O and no client here.
//!
//! Gateway API types come from the `gateway-api` crate (kube-rs project,
//! generated from the upstream CRDs); core types from `k8s-openapi`.

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

mod compact;
mod key;
mod kinds;

pub use compact::compact;
pub use key::ObjectKey;
pub use kinds::{ApiObject, Kind, KindVisitor, Object, Snapshot, same_objects};

pub use gateway_api;
pub use k8s_openapi;
/// Metadata access for every kind (`meta()`), without a client.
pub use kube_core::Resource as ApiResource;

/// The Gateway API types Coxswain reads: the experimental channel, a
/// superset of the standard one, so that no field a user sets (retry,
/// sessionPersistence, CORS, ...) is dropped while parsing.
pub use gateway_api::apis::experimental as gw;

/// Coxswain's own CRD types.
pub use coxswain_crds as crds;
pub use coxswain_crds::{
    BasicAuth, ClientTrafficPolicy, Compression, CoxswainBackendPolicy, CoxswainExternalAuth,
    CoxswainGatewayParameters, IpAccessControl, JwtAuth, PathRewriteRegex, RateLimit,
    RequestSizeLimit,
};
/// BackendTLSPolicy is v1 (standard channel); the experimental module has none.
pub use gateway_api::apis::standard::backendtlspolicies::BackendTlsPolicy;
pub use gateway_api::apis::standard::listenersets::ListenerSet;
pub use gw::gatewayclasses::GatewayClass;
pub use gw::gateways::Gateway;
pub use gw::grpcroutes::GrpcRoute;
pub use gw::httproutes::HttpRoute;
pub use gw::referencegrants::ReferenceGrant;
pub use gw::tcproutes::TcpRoute;
pub use gw::tlsroutes::TlsRoute;
pub use gw::udproutes::UdpRoute;
pub use gw::xbackendtrafficpolicies::XBackendTrafficPolicy;
pub use k8s_openapi::api::apps::v1::Deployment;
pub use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service};
pub use k8s_openapi::api::discovery::v1::EndpointSlice;
pub use k8s_openapi::api::networking::v1::{Ingress, IngressClass};

/// The Gateway API group.
pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";
