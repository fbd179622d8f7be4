//! Prometheus metrics. Handles are resolved per route at compile time, keyed
//! by the route label, so counts survive config swaps and a request only
//! touches atomics it already holds. A handle no config holds any more is
//! forgotten at the next apply (`Metrics::forget_unused`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError}; // lock-ok: taken at config compile time and for rare status codes outside the per-route atomic slots
use std::time::Duration;

use crate::http::grpc_status::GrpcStatusCounters;
use crate::l4::metrics::L4Registry;
use crate::rejections::Rejections;

/// Histogram bucket upper bounds in seconds.
const BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Status codes counted with a dedicated atomic; anything else takes a lock.
const COMMON_STATUSES: [u16; 16] = [
    200, 201, 204, 301, 302, 303, 304, 307, 308, 400, 403, 404, 500, 502, 503, 504,
];

/// Requests by status for one (route, upstream).
#[derive(Debug, Default)]
pub struct StatusCounters {
    common: [AtomicU64; COMMON_STATUSES.len()],
    other: Mutex<BTreeMap<u16, u64>>,
}

impl StatusCounters {
    pub fn record(&self, status: u16) {
        match COMMON_STATUSES.iter().position(|&s| s == status) {
            Some(i) => {
                if let Some(counter) = self.common.get(i) {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => {
                let mut other = self.other.lock().unwrap_or_else(PoisonError::into_inner);
                *other.entry(status).or_default() += 1;
            }
        }
    }

    fn snapshot(&self) -> BTreeMap<u16, u64> {
        let mut all = self
            .other
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for (status, counter) in COMMON_STATUSES.iter().zip(&self.common) {
            let n = counter.load(Ordering::Relaxed);
            if n > 0 {
                all.insert(*status, n);
            }
        }
        all
    }
}

#[derive(Debug, Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

/// Metric handles for one route label.
#[derive(Debug, Default)]
pub struct RouteMetrics {
    duration: Histogram,
    /// gRPC calls by `grpc-status`, made on the route's first gRPC call
    /// (144 bytes most routes never need).
    grpc: OnceLock<Box<GrpcStatusCounters>>,
    /// Upstream name -> counters, sorted by name; locked when a route is
    /// compiled and on a backend's first response. A
    /// list, not a map: a route has one or two, and a map's first node
    /// alone is ~370 bytes for every route.
    upstreams: Mutex<Vec<(Box<str>, Arc<StatusCounters>)>>,
}

impl RouteMetrics {
    pub fn observe(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        let h = &self.duration;
        // One atomic per request: buckets are stored non-cumulative and
        // summed when rendering.
        if let Some(bucket) = BUCKETS
            .iter()
            .position(|bound| secs <= *bound)
            .and_then(|i| h.buckets.get(i))
        {
            bucket.fetch_add(1, Ordering::Relaxed);
        }
        h.count.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        h.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// The route's gRPC call counters.
    pub fn grpc(&self) -> &GrpcStatusCounters {
        self.grpc.get_or_init(Box::default)
    }

    /// The counters for `upstream`, if they were made.
    pub fn existing_upstream(&self, upstream: &str) -> Option<Arc<StatusCounters>> {
        let list = self
            .upstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let found = list.binary_search_by(|(name, _)| (**name).cmp(upstream));
        found.ok().and_then(|i| list.get(i)).map(|(_, c)| c.clone())
    }

    /// Counters for responses attributed to `upstream` ("" when none).
    pub fn upstream(&self, upstream: &str) -> Arc<StatusCounters> {
        let mut list = self
            .upstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match list.binary_search_by(|(name, _)| (**name).cmp(upstream)) {
            Ok(found) => list.get(found).map(|(_, c)| c.clone()).unwrap_or_default(),
            Err(at) => {
                let counters = Arc::new(StatusCounters::default());
                // Grown one at a time: a route has one or two upstreams.
                list.reserve_exact(1);
                list.insert(at, (upstream.into(), counters.clone()));
                counters
            }
        }
    }
}

/// The proxy's metric registry.
#[derive(Debug, Default)]
pub struct Metrics {
    routes: Mutex<BTreeMap<String, Arc<RouteMetrics>>>,
    pub connect_errors: AtomicU64,
    /// Upstream attempts made again (a route's retry policy, or a refused
    /// connection).
    pub retries: AtomicU64,
    /// Retries a retry budget refused (answered 503).
    pub retry_budget_exhausted: AtomicU64,
    pub config_applies: AtomicU64,
    /// HTTP routes compiled (not reused from the previous config).
    pub routes_compiled: AtomicU64,
    /// Idle HTTP/1.1 connections holding no HTTP buffers ([`crate::http::park`]).
    pub http1_parked: AtomicU64,
    pub rejections: Rejections,
    pub l4: L4Registry,
    pub upgrades: crate::http::upgrade::UpgradeMetrics,
    pub mirrors: crate::mirror::MirrorMetrics,
    pub breakers: crate::breaker_metrics::BreakerMetrics,
    /// Global RateLimit checks the store did not answer, by what the
    /// request got.
    pub rate_limit_store: Arc<StoreErrors>,
    pub proxy_protocol: crate::listen::ProxyProtocolMetrics,
    pub tracing: Arc<crate::trace::TraceMetrics>,
    /// Access-log records never written.
    pub access_log: Arc<crate::access_log::LogCounters>,
}

/// Requests a global RateLimit's store failed (down, unreachable, slower
/// than the timeout), counted by what `onStoreUnavailable` made of them.
#[derive(Debug, Default)]
pub struct StoreErrors {
    pub allowed: AtomicU64,
    pub denied: AtomicU64,
}

impl StoreErrors {
    fn render(&self, out: &mut String) {
        let name = "coxswain_proxy_ratelimit_store_errors_total";
        let _ = writeln!(
            out,
            "# HELP {name} Global RateLimit checks the store did not answer, by what the request got (onStoreUnavailable).\n# TYPE {name} counter"
        );
        for (decision, n) in [("allowed", &self.allowed), ("denied", &self.denied)] {
            let _ = writeln!(
                out,
                "{name}{{decision=\"{decision}\"}} {}",
                n.load(Ordering::Relaxed)
            );
        }
    }
}

impl Metrics {
    /// The handle for `label`, created on first use and kept across configs
    /// for as long as one holds it.
    pub fn route(&self, label: &str) -> Arc<RouteMetrics> {
        let mut map = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(label.to_string()).or_default().clone()
    }

    /// The handles of `label`'s series, if they were made.
    pub fn existing_route(&self, label: &str) -> Option<Arc<RouteMetrics>> {
        let map = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(label).cloned()
    }

    /// Drops the handles only the registries still hold: the series of a
    /// route (or mirror) that left the config go, so route churn under new
    /// names cannot grow `/metrics` and memory without bound. Called after
    /// a config is swapped in; the new config already holds every handle
    /// it uses, and a route that comes back later starts from zero.
    pub fn forget_unused(&self) {
        retain_held(&mut self.routes.lock().unwrap_or_else(PoisonError::into_inner));
        self.l4.forget_unused();
        self.mirrors.forget_unused();
    }

    pub fn render(&self, out: &mut String) {
        let routes: Vec<(String, Arc<RouteMetrics>)> = self
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.push_str("# HELP coxswain_proxy_requests_total Requests served, by route, status and upstream.\n");
        out.push_str("# TYPE coxswain_proxy_requests_total counter\n");
        for (label, metrics) in &routes {
            let upstreams = metrics
                .upstreams
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            for (upstream, counters) in upstreams {
                for (status, n) in counters.snapshot() {
                    let _ = writeln!(
                        out,
                        "coxswain_proxy_requests_total{{route=\"{}\",status=\"{status}\",upstream=\"{}\"}} {n}",
                        escape(label),
                        escape(&upstream)
                    );
                }
            }
        }
        out.push_str("# HELP coxswain_proxy_request_duration_seconds Time until response headers, by route.\n");
        out.push_str("# TYPE coxswain_proxy_request_duration_seconds histogram\n");
        for (label, metrics) in &routes {
            render_histogram(out, &escape(label), &metrics.duration);
        }
        out.push_str("# HELP coxswain_proxy_grpc_requests_total gRPC calls by route and grpc-status (none: ended without one).\n");
        out.push_str("# TYPE coxswain_proxy_grpc_requests_total counter\n");
        for (label, metrics) in &routes {
            if let Some(grpc) = metrics.grpc.get() {
                grpc.render(out, &escape(label));
            }
        }
        let counters = [
            (
                "coxswain_proxy_upstream_connect_errors_total",
                "Upstream connections that failed.",
                &self.connect_errors,
            ),
            (
                "coxswain_proxy_upstream_retries_total",
                "Upstream attempts made again (retry policy, or a refused connection).",
                &self.retries,
            ),
            (
                "coxswain_proxy_upstream_retry_budget_exhausted_total",
                "Retries refused because the backend's retry budget was spent (answered 503).",
                &self.retry_budget_exhausted,
            ),
            (
                "coxswain_proxy_config_applies_total",
                "Configs applied.",
                &self.config_applies,
            ),
            (
                "coxswain_proxy_routes_compiled_total",
                "HTTP routes compiled for a new config (routes and clusters left as they were are reused).",
                &self.routes_compiled,
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                value.load(Ordering::Relaxed)
            );
        }
        let name = "coxswain_proxy_http1_parked_connections";
        let _ = writeln!(
            out,
            "# HELP {name} Idle HTTP/1.1 client connections whose read and write buffers are released until their next request.\n# TYPE {name} gauge\n{name} {}",
            self.http1_parked.load(Ordering::Relaxed)
        );
        self.rejections.render(out);
        self.l4.render(out);
        self.upgrades.render(out);
        self.mirrors.render(out);
        self.breakers.render(out);
        self.rate_limit_store.render(out);
        self.proxy_protocol.render(out);
        self.tracing.render(out);
        self.access_log.render(out);
    }
}

fn render_histogram(out: &mut String, label: &str, h: &Histogram) {
    let count = h.count.load(Ordering::Relaxed);
    if count == 0 {
        return;
    }
    let name = "coxswain_proxy_request_duration_seconds";
    let mut cumulative = 0u64;
    for (bound, bucket) in BUCKETS.iter().zip(&h.buckets) {
        cumulative += bucket.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "{name}_bucket{{route=\"{label}\",le=\"{bound}\"}} {cumulative}"
        );
    }
    let _ = writeln!(
        out,
        "{name}_bucket{{route=\"{label}\",le=\"+Inf\"}} {count}"
    );
    let sum = h.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
    let _ = writeln!(out, "{name}_sum{{route=\"{label}\"}} {sum}");
    let _ = writeln!(out, "{name}_count{{route=\"{label}\"}} {count}");
}

/// Keeps the entries someone besides `map` holds.
pub(crate) fn retain_held<K: Ord, V>(map: &mut BTreeMap<K, Arc<V>>) {
    map.retain(|_, handle| Arc::strong_count(handle) > 1);
}

/// Escapes a Prometheus label value.
pub fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_renders_cumulative_buckets() {
        let metrics = Metrics::default();
        let route = metrics.route("ns/r/0");
        route.observe(Duration::from_micros(500));
        route.observe(Duration::from_millis(30));
        route.observe(Duration::from_secs(60));
        route.upstream("svc").record(200);
        route.upstream("svc").record(418);
        let mut out = String::new();
        metrics.render(&mut out);
        let name = "coxswain_proxy_request_duration_seconds";
        assert!(out.contains(&format!("{name}_bucket{{route=\"ns/r/0\",le=\"0.001\"}} 1")));
        assert!(out.contains(&format!("{name}_bucket{{route=\"ns/r/0\",le=\"0.05\"}} 2")));
        assert!(out.contains(&format!("{name}_bucket{{route=\"ns/r/0\",le=\"10\"}} 2")));
        assert!(out.contains(&format!("{name}_bucket{{route=\"ns/r/0\",le=\"+Inf\"}} 3")));
        assert!(out.contains(
            r#"coxswain_proxy_requests_total{route="ns/r/0",status="418",upstream="svc"} 1"#
        ));
    }
}
