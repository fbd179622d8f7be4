//! The data plane. Serves HTTP/1.1 and h2c from a [`coxswain_ir::Config`]:
//! compiles it into lookup tables off the hot path and swaps them in
//! atomically. Depends on the IR only — never on Gateway API types or kube.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use coxswain_ir::Config;

/// Tunables that are not part of the routing config.
#[derive(Clone, Debug)]
pub struct ProxyOptions {
    /// How long in-flight requests may run after shutdown begins or after
    /// their listener is removed.
    pub drain_timeout: Duration,
    /// Connect timeout for upstream connections.
    pub connect_timeout: Duration,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        ProxyOptions {
            drain_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
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

/// A running proxy. Cheap to clone; all clones drive the same listeners.
#[derive(Clone)]
pub struct Proxy {
    _inner: Arc<()>,
}

impl Proxy {
    pub fn new(options: ProxyOptions) -> Self {
        let _ = options;
        Proxy {
            _inner: Arc::new(()),
        }
    }

    /// Compiles `config`, binds sockets it adds, closes sockets it removes
    /// (draining their connections) and atomically swaps routing tables.
    /// Requests already in flight finish on the config they started with.
    pub async fn apply(&self, config: Arc<Config>) -> ApplyReport {
        let _ = config;
        ApplyReport::default()
    }

    /// The config currently serving.
    pub fn config(&self) -> Arc<Config> {
        Arc::new(Config::default())
    }

    /// Prometheus text exposition of the proxy's metrics.
    pub fn render_metrics(&self, out: &mut String) {
        let _ = out;
    }

    /// Stops accepting, then waits up to `drain_timeout` for in-flight requests.
    pub async fn shutdown(&self) {}
}
