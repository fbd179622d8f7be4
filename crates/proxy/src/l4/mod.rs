//! TLS passthrough, TCP and UDP: a listener's L4 routes compiled into a
//! table that picks a route (TLS: by SNI) and a backend (by weight) for
//! each connection or UDP session.

pub mod metrics;
pub(crate) mod splice;
pub mod tcp;
pub mod udp;

use std::sync::Arc;

use coxswain_ir::{HostSpecificity, Hostname, L4Route, Listener, RouteId};

use crate::access_log::ListenerTag;
use crate::backend_tls::BackendIdentity;
use crate::cluster::{ClusterSet, ClusterState};
use crate::listen::Certificates;
use crate::route::{Target, route_label};
use crate::weighted::Weighted;
use metrics::{L4Registry, L4RouteMetrics};

/// One L4 route rule, ready to serve.
#[derive(Debug)]
pub struct L4Entry {
    /// Shared with the access-log records of its connections.
    pub id: Arc<RouteId>,
    pub label: String,
    /// Empty matches every name (and connections without SNI).
    hostnames: Vec<Hostname>,
    backends: Weighted<Target>,
    pub metrics: Arc<L4RouteMetrics>,
}

impl L4Entry {
    /// The cluster for one connection, chosen by weight; `None` when no
    /// backend is usable.
    pub fn choose(&self) -> Option<&Arc<ClusterState>> {
        match self.backends.choose()? {
            Target::Cluster(cluster) => Some(cluster),
            Target::Invalid(_) => None,
        }
    }
}

/// What compiling a socket's plan (its L4 tables and TLS configs) needs.
pub struct L4Context<'a> {
    pub clusters: &'a ClusterSet,
    pub registry: &'a L4Registry,
    /// Parsed once per config, shared by the listeners presenting them.
    pub certificates: &'a Certificates,
    /// The client certificate each listener of the socket presents to TLS
    /// backends, by listener index.
    pub identities: &'a [Option<Arc<BackendIdentity>>],
}

/// How a listener's connections meet a backend's BackendTLSPolicy.
#[derive(Debug, Default)]
pub enum BackendTlsUse {
    /// TCP and TLS-terminated connections: TLS to a policied backend.
    Originate(Option<Arc<BackendIdentity>>),
    /// TLS passthrough (the client's own TLS goes through) and UDP: the
    /// bytes go as they came.
    #[default]
    AsIs,
}

/// The L4 routes of one listener, in the IR's order (oldest route first).
#[derive(Debug, Default)]
pub struct L4Table {
    entries: Vec<L4Entry>,
    pub backend_tls: BackendTlsUse,
    /// The listener, as access-log records name it.
    pub listener: Option<Arc<ListenerTag>>,
}

impl L4Table {
    pub fn compile(
        listener: &Listener,
        routes: &[Arc<L4Route>],
        ctx: &L4Context<'_>,
        backend_tls: BackendTlsUse,
    ) -> Self {
        let (clusters, registry) = (ctx.clusters, ctx.registry);
        let entries = routes
            .iter()
            .map(|r| {
                let label = route_label(&r.id);
                L4Entry {
                    id: Arc::new(r.id.clone()),
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
        L4Table {
            entries,
            backend_tls,
            listener: Some(Arc::new(ListenerTag::of(listener))),
        }
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
