//! RequestMirror: fire-and-forget copies of a sampled share of a route's
//! requests. A mirror request runs in its own task with its own deadline;
//! its response is discarded, its failure is counted and logged, and
//! neither ever reaches the client. At most [`IN_FLIGHT`] mirror requests
//! run at once, so a slow mirror backend cannot pile up work in the proxy.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError}; // lock-ok: counters are looked up at config compile time, never per request
use std::time::Duration;

use http::{HeaderMap, Method, Request, Version};
use http_body::Body as _;
use http_body_util::BodyExt;
use tokio::sync::Semaphore;

use coxswain_ir::{BackendTarget, Mirror};

use crate::access_log::{AccessLog, Record};
use crate::backend_tls::BackendIdentity;
use crate::cluster::ClusterSet;
use crate::connect_timing::ConnectTiming;
use crate::http::body::ClientBody;
use crate::http::tee::{CopyCut, CutSignal};
use crate::metrics::escape;
use crate::route::Target;
use crate::upstream::{Upstreams, Via, frame_unsized_body, upstream_uri};

/// Mirror requests in flight at once, across every route.
const IN_FLIGHT: usize = 4096;

/// How long a mirror request may take when its route sets no timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A compiled RequestMirror filter.
#[derive(Debug)]
pub struct MirrorFilter {
    pub target: Target,
    numerator: u32,
    denominator: u32,
    counters: Arc<MirrorCounters>,
}

impl MirrorFilter {
    pub fn compile(
        m: &Mirror,
        clusters: &ClusterSet,
        metrics: &MirrorMetrics,
        route: &str,
    ) -> Self {
        let target = BackendTarget::Cluster(m.cluster.clone());
        MirrorFilter {
            target: Target::resolve(&target, clusters),
            numerator: m.numerator,
            denominator: m.denominator,
            counters: metrics.counters(route, &m.cluster),
        }
    }

    /// Whether this request is one of the sampled share.
    pub fn sampled(&self) -> bool {
        if self.numerator >= self.denominator {
            return true;
        }
        self.numerator > 0 && rand::random_range(0..self.denominator) < self.numerator
    }
}

/// What a mirror request copies: the request as the rule's filters left it.
pub struct Copied<'a> {
    pub method: &'a Method,
    pub headers: &'a HeaderMap,
    pub path_and_query: &'a str,
    pub route: &'a str,
    pub timeout: Option<Duration>,
    pub identity: Option<&'a Arc<BackendIdentity>>,
}

/// Sends mirror requests in the background.
pub struct Mirrors {
    upstreams: Arc<Upstreams>,
    slots: Arc<Semaphore>,
    log: AccessLog,
}

impl Mirrors {
    pub fn new(upstreams: Arc<Upstreams>, log: AccessLog) -> Self {
        Mirrors {
            upstreams,
            slots: Arc::new(Semaphore::new(IN_FLIGHT)),
            log,
        }
    }

    /// Starts the mirror request of `filter` for `request`, with `body`
    /// (a copy, aborted when `cut` fires); `record` is its access-log
    /// record when the request is logged.
    pub fn send(
        &self,
        filter: &MirrorFilter,
        request: &Copied<'_>,
        (body, cut): (ClientBody, Option<CutSignal>),
        record: Option<Box<Record>>,
    ) {
        let mut record = record.map(|r| (r, std::time::Instant::now(), self.log.clone()));
        let counters = filter.counters.clone();
        let fail = |why: &str| {
            counters.failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(route = request.route, why, "mirror request not sent");
        };
        let Target::Cluster(cluster) = &filter.target else {
            return fail("invalid mirror backend");
        };
        let Ok(slot) = self.slots.clone().try_acquire_owned() else {
            return fail("too many mirror requests in flight");
        };
        let Some(endpoint) = cluster.next_endpoint() else {
            return fail("no healthy mirror upstream");
        };
        if let Some((r, _, _)) = &mut record {
            r.upstream = Some(endpoint);
        }
        let connect_timeout = cluster.connect_timeout(self.upstreams.connect_timeout);
        let via = match Via::for_cluster(cluster, request.identity, connect_timeout) {
            Ok(via) => via,
            Err(_) => return fail("mirror backend TLS misconfigured"),
        };
        let mut headers = request.headers.clone();
        let path = request.path_and_query.to_string();
        let Some(uri) = upstream_uri(&via, endpoint, &mut headers, path) else {
            return fail("invalid mirror request path");
        };
        if !matches!(via, Via::H2c) {
            frame_unsized_body(request.method, &mut headers, body.is_end_stream());
        }
        let mut req = Request::new(body);
        *req.method_mut() = request.method.clone();
        *req.uri_mut() = uri;
        *req.headers_mut() = headers;
        *req.version_mut() = match via {
            Via::H2c => Version::HTTP_2,
            Via::Http1 | Via::Tls(..) => Version::HTTP_11,
        };
        counters.requests.fetch_add(1, Ordering::Relaxed);
        let upstreams = self.upstreams.clone();
        let timeout = request.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let (route, upstream) = (request.route.to_string(), cluster.name.clone());
        let cluster = cluster.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let exchange = async {
                let sent = tokio::time::Instant::now();
                let response = cluster
                    .upstreams(&upstreams)
                    .send(via, endpoint, req, false)
                    .await?;
                let connect = ConnectTiming::spent(&response, sent);
                let status = response.status().as_u16();
                // Read to the end so the connection can be reused.
                let size = match response.into_body().collect().await {
                    Ok(body) => bytes::Buf::remaining(&body.aggregate()) as u64,
                    Err(_) => 0,
                };
                Ok::<_, crate::upstream::UpstreamError>((status, size, connect))
            };
            let cut = async {
                match &cut {
                    Some(cut) => cut.wait().await,
                    None => std::future::pending().await,
                }
            };
            let done = tokio::select! {
                done = tokio::time::timeout(timeout, exchange) => match done {
                    Ok(Ok(answered)) => Ok(answered),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err("timed out".to_string()),
                },
                () = cut => Err(CopyCut.to_string()),
            };
            if let Some((mut r, started, log)) = record {
                r.duration = started.elapsed();
                if let Ok((status, size, connect)) = &done {
                    r.status = Some(*status);
                    r.bytes_sent = *size;
                    r.upstream_connect = Some(*connect);
                }
                log.push(r);
            }
            let Err(why) = done else { return };
            counters.failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(%route, %upstream, %endpoint, error = %why, "mirror request failed");
        });
    }
}

/// Counters for one (route, mirror upstream).
#[derive(Debug, Default)]
pub struct MirrorCounters {
    requests: AtomicU64,
    failures: AtomicU64,
}

/// Mirror counters by route label and upstream, kept across configs while
/// one holds them.
#[derive(Debug, Default)]
pub struct MirrorMetrics {
    by_route: Mutex<BTreeMap<(String, String), Arc<MirrorCounters>>>,
}

impl MirrorMetrics {
    fn counters(&self, route: &str, upstream: &str) -> Arc<MirrorCounters> {
        let mut map = self.by_route.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (route.to_string(), upstream.to_string());
        map.entry(key).or_default().clone()
    }

    /// Forgets the (route, upstream) pairs no config holds.
    pub fn forget_unused(&self) {
        crate::metrics::retain_held(
            &mut self.by_route.lock().unwrap_or_else(PoisonError::into_inner),
        );
    }

    pub fn render(&self, out: &mut String) {
        let all: Vec<((String, String), Arc<MirrorCounters>)> = self
            .by_route
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let families = [
            (
                "coxswain_proxy_mirror_requests_total",
                "Mirror requests sent, by route and mirror upstream.",
                (|c: &MirrorCounters| &c.requests) as fn(&MirrorCounters) -> &AtomicU64,
            ),
            (
                "coxswain_proxy_mirror_failures_total",
                "Mirror requests that could not be sent or failed (connect error, timeout, body cut off).",
                |c: &MirrorCounters| &c.failures,
            ),
        ];
        for (name, help, counter) in families {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for ((route, upstream), counters) in &all {
                let _ = writeln!(
                    out,
                    "{name}{{route=\"{}\",upstream=\"{}\"}} {}",
                    escape(route),
                    escape(upstream),
                    counter(counters).load(Ordering::Relaxed)
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(numerator: u32, denominator: u32) -> MirrorFilter {
        MirrorFilter {
            target: Target::Invalid(String::new()),
            numerator,
            denominator,
            counters: Arc::default(),
        }
    }

    #[test]
    fn sampling_takes_the_configured_share() {
        assert!((0..1000).all(|_| filter(1, 1).sampled()));
        assert!((0..1000).all(|_| !filter(0, 100).sampled()));
        let taken = (0..20_000).filter(|_| filter(1, 4).sampled()).count();
        // 5,000 expected; the bounds are over 10 standard deviations wide.
        assert!((4_400..5_600).contains(&taken), "{taken}");
    }

    #[test]
    fn counters_render_per_route_and_upstream() {
        let metrics = MirrorMetrics::default();
        let c = metrics.counters("ns/r/0", "ns/mirror:80");
        c.requests.fetch_add(2, Ordering::Relaxed);
        c.failures.fetch_add(1, Ordering::Relaxed);
        let mut out = String::new();
        metrics.render(&mut out);
        assert!(out.contains(
            "coxswain_proxy_mirror_requests_total{route=\"ns/r/0\",upstream=\"ns/mirror:80\"} 2"
        ));
        assert!(out.contains(
            "coxswain_proxy_mirror_failures_total{route=\"ns/r/0\",upstream=\"ns/mirror:80\"} 1"
        ));
    }
}
