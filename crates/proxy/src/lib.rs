//! The data plane. Serves HTTP/1.1 and h2c (and both over TLS, the listener
//! chosen by SNI) from a [`coxswain_ir::Config`]:
//! compiles it into lookup tables off the hot path and swaps them in
//! atomically. Depends on the IR only — never on Gateway API types or kube.

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

mod forward;
mod h2c_pool;
mod handler;
pub mod http;
pub mod listen;
mod metrics;
mod rejections;
mod route;
pub mod router;
mod upstream;

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError}; // lock-ok: the draining list and route cache are touched only by apply() and shutdown()
use std::time::Duration;

use arc_swap::ArcSwap;
use coxswain_ir::{Config, Transport};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use crate::http::normalize::{EscapedSlashes, PathOptions};

use handler::Shared;
use listen::{ListenerTask, SocketPlan};
use metrics::Metrics;
pub use route::CompiledRoute;
use router::{RouteCache, Router};

/// Tunables that are not part of the routing config.
#[derive(Clone, Debug)]
pub struct ProxyOptions {
    /// How long in-flight requests may run after shutdown begins or after
    /// their listener is removed.
    pub drain_timeout: Duration,
    /// Connect timeout for upstream connections.
    pub connect_timeout: Duration,
    /// How request paths are normalised before matching.
    pub path: PathOptions,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        ProxyOptions {
            drain_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            path: PathOptions::default(),
        }
    }
}

/// What happened when a config was applied.
#[derive(Clone, Debug, Default)]
pub struct ApplyReport {
    /// Sockets now listening (new and kept).
    pub bound: Vec<SocketAddr>,
    /// Sockets that could not be bound, with the OS error.
    pub failed: Vec<(SocketAddr, String)>,
}

struct Inner {
    options: ProxyOptions,
    shared: Arc<Shared>,
    config: ArcSwap<Config>,
    /// Serialises apply/shutdown; maps configured socket -> accept loop.
    listeners: tokio::sync::Mutex<HashMap<SocketAddr, ListenerTask>>,
    /// Accept loops of removed sockets that are still draining.
    draining: Mutex<Vec<JoinHandle<()>>>,
    /// Routes compiled for the last config, reused by the next apply.
    route_cache: Arc<Mutex<RouteCache>>,
}

/// A running proxy. Cheap to clone; all clones drive the same listeners.
#[derive(Clone)]
pub struct Proxy {
    inner: Arc<Inner>,
}

impl Proxy {
    pub fn new(options: ProxyOptions) -> Self {
        let metrics = Arc::new(Metrics::default());
        let shared = Shared {
            upstreams: upstream::Upstreams::new(options.connect_timeout),
            unmatched: metrics.route("").upstream(""),
            path: options.path,
            metrics,
        };
        Proxy {
            inner: Arc::new(Inner {
                options,
                shared: Arc::new(shared),
                config: ArcSwap::from_pointee(Config::default()),
                listeners: tokio::sync::Mutex::new(HashMap::new()),
                draining: Mutex::new(Vec::new()),
                route_cache: Arc::default(),
            }),
        }
    }

    /// Compiles `config`, binds sockets it adds, closes sockets it removes
    /// (draining their connections) and atomically swaps routing tables.
    /// Requests already in flight finish on the config they started with.
    pub async fn apply(&self, config: Arc<Config>) -> ApplyReport {
        let inner = &self.inner;
        let shared = &inner.shared;
        // Compiling 10k routes takes a while: keep it off the async workers.
        let compiled = {
            let (config, metrics) = (config.clone(), shared.metrics.clone());
            let cache = inner.route_cache.clone();
            tokio::task::spawn_blocking(move || {
                let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
                Router::compile_reusing(&config, &metrics, &mut cache)
            })
            .await
        };
        let router = match compiled {
            Ok(router) => router,
            Err(e) => {
                tracing::error!(error = %e, "config compilation failed; keeping the old config");
                return ApplyReport::default();
            }
        };
        let mut listeners = inner.listeners.lock().await;
        let desired: BTreeSet<SocketAddr> = config
            .sockets
            .iter()
            .filter(|s| s.transport == Transport::Tcp)
            .map(|s| s.addr())
            .collect();

        let mut report = ApplyReport::default();
        let mut fresh = Vec::new();
        for &addr in desired.iter().filter(|a| !listeners.contains_key(a)) {
            match TcpListener::bind(addr).await {
                Ok(listener) => fresh.push((addr, listener)),
                Err(e) => {
                    tracing::warn!(%addr, error = %e, "bind failed");
                    report.failed.push((addr, e.to_string()));
                }
            }
        }
        let removed: Vec<SocketAddr> = listeners
            .keys()
            .filter(|a| !desired.contains(a))
            .copied()
            .collect();
        for addr in removed {
            if let Some(task) = listeners.remove(&addr) {
                tracing::info!(%addr, "listener removed; draining");
                let handle = task.stop();
                let mut draining = inner
                    .draining
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                draining.retain(|h| !h.is_finished());
                draining.push(handle);
            }
        }

        // Kept listeners switch atomically; removed ones keep draining on
        // the table they had.
        let plans: HashMap<SocketAddr, Arc<SocketPlan>> = config
            .sockets
            .iter()
            .filter(|s| s.transport == Transport::Tcp)
            .map(|s| (s.addr(), Arc::new(SocketPlan::of(s))))
            .collect();
        let plan_of = |addr: &SocketAddr| {
            plans
                .get(addr)
                .cloned()
                .unwrap_or_else(|| Arc::new(SocketPlan::Http))
        };
        let router = Arc::new(router);
        for (addr, task) in listeners.iter() {
            task.plan.store(plan_of(addr));
            task.table.store(router.clone());
        }
        inner.config.store(config);
        for (addr, listener) in fresh {
            let table = Arc::new(ArcSwap::new(router.clone()));
            let plan = Arc::new(ArcSwap::new(plan_of(&addr)));
            let task = listen::spawn(
                listener,
                addr,
                shared.clone(),
                table,
                plan,
                inner.options.drain_timeout,
            );
            listeners.insert(addr, task);
        }
        report.bound = desired
            .iter()
            .filter_map(|a| listeners.get(a).map(|t| t.local))
            .collect();
        shared
            .metrics
            .config_applies
            .fetch_add(1, Ordering::Relaxed);
        report
    }

    /// The config currently serving.
    pub fn config(&self) -> Arc<Config> {
        self.inner.config.load_full()
    }

    /// Prometheus text exposition of the proxy's metrics.
    pub fn render_metrics(&self, out: &mut String) {
        self.inner.shared.metrics.render(out);
    }

    /// Stops accepting, then waits up to `drain_timeout` for in-flight requests.
    pub async fn shutdown(&self) {
        let mut handles: Vec<JoinHandle<()>> = {
            let mut listeners = self.inner.listeners.lock().await;
            listeners.drain().map(|(_, task)| task.stop()).collect()
        };
        handles.extend(
            self.inner
                .draining
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .drain(..),
        );
        for handle in handles {
            let _ = handle.await;
        }
    }
}
