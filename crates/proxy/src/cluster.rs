//! Upstream clusters compiled for serving: endpoints with a round-robin
//! cursor, and TLS to them when a BackendTLSPolicy applies.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use coxswain_ir::{Config, UpstreamProtocol};

use crate::backend_tls::ClusterTls;

/// An upstream cluster with its round-robin cursor.
#[derive(Debug)]
pub struct ClusterState {
    pub name: String,
    pub protocol: UpstreamProtocol,
    /// `None`: plain text.
    pub tls: Option<ClusterTls>,
    endpoints: Vec<SocketAddr>,
    next: AtomicUsize,
}

impl ClusterState {
    /// The next endpoint by round robin; `None` when there are none.
    pub fn next_endpoint(&self) -> Option<SocketAddr> {
        if self.endpoints.is_empty() {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.endpoints.len();
        self.endpoints.get(i).copied()
    }

    /// Every endpoint, starting with the next one by round robin.
    pub fn endpoints_from_next(&self) -> Vec<SocketAddr> {
        if self.endpoints.is_empty() {
            return Vec::new();
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) % self.endpoints.len();
        let (before, after) = self.endpoints.split_at(start);
        after.iter().chain(before).copied().collect()
    }
}

/// All clusters of one config by name.
#[derive(Debug, Default)]
pub struct ClusterSet(HashMap<String, Arc<ClusterState>>);

impl ClusterSet {
    /// Compiles the clusters of `config`. TLS settings equal to those of
    /// the same cluster in `previous` are kept, pooled connections and all:
    /// an endpoint change elsewhere must not cost every backend a new
    /// handshake.
    pub fn compile(config: &Config, previous: Option<&ClusterSet>) -> Self {
        let map = config
            .clusters
            .iter()
            .map(|c| {
                let kept = previous
                    .and_then(|p| p.get(&c.name))
                    .and_then(|s| s.tls.as_ref());
                let state = ClusterState {
                    name: c.name.clone(),
                    protocol: c.protocol,
                    tls: c.tls.as_ref().map(|tls| ClusterTls::compile(c, tls, kept)),
                    endpoints: c.endpoints.iter().map(|e| e.address).collect(),
                    next: AtomicUsize::new(0),
                };
                (c.name.clone(), Arc::new(state))
            })
            .collect();
        ClusterSet(map)
    }

    pub fn get(&self, name: &str) -> Option<&Arc<ClusterState>> {
        self.0.get(name)
    }
}
