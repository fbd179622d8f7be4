//! A config compiled for serving, off the async workers: the HTTP router
//! and what each socket does with a connection (or datagram).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use coxswain_ir::{Config, Transport};

use crate::l4::{L4Context, L4Table};
use crate::listen::{Certificates, SocketPlan, udp_table};
use crate::metrics::Metrics;
use crate::router::{RouteCache, Router};

/// A socket's identity: the same port number on TCP and UDP is two sockets.
pub type SocketKey = (Transport, SocketAddr);

/// What a socket serves.
#[derive(Clone, Debug)]
pub enum Plan {
    Tcp(Arc<SocketPlan>),
    Udp(Arc<L4Table>),
}

pub struct Compiled {
    pub router: Arc<Router>,
    pub plans: HashMap<SocketKey, Plan>,
}

impl Compiled {
    /// Compiles `config`, reusing routes compiled for the previous one.
    pub fn new(config: &Config, metrics: &Arc<Metrics>, cache: &mut RouteCache) -> Compiled {
        let router = Router::compile_reusing(config, metrics, cache);
        let clusters = cache.clusters();
        let certificates = Certificates::default();
        let plans = config
            .sockets
            .iter()
            .map(|s| {
                let identities: Vec<_> = s
                    .listeners
                    .iter()
                    .map(|l| {
                        let cert = l.backend_client_certificate.as_ref()?;
                        Some(cache.identity(cert))
                    })
                    .collect();
                let ctx = L4Context {
                    clusters: &clusters,
                    registry: &metrics.l4,
                    certificates: &certificates,
                    identities: &identities,
                };
                let plan = match s.transport {
                    Transport::Tcp => Plan::Tcp(Arc::new(SocketPlan::of(s, &ctx))),
                    Transport::Udp => Plan::Udp(Arc::new(udp_table(s, &ctx))),
                };
                ((s.transport, s.addr()), plan)
            })
            .collect();
        Compiled {
            router: Arc::new(router),
            plans,
        }
    }
}
