use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use crate::{BackendPolicy, CaBundle};

/// A set of interchangeable upstream endpoints: one Service port.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// `namespace/service:port`, unique within a [`crate::Config`].
    pub name: String,
    pub protocol: UpstreamProtocol,
    /// Ready endpoints only, sorted. Empty means "no healthy upstream" (503).
    pub endpoints: Vec<Endpoint>,
    /// TLS to the endpoints (a BackendTLSPolicy); `None` is plain text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<UpstreamTls>,
    /// A CoxswainBackendPolicy's settings; `None` keeps the defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<BackendPolicy>,
    /// An XBackendTrafficPolicy's retry budget; `None`: retries unbounded
    /// but by each route's own limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_budget: Option<RetryBudget>,
}

/// How the gateway speaks TLS to a cluster's endpoints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpstreamTls {
    Verify(BackendTls),
    /// A policy asks for TLS but cannot be honoured (no usable CA, ...):
    /// requests fail rather than go out in plain text.
    Invalid {
        reason: String,
    },
}

/// TLS settings for one cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendTls {
    /// Sent as SNI, and the name the certificate must carry unless
    /// `subject_alt_names` says otherwise.
    pub sni: String,
    pub trust: BackendTrust,
    /// When not empty, the certificate must carry one of these instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subject_alt_names: Vec<SubjectAltName>,
    /// `namespace/name` of the BackendTLSPolicy (for logs).
    pub policy: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BackendTrust {
    CaBundles(Vec<CaBundle>),
    /// The operating system's trust store.
    System,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SubjectAltName {
    Hostname(String),
    Uri(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpstreamProtocol {
    Http1,
    /// Cleartext HTTP/2 with prior knowledge (`appProtocol: kubernetes.io/h2c`).
    H2c,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Endpoint {
    pub address: SocketAddr,
}

/// A retry budget (XBackendTrafficPolicy `retryConstraint`): retries may be
/// at most `percent` of the cluster's requests over `interval_ms`, but
/// `min_count` per `min_interval_ms` are always allowed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryBudget {
    /// `namespace/name` of the policy (for logs).
    pub policy: String,
    pub percent: u8,
    pub interval_ms: u64,
    pub min_count: u32,
    pub min_interval_ms: u64,
}
