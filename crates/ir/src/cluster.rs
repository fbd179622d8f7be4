use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

/// A set of interchangeable upstream endpoints: one Service port.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// `namespace/service:port`, unique within a [`crate::Config`].
    pub name: String,
    pub protocol: UpstreamProtocol,
    /// Ready endpoints only, sorted. Empty means "no healthy upstream" (503).
    pub endpoints: Vec<Endpoint>,
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
