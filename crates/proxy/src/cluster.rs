//! Upstream clusters compiled for serving: endpoints with their balancing
//! state, the CoxswainBackendPolicy's algorithm, breakers and timeouts,
//! and TLS to them when a BackendTLSPolicy applies.
//!
//! The clusters are a registry kept across reloads. A cluster whose
//! settings (everything but its endpoints) did not change is the very same
//! object in the new config, with its endpoint list swapped in place: the
//! routes that send to it need no recompiling, and each endpoint that stays
//! keeps its breaker, in-flight count and latency average. A cluster whose
//! settings changed is rebuilt, keeping what still applies (endpoint state
//! under the same policy, TLS clients under the same TLS settings).

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use coxswain_ir::{BackendPolicy, Cluster, Config, UpstreamProtocol};
use tokio::time::Instant;

use crate::backend_tls::ClusterTls;
use crate::balance::{Balance, Endpoint, Pick, RequestKey, Stickiness};
use crate::breaker::CircuitBreaker;
use crate::breaker_metrics::BreakerMetrics;
use crate::retry_budget::RetryBudget;
use crate::upstream::Upstreams;

/// How long an idle pooled HTTP/1.1 connection is kept without a policy.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(90);

/// An upstream cluster and its balancing state.
#[derive(Debug)]
pub struct ClusterState {
    pub name: String,
    pub protocol: UpstreamProtocol,
    /// `None`: plain text.
    pub tls: Option<ClusterTls>,
    /// Swapped in place when only the endpoints change.
    endpoints: ArcSwap<Vec<Arc<Endpoint>>>,
    /// The IR cluster without its endpoints: what decides whether the next
    /// config's cluster of this name is this one.
    settings: Cluster,
    balance: Balance,
    policy: Option<BackendPolicy>,
    /// Clients with the policy's timeouts, made on first use; unused (and
    /// the shared clients serve) when the policy sets no timeout.
    own: Arc<OnceLock<Upstreams>>,
    /// For the L4 and mirror paths, which take endpoints in plain order.
    next: AtomicUsize,
    /// The XBackendTrafficPolicy retry budget, counted across reloads that
    /// keep it.
    retry_budget: Option<Arc<RetryBudget>>,
}

impl ClusterState {
    /// An endpoint for one request attempt (see [`Balance::pick`]).
    pub fn pick(
        &self,
        key: &RequestKey<'_>,
        tried: &[SocketAddr],
        stickiness: Stickiness,
        now: Instant,
    ) -> Pick {
        self.balance
            .pick(&self.endpoints.load(), key, tried, stickiness, now)
    }

    /// Does an endpoint with this address hash belong to the cluster now?
    pub fn has_endpoint(&self, hash: u64) -> bool {
        self.endpoints.load().iter().any(|e| e.hash == hash)
    }

    /// The next endpoint by round robin; `None` when there are none.
    pub fn next_endpoint(&self) -> Option<SocketAddr> {
        let endpoints = self.endpoints.load();
        if endpoints.is_empty() {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % endpoints.len();
        endpoints.get(i).map(|e| e.address)
    }

    /// Every endpoint, starting with the next one by round robin.
    pub fn endpoints_from_next(&self) -> Vec<SocketAddr> {
        let endpoints = self.endpoints.load();
        if endpoints.is_empty() {
            return Vec::new();
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) % endpoints.len();
        let (before, after) = endpoints.split_at(start);
        after.iter().chain(before).map(|e| e.address).collect()
    }

    pub fn retry_budget(&self) -> Option<&RetryBudget> {
        self.retry_budget.as_deref()
    }

    /// The connect timeout: the policy's, else `default`.
    pub fn connect_timeout(&self, default: Duration) -> Duration {
        self.policy
            .as_ref()
            .and_then(|p| p.connect_timeout_ms)
            .map_or(default, Duration::from_millis)
    }

    fn idle_timeout(&self) -> Duration {
        self.policy
            .as_ref()
            .and_then(|p| p.idle_timeout_ms)
            .map_or(DEFAULT_IDLE, Duration::from_millis)
    }

    /// The clients requests to this cluster use: its own when its policy
    /// sets a timeout, else `shared`.
    pub fn upstreams<'a>(&'a self, shared: &'a Upstreams) -> &'a Upstreams {
        let timeouts = self
            .policy
            .as_ref()
            .is_some_and(|p| p.connect_timeout_ms.is_some() || p.idle_timeout_ms.is_some());
        if !timeouts {
            return shared;
        }
        self.own.get_or_init(|| {
            Upstreams::with_idle(
                self.connect_timeout(shared.connect_timeout),
                self.idle_timeout(),
            )
        })
    }
}

/// All clusters of one config by name.
#[derive(Debug, Default)]
pub struct ClusterSet(HashMap<String, Arc<ClusterState>>);

impl ClusterSet {
    /// Compiles the clusters of `config`, keeping state from `previous`
    /// (see the module docs). Breaker metrics of endpoints gone from every
    /// cluster are dropped.
    pub fn compile(
        config: &Config,
        previous: Option<&ClusterSet>,
        breakers: &BreakerMetrics,
    ) -> Self {
        let mut live = BTreeSet::new();
        let map = config
            .clusters
            .iter()
            .map(|c| {
                let before = previous.and_then(|p| p.get(&c.name));
                let settings = without_endpoints(c);
                let state = match before {
                    Some(b) if b.settings == settings => {
                        let endpoints = endpoints(c, Some(b), breakers, &mut live);
                        b.endpoints.store(Arc::new(endpoints));
                        b.clone()
                    }
                    _ => Arc::new(compile_cluster(
                        c,
                        settings,
                        before.map(Arc::as_ref),
                        breakers,
                        &mut live,
                    )),
                };
                (c.name.clone(), state)
            })
            .collect();
        breakers.retain(&live);
        ClusterSet(map)
    }

    /// Is every cluster of `self` the very object of the same name in
    /// `other`, and are there no others? Then routes compiled against
    /// `other` are valid for `self`.
    pub fn same_clusters(&self, other: &ClusterSet) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .all(|(name, c)| other.0.get(name).is_some_and(|o| Arc::ptr_eq(c, o)))
    }

    pub fn get(&self, name: &str) -> Option<&Arc<ClusterState>> {
        self.0.get(name)
    }
}

fn without_endpoints(c: &Cluster) -> Cluster {
    Cluster {
        endpoints: Vec::new(),
        ..c.clone()
    }
}

/// The endpoint states for `c`: those of `before` (under the same policy)
/// for addresses that stay, new ones for the rest.
fn endpoints(
    c: &Cluster,
    before: Option<&ClusterState>,
    breakers: &BreakerMetrics,
    live: &mut BTreeSet<(String, String)>,
) -> Vec<Arc<Endpoint>> {
    // By address: a large Service's reload must not compare every pair.
    let kept: HashMap<SocketAddr, Arc<Endpoint>> = before
        .filter(|b| b.policy == c.policy && b.protocol == c.protocol)
        .map(|b| {
            b.endpoints
                .load()
                .iter()
                .map(|e| (e.address, e.clone()))
                .collect()
        })
        .unwrap_or_default();
    let breaker = c.policy.as_ref().and_then(|p| p.breaker.as_ref());
    c.endpoints
        .iter()
        .map(|e| {
            if breaker.is_some() {
                live.insert((c.name.clone(), e.address.to_string()));
            }
            kept.get(&e.address).cloned().unwrap_or_else(|| {
                let b = breaker.map(|config| {
                    let counters = breakers.counters(&c.name, &e.address.to_string());
                    (CircuitBreaker::new(config), counters)
                });
                Arc::new(Endpoint::new(e.address, b))
            })
        })
        .collect()
}

fn compile_cluster(
    c: &Cluster,
    settings: Cluster,
    before: Option<&ClusterState>,
    breakers: &BreakerMetrics,
    live: &mut BTreeSet<(String, String)>,
) -> ClusterState {
    let same_policy = before.filter(|b| b.policy == c.policy && b.protocol == c.protocol);
    let kept_tls = same_policy.and_then(|s| s.tls.as_ref());
    let endpoints = endpoints(c, before, breakers, live);
    let balance = c.policy.as_ref().map_or_else(Balance::default, |p| {
        Balance::new(p.balancer.clone(), p.persistence.clone())
    });
    ClusterState {
        name: c.name.clone(),
        protocol: c.protocol,
        tls: c
            .tls
            .as_ref()
            .map(|tls| ClusterTls::compile(c, tls, kept_tls)),
        endpoints: ArcSwap::from_pointee(endpoints),
        settings,
        balance,
        policy: c.policy.clone(),
        own: same_policy.map_or_else(Arc::default, |b| b.own.clone()),
        next: AtomicUsize::new(0),
        retry_budget: c.retry_budget.as_ref().map(|config| {
            before
                .and_then(|b| b.retry_budget.clone())
                .filter(|kept| kept.config == *config)
                .unwrap_or_else(|| Arc::new(RetryBudget::new(config, Instant::now())))
        }),
    }
}
