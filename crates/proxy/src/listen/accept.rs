//! One accept loop per TCP socket, dispatching each connection by the
//! socket's current [`SocketPlan`].

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::BytesMut;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::{Instant, timeout_at};

use super::TlsInfo;
use super::client_hello::read_client_hello;
use super::preface::{H2_PREFACE_LINE, plausible_start};
use super::proxy_header::read_proxy_header;
use super::rewind::Rewind;
use super::tls::{TlsAction, TlsSocket};
use super::{SocketMode, SocketPlan};
use crate::handler::{ConnInfo, Shared, SharedTable};
use crate::http::park::serve_http1;
use crate::http::server::{Versions, serve_connection};
use crate::l4::tcp::{TcpTimeouts, proxy_connection};

/// A socket's plan, swapped atomically with its routing table.
pub type SharedPlan = Arc<ArcSwap<SocketPlan>>;

/// A client that opens a connection and never finishes the TLS handshake
/// (ClientHello included) must not hold it forever.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A running accept loop.
pub struct ListenerTask {
    pub local: SocketAddr,
    pub table: SharedTable,
    pub plan: SharedPlan,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl ListenerTask {
    /// Stops accepting; the returned task finishes once connections drained
    /// (or were cut off after `drain_timeout`).
    pub fn stop(self) -> JoinHandle<()> {
        let _ = self.stop.send(());
        self.task
    }
}

/// What every connection of one socket shares.
#[derive(Clone)]
struct SocketState {
    socket: SocketAddr,
    shared: Arc<Shared>,
    table: SharedTable,
    tcp: TcpTimeouts,
}

/// Starts serving `listener`, routing with the table entry for `socket`.
pub fn spawn(
    listener: TcpListener,
    socket: SocketAddr,
    shared: Arc<Shared>,
    table: SharedTable,
    plan: SharedPlan,
    (drain_timeout, tcp): (Duration, TcpTimeouts),
) -> ListenerTask {
    let local = listener.local_addr().unwrap_or(socket);
    let (stop, stopped) = oneshot::channel();
    let state = SocketState {
        socket,
        shared,
        table: table.clone(),
        tcp,
    };
    let task = tokio::spawn(accept_loop(
        listener,
        state,
        plan.clone(),
        drain_timeout,
        stopped,
    ));
    ListenerTask {
        local,
        table,
        plan,
        stop,
        task,
    }
}

async fn accept_loop(
    listener: TcpListener,
    state: SocketState,
    plan: SharedPlan,
    drain_timeout: Duration,
    mut stopped: oneshot::Receiver<()>,
) {
    let socket = state.socket;
    // Turns true when the listener stops: connections finish what is in
    // flight and close.
    let (drain, draining) = watch::channel(false);
    let mut connections = JoinSet::new();
    let room = state.shared.overload.listener_semaphore();
    loop {
        while connections.try_join_next().is_some() {}
        tokio::select! {
            _ = &mut stopped => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept() => {
                let (stream, client) = match accepted {
                    Ok(pair) => pair,
                    Err(e) => {
                        tracing::warn!(%socket, error = %e, "accept failed");
                        // Back off briefly so fd exhaustion does not spin.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                // At the connection limit, this one connection waits here
                // and the kernel's backlog holds the next clients, instead
                // of the proxy running out of descriptors. Taken after
                // accepting, so an idle listener holds no permit.
                let permits = tokio::select! {
                    _ = &mut stopped => break,
                    permits = state.shared.overload.connection(&room) => permits,
                };
                let Some(permits) = permits else { break };
                let _ = stream.set_nodelay(true);
                let plan = plan.load_full();
                let state = state.clone();
                let watcher = draining.clone();
                connections.spawn(async move {
                    let _permits = permits;
                    let serving = Box::pin(prepare(stream, client, &plan, state, watcher)).await;
                    if let Some(serving) = serving {
                        serving.await;
                    }
                });
            }
        }
    }
    drop(listener);
    let _ = drain.send(true);
    let all_done = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(drain_timeout, all_done).await.is_err() {
        tracing::warn!(%socket, "drain timeout: closing remaining connections");
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}

/// What serves a connection once its first bytes are judged.
type Serving<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// One connection's first stage: its PROXY header (when the socket
/// expects one) and its first bytes. Returns what serves it from there;
/// the caller awaits that after this future is gone, so a connection that
/// lasts holds nothing of its first stage. Bytes read ahead are replayed
/// to the next reader.
async fn prepare(
    mut stream: TcpStream,
    peer: SocketAddr,
    plan: &SocketPlan,
    state: SocketState,
    watcher: watch::Receiver<bool>,
) -> Option<Serving<'_>> {
    let mut read = BytesMut::new();
    let client = match plan.proxy_protocol {
        None => peer,
        Some(setting) => match read_proxy_header(&mut stream, &mut read, peer, setting).await {
            Ok(client) => client,
            Err(refused) => {
                state.shared.metrics.proxy_protocol.refused(refused);
                tracing::debug!(%peer, ?refused, "PROXY protocol header refused; closing");
                return None;
            }
        },
    };
    let info = ConnInfo {
        socket: state.socket,
        client,
        https: false,
        sni_listener: None,
        client_identity: None,
        tls: None,
        upgrade: Default::default(),
        linger: Default::default(),
    };
    // Each kind of connection's future is boxed on its own: it holds room
    // for its own stages only.
    match &plan.mode {
        SocketMode::Http => {
            let (io, h2) = judge_http((stream, read), &state, client).await?;
            let shared = (state.shared, state.table);
            Some(if h2 {
                Box::pin(serve_connection(io, shared, info, Versions::Http2, watcher))
            } else {
                Box::pin(serve_http1(io, shared, info, watcher))
            })
        }
        SocketMode::Tls(tls) => Some(Box::pin(tls_connection(
            (stream, read),
            tls,
            state,
            info,
            watcher,
        ))),
        SocketMode::Tcp(table) => Some(Box::pin(async move {
            // Bytes after the PROXY header go to the backend; the header
            // itself does not.
            let io = Rewind::new(read.freeze(), stream);
            let log = (&state.shared.access_log, None);
            proxy_connection((io, true), client, table, None, state.tcp, log).await;
        })),
    }
}

/// Judges the first bytes to be HTTP: the connection with them to replay,
/// and whether they are the h2c preface.
async fn judge_http(
    (mut stream, mut read): (TcpStream, BytesMut),
    state: &SocketState,
    client: SocketAddr,
) -> Option<(Rewind<TcpStream>, bool)> {
    // Before its first request a connection is both idle and waiting for
    // a head: the shorter limit.
    let limits = &state.shared.limits;
    let wait = limits.header_read_timeout.min(limits.idle_timeout);
    let deadline = Instant::now() + wait;
    let judged = plausible_start(&mut stream, &mut read);
    match timeout_at(deadline, judged).await {
        Ok(true) => {
            let h2 = read.starts_with(H2_PREFACE_LINE);
            Some((Rewind::new(read.freeze(), stream), h2))
        }
        Ok(false) => {
            tracing::debug!(%client, "not HTTP; closing");
            None
        }
        Err(_) => {
            tracing::debug!(%client, "no request line in time");
            None
        }
    }
}

/// Reads the ClientHello, lets its SNI pick the listener and hands the
/// connection (with the bytes read so far) to it.
async fn tls_connection(
    (mut stream, mut read): (TcpStream, BytesMut),
    tls: &TlsSocket,
    state: SocketState,
    info: ConnInfo,
    watcher: watch::Receiver<bool>,
) {
    let client = info.client;
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let hello = match timeout_at(deadline, read_client_hello(&mut stream, &mut read)).await {
        Ok(Ok(hello)) => hello,
        Ok(Err(e)) => return tracing::debug!(%client, error = ?e, "no usable ClientHello"),
        Err(_) => return tracing::debug!(%client, "ClientHello timed out"),
    };
    let Some(listener) = tls.pick(hello.sni.as_deref()) else {
        return tracing::debug!(%client, sni = ?hello.sni, "no listener for this SNI");
    };
    let io = Rewind::new(read.freeze(), stream);
    match &listener.action {
        TlsAction::Http(http) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(http.config.clone());
            match timeout_at(deadline, acceptor.accept(io)).await {
                Ok(Ok(tls_stream)) => {
                    let version = tls_stream.get_ref().1.protocol_version();
                    let tls_info = TlsInfo::new(version, hello.sni.as_deref());
                    let info = ConnInfo {
                        https: true,
                        sni_listener: Some(listener.index),
                        tls: Some(Arc::new(tls_info)),
                        client_identity: http.client_identity(tls_stream.get_ref().1).map(Arc::new),
                        ..info
                    };
                    let versions = match tls_stream.get_ref().1.alpn_protocol() {
                        Some(b"h2") => Versions::Http2,
                        Some(b"http/1.1") => Versions::Http1,
                        _ => Versions::Either,
                    };
                    let shared = (state.shared, state.table);
                    // Boxed apart from the handshake's state, which is
                    // done with by now.
                    Box::pin(serve_connection(
                        tls_stream, shared, info, versions, watcher,
                    ))
                    .await;
                }
                Ok(Err(e)) => tracing::debug!(%client, error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!(%client, "TLS handshake timed out"),
            }
        }
        TlsAction::Tcp(config, table) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(config.clone());
            match timeout_at(deadline, acceptor.accept(io)).await {
                Ok(Ok(tls_stream)) => {
                    let sni = hello.sni.as_deref();
                    let version = tls_stream.get_ref().1.protocol_version();
                    let log = (&state.shared.access_log, Some(TlsInfo::new(version, sni)));
                    let io = (tls_stream, false);
                    Box::pin(proxy_connection(io, client, table, sni, state.tcp, log)).await;
                }
                Ok(Err(e)) => tracing::debug!(%client, error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!(%client, "TLS handshake timed out"),
            }
        }
        TlsAction::Passthrough(table) => {
            let sni = hello.sni.as_deref();
            let log = (&state.shared.access_log, Some(TlsInfo::new(None, sni)));
            proxy_connection((io, true), client, table, sni, state.tcp, log).await;
        }
        TlsAction::Refuse => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns, without calling it.
    fn future_size<A, B, C, D, Fut>(_: fn(A, B, C, D) -> Fut) -> usize {
        std::mem::size_of::<Fut>()
    }

    /// A plain HTTP/1.1 connection holds this future for as long as it
    /// lasts, parked or not (its first stage, `prepare`, is gone by then):
    /// what one idle keep-alive client costs starts here.
    #[test]
    fn the_per_connection_future_stays_small() {
        let size = future_size(serve_http1);
        eprintln!("per-connection future: {size} bytes");
        assert!(size <= 768, "{size} bytes");
    }
}
