//! Per-request entry point: route lookup, the whole-request timeout and
//! metrics. What a route does with the request lives in [`crate::pipeline`].

use std::borrow::Cow;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use http::header::HOST;
use http::uri::PathAndQuery;
use http::{Request, Response, StatusCode, Uri, Version};
use hyper::body::Incoming;
use hyper_util::rt::TokioExecutor;
use hyper_util::server::conn::auto;

use crate::access_log::AccessLog;
use crate::access_log::http::{RequestLog, echo_request_id};
use crate::http::body::{ProxyBody, plain};
use crate::http::grpc::{self, into_grpc, is_grpc};
use crate::http::grpc_status::PendingCall;
use crate::http::headers::ForwardedTrust;
use crate::http::limits::HttpLimits;
use crate::http::normalize::{PathError, PathOptions, normalize_path};
use crate::http::request_id;
use crate::http::upgrade::UpgradeSlot;
use crate::listen::TlsInfo;
use crate::listen::client_identity::ClientIdentity;
use crate::metrics::{Metrics, RouteMetrics, StatusCounters};
use crate::overload::Overload;
use crate::pipeline::{self, Forwarded};
use crate::rejections::RejectReason;
use crate::router::host::{MAX_HOST_LEN, normalize_host};
use crate::router::{RequestView, Router};
use crate::trace::{Arrival, ServerSpan, Tracer};
use crate::upstream::Upstreams;

/// The routing table a listener serves from. Each listener has its own, so
/// a removed listener drains on the config it last had.
pub type SharedTable = Arc<ArcSwap<Router>>;

/// State shared by every connection of every listener.
pub struct Shared {
    pub upstreams: Arc<Upstreams>,
    pub mirrors: crate::mirror::Mirrors,
    pub metrics: Arc<Metrics>,
    /// Counts requests no route matched.
    pub unmatched: Arc<StatusCounters>,
    /// The metrics of the route label "", where gRPC calls no route
    /// took are counted.
    pub unmatched_route: Arc<RouteMetrics>,
    pub path: PathOptions,
    pub forwarded: ForwardedTrust,
    pub limits: HttpLimits,
    /// Configured once from `limits`, cloned per connection.
    pub http: auto::Builder<TokioExecutor>,
    /// The same HTTP/1 settings, for plain connections served by
    /// [`crate::http::park`].
    pub http1: hyper::server::conn::http1::Builder,
    pub overload: Overload,
    /// Pass the verified client identity to backends in
    /// `x-forwarded-client-cert`.
    pub forward_client_cert: bool,
    /// An upgraded (WebSocket) connection with no bytes either way for
    /// this long is closed.
    pub upgrade_idle: Duration,
    /// Records spans when tracing is on.
    pub tracer: Option<Tracer>,
    pub access_log: AccessLog,
    /// Responses carry the request's `x-request-id`.
    pub echo_request_id: bool,
}

/// Where a connection came in and from whom.
#[derive(Clone, Debug)]
pub struct ConnInfo {
    /// The configured socket (the routing table key).
    pub socket: SocketAddr,
    pub client: SocketAddr,
    /// Arrived over TLS (an HTTPS socket).
    pub https: bool,
    /// The listener (its index on the socket) the TLS SNI picked; a request
    /// whose Host belongs to another listener is misdirected (421).
    pub sni_listener: Option<usize>,
    /// The verified client certificate's identity, when the connection
    /// presented one (frontend validation).
    pub client_identity: Option<Arc<ClientIdentity>>,
    /// The TLS the gateway terminated (for the access log).
    pub tls: Option<Arc<TlsInfo>>,
    /// The relay of this connection once a request upgraded it.
    pub upgrade: UpgradeSlot,
    /// Set when an answer left its request body unread (HTTP/1): the
    /// connection then closes lingering ([`crate::http::linger`]).
    pub linger: crate::http::linger::Linger,
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

/// Bytes of the request target as the client sent it (path and query; the
/// authority too in absolute form).
fn uri_len(uri: &Uri) -> usize {
    uri.path_and_query().map_or(0, |pq| pq.as_str().len())
        + uri.authority().map_or(0, |a| a.as_str().len())
}

/// Replaces the request's path with its normalised form (query kept), so
/// routing and the upstream see the same path.
fn normalize_request_path<B>(req: &mut Request<B>, options: &PathOptions) -> Result<(), PathError> {
    let path = match normalize_path(req.uri().path(), options)? {
        Cow::Borrowed(_) => return Ok(()),
        Cow::Owned(path) => path,
    };
    let path_and_query = match req.uri().query() {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    let mut parts = req.uri().clone().into_parts();
    parts.path_and_query = PathAndQuery::try_from(path_and_query).ok();
    // The normalised path is built from the parsed one, so it stays valid.
    if let Ok(uri) = Uri::from_parts(parts) {
        *req.uri_mut() = uri;
    }
    Ok(())
}

pub async fn handle(
    shared: Arc<Shared>,
    table: SharedTable,
    conn: ConnInfo,
    mut req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    // Before anything reads the headers: stages, backends and the log
    // all see the same id.
    let request_id = request_id::ensure(req.headers_mut());
    let http2 = req.version() == Version::HTTP_2;
    let mut log = RequestLog::start(&shared.access_log);
    // One call site: each `.await` of `respond` would hold its own copy
    // of that large future, and this future is moved whole on every spawn.
    let mut call = is_grpc(req.headers()).then(|| PendingCall::new(shared.unmatched_route.clone()));
    let mut span = shared.tracer.as_ref().map(|tracer| {
        let arrival = Arrival {
            scheme: conn.scheme(),
            listener: conn.socket,
            client: conn.client,
        };
        ServerSpan::start(tracer, &mut req, &arrival)
    });
    let response = respond(
        &shared,
        table,
        conn,
        req,
        call.as_mut(),
        (span.as_deref_mut(), &mut log),
    )
    .await;
    log.observe(&response);
    let response = match call {
        Some(call) => call.respond(into_grpc(response)),
        None => response,
    };
    let mut response = match span {
        Some(span) => span.respond(response),
        None => response,
    };
    if shared.echo_request_id {
        echo_request_id(&mut response, &request_id);
    }
    if http2 {
        crate::http::unpin::unpin_values(response.headers_mut());
    }
    Ok(log.finish(&shared.access_log, response))
}

/// The response; a gRPC `call` learns which route took it, the `log`
/// which listener and route.
async fn respond(
    shared: &Shared,
    table: SharedTable,
    conn: ConnInfo,
    req: Request<Incoming>,
    call: Option<&mut PendingCall>,
    (mut span, log): (Option<&mut ServerSpan>, &mut RequestLog),
) -> Response<ProxyBody> {
    let started = Instant::now();
    // A gateway check answers: logged with the default settings.
    let refuse = |log: &mut RequestLog, req: &Request<Incoming>, what| {
        log.admit(&shared.access_log, None, req, &conn, request_host(req));
        log.answered_by(what);
    };
    let Some(_in_flight) = shared.overload.admit() else {
        refuse(log, &req, "overload");
        shared.metrics.rejections.record(RejectReason::Overloaded);
        return plain(StatusCode::SERVICE_UNAVAILABLE, "overloaded\n");
    };
    if uri_len(req.uri()) > shared.limits.max_uri_bytes {
        refuse(log, &req, "uri_too_long");
        shared.metrics.rejections.record(RejectReason::UriTooLong);
        return plain(StatusCode::URI_TOO_LONG, "request target too long\n");
    }
    let mut req = req;
    if let Err(reason) = normalize_request_path(&mut req, &shared.path) {
        refuse(log, &req, "bad_path");
        tracing::debug!(uri = %req.uri(), %reason, "bad request path");
        shared.metrics.rejections.record(RejectReason::Path(reason));
        return plain(StatusCode::BAD_REQUEST, "bad request path\n");
    }
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
        let listener = table.listener(conn.socket, host);
        let tag = listener.and_then(|index| table.listener_tag(conn.socket, index));
        log.admit(&shared.access_log, tag, &req, &conn, host);
        if conn.sni_listener.is_some() && listener != conn.sni_listener {
            tracing::debug!(host, "Host belongs to another listener than the SNI did");
            log.answered_by("misdirected");
            shared
                .unmatched
                .record(StatusCode::MISDIRECTED_REQUEST.as_u16());
            return plain(StatusCode::MISDIRECTED_REQUEST, "misdirected request\n");
        }
        listener.and_then(|index| table.lookup_in(conn.socket, index, &view))
    };
    let Some(hit) = hit else {
        tracing::debug!(method = %req.method(), uri = %req.uri(), "no route");
        log.answered_by("no_route");
        shared.unmatched.record(StatusCode::NOT_FOUND.as_u16());
        return plain(StatusCode::NOT_FOUND, "no route matched\n");
    };
    let route = hit.route;
    log.routed(&route.id);
    if route.stages.mirrors()
        && let Some(seed) = log.mirror_seed()
    {
        req.extensions_mut().insert(seed);
    }
    if let Some(call) = call {
        call.routed(route.metrics());
    }
    if let Some(span) = span.as_deref_mut() {
        span.routed(&crate::trace::route_info(&hit));
    }
    // The sooner of the route's request timeout and the gRPC client's own
    // deadline (answered DEADLINE_EXCEEDED).
    let limit = [
        route.timeouts.request_ms.map(Duration::from_millis),
        grpc::timeout(req.headers()),
    ]
    .into_iter()
    .flatten()
    .min();
    let host = normalize_host(request_host(&req), &mut host_buf).to_string();
    // Boxed: the forwarding future is large, and held here in each of
    // the two awaits below it would be copied whole every time this
    // request's future moves (the connection spawns one per request).
    let work = Box::pin(pipeline::serve(
        shared,
        conn,
        hit,
        host,
        req,
        span.as_deref().map(ServerSpan::scope),
    ));
    let outcome = match limit {
        Some(limit) => match tokio::time::timeout(limit, work).await {
            Ok(done) => done,
            Err(_) => {
                log.answered_by("request_timeout");
                Forwarded::local(route, StatusCode::GATEWAY_TIMEOUT, "request timed out\n")
            }
        },
        None => work.await,
    };
    let status = outcome.response.status();
    outcome.counters.record(status.as_u16());
    route.metrics().observe(started.elapsed());
    tracing::debug!(route = %route.label, %status, "request done");
    outcome.response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns, without calling it.
    fn future_size<A, B, C, D, Fut>(_: fn(A, B, C, D) -> Fut) -> usize {
        std::mem::size_of::<Fut>()
    }

    /// Every request's future is moved whole when its connection spawns
    /// it and again when it completes: a large one showed up as 17% of a
    /// gRPC proxy's CPU in memmove. Large inner futures are boxed to keep
    /// this one small.
    #[test]
    fn the_per_request_future_stays_small() {
        let size = future_size(handle);
        eprintln!("per-request future: {size} bytes");
        assert!(size <= 4096, "{size} bytes");
    }
}
