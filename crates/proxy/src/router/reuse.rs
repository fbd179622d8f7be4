//! Compiled routes kept from the previous config: a route whose IR object is
//! the very same `Arc<Route>` (the translator keeps unchanged routes' `Arc`s)
//! and whose clusters did not change is not compiled again (no regexes
//! rebuilt, no metric handles looked up).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use coxswain_ir::{Config, Route, TlsCertificate};

use crate::backend_tls::BackendIdentity;

use crate::cluster::ClusterSet;
use crate::metrics::Metrics;
use crate::pipeline::extensions::ExtensionSet;
use crate::route::CompiledRoute;

use super::MatchError;

/// Hashes an address with one multiply: the keys are distinct pointers, so
/// a keyed hash (SipHash) would only cost time on every reload.
#[derive(Default)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(26);
    }
}

type ByAddress =
    HashMap<usize, (Arc<Route>, Arc<CompiledRoute>), BuildHasherDefault<AddressHasher>>;

/// What the last compile produced, keyed by route identity.
#[derive(Default)]
pub struct RouteCache {
    /// The clusters the cached routes resolved their backends against.
    cluster_set: Option<Arc<ClusterSet>>,
    /// The filter resources they resolved their ExtensionRefs against.
    extension_set: Option<Arc<ExtensionSet>>,
    /// By address (`Arc::as_ptr`), only ever compared; the `Arc<Route>` is
    /// held so no other route can take that address meanwhile.
    routes: ByAddress,
    /// Backend client certificates, so an unchanged one stays the same
    /// object across compiles (upstream TLS clients are keyed by it).
    /// Ones no live config holds are dropped when a compile begins.
    identities: Vec<(TlsCertificate, Arc<BackendIdentity>)>,
}

/// One compile's view of the cache: lookups hit the previous generation,
/// results go into the next one.
pub struct Reuse<'c> {
    previous: ByAddress,
    cache: &'c mut RouteCache,
    pub clusters: Arc<ClusterSet>,
    pub extensions: Arc<ExtensionSet>,
}

impl RouteCache {
    /// Starts a compile of `config`. Clusters whose settings did not
    /// change are kept (their endpoints updated in place), and filter
    /// resources whose IR did not; when every cluster and every filter
    /// resource was kept, the cached routes are reused, else none is.
    pub fn begin(&mut self, config: &Config, metrics: &Metrics) -> Reuse<'_> {
        self.identities
            .retain(|(_, identity)| Arc::strong_count(identity) > 1);
        let set = Arc::new(ClusterSet::compile(
            config,
            self.cluster_set.as_deref(),
            &metrics.breakers,
        ));
        let kept = self
            .cluster_set
            .as_ref()
            .is_some_and(|old| set.same_clusters(old));
        self.cluster_set = Some(set.clone());
        let extensions = Arc::new(ExtensionSet::compile(config, self.extension_set.as_deref()));
        let kept = kept
            && self
                .extension_set
                .as_ref()
                .is_some_and(|old| extensions.same_entries(old));
        self.extension_set = Some(extensions.clone());
        let previous = if kept {
            let capacity = self.routes.len();
            let previous = std::mem::take(&mut self.routes);
            self.routes.reserve(capacity);
            previous
        } else {
            self.routes.clear();
            ByAddress::default()
        };
        let clusters = set;
        Reuse {
            previous,
            cache: self,
            clusters,
            extensions,
        }
    }
}

impl RouteCache {
    /// The backend client certificate object for `cert`: the one already
    /// made when its content is the same.
    pub fn identity(&mut self, cert: &TlsCertificate) -> Arc<BackendIdentity> {
        if let Some((_, identity)) = self.identities.iter().find(|(c, _)| c == cert) {
            return identity.clone();
        }
        let identity = Arc::new(BackendIdentity::new(cert));
        self.identities.push((cert.clone(), identity.clone()));
        identity
    }

    /// The clusters of the config compiled last.
    pub fn clusters(&self) -> Arc<ClusterSet> {
        self.cluster_set.clone().unwrap_or_default()
    }
}

impl Reuse<'_> {
    pub fn identity(&mut self, cert: &TlsCertificate) -> Arc<BackendIdentity> {
        self.cache.identity(cert)
    }

    /// The compiled form of `route`: the previous one if it is the same
    /// object, else freshly compiled.
    pub fn compiled(
        &mut self,
        route: &Arc<Route>,
        metrics: &Arc<Metrics>,
    ) -> Result<Arc<CompiledRoute>, MatchError> {
        let ptr = Arc::as_ptr(route) as usize;
        if let Some((_, compiled)) = self.cache.routes.get(&ptr) {
            return Ok(compiled.clone());
        }
        let compiled = match self.previous.get(&ptr) {
            Some((_, compiled)) => compiled.clone(),
            None => {
                metrics.routes_compiled.fetch_add(1, Ordering::Relaxed);
                Arc::new(CompiledRoute::compile(
                    route,
                    (&self.clusters, &self.extensions),
                    metrics,
                )?)
            }
        };
        self.cache
            .routes
            .insert(ptr, (route.clone(), compiled.clone()));
        Ok(compiled)
    }
}

#[cfg(test)]
mod tests {
    use coxswain_ir::{Cluster, PathMatch, RouteId, RouteKind, RouteMatch, Timeouts};

    use super::*;

    fn route(name: &str) -> Arc<Route> {
        Arc::new(Route {
            id: RouteId {
                kind: RouteKind::Http,
                namespace: "ns".into(),
                name: name.into(),
                rule_index: 0,
                rule_name: None,
            },
            hostnames: vec![],
            matches: vec![RouteMatch {
                grpc: None,
                path: PathMatch::Regex("/a.*".into()),
                method: None,
                headers: vec![],
                query: vec![],
            }],
            filters: vec![],
            backends: vec![],
            timeouts: Timeouts::default(),
            retry: None,
            session: None,
        })
    }

    fn compile(cache: &mut RouteCache, config: &Config, route: &Arc<Route>) -> Arc<CompiledRoute> {
        let metrics = Arc::new(Metrics::default());
        cache
            .begin(config, &metrics)
            .compiled(route, &metrics)
            .unwrap()
    }

    #[test]
    fn the_same_route_object_is_compiled_once_while_clusters_stay() {
        let mut cache = RouteCache::default();
        let config = Config::default();
        let (kept, equal_copy) = (route("a"), route("a"));
        let first = compile(&mut cache, &config, &kept);
        assert!(Arc::ptr_eq(&first, &compile(&mut cache, &config, &kept)));
        // Equal content but another object: compiled afresh.
        assert!(!Arc::ptr_eq(
            &first,
            &compile(&mut cache, &config, &equal_copy)
        ));
        // The previous generation was dropped with its config.
        assert!(!Arc::ptr_eq(&first, &compile(&mut cache, &config, &kept)));

        let again = compile(&mut cache, &config, &kept);
        let mut other_clusters = Config::default();
        other_clusters.clusters.push(std::sync::Arc::new(Cluster {
            name: "c".into(),
            protocol: coxswain_ir::UpstreamProtocol::Http1,
            endpoints: vec![],
            tls: None,
            policy: None,
            retry_budget: None,
        }));
        let with_cluster = compile(&mut cache, &other_clusters, &kept);
        assert!(!Arc::ptr_eq(&again, &with_cluster), "a new cluster");
        // Only its endpoints change: the same cluster, the same route.
        let mut moved = other_clusters.clone();
        std::sync::Arc::make_mut(&mut moved.clusters[0]).endpoints = vec![coxswain_ir::Endpoint {
            address: "10.0.0.1:80".parse().unwrap(),
        }];
        assert!(Arc::ptr_eq(
            &with_cluster,
            &compile(&mut cache, &moved, &kept)
        ));
        // Its settings change: compiled afresh.
        let mut h2c = moved.clone();
        std::sync::Arc::make_mut(&mut h2c.clusters[0]).protocol =
            coxswain_ir::UpstreamProtocol::H2c;
        assert!(!Arc::ptr_eq(
            &with_cluster,
            &compile(&mut cache, &h2c, &kept)
        ));
    }
}
