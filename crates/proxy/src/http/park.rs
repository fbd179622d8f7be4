//! Plain HTTP/1.1 connections give their buffers back while they idle.
//!
//! hyper keeps a read and a write buffer (8 KiB or more each) for as long
//! as a connection lives, so a keep-alive connection waiting for its next
//! request cost ~24 KiB. Here a connection idle for [`PARK_AFTER`] is
//! *parked*: hyper is stopped between two messages (it writes nothing: no
//! `Connection: close`, no FIN), the socket and any bytes hyper had read
//! ahead are taken back, and the connection waits for readability with no
//! buffer at all. Its next bytes start a fresh hyper connection on the same
//! socket. Counters that span requests (served, in flight) live in the
//! [`Activity`], outside hyper.
//!
//! Parking only happens at a message boundary: no request in flight, every
//! response body done and flushed, the last exchange kept alive, no
//! lingering close asked, and hyper must stop on the spot when told. A
//! connection hyper was closing for its own reasons, or still reading a
//! request body of, fails that last test and is closed instead, as an idle
//! timeout would close it; the bytes after it are never read as a request.
//!
//! TLS connections are not parked: rustls keeps buffers of its own.

use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

use super::activity::{Activity, ConnService};
use super::linger::Lingering;
use super::server::connection_failed;
use super::upgrade::UpgradeSlot;
use crate::handler::{ConnInfo, Shared, SharedTable};
use crate::listen::rewind::Rewind;
use crate::metrics::Metrics;

/// How long a connection sits idle before its buffers are released: long
/// enough that a client sending back to back never pays for a new hyper
/// connection, short enough that idle ones cost little.
pub const PARK_AFTER: Duration = Duration::from_millis(100);

/// The socket as hyper sees it.
type Stream = Watched<Lingering<Rewind<TcpStream>>>;
type Conn = http1::Connection<TokioIo<Stream>, ConnService>;

/// How one hyper connection on the socket ended.
enum Session {
    /// Stopped between messages: the socket serves on.
    Parked,
    /// Done (client closed, `Connection: close`, drained, idle timeout).
    Ended,
    /// An error; the socket is dropped.
    Failed,
}

/// Serves HTTP/1.1 on a plain connection until the client closes it, its
/// listener drains, or it sits idle for the idle timeout; parks it while
/// it idles.
pub fn serve_http1(
    io: Rewind<TcpStream>,
    (shared, table): (Arc<Shared>, SharedTable),
    info: ConnInfo,
    drain: watch::Receiver<bool>,
) -> impl Future<Output = ()> + Send {
    // Built here, not in the loop's future: an async fn keeps its
    // arguments for its whole life, so this one gets only what it uses.
    let activity = Activity::new();
    let info = ConnInfo {
        upgrade: UpgradeSlot::handing_over(),
        ..info
    };
    let stream = Watched {
        inner: Lingering::new(io, info.linger.clone()),
        activity: activity.clone(),
    };
    let service = ConnService {
        shared,
        table,
        info,
        activity,
    };
    serve(service, stream, drain)
}

async fn serve(service: ConnService, mut stream: Stream, mut drain: watch::Receiver<bool>) {
    let ConnService {
        shared,
        info,
        activity,
        ..
    } = &service;
    let watch = Watch {
        activity,
        idle: shared.limits.idle_timeout,
        metrics: &shared.metrics,
        client: info.client,
    };
    loop {
        // Boxed, and the box gone before parking: a parked connection
        // holds none of hyper's state. The waits are boxed too: inline,
        // this future would keep room for the larger of them while parked.
        let session = {
            let conn = shared
                .http1
                .serve_connection(TokioIo::new(stream), service.clone());
            let mut conn = Box::new(conn);
            let session = Box::pin(watch.drive(&mut conn, &mut drain)).await;
            let parts = conn.into_parts();
            stream = parts.io.into_inner();
            stream.inner.get_mut().unread(&parts.read_buf);
            session
        };
        if let Some(handover) = info.upgrade.take_handover() {
            // The 101 is written; the relay takes the socket from here.
            let _ = handover.send(Box::new(stream));
            info.upgrade.run().await;
            return;
        }
        match session {
            Session::Parked if !info.linger.wanted() => {}
            Session::Parked | Session::Ended => {
                let _ = stream.shutdown().await;
                return;
            }
            Session::Failed => return,
        }
        let next = {
            let _counted = Parked::count(&shared.metrics);
            Box::pin(watch.parked(&mut stream, &mut drain)).await
        };
        if !next {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

/// One parked connection in the gauge, until dropped (also when the
/// connection's task is aborted at a drain timeout).
struct Parked<'a>(&'a Metrics);

impl<'a> Parked<'a> {
    fn count(metrics: &'a Metrics) -> Self {
        metrics.http1_parked.fetch_add(1, Ordering::Relaxed);
        Parked(metrics)
    }
}

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        self.0.http1_parked.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a connection is watched for while it is served or parked.
struct Watch<'a> {
    activity: &'a Activity,
    idle: Duration,
    metrics: &'a Metrics,
    client: std::net::SocketAddr,
}

impl Watch<'_> {
    /// Serves until hyper ends or is parked; asks it to close when the
    /// listener drains or, when it cannot park, after the idle timeout.
    async fn drive(&self, conn: &mut Conn, drain: &mut watch::Receiver<bool>) -> Session {
        let mut closing = false;
        let served_before = self.activity.served();
        loop {
            // Due when it may park; otherwise looked at again soon, as a
            // request ending can make it parkable.
            let recheck = Instant::now() + PARK_AFTER;
            let deadline = match self.activity.idle_since() {
                Some(since) if self.parkable(served_before) => since + PARK_AFTER.min(self.idle),
                Some(since) => (since + self.idle).min(recheck),
                None => recheck,
            };
            tokio::select! {
                // hyper first: a timer never cuts in on work it has ready.
                biased;
                result = poll_fn(|cx| conn.poll_without_shutdown(cx)) => {
                    return self.ended(result);
                }
                changed = drain.changed(), if !closing => {
                    if changed.is_err() || *drain.borrow() {
                        Pin::new(&mut *conn).graceful_shutdown();
                        closing = true;
                    }
                }
                () = sleep_until(deadline), if !closing => {
                    let Some(since) = self.activity.idle_since() else { continue };
                    if since.elapsed() >= PARK_AFTER && self.parkable(served_before) {
                        // Idle between messages, hyper stops on the spot;
                        // otherwise it finishes what it was doing and
                        // closes, like an idle timeout.
                        Pin::new(&mut *conn).graceful_shutdown();
                        match poll_fn(|cx| Poll::Ready(conn.poll_without_shutdown(cx))).await {
                            Poll::Ready(Ok(())) => return Session::Parked,
                            Poll::Ready(result) => return self.ended(result),
                            Poll::Pending => closing = true,
                        }
                    } else if since.elapsed() >= self.idle {
                        tracing::debug!(client = %self.client, "idle connection closed");
                        Pin::new(&mut *conn).graceful_shutdown();
                        closing = true;
                    }
                }
            }
        }
    }

    /// Whether the connection may park once idle: this hyper connection
    /// answered a request (a fresh one counts as busy until then, so it
    /// could not stop on the spot), the last exchange kept the connection
    /// alive, and hyper has nothing left to write.
    fn parkable(&self, served_before: u64) -> bool {
        self.activity.served() > served_before
            && self.activity.keeps_alive()
            && !self.activity.write_blocked()
    }

    fn ended(&self, result: hyper::Result<()>) -> Session {
        match result {
            Ok(()) => Session::Ended,
            Err(e) => {
                connection_failed(self.metrics, self.client, &e);
                Session::Failed
            }
        }
    }

    /// Waits, holding no buffer, for the parked connection's next bytes:
    /// `true` when they (or the client's close) arrive, `false` on the idle
    /// timeout or a drain.
    async fn parked(&self, stream: &mut Stream, drain: &mut watch::Receiver<bool>) -> bool {
        let since = self.activity.idle_since().unwrap_or_else(Instant::now);
        let rewind = stream.inner.get_mut();
        if rewind.has_prefix() {
            return true;
        }
        tokio::select! {
            _ = rewind.get_ref().readable() => true,
            () = sleep_until(since + self.idle) => {
                tracing::debug!(client = %self.client, "idle connection closed");
                false
            }
            _ = drain.wait_for(|draining| *draining) => false,
        }
    }
}

/// The socket, noting whether hyper's last write had to wait (a parked
/// connection must have sent everything).
pub struct Watched<I> {
    inner: I,
    activity: Arc<Activity>,
}

impl<I> Watched<I> {
    fn note<T>(&self, poll: Poll<T>) -> Poll<T> {
        self.activity.set_write_blocked(poll.is_pending());
        poll
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note(poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.note(poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.note(poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
