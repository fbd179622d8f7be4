//! Serves HTTP/1.1 or HTTP/2 (by preface or ALPN) on one TLS connection,
//! or HTTP/2 on a plain one, until it ends, its listener drains, or it sits
//! idle. Plain HTTP/1.1 is [`super::park`]'s.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulConnection;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::time::Instant;

use super::activity::{Activity, ConnService};
use super::limits::HttpLimits;
use super::linger::Lingering;
use crate::handler::{ConnInfo, Shared, SharedTable};
use crate::metrics::Metrics;
use crate::rejections::RejectReason;

/// Sets the HTTP/1 limits on either of hyper's HTTP/1 builders (plain
/// connections' own, or the HTTP/1 half of the auto builder): they share
/// no trait, and what they enforce must never differ.
macro_rules! set_http1_limits {
    ($builder:expr, $limits:expr) => {
        $builder
            .timer(TokioTimer::new())
            .header_read_timeout($limits.header_read_timeout)
            .max_buf_size($limits.max_header_bytes.max(8192))
            .max_headers($limits.max_headers)
    };
}

/// The HTTP/1 connection builder of plain connections ([`super::park`]).
pub fn http1_builder(limits: &HttpLimits) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    set_http1_limits!(builder, limits);
    builder
}

/// The connection builder of TLS connections and h2c.
pub fn builder(limits: &HttpLimits) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    set_http1_limits!(builder.http1(), limits);
    let h2 = &limits.h2;
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(h2.max_concurrent_streams)
        .max_header_list_size(h2.max_header_list_size)
        .max_pending_accept_reset_streams(h2.max_pending_accept_reset_streams)
        .max_local_error_reset_streams(h2.max_local_error_reset_streams)
        .initial_stream_window_size(h2.initial_stream_window)
        .initial_connection_window_size(h2.initial_connection_window)
        .keep_alive_interval(h2.keep_alive_interval)
        .keep_alive_timeout(h2.keep_alive_timeout)
        // RFC 8441: WebSocket (and other upgrades) over HTTP/2 streams.
        .enable_connect_protocol();
    builder
}

/// Which HTTP versions a connection may speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Versions {
    /// HTTP/1.1 or HTTP/2 with prior knowledge, told apart by the preface.
    Either,
    /// ALPN said `h2`: HTTP/2 only, so anything else fails the preface.
    Http2,
    /// ALPN said `http/1.1`.
    Http1,
}

/// Serves `io` until the client closes it, `drain` turns true (then
/// in-flight requests finish: HTTP/1 closes after the current response,
/// HTTP/2 sends GOAWAY), or no request was in flight for the idle timeout.
pub async fn serve_connection<I>(
    io: I,
    (shared, table): (Arc<Shared>, SharedTable),
    info: ConnInfo,
    versions: Versions,
    mut drain: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Activity::new();
    let idle = shared.limits.idle_timeout;
    let builder = match versions {
        Versions::Either => shared.http.clone(),
        Versions::Http2 => shared.http.clone().http2_only(),
        Versions::Http1 => shared.http.clone().http1_only(),
    };
    let io = Lingering::new(io, info.linger.clone());
    let metrics = shared.metrics.clone();
    let client = info.client;
    let upgrade = info.upgrade.clone();
    let service = ConnService {
        shared,
        table,
        info,
        activity: activity.clone(),
    };
    let watch = Watch {
        activity: &activity,
        idle,
        drain: &mut drain,
        metrics: &metrics,
        client,
    };
    match versions {
        // hyper-util's upgradeable connection reads the preface itself and
        // ignores `http2_only`: ALPN h2 must fail on an HTTP/1 preface, so
        // it gets the plain connection (extended CONNECT needs no HTTP/1
        // upgrade support). ALPN http/1.1 shares the gap the other way: an
        // h2 preface there is served as h2.
        Versions::Http2 => {
            watch
                .drive(builder.serve_connection(TokioIo::new(io), service))
                .await;
        }
        Versions::Either | Versions::Http1 => {
            watch
                .drive(builder.serve_connection_with_upgrades(TokioIo::new(io), service))
                .await;
        }
    }
    // HTTP is done with the socket; an upgraded connection is relayed on
    // (in this task: it still counts, and drains with its listener).
    upgrade.run().await;
}

/// What a connection is watched for while HTTP is served on it.
struct Watch<'a> {
    activity: &'a Activity,
    idle: Duration,
    drain: &'a mut watch::Receiver<bool>,
    metrics: &'a Metrics,
    client: std::net::SocketAddr,
}

impl Watch<'_> {
    /// Serves `conn` until it ends; asks it to close gracefully when the
    /// listener drains or no request was in flight for the idle timeout.
    async fn drive<C>(self, conn: C)
    where
        C: GracefulConnection<Error = Box<dyn std::error::Error + Send + Sync>>,
    {
        let Watch {
            activity,
            idle,
            drain,
            metrics,
            client,
        } = self;
        let mut conn = std::pin::pin!(conn);
        let mut closing = false;
        loop {
            let idle_deadline = activity.idle_since().map(|since| since + idle);
            tokio::select! {
                result = conn.as_mut() => {
                    if let Err(e) = result {
                        connection_failed(metrics, client, &*e);
                    }
                    break;
                }
                changed = drain.changed(), if !closing => {
                    if changed.is_err() || *drain.borrow() {
                        conn.as_mut().graceful_shutdown();
                        closing = true;
                    }
                }
                () = sleep_until_or_forever(idle_deadline), if !closing => {
                    if activity.idle_since().is_some_and(|since| since.elapsed() >= idle) {
                        tracing::debug!(%client, "idle connection closed");
                        conn.as_mut().graceful_shutdown();
                        closing = true;
                    }
                }
            }
        }
    }
}

/// Logs a connection that ended in an error; a request head hyper could
/// not parse counts as a rejection.
pub(super) fn connection_failed(
    metrics: &Metrics,
    client: std::net::SocketAddr,
    error: &(dyn std::error::Error + 'static),
) {
    let hyper_error = error.downcast_ref::<hyper::Error>();
    if hyper_error.is_some_and(|e| e.is_parse() || e.is_parse_too_large()) {
        metrics.rejections.record(RejectReason::HeadParse);
    }
    tracing::debug!(%client, error = %error, "connection ended with error");
}

/// Sleeps until `deadline`; with none (a request is in flight), re-checks
/// after a second.
async fn sleep_until_or_forever(deadline: Option<Instant>) {
    let at = deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(1));
    tokio::time::sleep_until(at).await;
}
