//! How the proxy talks to one cluster's endpoints, from a
//! CoxswainBackendPolicy: timeouts, endpoint choice, circuit breaking and
//! sticky sessions. A cluster without one keeps the defaults.

use serde::{Deserialize, Serialize};

/// One policy as applied to a cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendPolicy {
    /// `namespace/name` of the policy (for logs).
    pub policy: String,
    /// Upper bound on establishing a connection to an endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout_ms: Option<u64>,
    /// How long an idle pooled connection is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Balancer::is_default")]
    pub balancer: Balancer,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<Breaker>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence: Option<Persistence>,
}

/// How an endpoint is picked for each request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Balancer {
    #[default]
    RoundRobin,
    /// Fewest requests in flight.
    LeastConn,
    /// Lowest moving average of response latency.
    Ewma,
    /// Rendezvous hashing on a request attribute.
    Hash(HashKey),
}

impl Balancer {
    pub fn is_default(&self) -> bool {
        *self == Balancer::RoundRobin
    }
}

/// The request attribute a hashing balancer keys on. Adjacently tagged
/// (`{from: Header, name: x-user}`): YAML has no nested enums.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", content = "name")]
pub enum HashKey {
    /// Path and query.
    Uri,
    SourceIp,
    /// A request header (lower-case name).
    Header(String),
    Cookie(String),
}

/// A per-endpoint circuit breaker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breaker {
    /// Error rate, in percent (1..=100), that opens the breaker.
    pub threshold_percent: u8,
    /// How far back the error rate looks.
    pub window_ms: u64,
    /// How long an open breaker stays open before one probe is let through.
    pub open_ms: u64,
    /// Requests in the window before the breaker may open.
    pub min_requests: u32,
    /// When set, each re-open doubles the open time up to this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_open_ms: Option<u64>,
}

/// Sticky sessions: how a client is pinned to one endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Persistence {
    /// The gateway sets a cookie naming the endpoint it chose.
    Cookie { name: String },
    /// The endpoint follows from the value of a request header.
    Header { name: String },
}
