//! Relays bytes both ways between a client and a backend connection.
//! Half-close is propagated (one side's EOF shuts down writing to the
//! other, and the opposite direction keeps flowing), and a connection with
//! no bytes either way for the idle timeout is closed.
//!
//! The direction that finishes second does not shut its plain-TCP side
//! down: the connection is closed right after, and the close sends the FIN
//! (one syscall per connection less; a TLS side still gets its shutdown,
//! which sends close_notify). Buffers start small and are never zeroed.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

/// A direction's buffer starts at this and grows to [`BUFFER`] once a read
/// fills it: short exchanges (and idle connections) stay small.
const FIRST_BUFFER: usize = 4 * 1024;
const BUFFER: usize = 16 * 1024;

/// Which sides are plain TCP (or passthrough bytes over TCP), whose FIN
/// the final close sends by itself.
#[derive(Clone, Copy, Debug)]
pub struct Sides {
    pub client_raw: bool,
    pub backend_raw: bool,
}

/// How a splice ended.
#[derive(Debug, PartialEq, Eq)]
pub enum SpliceEnd {
    /// Both directions reached EOF.
    Closed,
    /// Nothing moved for the idle timeout.
    Idle,
    /// A read or write failed (reset, broken pipe).
    Error(io::ErrorKind),
}

/// Bytes moved, for metrics: the route's totals and this connection's.
pub struct Counters<'a> {
    /// Client to backend.
    pub inbound: &'a AtomicU64,
    /// Backend to client.
    pub outbound: &'a AtomicU64,
    pub connection: &'a ConnectionBytes,
}

/// One connection's bytes (its access-log record's).
#[derive(Debug, Default)]
pub struct ConnectionBytes {
    pub inbound: AtomicU64,
    pub outbound: AtomicU64,
}

/// Relays until both directions are done, one fails, or `idle` passes
/// without a byte either way.
pub async fn splice<C, B>(
    client: C,
    backend: B,
    idle: Duration,
    counters: Counters<'_>,
    sides: Sides,
) -> SpliceEnd
where
    C: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    let start = Instant::now();
    // Milliseconds since `start` of the last byte moved either way.
    let last = AtomicU64::new(0);
    let (mut client_rd, mut client_wr) = tokio::io::split(client);
    let (mut backend_rd, mut backend_wr) = tokio::io::split(backend);
    let (up_done, down_done) = (AtomicBool::new(false), AtomicBool::new(false));
    let up = copy(
        (&mut client_rd, &mut backend_wr),
        (counters.inbound, &counters.connection.inbound),
        (&last, start),
        (&up_done, &down_done, sides.backend_raw),
    );
    let down = copy(
        (&mut backend_rd, &mut client_wr),
        (counters.outbound, &counters.connection.outbound),
        (&last, start),
        (&down_done, &up_done, sides.client_raw),
    );
    let both = async {
        let (a, b) = tokio::join!(up, down);
        a.and(b)
    };
    tokio::select! {
        done = both => match done {
            Ok(()) => SpliceEnd::Closed,
            Err(e) => SpliceEnd::Error(e.kind()),
        },
        () = idle_watch(&last, start, idle) => SpliceEnd::Idle,
    }
}

fn since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Copies one direction. `done`: (this direction ended, the other one
/// ended, `to` is plain TCP).
async fn copy<R, W>(
    (from, to): (&mut R, &mut W),
    (counter, connection): (&AtomicU64, &AtomicU64),
    (last, start): (&AtomicU64, Instant),
    (done, other_done, to_raw): (&AtomicBool, &AtomicBool, bool),
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = Vec::with_capacity(FIRST_BUFFER);
    loop {
        buf.clear();
        let n = from.read_buf(&mut buf).await?;
        if n == 0 {
            done.store(true, Ordering::Relaxed);
            if to_raw && other_done.load(Ordering::Relaxed) {
                // Both directions ended: the close that follows sends the FIN.
                return Ok(());
            }
            // The peer will send no more: tell the other side the same.
            return to.shutdown().await;
        }
        to.write_all(&buf).await?;
        counter.fetch_add(n as u64, Ordering::Relaxed);
        connection.fetch_add(n as u64, Ordering::Relaxed);
        last.store(since(start), Ordering::Relaxed);
        if n == buf.capacity() && buf.capacity() < BUFFER {
            buf.reserve(BUFFER - n);
        }
    }
}

/// Returns once `idle` passed since the last byte moved.
async fn idle_watch(last: &AtomicU64, start: Instant, idle: Duration) {
    loop {
        let last_ms = last.load(Ordering::Relaxed);
        let deadline = start + Duration::from_millis(last_ms) + idle;
        tokio::time::sleep_until(deadline).await;
        if last.load(Ordering::Relaxed) == last_ms {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::duplex;

    const TLS_BOTH: Sides = Sides {
        client_raw: false,
        backend_raw: false,
    };

    fn counters() -> (AtomicU64, AtomicU64) {
        (AtomicU64::new(0), AtomicU64::new(0))
    }

    #[tokio::test]
    async fn relays_both_ways_and_propagates_half_close() {
        let (client, mut client_peer) = duplex(64);
        let (backend, mut backend_peer) = duplex(64);
        let (i, o) = counters();
        let relay = tokio::spawn(async move {
            splice(
                client,
                backend,
                Duration::from_secs(60),
                Counters {
                    inbound: &i,
                    outbound: &o,
                    connection: &ConnectionBytes::default(),
                },
                TLS_BOTH,
            )
            .await
        });
        client_peer.write_all(b"ping").await.unwrap();
        client_peer.shutdown().await.unwrap();
        let mut got = Vec::new();
        backend_peer.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"ping", "the backend sees the client's EOF");
        // The other direction still flows after the client half-closed.
        backend_peer.write_all(b"pong").await.unwrap();
        backend_peer.shutdown().await.unwrap();
        let mut reply = Vec::new();
        client_peer.read_to_end(&mut reply).await.unwrap();
        assert_eq!(reply, b"pong");
        assert_eq!(relay.await.unwrap(), SpliceEnd::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn idle_connections_are_closed() {
        let (client, mut client_peer) = duplex(64);
        let (backend, _backend_peer) = duplex(64);
        let (i, o) = counters();
        let relay = tokio::spawn(async move {
            splice(
                client,
                backend,
                Duration::from_secs(30),
                Counters {
                    inbound: &i,
                    outbound: &o,
                    connection: &ConnectionBytes::default(),
                },
                TLS_BOTH,
            )
            .await
        });
        client_peer.write_all(b"x").await.unwrap();
        // Paused time: advances only when every task waits.
        assert_eq!(relay.await.unwrap(), SpliceEnd::Idle);
    }

    /// A stream that counts its shutdowns.
    struct Counted {
        inner: tokio::io::DuplexStream,
        shutdowns: std::sync::Arc<AtomicU64>,
    }

    impl AsyncRead for Counted {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for Counted {
        fn poll_write(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<io::Result<usize>> {
            std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
        }
        fn poll_flush(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::pin::Pin::new(&mut self.inner).poll_flush(cx)
        }
        fn poll_shutdown(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            self.shutdowns.fetch_add(1, Ordering::SeqCst);
            std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
        }
    }

    /// Client sends and closes, the backend answers and closes: how many
    /// times each side of the relay was shut down.
    async fn exchange(sides: Sides) -> (u64, u64, Vec<u8>) {
        let (client, mut client_peer) = duplex(64);
        let (backend, mut backend_peer) = duplex(64);
        let (client_shut, backend_shut) = (
            std::sync::Arc::new(AtomicU64::new(0)),
            std::sync::Arc::new(AtomicU64::new(0)),
        );
        let (c, b) = (client_shut.clone(), backend_shut.clone());
        let relay = tokio::spawn(async move {
            let (i, o) = counters();
            let client = Counted {
                inner: client,
                shutdowns: c,
            };
            let backend = Counted {
                inner: backend,
                shutdowns: b,
            };
            let counters = Counters {
                inbound: &i,
                outbound: &o,
                connection: &ConnectionBytes::default(),
            };
            splice(client, backend, Duration::from_secs(60), counters, sides).await
        });
        client_peer.write_all(b"ping").await.unwrap();
        client_peer.shutdown().await.unwrap();
        let mut got = Vec::new();
        backend_peer.read_to_end(&mut got).await.unwrap();
        backend_peer.write_all(b"pong").await.unwrap();
        backend_peer.shutdown().await.unwrap();
        assert_eq!(relay.await.unwrap(), SpliceEnd::Closed);
        // The relay dropped its streams: the client reads to EOF either way.
        let mut reply = Vec::new();
        client_peer.read_to_end(&mut reply).await.unwrap();
        (
            client_shut.load(Ordering::SeqCst),
            backend_shut.load(Ordering::SeqCst),
            reply,
        )
    }

    #[tokio::test]
    async fn the_last_plain_tcp_side_is_closed_without_a_shutdown() {
        let raw = Sides {
            client_raw: true,
            backend_raw: true,
        };
        // The backend needs the client's EOF while it still answers; the
        // client's side is closed after both directions ended.
        assert_eq!(exchange(raw).await, (0, 1, b"pong".to_vec()));
        // A TLS side is always shut down (close_notify).
        assert_eq!(exchange(TLS_BOTH).await, (1, 1, b"pong".to_vec()));
    }

    #[tokio::test]
    async fn a_large_transfer_grows_the_buffer_and_arrives_whole() {
        let (client, mut client_peer) = duplex(1 << 20);
        let (backend, mut backend_peer) = duplex(1 << 20);
        let relay = tokio::spawn(async move {
            let (i, o) = counters();
            let counters = Counters {
                inbound: &i,
                outbound: &o,
                connection: &ConnectionBytes::default(),
            };
            let end = splice(client, backend, Duration::from_secs(60), counters, TLS_BOTH).await;
            (end, i.load(Ordering::SeqCst))
        });
        let data: Vec<u8> = (0..200_000u32).map(|n| (n % 251) as u8).collect();
        let sent = data.clone();
        let writer = tokio::spawn(async move {
            client_peer.write_all(&sent).await.unwrap();
            client_peer.shutdown().await.unwrap();
            client_peer
        });
        let mut got = Vec::new();
        backend_peer.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, data);
        backend_peer.shutdown().await.unwrap();
        drop(writer.await.unwrap());
        assert_eq!(relay.await.unwrap(), (SpliceEnd::Closed, 200_000));
    }
}
