//! TLS passthrough, TCP and UDP: a listener's L4 routes compiled into a
//! table that picks a route (TLS: by SNI) and a backend (by weight) for
//! each connection or UDP session.

pub mod metrics;
mod splice;
pub mod tcp;
pub mod udp;

use std::net::SocketAddr;
use std::sync::Arc;

use coxswain_ir::{HostSpecificity, Hostname, L4Route};

use crate::route::{ClusterSet, Target, route_label};
use crate::weighted::Weighted;
use metrics::{L4Registry, L4RouteMetrics};

/// One L4 route rule, ready to serve.
#[derive(Debug)]
pub struct L4Entry {
    pub label: String,
    /// Empty matches every name (and connections without SNI).
    hostnames: Vec<Hostname>,
    backends: Weighted<Target>,
    pub metrics: Arc<L4RouteMetrics>,
}

impl L4Entry {
    /// Endpoints to try for one connection: the first of a backend chosen
    /// by weight, then the rest of that backend's endpoints (a refused
    /// connection moves on to the next). Empty when no backend is usable.
    pub fn endpoints(&self) -> Vec<SocketAddr> {
        let Some(Target::Cluster(cluster)) = self.backends.choose() else {
            return Vec::new();
        };
        cluster.endpoints_from_next()
    }
}

/// The L4 routes of one listener, in the IR's order (oldest route first).
#[derive(Debug, Default)]
pub struct L4Table {
    entries: Vec<L4Entry>,
}

impl L4Table {
    pub fn compile(routes: &[Arc<L4Route>], clusters: &ClusterSet, registry: &L4Registry) -> Self {
        let entries = routes
            .iter()
            .map(|r| {
                let label = route_label(&r.id);
                L4Entry {
                    metrics: registry.route(&label),
                    label,
                    hostnames: r.hostnames.clone(),
                    backends: Weighted::new(
                        r.backends
                            .iter()
                            .map(|b| (b.weight, Target::resolve(&b.target, clusters))),
                    ),
                }
            })
            .collect();
        L4Table { entries }
    }

    /// The route for a connection: for TLS the most specific route
    /// hostname matching the SNI (exact, then the longest wildcard, then
    /// routes without hostnames); otherwise, and among equals, the oldest.
    pub fn pick(&self, sni: Option<&str>) -> Option<&L4Entry> {
        self.entries
            .iter()
            .filter_map(|e| Some((e.match_specificity(sni)?, e)))
            .min_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, e)| e)
    }
}

impl L4Entry {
    /// How specifically this entry's hostnames match `sni` (smaller is
    /// more specific); `None` when they do not.
    fn match_specificity(&self, sni: Option<&str>) -> Option<HostSpecificity> {
        if self.hostnames.is_empty() {
            return Some(HostSpecificity::of(None));
        }
        let name = sni?;
        self.hostnames
            .iter()
            .filter(|h| h.matches(name))
            .map(|h| HostSpecificity::of(Some(h)))
            .min()
    }
}
