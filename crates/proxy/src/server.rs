//! One accept loop per socket. Connections speak HTTP/1.1 or h2c (prior
//! knowledge), or either over TLS on HTTPS sockets (ALPN); stopping a
//! listener drains only its own connections.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

use crate::handler::{ConnInfo, Shared, SharedTable, handle};
use crate::tls::SocketTls;

/// A socket's TLS mode, swapped atomically with its routing table.
pub type SharedTls = Arc<ArcSwap<SocketTls>>;

/// A client that opens a connection and never finishes the handshake must
/// not hold it forever.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A running accept loop.
pub struct ListenerTask {
    pub local: SocketAddr,
    pub table: SharedTable,
    pub tls: SharedTls,
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

/// Starts serving `listener`, routing with the table entry for `socket`.
pub fn spawn(
    listener: TcpListener,
    socket: SocketAddr,
    shared: Arc<Shared>,
    table: SharedTable,
    tls: SharedTls,
    drain_timeout: Duration,
) -> ListenerTask {
    let local = listener.local_addr().unwrap_or(socket);
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(accept_loop(
        listener,
        socket,
        (shared, table.clone(), tls.clone()),
        drain_timeout,
        stopped,
    ));
    ListenerTask {
        local,
        table,
        tls,
        stop,
        task,
    }
}

async fn accept_loop(
    listener: TcpListener,
    socket: SocketAddr,
    (shared, table, tls): (Arc<Shared>, SharedTable, SharedTls),
    drain_timeout: Duration,
    mut stopped: oneshot::Receiver<()>,
) {
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
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
                let _ = stream.set_nodelay(true);
                let mode = tls.load_full();
                let https = !matches!(*mode, SocketTls::Plain);
                let info = ConnInfo { socket, client, https };
                let state = (shared.clone(), table.clone());
                let watcher = graceful.watcher();
                connections.spawn(async move {
                    match &*mode {
                        SocketTls::Plain => serve(stream, state, info, watcher).await,
                        SocketTls::Terminate(config) => {
                            let acceptor = tokio_rustls::TlsAcceptor::from(config.clone());
                            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                                Ok(Ok(tls_stream)) => serve(tls_stream, state, info, watcher).await,
                                Ok(Err(e)) => tracing::debug!(%client, error = %e, "TLS handshake failed"),
                                Err(_) => tracing::debug!(%client, "TLS handshake timed out"),
                            }
                        }
                        SocketTls::Refuse => {}
                    }
                });
            }
        }
    }
    drop(listener);
    if tokio::time::timeout(drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(%socket, "drain timeout: closing remaining connections");
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}

/// Serves HTTP/1.1 or HTTP/2 (by preface) on one connection until it ends
/// or the listener drains.
async fn serve<I>(
    io: I,
    (shared, table): (Arc<Shared>, SharedTable),
    info: ConnInfo,
    watcher: Watcher,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| handle(shared.clone(), table.clone(), info, req));
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection(TokioIo::new(io), service);
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(client = %info.client, error = %e, "connection ended with error");
    }
}
