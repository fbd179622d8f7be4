//! A TCP connection (plain, TLS-terminated, or still-encrypted TLS) handed
//! to the backend of its L4 route: connect with a timeout (moving on to the
//! next endpoint when one refuses), TLS to the backend when a
//! BackendTLSPolicy asks for it (never for passthrough), then splice.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use http::HeaderMap;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::metrics::L4RouteMetrics;
use super::splice::{ConnectionBytes, Counters, Sides, SpliceEnd, splice};
use super::{BackendTlsUse, L4Entry, L4Table};
use crate::access_log::{AccessLog, ConnectionLog, Kind};
use crate::backend_tls::ClusterTls;
use crate::balance::{Attempt, Pick, RequestKey, Stickiness, Tried};
use crate::cluster::ClusterState;
use crate::listen::TlsInfo;

/// Timeouts of L4 connections.
#[derive(Clone, Copy, Debug)]
pub struct TcpTimeouts {
    pub connect: Duration,
    pub idle: Duration,
}

/// At most this many endpoints are tried for one connection.
const MAX_CONNECT_ATTEMPTS: usize = 3;

/// Serves one client connection by `table`'s route for `sni`. The
/// connection is closed when no route or no backend is usable.
/// `(client, raw)`: raw when the client's stream is plain TCP (passthrough
/// included), not TLS the gateway terminated.
/// `(log, tls)`: the access log, and the TLS the client spoke (terminated
/// or passed through) for its record.
pub async fn proxy_connection<C>(
    (client, client_raw): (C, bool),
    peer: SocketAddr,
    table: &L4Table,
    sni: Option<&str>,
    timeouts: TcpTimeouts,
    (log, tls_info): (&AccessLog, Option<TlsInfo>),
) where
    C: AsyncRead + AsyncWrite + Unpin,
{
    let mut log = ConnectionLog::start(
        log,
        Kind::Tcp,
        table.listener.as_ref(),
        peer,
        tls_info.as_ref(),
    );
    let Some(route) = table.pick(sni) else {
        log.refused("no_route");
        return tracing::debug!(%peer, ?sni, "no L4 route; closing");
    };
    log.routed(&route.id);
    let _active = route.metrics.open();
    let refuse = |log: &mut ConnectionLog, what: &'static str, why: &str| {
        log.refused(what);
        L4RouteMetrics::add(&route.metrics.refused, 1);
        tracing::debug!(route = %route.label, %peer, why, "closing");
    };
    let Some(cluster) = route.choose() else {
        return refuse(&mut log, "no_backend", "no usable backend");
    };
    let tls = match (&table.backend_tls, &cluster.tls) {
        (BackendTlsUse::Originate(identity), Some(ClusterTls::Verify(upstream))) => {
            match upstream.stream(identity.as_ref(), timeouts.connect) {
                Ok(tls) => Some(tls),
                Err(reason) => return refuse(&mut log, "backend_tls", &reason),
            }
        }
        (BackendTlsUse::Originate(_), Some(ClusterTls::Invalid(reason))) => {
            return refuse(&mut log, "backend_tls", reason);
        }
        _ => None,
    };
    let connect_timeout = cluster.connect_timeout(timeouts.connect);
    // Held for the connection's life: least_conn counts open connections.
    let Some((backend, _attempt, retries)) = connect(route, cluster, peer, connect_timeout).await
    else {
        let why = "no backend endpoint accepted the connection";
        return refuse(&mut log, "no_backend", why);
    };
    if let Ok(endpoint) = backend.peer_addr() {
        log.connected(endpoint, retries);
    }
    let bytes = ConnectionBytes::default();
    let counters = Counters {
        inbound: &route.metrics.bytes_in,
        outbound: &route.metrics.bytes_out,
        connection: &bytes,
    };
    let end = match tls {
        None => {
            let sides = Sides {
                client_raw,
                backend_raw: true,
            };
            splice(client, backend, timeouts.idle, counters, sides).await
        }
        Some((connector, name)) => {
            let handshake = connector.connect(name, backend);
            match tokio::time::timeout(connect_timeout, handshake).await {
                Ok(Ok(stream)) => {
                    let sides = Sides {
                        client_raw,
                        backend_raw: false,
                    };
                    splice(client, stream, timeouts.idle, counters, sides).await
                }
                Ok(Err(e)) => {
                    L4RouteMetrics::add(&route.metrics.connect_errors, 1);
                    let why = format!("backend TLS handshake: {e}");
                    return refuse(&mut log, "backend_tls", &why);
                }
                Err(_) => {
                    L4RouteMetrics::add(&route.metrics.connect_errors, 1);
                    let why = "backend TLS handshake timed out";
                    return refuse(&mut log, "backend_tls", why);
                }
            }
        }
    };
    if end != SpliceEnd::Closed {
        tracing::debug!(route = %route.label, %peer, ?end, "connection ended");
    }
    log.finish(
        bytes.inbound.load(Ordering::Relaxed),
        bytes.outbound.load(Ordering::Relaxed),
    );
}

/// A TCP connection to one of `cluster`'s endpoints, as its balancer
/// chooses (a CoxswainBackendPolicy's algorithm keys on the client's IP
/// here: there are no headers), trying another when one refuses or times
/// out; a breaker that is open takes its endpoint out.
async fn connect(
    route: &L4Entry,
    cluster: &ClusterState,
    peer: SocketAddr,
    timeout: Duration,
) -> Option<(TcpStream, Attempt, u32)> {
    let headers = HeaderMap::new();
    let key = RequestKey {
        headers: &headers,
        path_and_query: "",
        client: peer.ip(),
    };
    let mut tried = Tried::default();
    for retries in 0..MAX_CONNECT_ATTEMPTS as u32 {
        let Pick::Chosen(chosen) =
            cluster.pick(&key, tried.as_slice(), Stickiness::Policy, Instant::now())
        else {
            return None;
        };
        let mut attempt = chosen.attempt;
        let endpoint = attempt.endpoint.address;
        tried.push(endpoint);
        let connected = tokio::time::timeout(timeout, TcpStream::connect(endpoint)).await;
        attempt.record(matches!(connected, Ok(Ok(_))), Instant::now());
        match connected {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Some((stream, attempt, retries));
            }
            Ok(Err(e)) => {
                tracing::debug!(route = %route.label, %endpoint, error = %e, "backend connect failed");
                L4RouteMetrics::add(&route.metrics.connect_errors, 1);
            }
            Err(_) => {
                tracing::debug!(route = %route.label, %endpoint, "backend connect timed out");
                L4RouteMetrics::add(&route.metrics.connect_errors, 1);
            }
        }
    }
    None
}
