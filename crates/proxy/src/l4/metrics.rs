//! Per-route metrics of TLSRoutes, TCPRoutes and UDPRoutes: connections
//! (or UDP sessions) opened and active, bytes each way, connect errors and
//! UDP session evictions. Handles are resolved when a config is compiled
//! and kept across configs by route label while a config (or an open
//! connection) holds them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError}; // lock-ok: taken when a config is compiled and when metrics are rendered, never per connection

/// Counters of one L4 route rule.
#[derive(Debug, Default)]
pub struct L4RouteMetrics {
    pub opened: AtomicU64,
    pub active: AtomicI64,
    /// Client to backend.
    pub bytes_in: AtomicU64,
    /// Backend to client.
    pub bytes_out: AtomicU64,
    pub connect_errors: AtomicU64,
    /// Connections refused because no backend was usable.
    pub refused: AtomicU64,
    /// UDP sessions dropped to stay under the session cap.
    pub evictions: AtomicU64,
}

impl L4RouteMetrics {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts a connection (or session) as open until the guard drops.
    pub fn open(self: &Arc<Self>) -> ActiveGuard {
        self.opened.fetch_add(1, Ordering::Relaxed);
        self.active.fetch_add(1, Ordering::Relaxed);
        ActiveGuard(self.clone())
    }
}

/// Decrements the active gauge when a connection or session ends.
pub struct ActiveGuard(Arc<L4RouteMetrics>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Every L4 route's metrics by label.
#[derive(Debug, Default)]
pub struct L4Registry {
    routes: Mutex<BTreeMap<String, Arc<L4RouteMetrics>>>,
}

impl L4Registry {
    pub fn route(&self, label: &str) -> Arc<L4RouteMetrics> {
        let mut map = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(label.to_string()).or_default().clone()
    }

    /// Forgets the routes neither a config nor an open connection holds.
    pub fn forget_unused(&self) {
        crate::metrics::retain_held(
            &mut self.routes.lock().unwrap_or_else(PoisonError::into_inner),
        );
    }

    pub fn render(&self, out: &mut String) {
        let routes: Vec<(String, Arc<L4RouteMetrics>)> = self
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if routes.is_empty() {
            return;
        }
        type Read = fn(&L4RouteMetrics) -> i64;
        let series: [(&str, &str, &str, Read); 5] = [
            (
                "coxswain_proxy_l4_connections_total",
                "counter",
                "Connections (UDP: sessions) opened, by L4 route.",
                |m| m.opened.load(Ordering::Relaxed) as i64,
            ),
            (
                "coxswain_proxy_l4_active_connections",
                "gauge",
                "Connections (UDP: sessions) open now, by L4 route.",
                |m| m.active.load(Ordering::Relaxed),
            ),
            (
                "coxswain_proxy_l4_connect_errors_total",
                "counter",
                "Backend connections that failed, by L4 route.",
                |m| m.connect_errors.load(Ordering::Relaxed) as i64,
            ),
            (
                "coxswain_proxy_l4_refused_total",
                "counter",
                "Connections closed because no backend was usable, by L4 route.",
                |m| m.refused.load(Ordering::Relaxed) as i64,
            ),
            (
                "coxswain_proxy_udp_session_evictions_total",
                "counter",
                "UDP sessions evicted to stay under the session cap, by route.",
                |m| m.evictions.load(Ordering::Relaxed) as i64,
            ),
        ];
        for (name, kind, help, read) in series {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (label, m) in &routes {
                let _ = writeln!(out, "{name}{{route=\"{label}\"}} {}", read(m));
            }
        }
        let name = "coxswain_proxy_l4_bytes_total";
        let _ = writeln!(
            out,
            "# HELP {name} Bytes relayed, by L4 route and direction.\n# TYPE {name} counter"
        );
        for (label, m) in &routes {
            for (direction, value) in [("in", &m.bytes_in), ("out", &m.bytes_out)] {
                let _ = writeln!(
                    out,
                    "{name}{{route=\"{label}\",direction=\"{direction}\"}} {}",
                    value.load(Ordering::Relaxed)
                );
            }
        }
    }
}
