//! UDP listeners: one session per client address. A session has its own
//! socket connected to a backend chosen (by weight) when it starts; what
//! the backend sends back is relayed to that client from the listener's
//! socket. Sessions idle for the session timeout are evicted, and the
//! number of sessions is capped (the least recently used goes first), so
//! memory stays bounded whatever the number of clients.

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::net::UdpSocket;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::L4Table;
use super::metrics::{ActiveGuard, L4RouteMetrics};
use crate::access_log::{AccessLog, ConnectionLog, Kind};

/// The largest datagram relayed.
const MAX_DATAGRAM: usize = 64 * 1024;

#[derive(Clone, Copy, Debug)]
pub struct UdpOptions {
    /// A session with no datagram either way for this long is evicted.
    pub session_timeout: Duration,
    /// At most this many sessions per listener socket.
    pub max_sessions: usize,
}

impl Default for UdpOptions {
    fn default() -> Self {
        UdpOptions {
            session_timeout: Duration::from_secs(10),
            max_sessions: 16_384,
        }
    }
}

/// The L4 table a UDP socket serves, swapped atomically on reload.
pub type SharedL4 = Arc<ArcSwap<L4Table>>;

struct Session {
    upstream: Arc<UdpSocket>,
    /// Milliseconds since the socket's start of the last datagram.
    last: Arc<AtomicU64>,
    metrics: Arc<L4RouteMetrics>,
    reply: JoinHandle<()>,
    _active: ActiveGuard,
    /// Sent when the session ends (idle, evicted, or the socket stopped).
    log: ConnectionLog,
    /// Bytes relayed from the client, and to it.
    bytes_in: u64,
    bytes_out: Arc<AtomicU64>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.reply.abort();
        let log = std::mem::replace(&mut self.log, ConnectionLog::none());
        log.finish(self.bytes_in, self.bytes_out.load(Ordering::Relaxed));
    }
}

fn millis_since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Relays datagrams until `stop` fires; every session ends with it.
pub async fn serve(
    socket: Arc<UdpSocket>,
    table: SharedL4,
    options: UdpOptions,
    mut stop: oneshot::Receiver<()>,
    log: AccessLog,
) {
    let start = Instant::now();
    let mut sessions: HashMap<SocketAddr, Session> = HashMap::new();
    let sweep_every = (options.session_timeout / 2).max(Duration::from_millis(100));
    let mut sweep = tokio::time::interval(sweep_every);
    let timeout_ms = u64::try_from(options.session_timeout.as_millis()).unwrap_or(u64::MAX);
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        tokio::select! {
            _ = &mut stop => break,
            _ = sweep.tick() => {
                let now = millis_since(start);
                sessions.retain(|_, s| now.saturating_sub(s.last.load(Ordering::Relaxed)) < timeout_ms);
            }
            received = socket.recv_from(&mut buf) => {
                let (n, client) = match received {
                    Ok(pair) => pair,
                    Err(e) => {
                        tracing::debug!(error = %e, "UDP receive failed");
                        continue;
                    }
                };
                let datagram = buf.get(..n).unwrap_or_default();
                if !sessions.contains_key(&client) {
                    if sessions.len() >= options.max_sessions {
                        evict_least_recent(&mut sessions);
                    }
                    let table = table.load();
                    match open_session(&socket, &table, client, (start, &log)).await {
                        Ok(Some(session)) => drop(sessions.insert(client, session)),
                        Ok(None) => continue,
                        Err(e) => {
                            tracing::debug!(%client, error = %e, "UDP session could not start");
                            continue;
                        }
                    }
                }
                if let Some(session) = sessions.get_mut(&client) {
                    session.last.store(millis_since(start), Ordering::Relaxed);
                    if session.upstream.send(datagram).await.is_ok() {
                        L4RouteMetrics::add(&session.metrics.bytes_in, n as u64);
                        session.bytes_in += n as u64;
                    }
                }
            }
        }
    }
}

fn evict_least_recent(sessions: &mut HashMap<SocketAddr, Session>) {
    let oldest = sessions
        .iter()
        .min_by_key(|(_, s)| s.last.load(Ordering::Relaxed))
        .map(|(addr, s)| (*addr, s.metrics.clone()));
    if let Some((addr, metrics)) = oldest {
        sessions.remove(&addr);
        L4RouteMetrics::add(&metrics.evictions, 1);
    }
}

/// Starts a session for `client`: route, backend, a connected socket and
/// the task relaying replies. `None` when no route or backend is usable
/// (the datagram is dropped).
async fn open_session(
    listener: &Arc<UdpSocket>,
    table: &L4Table,
    client: SocketAddr,
    (start, log): (Instant, &AccessLog),
) -> io::Result<Option<Session>> {
    let Some(route) = table.pick(None) else {
        return Ok(None);
    };
    let mut log = ConnectionLog::start(log, Kind::Udp, table.listener.as_ref(), client, None);
    log.routed(&route.id);
    let Some(endpoint) = route.choose().and_then(|c| session_endpoint(c, client)) else {
        L4RouteMetrics::add(&route.metrics.refused, 1);
        log.refused("no_backend");
        return Ok(None);
    };
    let local: SocketAddr = if endpoint.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let upstream = UdpSocket::bind(local).await?;
    if let Err(e) = upstream.connect(endpoint).await {
        L4RouteMetrics::add(&route.metrics.connect_errors, 1);
        return Err(e);
    }
    log.connected(endpoint, 0);
    let upstream = Arc::new(upstream);
    let last = Arc::new(AtomicU64::new(millis_since(start)));
    let bytes_out = Arc::new(AtomicU64::new(0));
    let reply = tokio::spawn(relay_replies(
        upstream.clone(),
        (listener.clone(), client),
        last.clone(),
        (route.metrics.clone(), bytes_out.clone()),
        start,
    ));
    Ok(Some(Session {
        upstream,
        last,
        _active: route.metrics.open(),
        metrics: route.metrics.clone(),
        reply,
        log,
        bytes_in: 0,
        bytes_out,
    }))
}

async fn relay_replies(
    upstream: Arc<UdpSocket>,
    (listener, client): (Arc<UdpSocket>, SocketAddr),
    last: Arc<AtomicU64>,
    (metrics, sent): (Arc<L4RouteMetrics>, Arc<AtomicU64>),
    start: Instant,
) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let n = match upstream.recv(&mut buf).await {
            Ok(n) => n,
            // ICMP port unreachable surfaces here as a refused receive; the
            // session stays until it idles out, as a client may retry.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
            Err(_) => return,
        };
        let datagram = buf.get(..n).unwrap_or_default();
        if listener.send_to(datagram, client).await.is_ok() {
            last.store(millis_since(start), Ordering::Relaxed);
            L4RouteMetrics::add(&metrics.bytes_out, n as u64);
            sent.fetch_add(n as u64, Ordering::Relaxed);
        }
    }
}

/// The endpoint for a new session, as the cluster's balancer chooses it
/// (keyed on the client's IP; a session is never retried, so it is
/// recorded as a success at once).
fn session_endpoint(
    cluster: &crate::cluster::ClusterState,
    client: SocketAddr,
) -> Option<SocketAddr> {
    let headers = http::HeaderMap::new();
    let key = crate::balance::RequestKey {
        headers: &headers,
        path_and_query: "",
        client: client.ip(),
    };
    match cluster.pick(
        &key,
        &[],
        crate::balance::Stickiness::Policy,
        tokio::time::Instant::now(),
    ) {
        crate::balance::Pick::Chosen(mut chosen) => {
            chosen.attempt.record(true, tokio::time::Instant::now());
            Some(chosen.attempt.endpoint.address)
        }
        crate::balance::Pick::Empty | crate::balance::Pick::AllOpen => None,
    }
}
