//! Route lookup: a [`Config`] compiled into immutable tables, built off the hot
//! path. Lookup allocates nothing.
//!
//! Per socket the request host picks one Gateway listener (exact hostname,
//! then the longest matching wildcard, then the hostname-less one): a request
//! only ever sees that listener's routes. Within the listener, entries are
//! grouped into buckets by route hostname. Because precedence sorts by host
//! specificity first, the merged order for a host is simply "exact bucket,
//! then wildcard buckets from the longest suffix, then the catch-all bucket",
//! so lookup walks that chain instead of storing merged copies.

mod bucket;
pub mod host;
mod matcher;
mod reuse;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use coxswain_ir::{Config, Hostname, Listener, MatchSpecificity, Transport};
use http::{HeaderMap, Method};

pub use bucket::Entry;
pub use matcher::{CompiledMatch, CompiledPath, MatchError, Mismatch, prefix_matches};
pub use reuse::RouteCache;

use crate::access_log::ListenerTag;
use crate::backend_tls::BackendIdentity;
use crate::metrics::Metrics;
use crate::route::CompiledRoute;
use reuse::Reuse;

/// What route lookup looks at. `host` must already be normalised
/// (see [`host::normalize_host`]).
#[derive(Clone, Copy, Debug)]
pub struct RequestView<'a> {
    pub host: &'a str,
    pub method: &'a Method,
    pub path: &'a str,
    pub query: Option<&'a str>,
    pub headers: &'a HeaderMap,
}

/// The Gateway listener a request came in on, as spans name it.
#[derive(Debug, Default)]
pub struct ListenerName {
    /// `namespace/name` of the Gateway.
    pub gateway: String,
    /// The listener's name (its sectionName).
    pub name: String,
}

/// A successful lookup.
#[derive(Clone, Copy, Debug)]
pub struct Hit<'r> {
    /// The socket-level index of the listener the Host selected.
    pub listener: usize,
    pub listener_name: &'r ListenerName,
    /// The client certificate that listener's Gateway presents to TLS
    /// backends.
    pub backend_identity: Option<&'r Arc<BackendIdentity>>,
    pub route_index: usize,
    pub route: &'r CompiledRoute,
    pub matched: &'r CompiledMatch,
}

/// One Gateway listener's buckets.
#[derive(Debug, Default)]
struct ListenerRoutes {
    exact: HashMap<Box<str>, bucket::Bucket>,
    /// Keyed by wildcard suffix, e.g. `.example.com` for `*.example.com`.
    wildcard: HashMap<Box<str>, bucket::Bucket>,
    /// Ingress wildcards, which stand for exactly one label: only the
    /// host's first suffix (`.example.com` of `a.example.com`) is looked up.
    one_label: HashMap<Box<str>, bucket::Bucket>,
    catch_all: bucket::Bucket,
    backend_identity: Option<Arc<BackendIdentity>>,
    name: ListenerName,
    /// The listener, as access-log records name it.
    tag: Option<Arc<ListenerTag>>,
}

/// HTTP listener selection for one socket. Indices are positions in the
/// IR socket's listener list (the same numbering the TLS layer uses for the
/// listener SNI picked).
#[derive(Debug, Default)]
struct SocketRoutes {
    listeners: HashMap<usize, ListenerRoutes>,
    exact: HashMap<Box<str>, usize>,
    wildcard: HashMap<Box<str>, usize>,
    any: Option<usize>,
}

/// The compiled routing table for a whole config.
#[derive(Debug, Default)]
pub struct Router {
    sockets: HashMap<SocketAddr, SocketRoutes>,
    routes: Vec<Arc<CompiledRoute>>,
}

/// Suffixes of `host` starting at each inner dot, longest first:
/// `a.b.c` -> `.b.c`, `.c`.
fn wildcard_suffixes(host: &str) -> impl Iterator<Item = &str> {
    host.char_indices()
        .filter(|&(i, c)| c == '.' && i > 0)
        .filter_map(move |(i, _)| host.get(i..))
}

fn find_wildcard<'m, V>(map: &'m HashMap<Box<str>, V>, host: &str) -> Option<&'m V> {
    if map.is_empty() {
        return None;
    }
    wildcard_suffixes(host).find_map(|suffix| map.get(suffix))
}

impl ListenerRoutes {
    fn find(&self, routes: &[Arc<CompiledRoute>], req: &RequestView<'_>) -> Option<bucket::Entry> {
        if let Some(hit) = self.exact.get(req.host).and_then(|b| b.find(routes, req)) {
            return Some(hit);
        }
        if !self.wildcard.is_empty() || !self.one_label.is_empty() {
            for (i, suffix) in wildcard_suffixes(req.host).enumerate() {
                // The first suffix is the longest: a one-label wildcard on it
                // is as specific as a Gateway wildcard of the same suffix.
                let one_label = (i == 0)
                    .then(|| self.one_label.get(suffix))
                    .flatten()
                    .and_then(|b| b.find(routes, req));
                if let Some(hit) = one_label {
                    return Some(hit);
                }
                if let Some(hit) = self.wildcard.get(suffix).and_then(|b| b.find(routes, req)) {
                    return Some(hit);
                }
            }
        }
        self.catch_all.find(routes, req)
    }
}

impl SocketRoutes {
    fn select(&self, host: &str) -> Option<usize> {
        self.exact
            .get(host)
            .or_else(|| find_wildcard(&self.wildcard, host))
            .or(self.any.as_ref())
            .copied()
    }
}

#[derive(Default)]
struct BucketBuilder {
    exact: HashMap<Box<str>, Vec<(MatchSpecificity, Entry)>>,
    wildcard: HashMap<Box<str>, Vec<(MatchSpecificity, Entry)>>,
    one_label: HashMap<Box<str>, Vec<(MatchSpecificity, Entry)>>,
    catch_all: Vec<(MatchSpecificity, Entry)>,
}

fn sorted_bucket(
    mut keyed: Vec<(MatchSpecificity, Entry)>,
    routes: &[Arc<CompiledRoute>],
) -> bucket::Bucket {
    // Stable: equal specificity keeps IR order.
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    // A fresh exact Vec: collecting from `keyed` would reuse its larger
    // allocation (room for four keyed entries) for the config's life.
    let mut entries = Vec::with_capacity(keyed.len());
    entries.extend(keyed.into_iter().map(|(_, e)| e));
    bucket::Bucket::new(entries, routes)
}

impl BucketBuilder {
    fn add(
        &mut self,
        hostnames: &[Hostname],
        single_label: bool,
        keyed: &[(MatchSpecificity, Entry)],
    ) {
        if hostnames.is_empty() {
            self.catch_all.extend_from_slice(keyed);
        }
        for name in hostnames {
            let target = match name.wildcard_suffix() {
                Some(suffix) if single_label => self.one_label.entry(suffix.into()).or_default(),
                Some(suffix) => self.wildcard.entry(suffix.into()).or_default(),
                None => self.exact.entry(name.as_str().into()).or_default(),
            };
            target.extend_from_slice(keyed);
        }
    }

    fn build(self, routes: &[Arc<CompiledRoute>]) -> ListenerRoutes {
        let finish = |m: HashMap<Box<str>, Vec<_>>| {
            m.into_iter()
                .map(|(k, v)| (k, sorted_bucket(v, routes)))
                .collect()
        };
        ListenerRoutes {
            exact: finish(self.exact),
            wildcard: finish(self.wildcard),
            one_label: finish(self.one_label),
            catch_all: sorted_bucket(self.catch_all, routes),
            backend_identity: None,
            name: ListenerName::default(),
            tag: None,
        }
    }
}

impl Router {
    /// Compiles `config` with metrics handles from a private registry
    /// (benchmarks and tests).
    pub fn compile(config: &Config) -> Router {
        Router::compile_with(config, &Arc::default())
    }

    pub(crate) fn compile_with(config: &Config, metrics: &Arc<Metrics>) -> Router {
        Router::compile_reusing(config, metrics, &mut RouteCache::default())
    }

    /// Compiles `config`, reusing routes compiled for the previous config
    /// (see [`RouteCache`]); `cache` then describes this config.
    pub(crate) fn compile_reusing(
        config: &Config,
        metrics: &Arc<Metrics>,
        cache: &mut RouteCache,
    ) -> Router {
        let mut reuse = cache.begin(config, metrics);
        let mut router = Router::default();
        for ir_socket in config
            .sockets
            .iter()
            .filter(|s| s.transport == Transport::Tcp)
        {
            let mut socket = SocketRoutes::default();
            for (index, listener) in ir_socket.listeners.iter().enumerate() {
                let Some(routes) = listener.http_routes() else {
                    continue;
                };
                let builder = router.add_listener_routes(listener, routes, &mut reuse, metrics);
                let mut compiled = builder.build(&router.routes);
                compiled.backend_identity = listener
                    .backend_client_certificate
                    .as_ref()
                    .map(|cert| reuse.identity(cert));
                compiled.name = ListenerName {
                    gateway: listener.gateway.clone(),
                    name: listener.name.clone(),
                };
                compiled.tag = Some(Arc::new(ListenerTag::of(listener)));
                socket.listeners.insert(index, compiled);
                match &listener.hostname {
                    None => {
                        socket.any.get_or_insert(index);
                    }
                    Some(h) => {
                        let map = match h.wildcard_suffix() {
                            Some(suffix) => socket.wildcard.entry(suffix.into()),
                            None => socket.exact.entry(h.as_str().into()),
                        };
                        map.or_insert(index);
                    }
                }
            }
            router.sockets.entry(ir_socket.addr()).or_insert(socket);
        }
        router
    }

    fn add_listener_routes(
        &mut self,
        listener: &Listener,
        routes: &[Arc<coxswain_ir::Route>],
        reuse: &mut Reuse<'_>,
        metrics: &Arc<Metrics>,
    ) -> BucketBuilder {
        let mut builder = BucketBuilder::default();
        for route in routes {
            let compiled = match reuse.compiled(route, metrics) {
                Ok(c) => c,
                Err(MatchError(why)) => {
                    tracing::warn!(route = ?route.id, listener = %listener.name, %why, "route skipped");
                    continue;
                }
            };
            let route_index = self.routes.len() as u32;
            let keyed: Vec<_> = compiled
                .specificity
                .iter()
                .enumerate()
                .map(|(i, specificity)| {
                    let entry = Entry {
                        route: route_index,
                        matched: i as u32,
                    };
                    (specificity.clone(), entry)
                })
                .collect();
            builder.add(
                &route.hostnames,
                route.id.kind.single_label_wildcards(),
                &keyed,
            );
            self.routes.push(compiled);
        }
        builder
    }

    /// Finds the route for a request arriving on `socket`. Allocation-free.
    pub fn lookup(&self, socket: SocketAddr, req: &RequestView<'_>) -> Option<Hit<'_>> {
        let index = self.listener(socket, req.host)?;
        self.lookup_in(socket, index, req)
    }

    /// The HTTP listener of `socket` that owns `host` (its socket-level
    /// index): exact hostname, longest wildcard, then the hostname-less one.
    pub fn listener(&self, socket: SocketAddr, host: &str) -> Option<usize> {
        self.sockets.get(&socket)?.select(host)
    }

    /// Finds the route among the routes of listener `index` of `socket`.
    pub fn lookup_in(
        &self,
        socket: SocketAddr,
        index: usize,
        req: &RequestView<'_>,
    ) -> Option<Hit<'_>> {
        let listener = self.sockets.get(&socket)?.listeners.get(&index)?;
        let entry = listener.find(&self.routes, req)?;
        let route = self.routes.get(entry.route as usize)?.as_ref();
        Some(Hit {
            listener: index,
            listener_name: &listener.name,
            backend_identity: listener.backend_identity.as_ref(),
            route_index: entry.route as usize,
            route,
            matched: route.matches.get(entry.matched as usize)?,
        })
    }

    /// Listener `index` of `socket`, as access-log records name it.
    pub(crate) fn listener_tag(
        &self,
        socket: SocketAddr,
        index: usize,
    ) -> Option<&Arc<ListenerTag>> {
        self.sockets
            .get(&socket)?
            .listeners
            .get(&index)?
            .tag
            .as_ref()
    }

    pub fn route(&self, index: usize) -> Option<&CompiledRoute> {
        self.routes.get(index).map(Arc::as_ref)
    }

    pub fn has_socket(&self, socket: SocketAddr) -> bool {
        self.sockets.contains_key(&socket)
    }
}
