//! Per-request entry point: route lookup, the whole-request timeout and
//! metrics. Forwarding lives in [`crate::forward`].

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use http::{Request, Response, StatusCode, Version, header::HOST};
use hyper::body::Incoming;

use crate::forward::{self, Forwarded};
use crate::http::body::{ProxyBody, plain};
use crate::metrics::{Metrics, StatusCounters};
use crate::router::host::{MAX_HOST_LEN, normalize_host};
use crate::router::{RequestView, Router};
use crate::upstream::Upstreams;

/// The routing table a listener serves from. Each listener has its own, so
/// a removed listener drains on the config it last had.
pub type SharedTable = Arc<ArcSwap<Router>>;

/// State shared by every connection of every listener.
pub struct Shared {
    pub upstreams: Upstreams,
    pub metrics: Arc<Metrics>,
    /// Counts requests no route matched.
    pub unmatched: Arc<StatusCounters>,
}

/// Where a connection came in and from whom.
#[derive(Clone, Copy, Debug)]
pub struct ConnInfo {
    /// The configured socket (the routing table key).
    pub socket: SocketAddr,
    pub client: SocketAddr,
    /// Arrived over TLS (an HTTPS socket).
    pub https: bool,
}

impl ConnInfo {
    pub fn scheme(&self) -> &'static str {
        if self.https { "https" } else { "http" }
    }
}

/// The Host the client asked for: `:authority` for HTTP/2, `Host` for
/// HTTP/1 (falling back to the other when one is missing).
pub fn request_host<B>(req: &Request<B>) -> &str {
    let header = || req.headers().get(HOST).and_then(|v| v.to_str().ok());
    let authority = || req.uri().authority().map(|a| a.as_str());
    let raw = if req.version() == Version::HTTP_2 {
        authority().or_else(header)
    } else {
        header().or_else(authority)
    };
    raw.unwrap_or("")
}

pub async fn handle(
    shared: Arc<Shared>,
    table: SharedTable,
    conn: ConnInfo,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    let started = Instant::now();
    // Held for the whole request: in-flight requests keep their config.
    let table = table.load_full();
    let mut host_buf = [0u8; MAX_HOST_LEN];
    let hit = {
        let host = normalize_host(request_host(&req), &mut host_buf);
        let view = RequestView {
            host,
            method: req.method(),
            path: req.uri().path(),
            query: req.uri().query(),
            headers: req.headers(),
        };
        table.lookup(conn.socket, &view)
    };
    let Some(hit) = hit else {
        tracing::debug!(method = %req.method(), uri = %req.uri(), "no route");
        shared.unmatched.record(StatusCode::NOT_FOUND.as_u16());
        return Ok(plain(StatusCode::NOT_FOUND, "no route matched\n"));
    };
    let route = hit.route;
    let host = normalize_host(request_host(&req), &mut host_buf).to_string();
    let work = forward::serve(&shared, conn, route, hit.matched, host, req);
    let outcome = match route.timeouts.request_ms {
        Some(ms) => match tokio::time::timeout(Duration::from_millis(ms), work).await {
            Ok(done) => done,
            Err(_) => Forwarded::local(route, StatusCode::GATEWAY_TIMEOUT, "request timed out\n"),
        },
        None => work.await,
    };
    let status = outcome.response.status();
    outcome.counters.record(status.as_u16());
    route.metrics.observe(started.elapsed());
    tracing::debug!(route = %route.label, %status, "request done");
    Ok(outcome.response)
}
