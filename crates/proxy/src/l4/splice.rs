//! Relays bytes both ways between a client and a backend connection.
//! Half-close is propagated (one side's EOF shuts down writing to the
//! other, and the opposite direction keeps flowing), and a connection with
//! no bytes either way for the idle timeout is closed.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

const BUFFER: usize = 16 * 1024;

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

/// Bytes moved, for metrics.
pub struct Counters<'a> {
    /// Client to backend.
    pub inbound: &'a AtomicU64,
    /// Backend to client.
    pub outbound: &'a AtomicU64,
}

/// Relays until both directions are done, one fails, or `idle` passes
/// without a byte either way.
pub async fn splice<C, B>(
    client: C,
    backend: B,
    idle: Duration,
    counters: Counters<'_>,
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
    let up = copy(
        &mut client_rd,
        &mut backend_wr,
        counters.inbound,
        &last,
        start,
    );
    let down = copy(
        &mut backend_rd,
        &mut client_wr,
        counters.outbound,
        &last,
        start,
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

async fn copy<R, W>(
    from: &mut R,
    to: &mut W,
    counter: &AtomicU64,
    last: &AtomicU64,
    start: Instant,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; BUFFER];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            // The peer will send no more: tell the other side the same.
            return to.shutdown().await;
        }
        let chunk = buf.get(..n).unwrap_or_default();
        to.write_all(chunk).await?;
        counter.fetch_add(n as u64, Ordering::Relaxed);
        last.store(since(start), Ordering::Relaxed);
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
                },
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
                },
            )
            .await
        });
        client_peer.write_all(b"x").await.unwrap();
        // Paused time: advances only when every task waits.
        assert_eq!(relay.await.unwrap(), SpliceEnd::Idle);
    }
}
