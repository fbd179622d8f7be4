//! Coxswain's intermediate representation (IR): the compiled routing world the
//! proxy serves. The translator produces it from Gateway API objects; the proxy
//! compiles it into lookup tables. Nothing here knows about Kubernetes.
//!
//! Ordering contract: every `Vec` in the IR is in a deterministic order chosen by
//! the translator. In particular `GatewayListener::routes` is ordered by the
//! spec's tie-breakers (oldest route first, then namespace/name, then rule
//! index); the proxy stable-sorts matches by [`MatchSpecificity`] so that order
//! decides only among equally specific matches.

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

mod access_log;
mod backend_policy;
mod basic_auth;
mod cidr;
mod cluster;
mod compression;
mod extension;
mod external_auth;
mod feedback;
mod filter;
mod hostname;
mod jwks;
mod jwt;
mod listener;
mod precedence;
pub mod reveal;
mod route;
mod slice;
mod tls;

pub use access_log::{AccessLogField, AccessLogPolicy};
pub use backend_policy::{BackendPolicy, Balancer, Breaker, HashKey, Persistence};
pub use basic_auth::{BasicAuth, BasicAuthUser, HashText, PasswordHash, PasswordScheme};
pub use cidr::{CidrError, IpCidr};
pub use cluster::{
    BackendTls, BackendTrust, Cluster, Endpoint, RetryBudget, SubjectAltName, UpstreamProtocol,
    UpstreamTls,
};
pub use compression::Compression;
pub use extension::{
    Extension, ExtensionKey, ExtensionKind, ExtensionSpec, GlobalRateLimit, IpAccess, RateLimit,
    RateLimitKey, StoreUnavailable,
};
pub use external_auth::{ExternalAuth, ExternalAuthProtocol};
pub use feedback::UnboundSocket;
pub use filter::{Cors, Filter, Header, HeaderModifier, Mirror, PathModifier, Redirect, Rewrite};
pub use hostname::{Hostname, HostnameError};
pub use jwks::{
    Jwk, JwkKey, JwksError, JwsAlg, KeyBytes, MAX_JWKS_BYTES, MAX_JWKS_KEYS, parse_jwks,
};
pub use jwt::{ClaimHeader, JwksSource, JwtAuth, RemoteJwks, TokenHeader};
pub use listener::{
    CaBundle, ClientValidation, ClientValidationMode, Listener, ProxyProtocol, Serve, Socket,
    TlsTermination, Transport,
};
pub use precedence::{HostSpecificity, MatchSpecificity};
pub use route::{
    BackendTarget, GrpcMethodChars, HeaderMatch, L4Route, PathMatch, QueryMatch, Retry, Route,
    RouteId, RouteKind, RouteMatch, RouteSession, SessionCarrier, StringMatch, Timeouts,
    WeightedBackend,
};
pub use tls::{PrivateKeyPem, REDACTED_KEY, TlsCertificate};

use serde::{Deserialize, Serialize};

/// Bumped whenever the IR's wire shape changes incompatibly.
pub const IR_VERSION: u32 = 3;

/// Upper bound (bytes) on the compiled size of any regular expression in the IR.
/// The translator rejects larger patterns; the proxy compiles with this limit.
pub const MAX_REGEX_SIZE: usize = 256 * 1024;

/// The whole routing world at one instant.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub ir_version: u32,
    /// Sockets to serve, sorted by (transport, address, port).
    pub sockets: Vec<Socket>,
    /// Upstream clusters referenced by routes, sorted by name.
    pub clusters: Vec<std::sync::Arc<Cluster>>,
    /// Coxswain filter resources referenced by routes, sorted by key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<Extension>,
}

impl Config {
    pub fn cluster(&self, name: &str) -> Option<&Cluster> {
        self.clusters
            .binary_search_by(|c| c.name.as_str().cmp(name))
            .ok()
            .and_then(|i| self.clusters.get(i))
            .map(|c| &**c)
    }

    pub fn extension(&self, key: &ExtensionKey) -> Option<&Extension> {
        self.extensions
            .binary_search_by(|e| e.key.cmp(key))
            .ok()
            .and_then(|i| self.extensions.get(i))
    }
}
