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

mod access_log;
mod auth;
mod backend_tls;
mod balance;
mod breaker;
mod breaker_metrics;
mod cluster;
mod compile;
mod connect_timing;
mod global_rate_limiter;
mod h2_pool;
mod handler;
pub mod http;
mod l4;
pub mod listen;
mod metrics;
mod mirror;
mod overload;
mod pipeline;
mod rate_limiter;
mod redis;
mod rejections;
mod retry;
mod retry_budget;
mod route;
pub mod router;
pub mod trace;
mod upstream;
mod weighted;

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError}; // lock-ok: the draining list and route cache are touched only by apply() and shutdown()
use std::time::Duration;

use arc_swap::ArcSwap;
use coxswain_ir::{Config, Transport, UnboundSocket};
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use crate::access_log::{
    AccessLogFormat, AccessLogOptions, AccessLogTarget, open as open_access_log,
};
pub use crate::http::normalize::{EscapedSlashes, PathOptions};

pub use crate::http::headers::ForwardedTrust;
pub use crate::http::limits::{H2Limits, HttpLimits};
use access_log::AccessLog;
use handler::Shared;
pub use l4::udp::UdpOptions;
pub use overload::OverloadLimits;

use compile::{Compiled, Plan, SocketKey};
use l4::tcp::TcpTimeouts;
use listen::{ListenerTask, SocketPlan};
use metrics::Metrics;
pub use pipeline::{Phase, PlannedStage};
pub use route::{CompiledRoute, route_label};
use router::RouteCache;

/// How long shutdown waits for the last spans to be exported.
const SHUTDOWN_FLUSH: Duration = Duration::from_secs(5);

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
    /// A TCP or TLS connection, or an upgraded HTTP connection (WebSocket),
    /// with no bytes either way for this long is closed.
    pub tcp_idle_timeout: Duration,
    pub udp: UdpOptions,
    pub http: HttpLimits,
    pub overload: OverloadLimits,
    /// Whose X-Forwarded-* headers are believed (default: nobody's).
    pub forwarded: ForwardedTrust,
    /// Pass a verified client certificate's identity to backends in
    /// `x-forwarded-client-cert` (a client's own is always removed).
    pub forward_client_cert: bool,
    /// OpenTelemetry tracing; `None` leaves trace headers untouched.
    pub tracing: Option<trace::TracingOptions>,
    pub access_log: AccessLogOptions,
    /// Responses carry the request's `x-request-id`.
    pub echo_request_id: bool,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        ProxyOptions {
            drain_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(1),
            path: PathOptions::default(),
            tcp_idle_timeout: Duration::from_secs(3600),
            udp: UdpOptions::default(),
            http: HttpLimits::default(),
            overload: OverloadLimits::default(),
            forwarded: ForwardedTrust::default(),
            forward_client_cert: false,
            tracing: None,
            access_log: AccessLogOptions::default(),
            echo_request_id: false,
        }
    }
}

/// What happened when a config was applied.
#[derive(Clone, Debug, Default)]
pub struct ApplyReport {
    /// Sockets now listening (new and kept), TCP and UDP.
    pub bound: Vec<SocketAddr>,
    /// Sockets that could not be bound, with the OS error.
    pub failed: Vec<UnboundSocket>,
}

/// A UDP socket's relay task.
struct UdpTask {
    local: SocketAddr,
    table: l4::udp::SharedL4,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

enum SocketTask {
    Tcp(ListenerTask),
    Udp(UdpTask),
}

impl SocketTask {
    fn local(&self) -> SocketAddr {
        match self {
            SocketTask::Tcp(t) => t.local,
            SocketTask::Udp(t) => t.local,
        }
    }

    /// Stops it; TCP sockets drain their connections, UDP sessions end.
    fn stop(self) -> JoinHandle<()> {
        match self {
            SocketTask::Tcp(t) => t.stop(),
            SocketTask::Udp(t) => {
                let _ = t.stop.send(());
                t.task
            }
        }
    }
}

/// A socket bound for a new config, not yet serving.
enum Bound {
    Tcp(TcpListener),
    Udp(UdpSocket),
}

struct Inner {
    options: ProxyOptions,
    shared: Arc<Shared>,
    config: ArcSwap<Config>,
    /// Serialises apply/shutdown; maps configured socket -> its task.
    sockets: tokio::sync::Mutex<HashMap<SocketKey, SocketTask>>,
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
        let upstreams = Arc::new(upstream::Upstreams::new(options.connect_timeout));
        let tracer = options.tracing.as_ref().and_then(|opts| {
            trace::Tracer::start(opts, metrics.tracing.clone())
                .inspect_err(|e| tracing::error!(error = %e, "tracing disabled"))
                .ok()
        });
        let access_log = AccessLog::start(&options.access_log, metrics.access_log.clone());
        let shared = Shared {
            tracer,
            mirrors: mirror::Mirrors::new(upstreams.clone(), access_log.clone()),
            upstreams,
            unmatched: metrics.route("").upstream(""),
            unmatched_route: metrics.route(""),
            path: options.path,
            forwarded: options.forwarded.clone(),
            forward_client_cert: options.forward_client_cert,
            upgrade_idle: options.tcp_idle_timeout,
            http: crate::http::server::builder(&options.http),
            http1: crate::http::server::http1_builder(&options.http),
            limits: options.http.clone(),
            overload: overload::Overload::new(options.overload),
            access_log,
            echo_request_id: options.echo_request_id,
            metrics,
        };
        Proxy {
            inner: Arc::new(Inner {
                options,
                shared: Arc::new(shared),
                config: ArcSwap::from_pointee(Config::default()),
                sockets: tokio::sync::Mutex::new(HashMap::new()),
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
        // Compiling 10k routes takes a while: keep it off the async workers.
        let compiled = {
            let (config, metrics) = (config.clone(), inner.shared.metrics.clone());
            let cache = inner.route_cache.clone();
            tokio::task::spawn_blocking(move || {
                let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
                Compiled::new(&config, &metrics, &mut cache)
            })
            .await
        };
        let compiled = match compiled {
            Ok(compiled) => compiled,
            Err(e) => {
                tracing::error!(error = %e, "config compilation failed; keeping the old config");
                return ApplyReport::default();
            }
        };
        let mut sockets = inner.sockets.lock().await;
        let desired: BTreeSet<SocketKey> = compiled.plans.keys().copied().collect();

        let mut report = ApplyReport::default();
        let mut fresh = Vec::new();
        for &key in desired.iter().filter(|k| !sockets.contains_key(k)) {
            let (transport, addr) = key;
            let bound = match transport {
                Transport::Tcp => TcpListener::bind(addr).await.map(Bound::Tcp),
                Transport::Udp => UdpSocket::bind(addr).await.map(Bound::Udp),
            };
            match bound {
                Ok(bound) => fresh.push((key, bound)),
                Err(e) => {
                    tracing::warn!(%addr, ?transport, error = %e, "bind failed");
                    report.failed.push(UnboundSocket {
                        transport,
                        address: addr,
                        error: e.to_string(),
                    });
                }
            }
        }
        let removed: Vec<SocketKey> = sockets
            .keys()
            .filter(|k| !desired.contains(k))
            .copied()
            .collect();
        for key in removed {
            if let Some(task) = sockets.remove(&key) {
                tracing::info!(addr = %key.1, transport = ?key.0, "listener removed; draining");
                let handle = task.stop();
                let mut draining = inner
                    .draining
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                draining.retain(|h| !h.is_finished());
                draining.push(handle);
            }
        }

        // Kept sockets switch atomically; removed ones keep draining on
        // the tables they had.
        for (key, task) in sockets.iter() {
            match (task, compiled.plans.get(key)) {
                (SocketTask::Tcp(t), Some(Plan::Tcp(plan))) => {
                    t.plan.store(plan.clone());
                    t.table.store(compiled.router.clone());
                }
                (SocketTask::Udp(t), Some(Plan::Udp(table))) => t.table.store(table.clone()),
                _ => {}
            }
        }
        inner.config.store(config);
        for (key, bound) in fresh {
            let task = self.spawn(key, bound, &compiled);
            sockets.insert(key, task);
        }
        report.bound = desired
            .iter()
            .filter_map(|k| sockets.get(k).map(SocketTask::local))
            .collect();
        let metrics = &inner.shared.metrics;
        metrics.forget_unused();
        metrics.config_applies.fetch_add(1, Ordering::Relaxed);
        report
    }

    fn spawn(&self, key: SocketKey, bound: Bound, compiled: &Compiled) -> SocketTask {
        let inner = &self.inner;
        let plan = compiled.plans.get(&key);
        match bound {
            Bound::Tcp(listener) => {
                let plan = match plan {
                    Some(Plan::Tcp(p)) => p.clone(),
                    _ => Arc::new(SocketPlan::http()),
                };
                let timeouts = TcpTimeouts {
                    connect: inner.options.connect_timeout,
                    idle: inner.options.tcp_idle_timeout,
                };
                SocketTask::Tcp(listen::spawn(
                    listener,
                    key.1,
                    inner.shared.clone(),
                    Arc::new(ArcSwap::new(compiled.router.clone())),
                    Arc::new(ArcSwap::new(plan)),
                    (inner.options.drain_timeout, timeouts),
                ))
            }
            Bound::Udp(socket) => {
                let table = match plan {
                    Some(Plan::Udp(t)) => t.clone(),
                    _ => Arc::default(),
                };
                let table = Arc::new(ArcSwap::new(table));
                let local = socket.local_addr().unwrap_or(key.1);
                let (stop, stopped) = oneshot::channel();
                let task = tokio::spawn(l4::udp::serve(
                    Arc::new(socket),
                    table.clone(),
                    inner.options.udp,
                    stopped,
                    inner.shared.access_log.clone(),
                ));
                SocketTask::Udp(UdpTask {
                    local,
                    table,
                    stop,
                    task,
                })
            }
        }
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
            let mut sockets = self.inner.sockets.lock().await;
            sockets.drain().map(|(_, task)| task.stop()).collect()
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
        if let Some(tracer) = &self.inner.shared.tracer {
            tracer.flush(SHUTDOWN_FLUSH).await;
        }
    }
}

/// Entry points for the fuzz targets in `fuzz/` (not an API: it exposes
/// private pieces exactly as the hot path uses them).
#[doc(hidden)]
pub mod fuzzing {
    use coxswain_ir::HeaderModifier;
    use http::HeaderMap;

    /// A route's header edits applied to `headers`, compiled as the router
    /// compiles them.
    pub fn apply_header_edits(modifier: &HeaderModifier, headers: &mut HeaderMap) {
        crate::pipeline::headers::HeaderEdits::compile(modifier).apply(headers);
    }
}
