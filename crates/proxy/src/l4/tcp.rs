//! A TCP connection (plain, TLS-terminated, or still-encrypted TLS) handed
//! to the backend of its L4 route: connect with a timeout (moving on to the
//! next endpoint when one refuses), then splice.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::L4Table;
use super::splice::{Counters, SpliceEnd, splice};

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
pub async fn proxy_connection<C>(
    client: C,
    peer: SocketAddr,
    table: &L4Table,
    sni: Option<&str>,
    timeouts: TcpTimeouts,
) where
    C: AsyncRead + AsyncWrite + Unpin,
{
    let Some(route) = table.pick(sni) else {
        return tracing::debug!(%peer, ?sni, "no L4 route; closing");
    };
    let _active = route.metrics.open();
    let mut backend = None;
    for endpoint in route.endpoints().into_iter().take(MAX_CONNECT_ATTEMPTS) {
        match tokio::time::timeout(timeouts.connect, TcpStream::connect(endpoint)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                backend = Some(stream);
                break;
            }
            Ok(Err(e)) => {
                tracing::debug!(route = %route.label, %endpoint, error = %e, "backend connect failed");
                super::metrics::L4RouteMetrics::add(&route.metrics.connect_errors, 1);
            }
            Err(_) => {
                tracing::debug!(route = %route.label, %endpoint, "backend connect timed out");
                super::metrics::L4RouteMetrics::add(&route.metrics.connect_errors, 1);
            }
        }
    }
    let Some(backend) = backend else {
        super::metrics::L4RouteMetrics::add(&route.metrics.refused, 1);
        return tracing::debug!(route = %route.label, %peer, "no usable backend; closing");
    };
    let counters = Counters {
        inbound: &route.metrics.bytes_in,
        outbound: &route.metrics.bytes_out,
    };
    let end = splice(client, backend, timeouts.idle, counters).await;
    if end != SpliceEnd::Closed {
        tracing::debug!(route = %route.label, %peer, ?end, "connection ended");
    }
}
