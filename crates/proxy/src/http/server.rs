//! Serves HTTP/1.1 or HTTP/2 (by preface or ALPN) on one accepted
//! connection until it ends or its listener drains.

use std::sync::Arc;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::Watcher;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::handler::{ConnInfo, Shared, SharedTable, handle};

pub async fn serve_connection<I>(
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
